"""Graph optimization passes (course ch.7): rewrite patterns, remove_all_unused,
FuseDenseAddPass, the op_map with fusion, FuseTIR programs built and scheduled on their
own, the build's opt_level, module passes, and the errors (GraphError naming the problem)."""

from __future__ import annotations

import numpy as np
import pytest

import mlc_mlir as mlc
from mlc_mlir import te
from mlc_mlir.graph import BlockBuilder, Var, op, rewrite
from mlc_mlir.graph.legalize import te_binary, te_matmul, te_permute_dims, te_relu
from mlc_mlir.graph.transform import (FuseDenseAddPass, FuseOps, FuseTIR, LegalizeOps, Sequential,
                                      module_pass, remove_all_unused)
from mlc_mlir.testing import filecheck


def fma_module(shape_c=(3, 4)) -> mlc.Module:
    x, y, c = Var("x", (3, 4)), Var("y", (3, 4)), Var("c", shape_c)
    bb = BlockBuilder()
    with bb.function("main", [x, y, c]):
        with bb.dataflow():
            lv0 = bb.emit(op.multiply(x, y))
            gv = bb.emit_output(op.add(lv0, c))
        bb.emit_func_output(gv)
    return bb.get()


def mlp_module(batch=4, hidden=16, seed=0):
    rng = np.random.default_rng(seed)
    w0, b0 = rng.standard_normal((hidden, 8)).astype("float32"), rng.standard_normal(hidden).astype("float32")
    w1, b1 = rng.standard_normal((3, hidden)).astype("float32"), rng.standard_normal(3).astype("float32")
    bb = BlockBuilder()
    x = Var("x", (batch, 8))
    with bb.function("main", [x]):
        with bb.dataflow():
            lv0 = bb.emit(op.matmul(x, op.permute_dims(mlc.graph.const(w0))))
            lv1 = bb.emit(op.relu(op.add(lv0, mlc.graph.const(b0))))
            lv2 = bb.emit(op.matmul(lv1, op.permute_dims(mlc.graph.const(w1))))
            gv = bb.emit_output(op.add(lv2, mlc.graph.const(b1)))
        bb.emit_func_output(gv)
    ref = lambda a: np.maximum(a @ w0.T + b0, 0) @ w1.T + b1  # noqa: E731
    return bb.get(), ref


def run(mod, *arrays, **kw):
    return mlc.graph.VirtualMachine(mlc.graph.build(mod, **kw), mlc.cpu())["main"](*arrays).numpy()


# -- rewrite patterns and remove_all_unused ------------------------------------------------
def test_ewise_fma_rewrite_then_remove_unused(rng):
    mod = fma_module()
    rewritten = rewrite.ewise_fma(mod)
    assert rewritten.rewrite_count == 1
    text = rewritten.script()
    filecheck(text, """
        CHECK: func.func @main(%[[X:.+]]: {{.+}}, %[[Y:.+]]: {{.+}}, %[[C:[^:]+]]:
        CHECK: "mlc.multiply"
        CHECK: "mlc.ewise_fma"(%[[X]], %[[Y]], %[[C]])
    """)
    assert "ewise_fma" not in mod.script()  # the input is untouched
    clean = remove_all_unused(rewritten)
    assert '"mlc.multiply"' not in clean.script()
    fn = remove_all_unused(rewritten["main"])
    assert isinstance(fn, mlc.Function) and '"mlc.multiply"' not in fn.script()
    arrays = [rng.standard_normal((3, 4)).astype("float32") for _ in range(3)]
    np.testing.assert_allclose(run(clean, *arrays, opt_level=0), arrays[0] * arrays[1] + arrays[2], rtol=1e-6)


def test_ewise_fma_needs_equal_shapes():
    assert rewrite.ewise_fma(fma_module(shape_c=(4,))).rewrite_count == 0


def test_user_pattern_with_several_ops_and_symbolic_shapes(rng):
    @rewrite.pattern("relu")
    def relu_of_subtract(relu):
        sub = relu.args[0]
        if sub.op != "subtract":
            return None
        return op.relu(op.add(sub.args[0], op.multiply(sub.args[1], mlc.graph.const(np.float32(-1)))))

    x, y = Var("x", ("n", 4)), Var("y", (4,))
    bb = BlockBuilder()
    with bb.function("main", [x, y]):
        with bb.dataflow():
            gv = bb.emit_output(op.relu(op.subtract(x, y)))
        bb.emit_func_output(gv)
    out = remove_all_unused(relu_of_subtract(bb.get()))
    assert '"mlc.subtract"' not in out.script() and 'mlc.shape = ["n", 4]' in out.script()
    xa, ya = rng.standard_normal((5, 4)).astype("float32"), rng.standard_normal(4).astype("float32")
    np.testing.assert_allclose(run(out, xa, ya), np.maximum(xa - ya, 0), rtol=1e-6)


def test_pattern_errors():
    with pytest.raises(mlc.GraphError, match="root must be a graph op name, got 'conv9d'"):
        rewrite.Pattern("conv9d", lambda n: None)

    @rewrite.pattern("add")
    def bad(add):
        return 42

    with pytest.raises(mlc.GraphError, match="rewrite pattern bad returned int"):
        bad(fma_module())

    @rewrite.pattern("add")
    def boom(add):
        raise ValueError("boom in a pattern")

    with pytest.raises(ValueError, match="boom in a pattern"):
        boom(fma_module())

    @rewrite.pattern("add")
    def wrong_shape(add):
        return op.permute_dims(add.args[1], (1, 0))

    with pytest.raises(mlc.GraphError, match=r"wrong_shape replaced add \(3, 4\) float32 by a value of \(4, 3\)"):
        wrong_shape(fma_module())

    @rewrite.pattern("add")
    def forever(add):
        return op.add(add.args[1], add.args[0])

    with pytest.raises(mlc.GraphError, match="did not converge"):
        forever(fma_module())

    @rewrite.pattern("add")
    def outline_wrong(add, rw):
        return rw.outline([add.args[0]], "f")

    with pytest.raises(mlc.GraphError, match="must include the matched op"):
        outline_wrong(fma_module())
    with pytest.raises(mlc.GraphError, match="expects an mlc.Module"):
        rewrite.apply_patterns("not a module", [bad])
    with pytest.raises(mlc.GraphError, match="remove_all_unused expects an mlc.Module or a Function"):
        remove_all_unused(42)


# -- FuseDenseAddPass, op_map, FuseTIR ----------------------------------------------------
def map_matmul(bb, call):
    return bb.call_te(te_matmul, *call.args)


def map_add(bb, call):
    return bb.call_te(te_binary("add"), *call.args)


def map_relu(bb, call):
    return bb.call_te(te_relu, call.args[0])


def map_transpose(bb, call):
    return bb.call_te(te_permute_dims, call.args[0], call.attrs["axes"])


COURSE_OP_MAP = {"relax.matmul": map_matmul, "relax.add": map_add, "relax.nn.relu": map_relu,
                 "relax.permute_dims": map_transpose}


def test_course_flow_fuse_dense_add_op_map_fuse_tir(rng):
    mod, ref = mlp_module()
    fused = FuseDenseAddPass()(mod)
    assert [f for f in fused.functions if f.startswith("fused")] == ["fused_matmul_add0", "fused_matmul_add1"]
    assert "mlc.primitive" in fused["fused_matmul_add0"].script()
    lowered = LegalizeOps(COURSE_OP_MAP)(fused)
    assert "te_relu" in lowered.functions  # the user's rules ran, primitive functions included
    final = FuseTIR()(lowered)
    assert mlc.graph.count_kernels(lowered) == 7 and mlc.graph.count_kernels(final) == 5
    x = rng.standard_normal((4, 8)).astype("float32")
    np.testing.assert_allclose(run(final, x, opt_level=0), ref(x), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(run(fused, x, opt_level=0), ref(x), rtol=1e-4, atol=1e-4)  # inlined calls


def test_fuse_ops_with_op_map_and_pipeline(rng):
    mod, ref = mlp_module()
    pipeline = Sequential([FuseOps(), LegalizeOps(COURSE_OP_MAP), FuseTIR()])
    final = pipeline(mod)
    assert mlc.graph.count_kernels(LegalizeOps()(mod)) == 7 and mlc.graph.count_kernels(final) == 2
    x = rng.standard_normal((4, 8)).astype("float32")
    np.testing.assert_allclose(run(final, x), ref(x), rtol=1e-4, atol=1e-4)
    ex = mlc.graph.build(mod, opt_level=2, op_map=COURSE_OP_MAP)
    assert mlc.graph.count_kernels(ex.optimized) == 2
    assert mlc.graph.count_kernels(mlc.graph.build(mod, opt_level=0).optimized) == 7


def test_fused_program_builds_and_schedules_alone(rng):
    mod, _ = mlp_module(batch=8, hidden=32)
    final = FuseTIR()(LegalizeOps()(FuseOps()(mod)))
    name = "fused_permute_dims_matmul_add_relu"
    prog = mlc.Module.parse(str(final[name].op))
    fop = prog[name].op
    assert "mlc.prim_func" in fop.attributes
    assert len(prog[name].function_type.inputs) == 4  # w, x, b (first-use order), out
    w, x, b = (rng.standard_normal(s).astype("float32") for s in [(32, 8), (8, 8), (32,)])
    want = np.maximum(x @ w.T + b, 0)
    out = np.zeros((8, 32), "float32")
    mlc.build(prog)[name](w, x, b, out)
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)
    sch = mlc.Schedule(prog)
    i, _, _ = sch.get_loops(sch.get_block("matmul"))
    sch.split(i, [None, 4])
    sch.get_block("relu")
    out2 = np.zeros((8, 32), "float32")
    mlc.build(sch.mod)[name](w, x, b, out2)
    np.testing.assert_allclose(out2, want, rtol=1e-5, atol=1e-5)


def test_fuse_ops_on_te_programs(rng):
    """FuseOps reads the kinds of call_tir programs from their linalg ops (emit_te graphs)."""
    def te_mm(a, b):
        k = te.reduce_axis((0, a.shape[1]), "k")
        return te.compute((a.shape[0], b.shape[1]), lambda i, j: te.sum(a[i, k] * b[k, j], axis=k), name="mm")

    x, w = Var("x", ("n", 6)), Var("w", (6, 5))
    bb = BlockBuilder()
    with bb.function("main", [x, w]):
        with bb.dataflow():
            lv0 = bb.emit_te(te_mm, x, w)
            gv = bb.emit_output(bb.emit_te(te_relu, lv0))
        bb.emit_func_output(gv)
    mod = bb.get()
    fused = FuseTIR()(FuseOps()(mod))
    assert mlc.graph.count_kernels(fused) == 1 and "fused_te_mm_te_relu" in fused.functions
    xa, wa = rng.standard_normal((7, 6)).astype("float32"), rng.standard_normal((6, 5)).astype("float32")
    np.testing.assert_allclose(run(fused, xa, wa, opt_level=0), np.maximum(xa @ wa, 0), rtol=1e-5, atol=1e-5)


# -- module passes, build levels, errors --------------------------------------------------
def test_module_pass_decorator_and_sequential():
    seen = []

    @module_pass(opt_level=3, name="Spy")
    def spy(mod, ctx):
        seen.append(ctx.opt_level)

    @module_pass(opt_level=1)
    class Rewrite:
        def transform_module(self, mod, ctx):
            return rewrite.ewise_fma(mod)

    mod = fma_module()
    out = Sequential([spy, Rewrite()], opt_level=2)(mod)
    assert seen == [] and "ewise_fma" in out.script()
    assert spy(mod) is not mod and seen == [2]
    with pytest.raises(mlc.GraphError, match="needs a transform_module"):
        module_pass(type("NoTransform", (), {}))

    @module_pass
    def wrong(mod, ctx):
        return "nope"

    with pytest.raises(mlc.GraphError, match="pass wrong returned str"):
        wrong(mod)


def test_fusion_errors():
    mod, _ = mlp_module()
    with pytest.raises(mlc.GraphError, match="still has graph op mlc.permute_dims; run LegalizeOps first"):
        FuseTIR()(FuseOps()(mod))
    with pytest.raises(mlc.GraphError, match="opt_level must be an int from 0 to 3, got 7"):
        mlc.graph.build(mod, opt_level=7)
    with pytest.raises(mlc.GraphError, match="'relax.conv9d' is not a graph op"):
        LegalizeOps({"relax.conv9d": map_relu})
    with pytest.raises(mlc.GraphError, match="FuseOps expects an mlc.Module"):
        FuseOps()(mod["main"])


def test_build_levels_agree(rng):
    mod, ref = mlp_module(batch=5)
    x = rng.standard_normal((5, 8)).astype("float32")
    for level in range(4):
        np.testing.assert_allclose(run(mod, x, opt_level=level), ref(x), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("act", ["relu", "gelu_tanh", "relu6"])
def test_activation_between_reshapes_fuses_with_the_linear_layer(act):
    """torch's Linear on a 3-D input is view -> addmm -> view: the activation sat between a
    reshape and its inverse, and FuseOps stopped at the reshape (the activation a kernel of
    its own over the whole result). rewrite-reshape-unary moves it onto the 2-D result:
    one kernel fewer, the activation fused with the matmul + bias, equal to torch."""
    torch = pytest.importorskip("torch")
    from mlc_mlir.graph.transform.optimize import count_kernels, optimize
    layer = {"relu": torch.nn.ReLU(), "gelu_tanh": torch.nn.GELU(approximate="tanh"), "relu6": torch.nn.ReLU6()}[act]
    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Linear(32, 64), layer, torch.nn.Linear(64, 32)).eval()
    x = torch.randn(2, 8, 32)
    mod = mlc.frontend.from_exported_program(torch.export.export(m, (x,)))
    before, after = optimize(mod, opt_level=1), optimize(mod, opt_level=2)
    assert count_kernels(after) == count_kernels(before) - 1
    name = {"relu6": "clip"}.get(act, act)
    fused = [f for f in after.functions if f.startswith("fused_matmul_add_") and f.endswith(name)]
    assert fused and not any("reshape_" + name in f for f in after.functions), after.functions
    ex = mlc.graph.build(mod, "llvm", cache=False)
    y = mlc.graph.VirtualMachine(ex, mlc.cpu())["main"](x.numpy()).numpy()
    np.testing.assert_allclose(y, m(x).detach().numpy(), rtol=1e-5, atol=1e-5)


def test_transpose_before_a_projection_moves_after_it():
    """nn.MultiheadAttention with batch_first=True turns its input seq-first before the packed
    q/k/v projection; rewrite-matmul-permute computes the projection on the batch-first input
    and transposes its result (no matmul of a few rows per batch), equal to torch."""
    torch = pytest.importorskip("torch")
    from mlc_mlir.graph.transform.optimize import optimize
    from mlc_mlir.testing import models
    torch.manual_seed(0)
    m = models.seeded(torch.nn.MultiheadAttention(32, 4, batch_first=True)).eval()
    x = torch.randn(3, 10, 32)

    class SelfAttention(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.mha = m

        def forward(self, x):
            return self.mha(x, x, x, need_weights=False)[0]

    mod = mlc.frontend.from_exported_program(torch.export.export(SelfAttention().eval(), (x,)))
    before, after = optimize(mod, opt_level=1), optimize(mod, opt_level=2)
    assert any(f.startswith("fused_permute_dims_matmul") for f in before.functions), before.functions
    assert not any(f.startswith("fused_permute_dims_matmul") for f in after.functions), after.functions
    ex = mlc.graph.build(mod, "llvm", cache=False)
    y = mlc.graph.VirtualMachine(ex, mlc.cpu())["main"](x.numpy()).numpy()
    with torch.no_grad():
        ref = m(x, x, x, need_weights=False)[0].numpy()
    np.testing.assert_allclose(y, ref, rtol=1e-5, atol=1e-5)
