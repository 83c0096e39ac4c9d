"""examples/deploy_c: a C program runs the exported digits MLP and prints Python's class."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "deploy_c"


@pytest.mark.skipif(importlib.util.find_spec("sklearn") is None, reason="the digits data needs scikit-learn")
@pytest.mark.skipif(shutil.which("cc") is None or shutil.which("make") is None, reason="no cc or make")
def test_c_program_prints_pythons_class(tmp_path):
    proc = subprocess.run(["make", "-C", str(EXAMPLE), "check", f"BUILD={tmp_path}", f"PY={sys.executable}"],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "C and Python agree" in proc.stdout
    run = subprocess.run([str(tmp_path / "deploy_mlp"), str(tmp_path / "mlp.so"), str(tmp_path / "image.bin")],
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 0 and run.stdout.splitlines()[-1] == (tmp_path / "expected.txt").read_text().strip()
    bad = subprocess.run([str(tmp_path / "deploy_mlp"), str(tmp_path / "mlp.so"), str(tmp_path / "expected.txt")],
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode == 1 and "cannot read 64 float32" in bad.stderr
