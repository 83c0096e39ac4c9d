"""The one driver: mlc.build, graph.build and mlc-opt run the same named stages through
mlc_mlir.compiler.compile (graph stages first when the module has graph functions)."""

import re

import numpy as np

import mlc_mlir as mlc
from mlc_mlir.compiler.driver import build_stages
from mlc_mlir.compiler.pipeline import Compilation, GraphStage, PassStage, codegen_stages, run_stages
from mlc_mlir.compiler.driver import backend_for
from mlc_mlir.graph import BlockBuilder, Var, op
from mlc_mlir.tools.mlc_opt import main as mlc_opt

DUMP = re.compile(r"// -----// IR Dump After (\S+) //----- //")


def _graph():
    x, w = Var("x", (2, 3), "float32"), Var("w", (3, 4), "float32")
    bb = BlockBuilder()
    with bb.function("main", [x, w]):
        with bb.dataflow():
            gv = bb.emit_output(op.relu(op.matmul(x, w)))
        bb.emit_func_output(gv)
    return bb.get()


def test_graph_build_prints_the_whole_stage_list(capfd):
    ex = mlc.graph.build(_graph(), print_after_all=True)
    names = DUMP.findall(capfd.readouterr().err)
    graph = _graph()
    assert names == [s.name for s in build_stages(graph, backend_for("llvm"), Compilation())]
    assert names[:2] == ["resolve-packed-calls", "verify-graph"] and "lower-graph" in names
    assert names[names.index("graph-inline"):names.index("graph-inline") + 3] == ["graph-inline", "inline", "memref-abi"]
    x, w = np.random.default_rng(0).standard_normal((2, 3), "float32"), np.ones((3, 4), "float32")
    out = mlc.graph.VirtualMachine(ex, mlc.cpu())["main"](x, w).numpy()
    np.testing.assert_allclose(out, np.maximum(x @ w, 0), rtol=1e-5)


def test_build_runs_the_codegen_stages(capfd, mm_relu_text):
    mlc.build(mlc.Module.parse(mm_relu_text), print_after_all=True)
    names = DUMP.findall(capfd.readouterr().err)
    assert names == [s.name for s in codegen_stages(Compilation())]
    assert names[:3] == ["inline", "memref-abi", "check-input"] and names[-1] == "fast-entries"


def test_lower_to_llvm_is_the_build_pipeline(tmp_path, capfd, mm_relu_text):
    src = tmp_path / "mm.mlir"
    src.write_text(mm_relu_text)
    assert mlc_opt([str(src), "--mlc-lower-to-llvm"]) == 0
    via_opt = capfd.readouterr().out
    lowered = mlc.build(mlc.Module.parse(mm_relu_text)).get_source("llvm-dialect")
    assert via_opt.strip() == lowered.strip()


def test_runner_accepts_mlir_modules_and_rejects_graph_stages_on_them(mm_relu_text):
    mod = mlc.Module.parse(mm_relu_text)
    raw = run_stages(mod.mlir_module, [PassStage("simplify", "canonicalize")])
    assert raw is mod.mlir_module
    try:
        run_stages(mod.mlir_module, [GraphStage("g", lambda m: m)])
    except mlc.LoweringError as exc:
        assert "graph stage" in str(exc)
    else:
        raise AssertionError("a graph stage ran on an ir.Module")


def test_one_driver_for_build_graph_build_and_mlc_opt(tmp_path, capfd):
    """The same graph module through mlc.build, mlc.graph.build and mlc-opt --mlc-lower-to-llvm:
    one driver, one stage list, the same LLVM dialect."""
    mod = _graph()
    via_build = mlc.build(mod).get_source("llvm-dialect")
    via_graph = mlc.graph.build(mod).get_source("llvm-dialect")
    src = tmp_path / "graph.mlir"
    src.write_text(str(mod))
    capfd.readouterr()
    assert mlc_opt([str(src), "--mlc-lower-to-llvm"]) == 0
    via_opt = capfd.readouterr().out
    assert via_build.strip() == via_graph.strip() == via_opt.strip()
    assert "llvm.func @main" in via_build


def test_stage_kinds_are_types():
    from mlc_mlir.compiler.pipeline import ModuleStage

    stages = codegen_stages(Compilation())
    assert {type(s) for s in stages} <= {PassStage, ModuleStage, GraphStage}
    assert not any(hasattr(s, "graph") for s in stages)
