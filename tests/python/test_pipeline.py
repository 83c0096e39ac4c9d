"""The one pipeline: mlc.build, graph.build and mlc-opt run the same named stages."""

import re

import numpy as np

import mlc_mlir as mlc
from mlc_mlir.compiler.pipeline import Compilation, Stage, build_stages, codegen_stages, run_stages
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
    assert names == [s.name for s in build_stages(Compilation(), graph=True, opt_level=2)]
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
    raw = run_stages(mod.mlir_module, [Stage("simplify", "canonicalize")])
    assert raw is mod.mlir_module
    try:
        run_stages(mod.mlir_module, [Stage("g", lambda m: m, graph=True)])
    except mlc.LoweringError as exc:
        assert "graph stage" in str(exc)
    else:
        raise AssertionError("a graph stage ran on an ir.Module")
