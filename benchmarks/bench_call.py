"""Benchmark: what one call of a compiled function costs from Python, next to ``np.add``.

Four calls, each timed in this process next to ``np.add(a, b, out=c)`` on 10 float32
(the ratio is per-call time / np.add's; best of interleaved runs of both):

- ``rt["add"](a, b, c)``: a static 10-element kernel, C = A + B;
- ``rt["addn"](a, b, c)``: the same kernel on a symbolic length ``n``; each also with
  ``mlc.runtime`` arrays (the course's ``tvm.nd.array`` style: the fast entry reads the NumPy
  array inside), through ``call_checked`` (the path of calls the fast entry declines:
  DLPack, strided), and exported and loaded back (``export_library`` + ``load_module``);
- ``vm["main"](a, b)``: a one-op graph (``op.add``), output allocated by the VM (also with
  ``mlc.runtime`` arrays);
- ``vm["main"](x)``: the digits MLP (64 -> 128 -> 10) at batch 1 with bound weights,
  next to NumPy's own forward pass and to the compiled call alone (``time_evaluator``).

Every call is checked against NumPy before it is timed. Prints the host CPU first.

    python benchmarks/bench_call.py
"""

from __future__ import annotations

import platform
import tempfile
import time
from collections.abc import Callable

import numpy as np

import mlc_mlir as mlc
from mlc_mlir import te
from mlc_mlir.graph import BlockBuilder, Var, op


def per_call(fn: Callable[..., object], *args: object, target_s: float = 0.03, repeats: int = 5) -> float:
    """Seconds per call of ``fn(*args)``: a calibrated loop, the best of ``repeats`` (least disturbed)."""
    n = 64
    while True:
        t0 = time.perf_counter()
        for _ in range(n):
            fn(*args)
        if time.perf_counter() - t0 >= target_s / repeats:
            break
        n *= 2
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(n):
            fn(*args)
        times.append((time.perf_counter() - t0) / n)
    return min(times)


def host_cpu() -> str:
    """CPU model and vector features of this machine (from /proc/cpuinfo where it exists)."""
    model, flags = platform.processor() or platform.machine(), []
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name") and not flags:
                    model = line.split(":", 1)[1].strip()
                if line.startswith("flags"):
                    have = set(line.split(":", 1)[1].split())
                    flags = [x for x in ("sse4_2", "avx", "avx2", "fma", "avx512f") if x in have]
                    break
    except OSError:
        pass
    return f"{model} ({', '.join(flags) or 'features unknown'}), Python {platform.python_version()}, " \
           f"NumPy {np.__version__}"


def add_kernel(n: int | str, name: str) -> mlc.Module:
    a, b = te.placeholder((n,), "float32", name="A"), te.placeholder((n,), "float32", name="B")
    c = te.compute((n,), lambda i: a[i] + b[i], name="C")
    return te.create_prim_func([a, b, c], name=name)


def one_op_graph() -> mlc.Module:
    bb = BlockBuilder()
    a, b = Var("a", (10,), "float32"), Var("b", (10,), "float32")
    with bb.function("main", [a, b]):
        with bb.dataflow():
            out = bb.emit_output(op.add(a, b))
        bb.emit_func_output(out)
    return bb.get()


def mlp_graph(params: dict[str, np.ndarray]) -> mlc.Module:
    bb = BlockBuilder()
    x = Var("x", ("n", 64), "float32")
    ws = [Var(k, v.shape, "float32") for k, v in params.items()]
    w0, b0, w1, b1 = ws
    with bb.function("main", [x, *ws]):
        with bb.dataflow():
            h = bb.emit(op.relu(op.add(op.matmul(x, op.permute_dims(w0)), b0)))
            out = bb.emit_output(op.add(op.matmul(h, op.permute_dims(w1)), b1))
        bb.emit_func_output(out)
    return mlc.graph.transform.BindParams("main", params)(bb.get())


def row(label: str, fn: Callable[..., object], args: tuple, ref_fn: Callable[..., object],
        ref_args: tuple, ref_label: str) -> None:
    refs, times = [], []
    for _ in range(3):  # interleaved, so that both see the same machine load
        refs.append(per_call(ref_fn, *ref_args))
        times.append(per_call(fn, *args))
    ref, t = min(refs), min(times)
    print(f"{label:44s} {t * 1e6:8.3f} us   {ref_label} {ref * 1e6:7.3f} us   ratio {t / ref:6.2f}x")


def main() -> None:
    print(f"host: {host_cpu()}")
    rng = np.random.default_rng(0)
    a, b = rng.random(10, dtype=np.float32), rng.random(10, dtype=np.float32)
    c = np.empty(10, np.float32)
    np_add = lambda x, y, z: np.add(x, y, out=z)  # noqa: E731
    nd_a, nd_b, nd_c = mlc.runtime.array(a), mlc.runtime.array(b), mlc.runtime.empty((10,), "float32")
    with tempfile.TemporaryDirectory(prefix="bench-call-") as tmp:
        for n, name in ((10, "add"), ("n", "addn")):
            rt = mlc.build(add_kernel(n, name))
            f = rt[name]
            f(a, b, c)
            np.testing.assert_array_equal(c, a + b)
            f(nd_a, nd_b, nd_c)
            np.testing.assert_array_equal(nd_c.numpy(), a + b)
            kind = "symbolic" if n == "n" else "static"
            row(f'rt["{name}"](a, b, c) ({kind})', f, (a, b, c), np_add, (a, b, c), "np.add")
            row(f'  mlc.runtime arrays ({kind})', f, (nd_a, nd_b, nd_c), np_add, (a, b, c),
                "np.add")
            row(f'  checked in Python (.call_checked, {kind})', f.call_checked, (a, b, c), np_add, (a, b, c),
                "np.add")
            rt.export_library(f"{tmp}/{name}.so")  # the same kernel exported and loaded back
            g = mlc.runtime.load_module(f"{tmp}/{name}.so")[name]
            g(a, b, c)
            np.testing.assert_array_equal(c, a + b)
            row(f'  loaded library ({kind})', g, (a, b, c), np_add, (a, b, c), "np.add")
    vm = mlc.graph.VirtualMachine(mlc.graph.build(one_op_graph()), mlc.cpu())
    f = vm["main"]
    np.testing.assert_array_equal(f(a, b).numpy(), a + b)
    row('vm["main"](a, b) (one-op graph)', f, (a, b), np_add, (a, b, c), "np.add")
    row('  mlc.runtime arrays', f, (nd_a, nd_b), np_add, (a, b, c), "np.add")

    params = {"w0": (rng.standard_normal((128, 64)) / 8).astype("float32"),
              "b0": rng.standard_normal(128).astype("float32"),
              "w1": (rng.standard_normal((10, 128)) / 11).astype("float32"),
              "b1": rng.standard_normal(10).astype("float32")}
    ex = mlc.graph.build(mlp_graph(params))
    f = mlc.graph.VirtualMachine(ex, mlc.cpu())["main"]
    x = rng.standard_normal((1, 64)).astype("float32")

    def numpy_mlp(x: np.ndarray) -> np.ndarray:
        return np.maximum(x @ params["w0"].T + params["b0"], 0) @ params["w1"].T + params["b1"]

    np.testing.assert_allclose(f(x).numpy(), numpy_mlp(x), rtol=1e-4, atol=1e-4)
    row('vm["main"](x) (digits MLP, batch 1)', f, (x,), numpy_mlp, (x,), "NumPy")
    out = np.empty((1, 10), np.float32)
    compiled = ex.rt.time_evaluator("main", number=2000, repeat=5)(x, out).min
    print(f"{'  the compiled call alone (time_evaluator)':44s} {compiled * 1e6:8.3f} us")


if __name__ == "__main__":
    main()
