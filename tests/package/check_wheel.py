"""The package is the product: build the sdist and wheel, install the wheel into a clean
venv, and use it from outside the checkout (``make package-check``, part of ``make test``).

1. ``python -m build`` makes the sdist, then the wheel from that sdist; both must carry the
   IRDL dialect files, ``py.typed`` and the licence.
2. A fresh venv gets the wheel (pip's cache is reused: the MLIR/LLVM wheels install from it).
3. From a temporary directory, with no PYTHONPATH: ``python -m mlc_mlir`` (the doctor),
   ``smoke_model.py`` (a graph MLP through the VirtualMachine vs NumPy, a parallel loop),
   the RUN lines of ``graph_mlp_layer.mlir`` with the venv's ``mlc-opt``, and the examples
   that need nothing beyond the package's own dependencies.

Usage: ``python tests/package/check_wheel.py [--keep]`` (``--keep`` leaves the temp dir).
Exits non-zero, naming the step, on the first failure.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
#: examples whose imports the package's own dependencies cover (the digits MLPs need scikit-learn)
EXAMPLES = ("ch2_transform_mm_relu.py", "ch4_stochastic_schedule.py", "ch6_gpu_vector_add.py")
SDIST_FILES = ("dialects/mlc.irdl.mlir", "dialects/__init__.py", "setup.py", "pyproject.toml", "LICENSE",
               "mlc_mlir/py.typed", "mlc_mlir/__init__.py")
WHEEL_FILES = ("mlc_mlir/dialects/mlc.irdl.mlir", "mlc_mlir/dialects/__init__.py", "mlc_mlir/py.typed",
               "mlc_mlir/__main__.py")


class CheckFailed(Exception):
    """A step of the check failed; the message names it."""


_T0 = time.perf_counter()


def step(title: str) -> None:
    print(f"== [{time.perf_counter() - _T0:4.0f} s] {title}", flush=True)


def run(cmd: list[str], *, cwd: Path, env: dict[str, str] | None = None, what: str,
        stdin: str | None = None) -> str:
    """Run ``cmd``; its stdout, or :class:`CheckFailed` with the output tail."""
    proc = subprocess.run(cmd, cwd=cwd, env=env, input=stdin, capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        raise CheckFailed(f"{what}: `{shlex.join(cmd)}` exited {proc.returncode}\n"
                          f"{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return proc.stdout


def clean_env(venv: Path) -> dict[str, str]:
    """The environment of a user who just installed the wheel: the venv first on PATH."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV") and not k.startswith("MLC_")}
    env["PATH"] = os.pathsep.join([str(venv / "bin"), env.get("PATH", "")])
    env["VIRTUAL_ENV"] = str(venv)
    return env


def build_dists(tmp: Path) -> tuple[Path, Path]:
    """Build sdist + wheel (the wheel from the sdist) and check what they carry."""
    step("build sdist and wheel (python -m build)")
    dist = tmp / "dist"
    run([sys.executable, "-m", "build", "--outdir", str(dist), str(ROOT)], cwd=tmp, what="python -m build")
    (sdist,), (wheel,) = sorted(dist.glob("*.tar.gz")), sorted(dist.glob("*.whl"))
    with tarfile.open(sdist) as tar:
        names = {n.split("/", 1)[1] for n in tar.getnames() if "/" in n}
    missing = [f for f in SDIST_FILES if f not in names]
    if missing:
        raise CheckFailed(f"sdist {sdist.name} lacks {missing}")
    with zipfile.ZipFile(wheel) as whl:
        names = set(whl.namelist())
        metadata = next(whl.read(n).decode() for n in names if n.endswith(".dist-info/METADATA"))
    missing = [f for f in WHEEL_FILES if f not in names]
    if not any(n.endswith(".dist-info/licenses/LICENSE") for n in names):
        missing.append("*.dist-info/licenses/LICENSE")
    if missing:
        raise CheckFailed(f"wheel {wheel.name} lacks {missing}")
    if "License-Expression: Apache-2.0" not in metadata:
        raise CheckFailed(f"wheel {wheel.name}: METADATA has no License-Expression: Apache-2.0")
    stray = sorted(n for n in names if not n.startswith("mlc_mlir"))
    if stray:
        raise CheckFailed(f"wheel {wheel.name} installs files outside mlc_mlir: {stray[:5]}")
    print(f"   {sdist.name}, {wheel.name}: dialect files, py.typed and LICENSE present")
    return sdist, wheel


def install(tmp: Path, wheel: Path) -> Path:
    """A fresh venv with the wheel and its dependencies (pip's cache reused)."""
    step("install the wheel into a clean venv")
    venv = tmp / "venv"
    run([sys.executable, "-m", "venv", str(venv)], cwd=tmp, what="python -m venv")
    # --no-compile: the ~1 GB of MLIR/LLVM wheels unpack without byte-compiling their Python files
    run([str(venv / "bin" / "python"), "-m", "pip", "install", "--disable-pip-version-check", "--no-compile",
         str(wheel)], cwd=tmp, what="pip install of the wheel")
    return venv


def run_lit_file(path: Path, venv: Path, workdir: Path) -> int:
    """Run the ``RUN:`` lines of ``path`` (``%s`` only) with the venv's mlc-opt; how many ran."""
    filecheck = shutil.which("filecheck", path=str(Path(sys.executable).parent)) or shutil.which("filecheck")
    if filecheck is None:
        raise CheckFailed("filecheck is not installed beside this Python (pip install filecheck)")
    lines = re.findall(r"^// RUN: (.*)$", path.read_text(), re.MULTILINE)
    for line in lines:
        if re.search(r"%(?!s\b)", line):
            raise CheckFailed(f"{path.name}: RUN line uses a substitution other than %s: {line}")
        cmd = line.replace("%s", shlex.quote(str(path))).replace("filecheck", shlex.quote(filecheck))
        run(["bash", "-o", "pipefail", "-c", cmd], cwd=workdir, env=clean_env(venv), what=f"{path.name}: {line}")
    return len(lines)


def use_outside_checkout(tmp: Path, venv: Path) -> None:
    """The doctor, a graph model, mlc-opt on a graph file and examples, from a temp dir."""
    work = tmp / "work"
    work.mkdir()
    python, env = str(venv / "bin" / "python"), clean_env(venv)

    step("python -m mlc_mlir (doctor)")
    out = run([python, "-m", "mlc_mlir"], cwd=work, env=env, what="python -m mlc_mlir")
    location = re.search(r"^package:\s+mlc-mlir \S+ at (\S+) \(installed\)$", out, re.MULTILINE)
    if not location or not Path(location.group(1)).is_relative_to(venv):
        raise CheckFailed(f"the doctor reports a package outside the clean venv:\n{out}")
    print("   " + "\n   ".join(out.splitlines()[:1] + [ln for ln in out.splitlines() if ln.startswith("dialect")]))

    step("graph model and parallel te program (smoke_model.py)")
    shutil.copy(HERE / "smoke_model.py", work)
    out = run([python, "smoke_model.py"], cwd=work, env=env, what="smoke_model.py")
    if not out.rstrip().endswith("smoke: ok"):
        raise CheckFailed(f"smoke_model.py did not finish:\n{out}")
    print("   " + out.strip().replace("\n", "\n   "))

    step("mlc-opt on a graph file (graph_mlp_layer.mlir)")
    shutil.copy(HERE / "graph_mlp_layer.mlir", work)
    count = run_lit_file(work / "graph_mlp_layer.mlir", venv, work)
    print(f"   {count} RUN lines passed")

    step(f"examples from outside the checkout: {', '.join(EXAMPLES)}")
    for name in EXAMPLES:
        shutil.copy(ROOT / "examples" / name, work)
        run([python, name], cwd=work, env=env, what=f"examples/{name}")
    print(f"   {len(EXAMPLES)} examples ran")


def main(argv: list[str]) -> int:
    """Run every step; 0 when all pass, 1 naming the first failure."""
    keep = "--keep" in argv
    tmp = Path(tempfile.mkdtemp(prefix="mlc-wheel-check-"))
    try:
        _, wheel = build_dists(tmp)
        venv = install(tmp, wheel)
        use_outside_checkout(tmp, venv)
    except CheckFailed as exc:
        print(f"package check FAILED: {exc}", file=sys.stderr)
        return 1
    finally:
        if keep:
            print(f"   kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    print(f"package check passed in {time.perf_counter() - _T0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
