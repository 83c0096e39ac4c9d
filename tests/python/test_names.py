"""Names: the clearer aliases exist, the old names and import paths keep working."""

import importlib
import subprocess
import sys
from pathlib import Path

import pytest

import mlc_mlir as mlc
from mlc_mlir import graph, te


def test_expression_families_have_distinct_names():
    assert te.PrimExpr is te.Expr and te.PrimVar is te.Var and te.PrimCall is te.expr.Call
    assert graph.GraphExpr is graph.Expr and graph.GraphVar is graph.Var and graph.GraphCall is graph.Call
    assert graph.GraphConstant is graph.Constant
    assert not issubclass(te.PrimExpr, graph.GraphExpr) and not issubclass(graph.GraphExpr, te.PrimExpr)
    assert float(te.prim_const(2.0).value) == 2.0
    assert isinstance(graph.graph_const([1.0, 2.0]), graph.GraphConstant)


def test_execution_error_is_runtime_error_():
    assert mlc.ExecutionError is mlc.RuntimeError_ and issubclass(mlc.ArgumentError, mlc.ExecutionError)


def test_build_package_and_function():
    import mlc_mlir.compiler.pipeline as pipeline
    from mlc_mlir.compiler import build

    assert callable(mlc.build) and callable(build) and mlc.build.build is build
    assert importlib.import_module("mlc_mlir.compiler.pipeline") is pipeline is mlc.build.pipeline
    import inspect

    assert list(inspect.signature(mlc.build).parameters)[:2] == ["mod", "target"]


def test_old_compiler_paths_give_the_same_modules():
    # mlc_mlir/build/ was renamed mlc_mlir/compiler/: old imports reach the same objects
    import mlc_mlir.build.pipeline as old_pipeline
    import mlc_mlir.compiler.pipeline as pipeline
    from mlc_mlir.build import RuntimeModule, build
    from mlc_mlir.build.executable import RuntimeModule as RuntimeModule2

    assert old_pipeline is pipeline and build is mlc.compiler.build and RuntimeModule is RuntimeModule2
    assert pipeline.__spec__.name == "mlc_mlir.compiler.pipeline" and pipeline.__name__ == pipeline.__spec__.name
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("mlc_mlir.build.no_such_module")


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


def test_build_package_documents_the_build_function():
    import mlc_mlir as mlc

    assert "Compile every public function" in mlc.build.__doc__


@pytest.mark.parametrize("old, new", [
    ("mlc_mlir.graph.expr", "mlc_mlir.graph.ir.expr"),
    ("mlc_mlir.graph.analysis", "mlc_mlir.graph.ir.analysis"),
    ("mlc_mlir.graph.infer_nn", "mlc_mlir.graph.ir.infer_nn"),
    ("mlc_mlir.graph.emit", "mlc_mlir.graph.builder.emit"),
    ("mlc_mlir.graph.fuse_ops", "mlc_mlir.graph.transform.fuse_ops"),
    ("mlc_mlir.graph.pass_infra", "mlc_mlir.graph.transform.pass_infra"),
    ("mlc_mlir.graph.dps_packed", "mlc_mlir.graph.transform.dps_packed"),
    ("mlc_mlir.graph.lower", "mlc_mlir.graph.vm.lower"),
    ("mlc_mlir.graph.pipeline", "mlc_mlir.graph.vm.pipeline"),
    ("mlc_mlir.graph.cuda", "mlc_mlir.graph.vm.cuda"),
])
def test_old_graph_paths_give_the_same_modules(old, new):
    # graph/ was split into ir/, builder/, transform/, legalize/, vm/
    assert importlib.import_module(old) is importlib.import_module(new)
    assert importlib.import_module(new).__name__ == new


def test_old_graph_names_still_import():
    from mlc_mlir.graph.builder import BlockBuilder
    from mlc_mlir.graph.legalize import DEFAULT_OP_MAP, te_matmul
    from mlc_mlir.graph.transform import FuseOps, LegalizeOps, ModulePass
    from mlc_mlir.graph.vm import Executable, VirtualMachine, _CallbackErrors, build

    assert BlockBuilder is graph.BlockBuilder and VirtualMachine is graph.VirtualMachine and build is graph.build
    assert "mlc.matmul" in DEFAULT_OP_MAP and callable(te_matmul) and callable(FuseOps) and callable(LegalizeOps)
    assert Executable is graph.Executable and isinstance(_CallbackErrors(), object) and ModulePass


def test_old_graph_path_does_not_replace_a_public_function():
    # mlc.graph.optimize is the function; the old module path mlc_mlir.graph.optimize still imports
    code = ("import importlib, mlc_mlir.graph as g; m = importlib.import_module('mlc_mlir.graph.optimize');"
            "import mlc_mlir.graph.transform.optimize as t; print(m is t, callable(g.optimize) and g.optimize is t.optimize)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["True", "True"]


def test_graph_subpackages_show_the_architecture():
    import mlc_mlir.graph

    root = Path(mlc_mlir.graph.__file__).parent
    assert {p.name for p in root.iterdir() if (p / "__init__.py").exists()} == {
        "ir", "builder", "transform", "legalize", "vm"}
    assert sorted(p.name for p in root.glob("*.py")) == ["__init__.py"]


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
    assert [s.name for s in stages] == ["rewrite-ewise-fma", "remove-unused", "fold-constant", "fuse-ops",
                                       "legalize-ops", "fuse-tir"]
    assert all(s.passes == registered[s.name].run for s in stages)
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
