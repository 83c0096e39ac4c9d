"""``rfactor``: partial sums of a reduction in vector lanes (``x @ w.T``, both operands
contiguous along k), the default rules' schedule for it, and the course MLP's kernels
built through graph.build with it (no timing here: benchmarks/bench_tune.py)."""

import numpy as np
import pytest

import mlc_mlir as mlc
from mlc_mlir.schedule import Schedule, Trace
from mlc_mlir.schedule.rules import default_schedule
from mlc_mlir.testing import filecheck
from mlc_mlir.testing.programs import linear

from test_schedule_perf_shape import ir_after_stage


def linear_relu(m=64, n=32, k=96):
    """Y = x @ w.T (block Y), C = relu(Y)."""
    return linear(m, n, k, transposed=True, name="lin")


def rfactor_schedule(mod, mr=2, nr=4):
    sch = Schedule(mod)
    y = sch.get_block("Y")
    i, j, k = sch.get_loops(y)
    k0, k1 = sch.split(k, [None, 8])
    rf = sch.rfactor(k1)
    i, j, k0, lanes = sch.get_loops(rf)
    i0, i1 = sch.split(i, [None, mr])
    j0, j1 = sch.split(j, [None, nr])
    sch.reorder(i0, j0, k0, i1, j1, lanes)
    sch.vectorize(lanes)
    sch.unroll(j1)
    sch.unroll(i1)
    sch.decompose_reduction(rf, k0)
    sch.reverse_compute_at(y, j0)
    sch.reverse_compute_at(sch.get_block("C"), j0)
    return sch


def run(mod, rng, m=64, n=32, k=96):
    x = rng.standard_normal((m, k)).astype("float32")
    w = rng.standard_normal((n, k)).astype("float32")
    out = np.full((m, n), np.nan, "float32")
    mlc.build(mod)["lin"](x, w, out)
    np.testing.assert_allclose(out, np.maximum(x.astype("float64") @ w.T, 0), rtol=1e-4, atol=1e-4)


def test_rfactor_equals_numpy_and_replays(rng):
    sch = rfactor_schedule(linear_relu())
    assert "Y_rf = " not in str(sch.trace) and "sch.rfactor(loop=l" in str(sch.trace)
    assert [lp.name for lp in sch.get_loops("Y")] == ["i_0", "j_0", "ax0", "ax1", "ax2"]
    run(sch.mod, rng)
    again = Schedule(linear_relu()).replay(Trace.from_json(sch.trace.to_json_str()))
    assert str(again.mod) == str(sch.mod)


def test_rfactor_ir_keeps_partial_sums_in_vector_registers(capsys):
    sch = rfactor_schedule(linear_relu())
    filecheck(str(sch.mod), """
    CHECK: tensor.expand_shape %arg0 {{.*}} into tensor<64x12x8xf32>
    CHECK: tensor.expand_shape %arg1 {{.*}} into tensor<32x12x8xf32>
    CHECK: scf.for {{.*}} -> (tensor<2x4x8xf32>)
    CHECK: linalg.generic {{.*}}["parallel", "parallel", "reduction"]} ins({{.*}} : tensor<2x4x8xf32>)
    """)
    after, _ = ir_after_stage(sch.mod, "vector-opt", capsys)
    # the k0 loop carries the 2 x 4 partial-sum vectors; one FMA (or mul + add) per vector;
    # A and B read in rows of 8 through their (M, K / 8, 8) views: the views removed before
    # vector-opt, the rows read from the arguments (compiler/vector_opt.py: reshapes_as_casts)
    filecheck(after, """
    CHECK: scf.for {{.*}} iter_args({{.*}}) -> (vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>)
    CHECK: vector.load %arg0
    CHECK: vector.load %arg1
    CHECK: scf.yield
    """)


def test_default_rules_use_rfactor_for_transposed_b(rng):
    sch = Schedule(linear_relu())
    mlc.schedule.rules.apply_rules(sch, "llvm -mcpu=haswell -num-cores=1")
    assert "sch.rfactor(" in str(sch.trace)
    run(sch.mod, rng)


@pytest.mark.parametrize("batch", [1, 8])
def test_course_mlp_builds_with_rfactor(rng, batch):
    from mlc_mlir.graph import BlockBuilder, Var, op

    p = {"w0": rng.standard_normal((128, 784)).astype("float32"), "b0": rng.standard_normal(128).astype("float32"),
         "w1": rng.standard_normal((10, 128)).astype("float32"), "b1": rng.standard_normal(10).astype("float32")}
    bb = BlockBuilder()
    x = Var("x", (batch, 784), "float32")
    with bb.function("main", [x]):
        with bb.dataflow():
            h = bb.emit(op.relu(op.add(op.matmul(x, op.permute_dims(mlc.graph.const(p["w0"]))),
                                       mlc.graph.const(p["b0"]))))
            out = bb.emit_output(op.add(op.matmul(h, op.permute_dims(mlc.graph.const(p["w1"]))),
                                        mlc.graph.const(p["b1"])))
        bb.emit_func_output(out)
    vm = mlc.graph.VirtualMachine(mlc.graph.build(bb.get(), target="llvm -num-cores=1"), mlc.cpu())
    xv = rng.standard_normal((batch, 784)).astype("float32")
    ref = np.maximum(xv @ p["w0"].T + p["b0"], 0) @ p["w1"].T + p["b1"]
    np.testing.assert_allclose(vm["main"](xv).numpy(), ref, rtol=1e-3, atol=1e-3)


def test_rfactor_errors():
    sch = Schedule(linear_relu())
    y = sch.get_block("Y")
    i, j, k = sch.get_loops(y)
    with pytest.raises(mlc.ScheduleError, match="innermost loop of the reduction dim"):
        sch.rfactor(i)
    with pytest.raises(mlc.ScheduleError, match="split once"):
        sch.rfactor(k)
    k0, k1 = sch.split(k, [None, 8])
    with pytest.raises(mlc.ScheduleError, match="last axis"):
        sch.rfactor(k1, factor_axis=0)
    sch.reverse_compute_at(sch.get_block("C"), j)
    with pytest.raises(mlc.ScheduleError, match="attached"):
        sch.rfactor(k1)


def test_rfactor_refuses_a_body_reading_its_indices():
    """cumsum (``sum_k (k <= i ? a[k] : 0)``) split into partial sums lost k's lanes
    (upstream's split_reduction keeps the body's ``linalg.index k``): every element came out
    as the row's total on AVX2, where the default rules chose rfactor for int64 rows of 4."""
    from mlc_mlir import te, topi

    a = te.placeholder((3, 64), "float32", name="A")
    sch = Schedule(te.create_prim_func([a, topi.cumsum(a, -1)]))
    i, j, k = sch.get_loops(sch.get_block("cumsum"))
    k0, k1 = sch.split(k, [None, 8])
    with pytest.raises(mlc.ScheduleError, match=r"body of block 'cumsum' reads its loop indices \(linalg.index"):
        sch.rfactor(k1)


def test_rfactor_refuses_an_input_read_at_a_constant_index():
    """log_softmax's sum reads its row maxima at ``max[i, 0]``: upstream's split_reduction
    asserted on that map (the interpreter aborted); now a ScheduleError, and the default
    rules keep log_softmax's blocks one by one, equal to NumPy."""
    from mlc_mlir import te, topi

    a = te.placeholder((5, 32), "float32", name="A")
    mod = te.create_prim_func([a, topi.nn.log_softmax(a, -1)])
    sch = Schedule(mod)
    k0, k1 = sch.split(sch.get_loops(sch.get_block("sum"))[-1], [None, 8])
    with pytest.raises(mlc.ScheduleError, match=r"block 'sum' reads an input at an index that is not a loop index"):
        sch.rfactor(k1)
    x = np.random.default_rng(0).standard_normal((5, 32), dtype=np.float32)
    out = np.zeros_like(x)
    mlc.build(default_schedule(mod, "llvm -mcpu=haswell"))[mod.functions[0]](x, out)
    m = x.max(-1, keepdims=True)
    np.testing.assert_allclose(out, x - m - np.log(np.exp(x - m).sum(-1, keepdims=True)), rtol=1e-5, atol=1e-5)


def two_row_sums(rows=3, k=8):
    """LayerNorm's two reductions of one input: S1 = row sum, S2 = row sum of squares, C = S1 + S2."""
    from mlc_mlir import te

    x = te.placeholder((rows, k), "float32", name="x")
    r1, r2 = te.reduce_axis((0, k), "r1"), te.reduce_axis((0, k), "r2")
    s1 = te.compute((rows,), lambda i: te.sum(x[i, r1], axis=r1), name="S1")
    s2 = te.compute((rows,), lambda i: te.sum(x[i, r2] * x[i, r2], axis=r2), name="S2")
    c = te.compute((rows,), lambda i: s1[i] + s2[i], name="C")
    return te.create_prim_func([x, c], name="f")


@pytest.mark.parametrize("rows, unrolled", [(3, "S1 S2"), (3, "S2"), (6, "S1 S2"), (9, "S1 S2")])
def test_two_rfactored_reductions_with_unrolled_rows(rng, rows, unrolled):
    """Both partial-sum chains start from one zero tensor; upstream bufferization took the
    first row's vector write for a write of the whole tensor and let the second chain read
    the first one's rows (C = [6.29, -4.12, 7.14] instead of [6.29, 2.96, 5.62])."""
    sch = Schedule(two_row_sums(rows))
    for name in ("S1", "S2"):
        i, k = sch.get_loops(sch.get_block(name))
        _, k1 = sch.split(k, [None, 8])
        rf = sch.rfactor(k1)
        i, k0, lanes = sch.get_loops(rf)
        i0, i1 = sch.split(i, [None, 3])
        sch.reorder(i0, k0, i1, lanes)
        sch.vectorize(lanes)
        if name in unrolled:
            sch.unroll(i1)
    x = rng.standard_normal((rows, 8)).astype("float32")
    out = np.full(rows, np.nan, "float32")
    mlc.build(sch.mod)["f"](x, out)
    np.testing.assert_allclose(out, x.sum(1) + (x * x).sum(1), rtol=1e-5, atol=1e-5)
