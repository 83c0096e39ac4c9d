"""Issue 21: realistic bugs a planted-bug exercise found the suite missed, one test each.

Each test fails with its bug planted and passes without it:

1. ``loop_deps.is_parallel`` ignoring the slab size (overlapping writes taken as disjoint);
2. a trip count rounded down instead of up (``loop_deps.trip_count`` and the schedule's
   ``FuncState.trip_count``, which ``unroll`` fully unrolls by);
3. FuseTIR's renaming of a third op whose name is already taken;
4. FoldConstant ignoring ``permute_dims`` axes;
5. the tuning database raising on a torn last line (or losing the next record);
6. the torch frontends ignoring LayerNorm's ``eps``;
7. a peeled remainder unrolled by the main tile's trip count.
"""

from __future__ import annotations

import numpy as np
import pytest
from mlir import ir

import mlc_mlir as mlc
from mlc_mlir import te
from mlc_mlir.compiler.loop_deps import is_parallel, trip_count
from mlc_mlir.context import mlc_context
from mlc_mlir.graph import BlockBuilder, Var, op
from mlc_mlir.graph.transform import FoldConstant, FuseTIR, LegalizeOps
from mlc_mlir.schedule import Schedule
from mlc_mlir.testing import check_mm_relu, check_schedule, filecheck
from mlc_mlir.testing.programs import linear, mm_relu
from mlc_mlir.tune.database import JSONDatabase, TuningRecord


def _loops(text: str) -> list[bool]:
    """``is_parallel`` of each top-level ``scf.for`` of the one function in ``text``."""
    with mlc_context():
        m = ir.Module.parse(text)
        func = next(o for o in m.body.operations if o.operation.name == "func.func")
        return [is_parallel(o.operation) for o in func.regions[0].blocks[0].operations
                if o.operation.name == "scf.for"]


# -- 1. is_parallel: the slab's size counts ------------------------------------------------

def test_is_parallel_sees_overlapping_slabs():
    """Iteration i writes rows [i, i + 2): iterations i and i + 1 both write row i + 1."""
    view = "memref<2x4xf32, strided<[4, 1], offset: ?>>"
    text = f"""
      func.func @f(%buf: memref<20x4xf32>, %v: memref<16xf32>) {{
        %c0 = arith.constant 0 : index
        %c1 = arith.constant 1 : index
        %c2 = arith.constant 2 : index
        %c3 = arith.constant 3 : index
        %c8 = arith.constant 8 : index
        %z = arith.constant 0.0 : f32
        %zv = arith.constant dense<0.0> : vector<4xf32>
        scf.for %i = %c0 to %c8 step %c1 {{
          %s = memref.subview %buf[%i, 0] [2, 4] [1, 1] : memref<20x4xf32> to {view}
          linalg.fill ins(%z : f32) outs(%s : {view})
        }}
        scf.for %i = %c0 to %c8 step %c2 {{
          %s = memref.subview %buf[%i, 0] [2, 4] [1, 1] : memref<20x4xf32> to {view}
          linalg.fill ins(%z : f32) outs(%s : {view})
        }}
        scf.for %i = %c0 to %c3 step %c1 {{
          %j = arith.muli %i, %c2 : index
          vector.store %zv, %v[%j] : memref<16xf32>, vector<4xf32>
        }}
        scf.for %i = %c0 to %c3 step %c1 {{
          %j = affine.apply affine_map<(d0) -> (d0 * 4)>(%i)
          vector.store %zv, %v[%j] : memref<16xf32>, vector<4xf32>
        }}
        return
      }}"""
    # 2-row slabs at step 1 overlap, at step 2 they tile; 4-lane stores 2 apart overlap, 4 apart do not
    assert _loops(text) == [False, True, False, True]


# -- 2. trip counts round up ---------------------------------------------------------------

def test_loop_trip_count_rounds_up():
    with mlc_context():
        m = ir.Module.parse("""
          func.func @f(%n: index) {
            %c0 = arith.constant 0 : index
            %c2 = arith.constant 2 : index
            %c4 = arith.constant 4 : index
            %c10 = arith.constant 10 : index
            scf.for %i = %c0 to %c10 step %c4 { }
            scf.for %i = %c2 to %c10 step %c4 { }
            scf.for %i = %c10 to %c2 step %c4 { }
            scf.for %i = %c0 to %n step %c4 { }
            return
          }""")
        func = m.body.operations[0]
        loops = [o.operation for o in func.regions[0].blocks[0].operations if o.operation.name == "scf.for"]
        assert [trip_count(lp) for lp in loops] == [3, 2, 0, None]


def _double(rows: int) -> Schedule:
    a = te.placeholder((rows, 16), "float32", name="A")
    b = te.compute((rows, 16), lambda i, j: a[i, j] * 2.0, name="B")
    return Schedule(te.create_prim_func([a, b], name="double"))


@pytest.mark.parametrize("factor", [6, 4])
def test_unroll_of_a_partial_tiled_loop_unrolls_every_tile(factor):
    """10 rows split by 6 (6 + 4 rows) or 4 (4 + 4 + 2): unroll leaves no loop (by a
    trip count rounded down, 1, the loop stayed)."""
    sch = _double(10)
    i, _ = sch.get_loops(sch.get_block("B"))
    i0, _ = sch.split(i, [None, factor])
    sch.unroll(i0)
    text = str(sch.mod)
    assert "scf.for" not in text and text.count('mlc.block = "B"') == -(-10 // factor)
    x = np.random.default_rng(0).standard_normal((10, 16)).astype("float32")
    check_schedule(sch, "double", [x, np.zeros_like(x)], 2 * x)  # numerics, and the trace replays


def test_unroll_refuses_one_trip_over_the_limit():
    """1026 rows split by 4: 257 trips (256 full tiles and one of 2 rows), over MAX_UNROLL."""
    from mlc_mlir.schedule.loops import MAX_UNROLL

    assert MAX_UNROLL == 256
    sch = _double(1026)
    i, _ = sch.get_loops(sch.get_block("B"))
    i0, _ = sch.split(i, [None, 4])
    with pytest.raises(mlc.ScheduleError, match="257 iterations"):
        sch.unroll(i0)


# -- 3. FuseTIR: three ops whose names collide -----------------------------------------------

_MM3 = """
func.func private @fused_mm3(%x: tensor<2x4xf32> {mlc.name = "x"}, %w: tensor<4x4xf32> {mlc.name = "w"})
    -> tensor<2x4xf32> attributes {mlc.graph, mlc.primitive} {
  %0 = "mlc.matmul"(%x, %w) : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  %1 = "mlc.matmul"(%0, %w) : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  %2 = "mlc.matmul"(%1, %w) : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  return %2 : tensor<2x4xf32>
}
func.func @main(%x: tensor<2x4xf32> {mlc.name = "x"}, %w: tensor<4x4xf32> {mlc.name = "w"})
    -> tensor<2x4xf32> attributes {mlc.graph} {
  %0 = "mlc.dataflow"() ({
    %1 = func.call @fused_mm3(%x, %w) : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
    "mlc.output"(%1) {operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<2x4xf32>) -> ()
    omp.terminator
  }) {resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : () -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}
"""


def _block_names(mod: mlc.Module, func: str) -> tuple[list[str], list[str]]:
    body = str(mod).split(f"func.func @{func}(")[1].split("func.func")[0]
    blocks = [s.split('"')[0] for s in body.split('mlc.block = "')[1:]]
    inits = [s.split('"')[0] for s in body.split('mlc.block_init = "')[1:]]
    return blocks, inits


def _run_mm3(mod: mlc.Module) -> None:
    rng = np.random.default_rng(3)
    x, w = rng.standard_normal((2, 4)).astype("float32"), rng.standard_normal((4, 4)).astype("float32")
    vm = mlc.graph.VirtualMachine(mlc.graph.build(mod, opt_level=0), mlc.cpu())
    np.testing.assert_allclose(vm["main"](x, w).numpy(), x @ w @ w @ w, rtol=1e-5, atol=1e-5)


def test_fuse_tir_names_three_colliding_blocks_apart():
    fused = FuseTIR()(LegalizeOps()(mlc.Module.parse(_MM3)))
    blocks, inits = _block_names(fused, "fused_mm3")
    assert sorted(blocks) == ["matmul", "matmul_1", "matmul_2"]
    assert set(inits) <= set(blocks) and len(set(inits)) == len(inits)  # (CSE may share two inits)
    _run_mm3(fused)


def test_fuse_tir_renames_past_a_name_already_taken():
    """Blocks named ``matmul``, ``matmul``, ``matmul_1``: the second takes ``matmul_1``, so
    the third (already named so) must move on to a free name."""
    legal = str(LegalizeOps()(mlc.Module.parse(_MM3)))
    head, third = legal.split("func.func @matmul2(")
    body, rest = third.split("\n  }\n", 1)
    third = body.replace('"matmul"}', '"matmul_1"}').replace('= "matmul"', '= "matmul_1"')
    mod = mlc.Module.parse(head + "func.func @matmul2(" + third + "\n  }\n" + rest)
    fused = FuseTIR()(mod)
    blocks, inits = _block_names(fused, "fused_mm3")
    assert len(set(blocks)) == 3 and set(blocks) >= {"matmul", "matmul_1"}
    assert set(inits) <= set(blocks) and len(set(inits)) == len(inits)
    _run_mm3(fused)


# -- 4. FoldConstant: permute_dims axes -------------------------------------------------------

def test_fold_constant_permutes_by_the_axes():
    c = np.arange(8, dtype="float32").reshape(2, 2, 2)
    x = Var("x", (2, 2, 2))
    bb = BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            gv = bb.emit_output(op.add(x, op.permute_dims(mlc.graph.const(c), (0, 2, 1))))
        bb.emit_func_output(gv)
    folded = FoldConstant()(bb.get())
    assert "mlc.permute_dims" not in str(folded)
    xs = np.full((2, 2, 2), 100.0, "float32")
    vm = mlc.graph.VirtualMachine(mlc.graph.build(folded, opt_level=0), mlc.cpu())
    np.testing.assert_array_equal(vm["main"](xs).numpy(), xs + np.transpose(c, (0, 2, 1)))


# -- 5. the tuning database: a torn last line ---------------------------------------------------

def _db_with_records(path, n: int = 3) -> JSONDatabase:
    db = JSONDatabase(path)
    db.commit_workload("k", "main", "module {}", 10.0)
    for i in range(n):
        db.commit(TuningRecord("k", "main", {"insts": []}, f"d{i}", (1e-3 * (i + 1),)))
    return db


@pytest.mark.parametrize("tail", [b"", b"\xff\xfe\x00garbage"])
def test_database_skips_a_torn_last_line(tmp_path, tail):
    db = _db_with_records(tmp_path)
    data = db.path.read_bytes()
    db.path.write_bytes(data[:-25] + tail)  # the last record cut mid-line (and junk a crash left)
    again = JSONDatabase(tmp_path)
    assert [r.decisions for r in again.records()] == ["d0", "d1"]
    assert list(again.workloads) == ["k"] and again.best("k")[0].decisions == "d0"


def test_database_resumed_after_a_torn_line_keeps_new_records(tmp_path):
    db = _db_with_records(tmp_path)
    db.path.write_bytes(db.path.read_bytes()[:-25])
    resumed = JSONDatabase(tmp_path)
    resumed.commit(TuningRecord("k", "main", {"insts": []}, "d9", (5e-4,)))
    assert [r.decisions for r in JSONDatabase(tmp_path).records()] == ["d0", "d1", "d9"]


# -- 6. frontends: LayerNorm's eps ----------------------------------------------------------------

def test_layer_norm_eps_reaches_both_frontends():
    torch = pytest.importorskip("torch")
    from torch import fx, nn

    torch.manual_seed(0)
    model = nn.Sequential(nn.LayerNorm(8, eps=0.5)).eval()
    with torch.no_grad():
        model[0].weight.uniform_(0.5, 1.5)
        model[0].bias.uniform_(-0.5, 0.5)
    x = (torch.randn(4, 8) * 0.3).numpy()
    want = model(torch.from_numpy(x)).detach().numpy()
    for mod in (mlc.frontend.from_fx(fx.symbolic_trace(model), [(4, 8)]),
                mlc.frontend.from_exported_program(torch.export.export(model, (torch.from_numpy(x),)))):
        vm = mlc.graph.VirtualMachine(mlc.graph.build(mod), mlc.cpu())
        np.testing.assert_allclose(vm["main"](x).numpy(), want, rtol=1e-5, atol=1e-5)


# -- 7. peel: each copy unrolled by its own trip count ------------------------------------------

def _register_tile(mod: mlc.Module, *, peel_cols: bool = False) -> Schedule:
    """Y in 6 x 16 register tiles, rows peeled (and columns), rows unrolled, C on the tile."""
    sch = Schedule(mod)
    b = sch.get_block("Y")
    i, j, k = sch.get_loops(b)
    i0, i1 = sch.split(i, [None, 6])
    j0, j1 = sch.split(j, [None, 16])
    sch.reorder(i0, j0, k, i1, j1)
    sch.peel(i0)
    if peel_cols:
        sch.peel(j0)
    sch.vectorize(j1)
    sch.unroll(i1)
    sch.reverse_compute_at(sch.get_block("C"), j0)
    sch.decompose_reduction(b, k)
    return sch


def _loop_names(text: str) -> set[str]:
    return {s.split('"')[0] for s in text.split('mlc.loop = "')[1:]}


def test_peeled_remainder_is_unrolled_by_its_own_trip_count():
    """mm_relu 128: 21 full 6-row tiles, then a 2-row remainder whose rows unroll (2 FMAs
    per k step, no row loop left); unrolled by the main loop's 6 it stayed a loop."""
    sch = _register_tile(mm_relu())
    text = str(sch.mod)
    assert "mlc.unroll_at" not in text  # every tagged copy was unrolled
    assert _loop_names(text) == {"i_0", "j_0", "k"}  # no row loop (i_1, C's ax0) in any copy
    filecheck(text, """
    CHECK: {mlc.loop = "i_0"}
    CHECK: scf.for %{{.*}} = %c0 to %c128 step %c1 iter_args
    CHECK-NOT: scf.for
    CHECK-COUNT-2: vector.fma
    CHECK-NOT: scf.for
    CHECK: {mlc.loop = "k"}
    CHECK: return
    """)
    check_mm_relu(sch)


def test_peeled_rows_and_columns_unroll_every_copy():
    """14 x 37 in 6 x 16 tiles: a 2-row remainder in both column copies (full and corner)."""
    sch = _register_tile(linear(14, 37, 9), peel_cols=True)
    text = str(sch.mod)
    assert "mlc.unroll_at" not in text
    assert _loop_names(text) == {"i_0", "j_0", "k"}
    rng = np.random.default_rng(7)
    x, w = rng.standard_normal((14, 9)).astype("float32"), rng.standard_normal((9, 37)).astype("float32")
    check_schedule(sch, "linear", [x, w, np.zeros((14, 37), "float32")], np.maximum(x @ w, 0))
