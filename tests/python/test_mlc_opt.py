"""mlc-opt: pipelines, project passes, split input, verify-diagnostics, errors."""

import subprocess
import sys
from pathlib import Path

import pytest

from mlc_mlir.tools.mlc_opt import main

ROOT = Path(__file__).resolve().parents[2]


def run(args, capsys):
    code = main(args)
    out = capsys.readouterr()
    return code, out.out, out.err


def test_pipeline_and_output_file(tmp_path, capsys):
    src = tmp_path / "in.mlir"
    src.write_text("func.func @f(%a: i32) -> i32 {\n  %c0 = arith.constant 0 : i32\n"
                   "  %r = arith.addi %a, %c0 : i32\n  return %r : i32\n}\n")
    code, out, _ = run([str(src), "--pass-pipeline=builtin.module(canonicalize)"], capsys)
    assert code == 0 and "arith.addi" not in out and "return %arg0" in out
    dst = tmp_path / "out.mlir"
    code, _, _ = run([str(src), "-o", str(dst)], capsys)
    assert code == 0 and "arith.addi" in dst.read_text()


def test_lower_to_llvm_pass(capsys):
    from conftest import MM_RELU
    import tempfile
    with tempfile.NamedTemporaryFile("w", suffix=".mlir", delete=False) as f:
        f.write(MM_RELU)
    code, out, err = run([f.name, "--mlc-lower-to-llvm"], capsys)
    assert code == 0, err
    assert "llvm.func @_mlir_ciface_mm_relu" in out and "linalg" not in out


def test_errors_have_nonzero_exit_and_message(tmp_path, capsys):
    bad = tmp_path / "bad.mlir"
    bad.write_text("func.func @f( {\n")
    code, _, err = run([str(bad)], capsys)
    assert code == 1 and "bad.mlir:1: error:" in err
    code, _, err = run([str(tmp_path / "missing.mlir")], capsys)
    assert code == 1 and "cannot read" in err
    good = tmp_path / "good.mlir"
    good.write_text("func.func @f() { return }\n")
    code, _, err = run([str(good), "--pass-pipeline=builtin.module(no-such-pass)"], capsys)
    assert code == 1 and "no-such-pass" in err
    code, _, err = run([str(good), "--mlc-no-such-pass"], capsys)
    assert code == 2 and "unknown pass --mlc-no-such-pass" in err


def test_verify_diagnostics(tmp_path, capsys):
    src = tmp_path / "v.mlir"
    src.write_text("func.func @ok() { return }\n// -----\n"
                   "// expected-error @+1 {{expected non-function type}}\nfunc.func @f( {\n")
    code, _, err = run([str(src), "--split-input-file", "--verify-diagnostics"], capsys)
    assert code == 0, err
    src.write_text("// expected-error @+1 {{something else}}\nfunc.func @f( {\n")
    code, _, err = run([str(src), "--verify-diagnostics"], capsys)
    assert code == 1 and "was not produced" in err and "unexpected error" in err


def test_console_script_help():
    proc = subprocess.run([sys.executable, str(ROOT / "tools" / "mlc-opt"), "--help"],
                          capture_output=True, text=True)
    assert proc.returncode == 0 and "--pass-pipeline" in proc.stdout and "--mlc-lower-to-llvm" in proc.stdout
