"""Computational graph optimization (MLC course ch.7) on the digits MLP.

1. Train the MLP 64 -> 128 -> 10 with NumPy (``mlp_digits.train_mlp``).
2. Write it as the course's ``MLPModel``: high-level graph ops (``matmul``, ``add``,
   ``relu``, ``permute_dims``) on bound constant weights.
3. Pattern rewriting: multiply + add -> ewise_fma in a few lines, then ``remove_all_unused``.
4. The course's ``FuseDenseAddPass`` (a rewrite pattern) -> ``LegalizeOps`` with the
   course's ``op_map`` -> ``FuseTIR``.
5. The general ``FuseOps -> LegalizeOps -> FuseTIR``: 7 kernels become 2.
6. Build each and run the whole digits test split: same argmax as NumPy on every sample,
   logits allclose.

Run: ``python examples/mlp_fusion.py [-v]`` (a few seconds; ``-v`` prints the fused modules).
"""

from __future__ import annotations

import sys
import time

import numpy as np

import mlc_mlir as mlc
from mlc_mlir.graph import BlockBuilder, Var, op, rewrite
from mlc_mlir.graph.legalize import te_binary, te_matmul, te_permute_dims, te_relu
from mlc_mlir.graph.transform import FuseDenseAddPass, FuseOps, FuseTIR, LegalizeOps, remove_all_unused

#: kernels (call_tir of tensor programs) of the MLP: unfused, after FuseDenseAdd, after FuseOps
KERNELS_UNFUSED, KERNELS_DENSE_ADD, KERNELS_FUSED = 7, 5, 2


def create_model(params: dict[str, np.ndarray], batch: int | str = "n") -> mlc.Module:
    """The course's ``MLPModel``: ``relu(x @ w0.T + b0) @ w1.T + b1`` with constant weights."""
    bb = BlockBuilder()
    x = Var("x", (batch, 64), "float32")
    w0, b0 = mlc.graph.const(params["w0"]), mlc.graph.const(params["b0"])
    w1, b1 = mlc.graph.const(params["w1"]), mlc.graph.const(params["b1"])
    with bb.function("main", [x]):
        with bb.dataflow():
            lv0 = bb.emit(op.matmul(x, op.permute_dims(w0)))
            lv1 = bb.emit(op.add(lv0, b0))
            lv2 = bb.emit(op.relu(lv1))
            lv3 = bb.emit(op.matmul(lv2, op.permute_dims(w1)))
            lv4 = bb.emit(op.add(lv3, b1))
            gv = bb.emit_output(lv4)
        bb.emit_func_output(gv)
    return bb.get()


# -- 7.3 pattern match and rewriting ------------------------------------------------------
@rewrite.pattern("add")
def ewise_fma_rewrite(add: rewrite.Node):
    """The course's EwiseFMARewriter: add(multiply(a, b), c) -> ewise_fma(a, b, c)."""
    mul = add.args[0]
    if mul.op != "multiply":
        return None
    return op.ewise_fma(mul.args[0], mul.args[1], add.args[1])


def fma_demo() -> mlc.Module:
    """``main(x, y) = x * y + y`` rewritten to one ewise_fma (the multiply removed)."""
    bb = BlockBuilder()
    x, y = Var("x", (3, 4)), Var("y", (3, 4))
    with bb.function("main", [x, y]):
        with bb.dataflow():
            lv0 = bb.emit(op.multiply(x, y))
            gv0 = bb.emit_output(op.add(lv0, y))
        bb.emit_func_output(gv0)
    return remove_all_unused(ewise_fma_rewrite(bb.get()))


# -- 7.5 map to tensor programs: the course's op_map --------------------------------------
def map_matmul(bb, call):
    x, w = call.args
    return bb.call_te(te_matmul, x, w)


def map_add(bb, call):
    a, b = call.args
    return bb.call_te(te_binary("add"), a, b)


def map_relu(bb, call):
    return bb.call_te(te_relu, call.args[0])


def map_transpose(bb, call):
    return bb.call_te(te_permute_dims, call.args[0], call.attrs["axes"])


OP_MAP = {"relax.matmul": map_matmul, "relax.add": map_add, "relax.nn.relu": map_relu,
          "relax.permute_dims": map_transpose}


def show(mod: mlc.Module) -> str:
    """The module as text, weights elided (bound constants are dense_resource blobs)."""
    return mod.mlir_module.operation.get_asm(large_elements_limit=16, large_resource_limit=16,
                                             use_name_loc_as_prefix=True)


def run(mod: mlc.Module, x: np.ndarray, **build_kw) -> np.ndarray:
    """Build ``mod`` and run ``main`` on ``x``."""
    vm = mlc.graph.VirtualMachine(mlc.graph.build(mod, **build_kw), mlc.cpu())
    return vm["main"](x).numpy()


def check(title: str, logits: np.ndarray, ref: np.ndarray, y: np.ndarray) -> None:
    """Same argmax as NumPy on every sample, logits allclose; SystemExit otherwise."""
    same = bool(np.array_equal(logits.argmax(1), ref.argmax(1)))
    close = bool(np.allclose(logits, ref, rtol=1e-4, atol=1e-4))
    acc = float((logits.argmax(1) == y).mean())
    print(f"  {title:<44} accuracy {acc:6.2%}   predictions equal NumPy's: {same}   logits allclose: {close}")
    if not (same and close):
        raise SystemExit(f"{title}: the compiled model disagrees with the NumPy reference")


def fusion_section(params: dict[str, np.ndarray], x: np.ndarray, y: np.ndarray, ref: np.ndarray,
                   *, verbose: bool = False) -> dict[str, int]:
    """Run the course ch.7 flow on ``MLPModel``; returns the kernel counts it asserted."""
    count = mlc.graph.count_kernels
    model = create_model(params)
    unfused = LegalizeOps(OP_MAP)(model)
    dense_add = FuseTIR()(LegalizeOps(OP_MAP)(FuseDenseAddPass()(model)))
    fused = FuseTIR()(LegalizeOps(OP_MAP)(FuseOps()(model)))
    counts = {"unfused": count(unfused), "fuse_dense_add": count(dense_add), "fuse_ops": count(fused)}
    if verbose:
        print(show(FuseDenseAddPass()(model)))
        print(show(fused))
    print(f"  kernels (tensor programs called): {counts['unfused']} unfused -> {counts['fuse_dense_add']} after "
          f"FuseDenseAddPass -> {counts['fuse_ops']} after FuseOps + FuseTIR")
    print(f"  fused tensor programs: {', '.join('@' + f for f in fused.functions if f != 'main')}")
    assert counts == {"unfused": KERNELS_UNFUSED, "fuse_dense_add": KERNELS_DENSE_ADD,
                      "fuse_ops": KERNELS_FUSED}, counts
    check("unfused (LegalizeOps with the course's op_map)", run(unfused, x, opt_level=0), ref, y)
    check("FuseDenseAddPass -> LegalizeOps -> FuseTIR", run(dense_add, x, opt_level=0), ref, y)
    check("FuseOps -> LegalizeOps -> FuseTIR", run(fused, x, opt_level=0), ref, y)
    check("graph.build(MLPModel, opt_level=2)", run(model, x), ref, y)
    return counts


def main() -> int:
    """Train, then rewrite, fuse, build and check on the digits test split."""
    import mlp_digits

    t0 = time.perf_counter()
    x_train, y_train, x_test, y_test = mlp_digits.load_data()
    params = mlp_digits.train_mlp(x_train, y_train)
    ref = mlp_digits.numpy_mlp(x_test, params["w0"], params["b0"], params["w1"], params["b1"])
    print("Pattern rewrite: multiply + add -> ewise_fma, then remove_all_unused:")
    print(fma_demo()["main"])
    print(f"Course ch.7 on MLPModel (64 -> 128 -> 10, digits, {len(x_test)} test samples):")
    fusion_section(params, x_test, y_test, ref, verbose="-v" in sys.argv)
    print(f"Fusion checks passed ({time.perf_counter() - t0:.1f}s in total).")
    return 0


if __name__ == "__main__":
    sys.exit(main())
