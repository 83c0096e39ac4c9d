"""verify_graph on MLIR text: what IRDL cannot check (see also tests/lit/graph/invalid.mlir)."""

import pytest

import mlc_mlir as mlc
from mlc_mlir.graph import verify_graph
from mlc_mlir.passes import get_pass

SEG1 = "operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>"
RES1 = "resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>"
CALL1 = "operandSegmentSizes = array<i32: 1" + ", 0" * 15 + ">"


def graph(body: str, extra: str = "") -> mlc.Module:
    return mlc.Module.parse(f"""{extra}
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {{
  %gv = "mlc.dataflow"() ({{
{body}
    "mlc.output"(%r) {{{SEG1}}} : (tensor<4xf32>) -> ()
    "omp.terminator"() : () -> ()
  }}) {{{RES1}}} : () -> tensor<4xf32>
  return %gv : tensor<4xf32>
}}""")


def test_valid_graph_passes():
    verify_graph(graph('    %r = "mlc.relu"(%x) : (tensor<4xf32>) -> tensor<4xf32>'))


def test_unknown_callee_with_line():
    mod = graph(f'    %r = "mlc.call_tir"(%x) {{callee = @nope, {CALL1}}} : (tensor<4xf32>) -> tensor<4xf32>')
    with pytest.raises(mlc.GraphError, match="calls @nope, which is not a function of the module") as info:
        verify_graph(mod)
    assert info.value.line == 4  # the call_tir line of the text


def test_call_tir_of_a_graph_function_is_rejected():
    mod = graph(f'    %r = "mlc.call_tir"(%x) {{callee = @main, {CALL1}}} : (tensor<4xf32>) -> tensor<4xf32>')
    with pytest.raises(mlc.GraphError, match="a graph function; call_tir calls tensor programs"):
        verify_graph(mod)


def test_side_effects_in_dataflow():
    mod = graph('    %r = "mlc.alloc_tensor"() : () -> tensor<4xf32>')
    with pytest.raises(mlc.GraphError, match="'mlc.alloc_tensor' op has side effects"):
        verify_graph(mod)
    mod = graph('    %m = memref.alloc() : memref<4xf32>\n    %r = "mlc.relu"(%x) : (tensor<4xf32>) -> tensor<4xf32>')
    with pytest.raises(mlc.GraphError, match="'memref.alloc' op may have side effects"):
        verify_graph(mod)


def test_pure_upstream_ops_and_graph_calls_are_allowed():
    helper = """
func.func @helper(%a: tensor<4xf32>) -> tensor<4xf32> attributes {mlc.graph} {
  %gv = "mlc.dataflow"() ({
    %r = "mlc.relu"(%a) : (tensor<4xf32>) -> tensor<4xf32>
    "mlc.output"(%r) {operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<4xf32>) -> ()
    "omp.terminator"() : () -> ()
  }) {resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : () -> tensor<4xf32>
  return %gv : tensor<4xf32>
}"""
    verify_graph(graph('    %c = arith.constant dense<1.0> : tensor<4xf32>\n'
                       '    %h = func.call @helper(%x) : (tensor<4xf32>) -> tensor<4xf32>\n'
                       '    %r = "mlc.add"(%h, %c) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>', helper))


def test_unregistered_env_function_only_with_check_env():
    mod = graph(f'    %r = "mlc.call_dps"(%x) {{callee = "test_verify.absent", {CALL1}}} : (tensor<4xf32>) -> tensor<4xf32>')
    verify_graph(mod)
    with pytest.raises(mlc.GraphError, match="'test_verify.absent', which is not registered"):
        verify_graph(mod, check_env=True)


def test_passes_are_registered_for_mlc_opt():
    for name in ("verify-graph", "legalize-ops", "lower-graph"):
        assert get_pass(name).run is not None
