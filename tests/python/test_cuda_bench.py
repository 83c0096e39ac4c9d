"""benchmarks/bench_cuda.py: without a GPU it says why and measures nothing (exit 0)."""

import subprocess
import sys
from pathlib import Path

import pytest

from mlc_mlir.compiler.cuda import device_arch

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_cuda.py"


@pytest.mark.skipif(device_arch() is not None, reason="a GPU is here: the benchmark would run for minutes")
def test_bench_cuda_without_a_gpu():
    proc = subprocess.run([sys.executable, str(BENCH), "--quick"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("bench_cuda: not run: ")
    assert "CUDA" in proc.stdout and "TFLOP" not in proc.stdout
