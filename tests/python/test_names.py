"""Names: one public name per thing (the course's TVM spellings in one facade each: ``mlc``
for ``tvm``, ``mlc.tir``, ``mlc.nd``, ``mlc.meta_schedule``), no import hook, no old module paths."""

import functools
import importlib
import inspect
import subprocess
import sys
from pathlib import Path

import pytest

import mlc_mlir as mlc
from mlc_mlir import graph, te

#: the names of the public API contract (API.md), reached from ``mlc``
API_NAMES = """
Module.parse Module.from_file Module.from_expr Module.get_global_var Module.update_func Module.clone Module.script
Module.show IRModule MlcError ScheduleError GraphError BuildError LoweringError ArgumentError RuntimeError_ TuneError
te.placeholder te.var te.reduce_axis te.compute te.sum te.max te.min te.exp te.create_prim_func
Schedule schedule.Schedule tir.Schedule Schedule.get_block Schedule.get_loops Schedule.get_consumers
Schedule.get_producers Schedule.split Schedule.reorder Schedule.fuse Schedule.parallel Schedule.vectorize
Schedule.unroll Schedule.bind Schedule.compute_at Schedule.reverse_compute_at Schedule.cache_read Schedule.cache_write
Schedule.decompose_reduction Schedule.blockize Schedule.tensorize Schedule.sample_perfect_tile
Schedule.sample_categorical Schedule.annotate Schedule.unannotate Schedule.get_child_blocks Schedule.enter_postproc
Schedule.peel Schedule.rfactor Schedule.replay schedule.TensorIntrin.register schedule.apply_transform_script
schedule.Trace.from_json schedule.Trace.as_json schedule.Trace.transform_script schedule.Trace.apply
build runtime.array runtime.empty cpu cuda register_func nd.array nd.empty nd.NDArray
graph.BlockBuilder graph.Var graph.DataflowVar graph.const graph.build graph.VirtualMachine graph.PyExprMutator
graph.mutator graph.Function.with_attr graph.op.matmul graph.op.add graph.op.multiply graph.op.subtract
graph.op.divide graph.op.relu graph.op.permute_dims graph.op.reshape graph.op.ewise_fma graph.op.softmax
graph.op.call_dps_packed graph.op.call_tir graph.op.nn.relu graph.op.nn.conv2d graph.transform.BindParams
graph.transform.LegalizeOps graph.transform.FuseOps graph.transform.FuseTIR graph.transform.remove_all_unused
graph.transform.module_pass graph.rewrite tune.tune_tir tune.compile_tir tune.tune_model tune.plot tune.ScheduleFn
tune.LocalBackend tune.RayBackend meta_schedule.tune_tir meta_schedule.space_generator.ScheduleFn
meta_schedule.tir_integration.compile_tir meta_schedule.relax_integration.tune_relax meta_schedule.TuneConfig
meta_schedule.cost_model.XGBModel frontend.from_fx frontend.from_exported_program topi.nn.matmul topi.add
topi.nn.relu topi.transpose topi.nn.softmax topi.nn.conv2d
runtime.load_module graph.op.nn.avg_pool2d graph.op.nn.adaptive_avg_pool2d graph.op.where graph.op.equal
graph.op.less graph.op.greater graph.op.broadcast_to graph.op.split graph.op.concat graph.op.strided_slice
graph.op.take graph.op.expand_dims graph.op.squeeze graph.op.nn.gelu_tanh graph.op.clip
""".split()


@pytest.mark.parametrize("name", API_NAMES)
def test_api_names_resolve(name):
    assert functools.reduce(getattr, name.split("."), mlc) is not None


def test_one_name_per_expression_family():
    assert te.Expr is te.expr.Expr and te.Var is te.expr.Var and float(te.const(2.0).value) == 2.0
    assert isinstance(graph.const([1.0, 2.0]), graph.Constant) and issubclass(graph.Call, graph.Expr)
    assert not issubclass(te.Expr, graph.Expr) and not issubclass(graph.Expr, te.Expr)
    for module, gone in ((te, ("PrimExpr", "PrimVar", "PrimCall", "prim_const")),
                         (graph, ("GraphExpr", "GraphVar", "GraphCall", "GraphConstant", "graph_const"))):
        assert not [n for n in gone if hasattr(module, n)], module.__name__


def test_one_runtime_error_name():
    assert issubclass(mlc.ArgumentError, mlc.RuntimeError_) and issubclass(mlc.RuntimeError_, mlc.MlcError)
    assert not hasattr(mlc, "ExecutionError") and not hasattr(mlc.errors, "ExecutionError")


def test_build_is_the_function():
    from mlc_mlir.compiler import build

    assert mlc.build is build and inspect.isfunction(mlc.build)
    assert list(inspect.signature(mlc.build).parameters)[:2] == ["mod", "target"]
    assert "Compile every public function" in mlc.build.__doc__
    import mlc_mlir.compiler.pipeline as pipeline  # the compiler package is reached by its own name

    assert pipeline.__name__ == "mlc_mlir.compiler.pipeline" and not hasattr(mlc.build, "pipeline")


def test_facades_re_export_the_implementations():
    from mlc_mlir import meta_schedule as ms

    assert mlc.nd.array is mlc.runtime.array and mlc.nd.empty is mlc.runtime.empty
    assert mlc.nd.NDArray is mlc.runtime.NDArray and mlc.nd.cpu is mlc.cpu
    assert mlc.tir.Schedule is mlc.Schedule and mlc.tir.Trace is mlc.schedule.Trace
    assert mlc.IRModule is mlc.Module
    assert ms.relax_integration.tune_relax is mlc.tune.tune_model
    assert ms.space_generator.ScheduleFn is mlc.tune.ScheduleFn and ms.CostModel is mlc.tune.CostModel
    assert ms.database.JSONDatabase is mlc.tune.JSONDatabase
    # only TVM's spellings: the project's own names live in mlc.tune
    assert sorted(ms.__all__) == ["CostModel", "TaskScheduler", "TuneConfig", "cost_model", "database",
                                  "relax_integration", "space_generator", "tir_integration", "tune_tir"]
    assert not [n for n in ("tune_model", "JSONDatabase", "LocalBackend", "EvolutionarySearch") if hasattr(ms, n)]
    assert ms.relax_integration.__all__ == ["tune_relax"] and ms.cost_model.__all__ == ["CostModel", "XGBModel"]


@pytest.mark.parametrize("old", [
    "mlc_mlir.build", "mlc_mlir.build.pipeline", "mlc_mlir.graph.expr", "mlc_mlir.graph.analysis",
    "mlc_mlir.graph.emit", "mlc_mlir.graph.fuse_ops", "mlc_mlir.graph.pass_infra", "mlc_mlir.graph.optimize",
    "mlc_mlir.graph.lower", "mlc_mlir.graph.cuda",
])
def test_old_module_paths_are_gone(old):
    # 0.1.0 is the first release: modules are imported by the paths they have
    code = f"import importlib, mlc_mlir.graph; importlib.import_module({old!r})"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 1 and "ModuleNotFoundError" in proc.stderr, proc.stderr


def test_no_import_hook():
    code = ("import sys, mlc_mlir as mlc; mlc.graph, mlc.tune, mlc.meta_schedule, mlc.nd, mlc.tir, mlc.build;"
            "print([type(f).__module__ for f in sys.meta_path if type(f).__module__.startswith('mlc_mlir')])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_no_module_swaps_its_class():
    code = ("import sys, types, mlc_mlir as mlc; mlc.graph, mlc.build;"
            "print(sorted(n for n, m in sys.modules.items() if n.startswith('mlc_mlir') and type(m) is not types.ModuleType))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_no_package_directory_named_build():
    # .gitignore templates and tools read a build/ directory as build output
    import mlc_mlir

    assert not (Path(mlc_mlir.__file__).parent / "build").exists()


def test_every_pass_provider_exists():
    from mlc_mlir import passes

    for name in passes._PASS_PROVIDERS:
        importlib.import_module(name)
    assert {"lower-to-llvm", "fuse-ops"} <= {p.name for p in passes.list_passes()}


def test_import_does_not_load_the_execution_engine():
    code = "import sys, mlc_mlir; print('mlir.execution_engine' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_graph_subpackage_names_import():
    from mlc_mlir.graph.builder import BlockBuilder
    from mlc_mlir.graph.legalize import DEFAULT_OP_MAP, te_matmul
    from mlc_mlir.graph.transform import FuseOps, LegalizeOps, ModulePass
    from mlc_mlir.graph.vm import Executable, VirtualMachine, build
    from mlc_mlir.runtime.vm import CallbackErrors

    assert BlockBuilder is graph.BlockBuilder and VirtualMachine is graph.VirtualMachine and build is graph.build
    assert "mlc.matmul" in DEFAULT_OP_MAP and callable(te_matmul) and callable(FuseOps) and callable(LegalizeOps)
    assert Executable is graph.Executable and isinstance(CallbackErrors(), object) and ModulePass


def test_graph_subpackages_show_the_architecture():
    import mlc_mlir.graph

    root = Path(mlc_mlir.graph.__file__).parent
    assert {p.name for p in root.iterdir() if (p / "__init__.py").exists()} == {
        "ir", "builder", "transform", "legalize", "vm"}
    assert sorted(p.name for p in root.glob("*.py")) == ["__init__.py", "_view.py"]  # _view: its view of a module


def test_one_module_pass_type_and_one_registry():
    from mlc_mlir import passes
    from mlc_mlir.graph.transform import optimize as opt
    from mlc_mlir.graph.transform import pass_infra

    assert pass_infra.ModulePass is passes.ModulePass is graph.transform.ModulePass
    assert mlc.ir.transform.module_pass is passes.module_pass
    registered = {p.name: p for p in passes.list_passes()}
    assert all(isinstance(p, passes.ModulePass) for p in registered.values())
    # graph.build's optimization stages run the registered passes (what mlc-opt --mlc-NAME runs)
    stages = opt.optimization_stages(2)
    assert [s.name for s in stages] == ["rewrite-ewise-fma", "rewrite-reshape-unary", "rewrite-matmul-permute",
                                        "remove-unused", "fold-batch-norm", "fold-constant", "transpose-conv-weights",
                                        "fuse-ops", "legalize-ops", "fuse-tir"]
    assert all(s.fn == registered[s.name].run for s in stages)
    with pytest.raises(mlc.MlcError, match="bad options"):
        passes.get_pass("fuse-ops", op_map={})
    with pytest.raises(mlc.MlcError, match="unknown pass --mlc-nope"):
        passes.get_pass("nope")


def test_readme_architecture_names_existing_files():
    root = Path(__file__).resolve().parents[2]
    text = (root / "README.md").read_text()
    section = text.split("\n## Architecture\n", 1)[1].split("\n## ", 1)[0]
    import re

    paths = set(re.findall(r"`(mlc_mlir/[\w/.]+|dialects/[\w/.*]+)`", section))
    assert len(paths) > 20
    missing = [p for p in paths if "*" not in p and not (root / p).exists()]
    assert not missing, missing
    # relative names follow a path in the same table cell: graph/transform/rewrite.py, dce.py
    for cell in re.findall(r"\| (`mlc_mlir/[^|]+) \|", section):
        base = None
        for name in re.findall(r"`([\w/.]+)`", cell):
            if name.startswith("mlc_mlir/"):
                base = Path(name) if name.endswith("/") else Path(name).parent
            elif name.endswith(".py"):
                assert (root / base / name).exists(), (cell, name)
