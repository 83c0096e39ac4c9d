"""The deployment form end to end: export here, load in a fresh venv that has only NumPy,
intel-openmp and this project installed without its dependencies (no MLIR, no LLVM).

Offline: the venv is made with ``venv --without-pip``; NumPy and intel-openmp are copied
from this environment's installation (the files their RECORD lists), the project is
installed from a wheel built here with ``pip wheel --no-deps --no-build-isolation --no-index``
(pip of this environment, ``--python`` the new venv's). The runtime-only install users
run is ``pip install --no-deps mlc-mlir`` plus ``pip install numpy 'intel-openmp<2024'``
(README, "Deploy").
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import numpy as np
import pytest
from _deploy_models import cnn_module, cnn_params, mlp_module, mlp_params

import mlc_mlir as mlc
from mlc_mlir import te

REPO = Path(__file__).resolve().parents[2]
#: what a source tree needs to build the wheel (setup.py maps dialects/ into the package)
SOURCES = ("pyproject.toml", "setup.py", "README.md", "LICENSE", "MANIFEST.in", "mlc_mlir", "dialects")

SCRIPT = r"""
import importlib.util, json, sys, time
import numpy as np
assert importlib.util.find_spec("mlir") is None and importlib.util.find_spec("llvm") is None
work = sys.argv[1]
t0 = time.perf_counter()
import mlc_mlir as mlc
import mlc_mlir.runtime
t1 = time.perf_counter()
ex = mlc.runtime.load_module(f"{work}/mlp.so")
vm = mlc.runtime.vm.VirtualMachine(ex, mlc.runtime.cpu())
x = np.load(f"{work}/mlp_x.npy")
y = vm["main"](x).numpy()
t2 = time.perf_counter()
np.testing.assert_allclose(y, np.load(f"{work}/mlp_y.npy"), rtol=1e-5, atol=1e-5)
assert vm["main"](x[:1]).numpy().shape == (1, 10)
cnn = mlc.runtime.vm.VirtualMachine(mlc.runtime.load_module(f"{work}/cnn.so"), mlc.runtime.cpu())
np.testing.assert_allclose(cnn["main"](np.load(f"{work}/cnn_x.npy")).numpy(), np.load(f"{work}/cnn_y.npy"),
                           rtol=1e-5, atol=1e-5)
par = mlc.runtime.load_module(f"{work}/par.so")          # parallel loops: OpenMP loaded on demand
a = np.load(f"{work}/par_x.npy"); out = np.empty_like(a)
par["par"](a, out)
np.testing.assert_allclose(out, np.load(f"{work}/par_y.npy"), rtol=1e-5, atol=1e-6)
assert par.metadata.openmp and par.time_evaluator("par", mlc.runtime.cpu(), number=3)(a, out).mean > 0
try:
    mlc.build
except mlc.errors.InstallError as exc:
    build_error = str(exc)
print(json.dumps({"import_s": t1 - t0, "load_first_call_s": t2 - t1, "build_error": build_error,
                  "mlir_loaded": any(m == "mlir" or m.startswith("mlir.") for m in sys.modules)}))
"""


def copy_distribution(name: str, site: Path) -> None:
    """Install ``name`` into ``site`` by copying the files this environment's RECORD lists."""
    dist = importlib.metadata.distribution(name)
    for file in dist.files or []:
        src = Path(dist.locate_file(file))
        dst = Path(os.path.normpath(site / file))
        if src.is_file() and "__pycache__" not in file.parts:
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dst)


def runtime_venv(root: Path) -> Path:
    """A bare venv with NumPy, intel-openmp and mlc-mlir (no dependencies): its python."""
    env = root / "venv"
    venv.EnvBuilder(with_pip=False).create(env)
    python = env / "bin" / "python"
    site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True).stdout.strip())
    for name in ("numpy", "intel-openmp"):
        copy_distribution(name, site)
    src = root / "src"
    src.mkdir()
    for item in SOURCES:
        if (REPO / item).is_dir():
            shutil.copytree(REPO / item, src / item, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(REPO / item, src / item)
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    subprocess.run([*pip, "wheel", "--no-deps", "--no-build-isolation", "--no-index", "-w", str(root / "wheels"),
                    str(src)], check=True, capture_output=True, text=True)
    wheel = next((root / "wheels").glob("mlc_mlir-*.whl"))
    subprocess.run([*pip, "--python", str(python), "install", "--no-deps", "--no-index", str(wheel)],
                   check=True, capture_output=True, text=True)
    return python


def export_models(work: Path) -> None:
    """Export the MLP, the CNN and a parallel kernel; save inputs and the JIT's outputs."""
    rng = np.random.default_rng(7)
    p = mlp_params()
    ex = mlc.graph.build(mlp_module(p), "llvm")
    ex.export_library(work / "mlp.so")
    x = rng.random((8, 784), dtype="float32")
    np.save(work / "mlp_x.npy", x)
    np.save(work / "mlp_y.npy", mlc.graph.VirtualMachine(ex, mlc.cpu())["main"](x).numpy())
    p = cnn_params()
    ex = mlc.graph.build(cnn_module(p), "llvm")
    ex.export_library(work / "cnn.so")
    x = rng.random((1, 1, 8, 8), dtype="float32")
    np.save(work / "cnn_x.npy", x)
    np.save(work / "cnn_y.npy", mlc.graph.VirtualMachine(ex, mlc.cpu())["main"](x).numpy())
    A = te.placeholder((64, 1024), name="A")
    B = te.compute(A.shape, lambda i, j: te.max(A[i, j] * 3.0 - 1.0, 0.0), name="B")
    sch = mlc.Schedule(te.create_prim_func([A, B], name="par"))
    sch.parallel(sch.get_loops(sch.get_block("B", "par"))[0])
    rt = mlc.build(sch.mod)
    rt.export_library(work / "par.so")
    a = rng.random((64, 1024), dtype="float32")
    out = np.empty_like(a)
    rt["par"](a, out)
    np.save(work / "par_x.npy", a)
    np.save(work / "par_y.npy", out)


def test_load_in_a_numpy_only_venv(tmp_path):
    if importlib.util.find_spec("pip") is None:
        pytest.skip("pip is not installed in this environment")
    try:
        importlib.metadata.distribution("intel-openmp")
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("intel-openmp is not installed here (x86-64 only)")
    work = tmp_path / "work"
    work.mkdir()
    export_models(work)
    python = runtime_venv(tmp_path)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "MLC_OPENMP_LIB")}
    proc = subprocess.run([str(python), "-c", SCRIPT, str(work)], capture_output=True, text=True, cwd=tmp_path,
                          env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-4000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert not result["mlir_loaded"]
    assert "pip install" in result["build_error"]
    print("runtime-only venv:", result)
