"""Run by tests/package/check_wheel.py with a clean venv's Python, from outside the checkout.

A graph model (the course's MLP from BlockBuilder graph ops, weights bound as constants)
is built at opt_level 0 and 2 and run by the VirtualMachine on random data; the logits
must equal NumPy's. Then a te tensor program with a parallel loop (OpenMP runtime found
through the intel-openmp distribution) is built and checked. Prints ``smoke: ok`` last.
"""

from pathlib import Path

import numpy as np

import mlc_mlir as mlc
from mlc_mlir import te
from mlc_mlir.graph import BlockBuilder, Var, op


def mlp(params: dict[str, np.ndarray]) -> mlc.Module:
    """``relu(x @ w0.T + b0) @ w1.T + b1`` with a symbolic batch ``n``."""
    bb = BlockBuilder()
    x = Var("x", ("n", 16), "float32")
    w0, b0 = mlc.graph.const(params["w0"]), mlc.graph.const(params["b0"])
    w1, b1 = mlc.graph.const(params["w1"]), mlc.graph.const(params["b1"])
    with bb.function("main", [x]):
        with bb.dataflow():
            lv0 = bb.emit(op.add(op.matmul(x, op.permute_dims(w0)), b0))
            lv1 = bb.emit(op.relu(lv0))
            gv = bb.emit_output(bb.emit(op.add(op.matmul(lv1, op.permute_dims(w1)), b1)))
        bb.emit_func_output(gv)
    return bb.get()


def check_graph() -> None:
    rng = np.random.default_rng(0)
    params = {"w0": rng.standard_normal((32, 16), dtype=np.float32), "b0": rng.standard_normal(32, dtype=np.float32),
              "w1": rng.standard_normal((4, 32), dtype=np.float32), "b1": rng.standard_normal(4, dtype=np.float32)}
    x = rng.standard_normal((8, 16), dtype=np.float32)
    ref = np.maximum(x @ params["w0"].T + params["b0"], 0) @ params["w1"].T + params["b1"]
    for opt_level in (0, 2):
        vm = mlc.graph.VirtualMachine(mlc.graph.build(mlp(params), target="llvm", opt_level=opt_level), mlc.cpu())
        out = vm["main"](mlc.runtime.array(x)).numpy()
        np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-4)
        print(f"graph MLP, opt_level={opt_level}: equal to NumPy")


def check_parallel() -> None:
    A = te.placeholder((64, 64), "float32", name="A")
    B = te.compute((64, 64), lambda i, j: A[i, j] * 2.0, name="B")
    sch = mlc.Schedule(te.create_prim_func([A, B], name="double"))
    i, _ = sch.get_loops(sch.get_block("B"))
    sch.parallel(i)
    a = np.random.default_rng(1).standard_normal((64, 64), dtype=np.float32)
    b = np.empty_like(a)
    mlc.build(sch.mod, target="llvm")["double"](a, b)
    np.testing.assert_allclose(b, 2 * a)
    print("parallel te program (OpenMP): equal to NumPy")


def main() -> None:
    import mlc_mlir.context

    where = Path(mlc.__file__).resolve().parent
    assert "site-packages" in where.parts, f"mlc_mlir imported from {where}, not from an installed wheel"
    files = mlc_mlir.context.dialect_files()
    assert {p.parent for p in files} == {where / "dialects"}, f"dialect files {files} are not in the package"
    print(f"mlc_mlir {mlc.__version__} from {where}; dialects {[p.name for p in files]}")
    check_graph()
    check_parallel()
    print("smoke: ok")


if __name__ == "__main__":
    main()
