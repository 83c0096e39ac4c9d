"""Course spellings with ``import mlc_mlir as tvm`` (issue 22): ``tvm.tir.Schedule``,
``from tvm.ir.module import IRModule``, ``relax.DataflowVar``, ``ms.cost_model.XGBModel``,
the older ``ms.tune_tir(config=ms.TuneConfig(...))`` cell of ch.4, and ``tune_model`` on a
graph of high-level ops (legalized inside, as TVM's ``tune_relax`` does)."""

import numpy as np
import pytest

import mlc_mlir as tvm
from mlc_mlir import graph as relax
from mlc_mlir import meta_schedule as ms

from _schedule_util import check_matmul, check_mm_relu, matmul, mm_relu
from _tune_util import stochastic_schedule_mm

TARGET = "llvm --num-cores=1"
FAST = {"repeat": 2, "min_repeat_ms": 1.0}


def test_tvm_tir_schedule_as_the_course_writes_it():
    MyModule = mm_relu()
    sch = tvm.tir.Schedule(MyModule)
    block_Y = sch.get_block("Y", func_name="mm_relu")
    i, j, k = sch.get_loops(block_Y)
    j0, j1 = sch.split(j, factors=[None, 4])
    sch.reorder(j0, k, j1)
    assert isinstance(sch, tvm.Schedule) and tvm.tir.Schedule is tvm.Schedule
    check_mm_relu(sch)  # runs, and replays the trace to the same IR

    from mlc_mlir import tir  # the course's `from tvm import tir`; `def f(sch: tir.Schedule)`

    assert tir.Schedule is tvm.Schedule and tir.Trace is tvm.schedule.Trace
    assert tir.TensorIntrin is tvm.schedule.TensorIntrin


def test_ir_module_import_path():
    from mlc_mlir.ir.module import IRModule  # the course's `from tvm.ir.module import IRModule`

    assert IRModule is tvm.IRModule is tvm.Module
    mod = mm_relu()
    copy = IRModule.from_expr(mod["mm_relu"])
    assert copy.functions == ["mm_relu"] and isinstance(copy, IRModule)
    assert tvm.ir.transform.module_pass is relax.transform.module_pass


def test_dataflow_var_as_the_course_writes_it():
    bb = relax.BlockBuilder()
    A, B = relax.Var("A", (128, 128)), relax.Var("B", (128, 128))
    with bb.function("main", [A, B]):
        with bb.dataflow():
            C = bb.emit(relax.op.matmul(A, B))
            assert isinstance(C, relax.Var)
            assert type(C) is relax.DataflowVar and type(C).__name__ == "DataflowVar"
            D = bb.emit_output(relax.op.relu(C))
        bb.emit_func_output(D)
    assert type(D) is relax.Var and type(A) is relax.Var  # outputs and parameters are plain Vars
    mod = bb.get()
    block = mod["main"].body.blocks[0]
    kinds = [type(b.var).__name__ for b in block.bindings]
    assert kinds == ["DataflowVar", "Var"], kinds  # lv0 inside the block; gv = relu(lv0) its output
    lone = relax.DataflowVar("lv", (2, 3))
    assert isinstance(lone, relax.Var) and lone.kind == "dataflow"
    out = relax.VirtualMachine(relax.build(mod), tvm.cpu())["main"](np.eye(128, dtype="float32"),
                                                                    -np.eye(128, dtype="float32")).numpy()
    np.testing.assert_array_equal(out, np.zeros((128, 128), "float32"))


def test_xgb_model_is_the_searchs_learned_cost_model():
    model = ms.cost_model.XGBModel()
    assert isinstance(model, ms.CostModel) and isinstance(model, tvm.tune.GBStumpModel)
    rng = np.random.default_rng(0)
    feats = [{"tile": float(t), "vec": float(v)} for t, v in rng.integers(1, 64, size=(32, 2))]
    secs = [1e-3 * (1 + abs(f["tile"] - 16) / 16) for f in feats]  # fastest near tile 16
    model.update(feats, secs)
    scores = model.predict([{"tile": 16.0, "vec": 8.0}, {"tile": 60.0, "vec": 8.0}])
    assert scores[0] > scores[1]
    with pytest.raises(tvm.TuneError, match=r"XGBModel\(num_warmup_samples=...\).*SklearnModel\(xgboost"):
        ms.cost_model.XGBModel(num_warmup_samples=100)


def test_tune_config_cell_of_chapter_4(tmp_path, monkeypatch):
    """The older course text (ch.4, seed 001): ``config=ms.TuneConfig(...)``, the best schedule back."""
    monkeypatch.chdir(tmp_path)
    MyModule = matmul()
    sch_tuned = ms.tune_tir(
        mod=MyModule,
        target="llvm --num-cores=1",
        config=ms.TuneConfig(
          max_trials_global=64,
          num_trials_per_iter=64,
        ),
        space=ms.space_generator.ScheduleFn(stochastic_schedule_mm),
        work_dir="./tune_tmp",
        task_name="main",
        # (not in the cell: shorter measurements, and the other model spelling)
        measure=FAST, progress=False, cost_model=ms.cost_model.XGBModel(),
    )
    assert isinstance(sch_tuned, tvm.Schedule)
    assert "sample_perfect_tile" in str(sch_tuned.trace)
    check_matmul(sch_tuned)
    lib = tvm.build(sch_tuned.mod, target="llvm")
    assert lib.time_evaluator("main", number=2, repeat=1)(
        *(np.zeros((128, 128), "float32") for _ in range(3))).mean > 0
    assert len(tvm.tune.JSONDatabase("./tune_tmp").records()) == 5  # the space's 5 points
    # the budget is given one way
    with pytest.raises(tvm.TuneError, match="either in config=ms.TuneConfig"):
        ms.tune_tir(MyModule, TARGET, max_trials_global=4, config=ms.TuneConfig(max_trials_global=4))
    with pytest.raises(tvm.TuneError, match="max_trials_global must be a positive int, got 0"):
        ms.TuneConfig(max_trials_global=0)
    assert ms.tir_integration.tune_tir is ms.tune_tir


def test_tune_model_legalizes_graph_ops_itself(tmp_path):
    rng = np.random.default_rng(0)
    w0, b0 = rng.standard_normal((32, 16)).astype("float32"), rng.standard_normal(32).astype("float32")
    bb = relax.BlockBuilder()
    x, w, b = relax.Var("x", (4, 16)), relax.Var("w", (32, 16)), relax.Var("b", (32,))
    with bb.function("main", [x, w, b]):
        with bb.dataflow():
            lv0 = bb.emit(relax.op.matmul(x, relax.op.permute_dims(w)))
            lv1 = bb.emit(relax.op.add(lv0, b))
            gv = bb.emit_output(relax.op.nn.relu(lv1))
        bb.emit_func_output(gv)
    mod = bb.get()
    assert not [f for f in mod.functions if f != "main"]  # graph ops only, no tensor program
    tuned = ms.relax_integration.tune_relax(mod, TARGET, max_trials_global=2, work_dir=tmp_path,
                                            num_trials_per_iter=2, seed=0, measure=FAST, progress=False,
                                            check_model=False)
    kernels = [f for f in tuned.functions if f != "main"]
    assert kernels and all("mlc.tuned" in str(tuned[f].op) for f in kernels), tuned.functions
    assert "mlc.matmul" not in str(tuned["main"].op) and "mlc.matmul" in str(mod["main"].op)
    xs = rng.standard_normal((4, 16)).astype("float32")
    out = relax.VirtualMachine(relax.build(tuned), tvm.cpu())["main"](xs, w0, b0).numpy()
    np.testing.assert_allclose(out, np.maximum(xs @ w0.T + b0, 0), rtol=1e-4, atol=1e-4)
    with pytest.raises(tvm.TuneError, match="no tensor program .* and no graph op"):
        tvm.tune.tune_model(tvm.Module.parse("func.func @f() { return }"), work_dir=tmp_path)
