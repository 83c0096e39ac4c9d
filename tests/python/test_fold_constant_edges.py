"""FoldConstant's edges: every foldable op against NumPy, the count ``fold_constants``
returns, several graph functions, splat and boolean constants, element types with no
NumPy dtype, ops whose declared type NumPy's result does not match, and the names of the
folded blobs. Fast (no build but one): the mutation run of ``make mutate`` uses these
tests for the module."""

from __future__ import annotations

import numpy as np
import pytest
from mlir import ir

import mlc_mlir as mlc
from mlc_mlir.context import mlc_context
from mlc_mlir.graph import BlockBuilder, Var, op
from mlc_mlir.graph.ir.analysis import clone_module, graph_functions
from mlc_mlir.graph.transform import FoldConstant
from mlc_mlir.graph.transform.fold_constant import constant_value, resource_blobs, fold_constants


def _graph(make) -> mlc.Module:
    """main(x) = x + make() for an expression ``make()`` of constants; x of its shape."""
    bb = BlockBuilder()
    probe = make()
    x = Var("x", tuple(probe.struct_info.shape), probe.struct_info.dtype)
    with bb.function("main", [x]):
        with bb.dataflow():
            gv = bb.emit_output(op.add(x, make()))
        bb.emit_func_output(gv)
    return bb.get()


def _constants(mod: mlc.Module) -> list[np.ndarray]:
    """The values of the ``mlc.constant`` ops of the graph functions of ``mod``."""
    with mlc_context():
        blobs = resource_blobs(mod.mlir_module)
        out = []
        for f in graph_functions(mod.mlir_module):
            f.walk(lambda o: (out.append(constant_value(o.operation, blobs))
                              if o.operation.name == "mlc.constant" else None, ir.WalkResult.ADVANCE)[1])
        return out


def _fold(mod: mlc.Module) -> tuple[int, mlc.Module]:
    work = clone_module(mod)
    return fold_constants(work), work


A = np.arange(1, 25, dtype="float32").reshape(4, 6) - 12.0     # 24 elements: a blob
B = np.linspace(-2, 3, 24, dtype="float32").reshape(4, 6)
S = np.array([[1.5, -2.0], [0.5, 4.0]], "float32")                # 4 elements: dense<...>

CASES = {
    "add": (lambda: op.add(mlc.graph.const(A), mlc.graph.const(B)), A + B),
    "subtract": (lambda: op.subtract(mlc.graph.const(A), mlc.graph.const(B)), A - B),
    "multiply": (lambda: op.multiply(mlc.graph.const(A), mlc.graph.const(B)), A * B),
    "relu": (lambda: op.relu(mlc.graph.const(A)), np.maximum(A, 0)),
    "reshape": (lambda: op.reshape(mlc.graph.const(A), (6, 4)), A.reshape(6, 4)),
    "permute_dims": (lambda: op.permute_dims(mlc.graph.const(A)), A.T),
    "small": (lambda: op.subtract(mlc.graph.const(S), op.permute_dims(mlc.graph.const(S))), S - S.T),
    "chain": (lambda: op.relu(op.multiply(op.permute_dims(mlc.graph.const(S)), mlc.graph.const(S))),
              np.maximum(S.T * S, 0)),
}


@pytest.mark.parametrize("name", list(CASES))
def test_each_foldable_op_equals_numpy(name):
    make, want = CASES[name]
    n, folded = _fold(_graph(make))
    assert n == {"small": 2, "chain": 3}.get(name, 1)
    ops = [line.split('"')[1] for line in str(folded).splitlines() if '= "mlc.' in line]
    assert ops.count("mlc.constant") == 1 and ops.count("mlc.add") == 1 and len(ops) == 3  # + dataflow
    (value,) = _constants(folded)
    np.testing.assert_array_equal(value, want)


def test_folded_graph_runs():
    make, want = CASES["subtract"]
    x = np.full((4, 6), 0.5, "float32")
    vm = mlc.graph.VirtualMachine(mlc.graph.build(FoldConstant()(_graph(make)), opt_level=0), mlc.cpu())
    np.testing.assert_allclose(vm["main"](x).numpy(), x + want, rtol=1e-6)


def test_nothing_to_fold_counts_zero_and_leaves_the_module():
    x = Var("x", (4, 6))
    bb = BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            gv = bb.emit_output(op.relu(op.permute_dims(op.permute_dims(x))))
        bb.emit_func_output(gv)
    mod = bb.get()
    n, folded = _fold(mod)
    assert n == 0 and str(folded) == str(mod)


def test_every_graph_function_is_folded():
    """The first function has nothing to fold; the second and third do."""
    bb = BlockBuilder()
    for name, make in (("first", None), ("second", CASES["relu"][0]), ("third", CASES["reshape"][0])):
        x = Var("x", (4, 6) if name != "third" else (6, 4))
        with bb.function(name, [x]):
            with bb.dataflow():
                gv = bb.emit_output(op.relu(x) if make is None else op.add(x, make()))
            bb.emit_func_output(gv)
    n, folded = _fold(bb.get())
    assert n == 2
    values = _constants(folded)
    assert len(values) == 2
    np.testing.assert_array_equal(values[0], np.maximum(A, 0))
    np.testing.assert_array_equal(values[1], A.reshape(6, 4))


def _text_graph(const: str, body: str, ty: str) -> mlc.Module:
    return mlc.Module.parse(f"""
      func.func @main(%x: {ty} {{mlc.name = "x"}}) -> {ty} attributes {{mlc.graph}} {{
        %c = "mlc.constant"() {{value = {const}}} : () -> {ty}
        {body}
        return %r : {ty}
      }}""")


def test_splat_constants_fold():
    mod = _text_graph("dense<2.5> : tensor<2x3xf32>",
                      '%t = "mlc.relu"(%c) : (tensor<2x3xf32>) -> tensor<2x3xf32>\n'
                      '%r = "mlc.add"(%x, %t) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>',
                      "tensor<2x3xf32>")
    n, folded = _fold(mod)
    assert n == 1
    np.testing.assert_array_equal(_constants(folded)[0], np.full((2, 3), 2.5, "float32"))
    one = _text_graph("dense<[-3.0]> : tensor<1xf32>",
                      '%t = "mlc.relu"(%c) : (tensor<1xf32>) -> tensor<1xf32>\n'
                      '%r = "mlc.add"(%x, %t) : (tensor<1xf32>, tensor<1xf32>) -> tensor<1xf32>', "tensor<1xf32>")
    n, folded = _fold(one)
    assert n == 1 and _constants(folded)[0].tolist() == [0.0]


@pytest.mark.parametrize("const,ty", [("dense<[true, false, true, true]> : tensor<4xi1>", "tensor<4xi1>"),
                                      ("dense<1.0> : tensor<4xbf16>", "tensor<4xbf16>")])
def test_constants_without_a_numpy_value_stay(const, ty):
    mod = _text_graph(const, f'%t = "mlc.reshape"(%c) : ({ty}) -> {ty}\n'
                             f'%r = "mlc.add"(%x, %t) : ({ty}, {ty}) -> {ty}', ty)
    n, folded = _fold(mod)
    assert n == 0 and '"mlc.reshape"' in str(folded)


@pytest.mark.parametrize("result", ["tensor<4xf64>", "tensor<2x2xf32>", "tensor<?xf32>"])
def test_ops_whose_declared_type_numpy_does_not_give_stay(result):
    """(Not graphs the builder makes: checked so that a fold never changes a value's type.)"""
    mod = mlc.Module.parse(f"""
      func.func @main(%x: {result} {{mlc.name = "x"}}) -> {result} attributes {{mlc.graph}} {{
        %a = "mlc.constant"() {{value = dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>}} : () -> tensor<4xf32>
        %t = "mlc.add"(%a, %a) : (tensor<4xf32>, tensor<4xf32>) -> {result}
        %r = "mlc.add"(%x, %t) : ({result}, {result}) -> {result}
        return %r : {result}
      }}""")
    n, folded = _fold(mod)
    assert n == 0 and str(folded).count('"mlc.add"') == 2


def test_folded_blobs_are_named_after_their_source():
    mod = _graph(CASES["permute_dims"][0])
    src = str(mod).split("dense_resource<")[1].split(">")[0]
    n, folded = _fold(mod)
    text = str(folded)
    assert n == 1 and f"dense_resource<{src}_permute_dims>" in text
    big = np.arange(20, dtype="float32").reshape(4, 5)
    mod = _text_graph("dense<" + str(big.tolist()) + "> : tensor<4x5xf32>",
                      '%t = "mlc.relu"(%c) : (tensor<4x5xf32>) -> tensor<4x5xf32>\n'
                      '%r = "mlc.add"(%x, %t) : (tensor<4x5xf32>, tensor<4x5xf32>) -> tensor<4x5xf32>',
                      "tensor<4x5xf32>")
    n, folded = _fold(mod)
    assert n == 1 and "dense_resource<const_relu>" in str(folded)
    np.testing.assert_array_equal(_constants(folded)[0], big)


def test_two_element_constants_fold_elementwise():
    mod = _text_graph("dense<[-1.0, 2.0]> : tensor<2xf32>",
                      '%t = "mlc.relu"(%c) : (tensor<2xf32>) -> tensor<2xf32>\n'
                      '%r = "mlc.add"(%x, %t) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>', "tensor<2xf32>")
    n, folded = _fold(mod)
    assert n == 1 and _constants(folded)[0].tolist() == [0.0, 2.0]


def test_a_result_twice_its_largest_operand_stays():
    """(2, 4) from operands of 4 elements: a broadcast that would double the constant."""
    mod = mlc.Module.parse("""
      func.func @main(%x: tensor<2x4xf32> {mlc.name = "x"}) -> tensor<2x4xf32> attributes {mlc.graph} {
        %a = "mlc.constant"() {value = dense<[[1.0], [2.0]]> : tensor<2x1xf32>} : () -> tensor<2x1xf32>
        %b = "mlc.constant"() {value = dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>} : () -> tensor<4xf32>
        %t = "mlc.add"(%a, %b) : (tensor<2x1xf32>, tensor<4xf32>) -> tensor<2x4xf32>
        %r = "mlc.add"(%x, %t) : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
        return %r : tensor<2x4xf32>
      }""")
    n, folded = _fold(mod)
    assert n == 0 and str(folded).count('"mlc.add"') == 2


def test_ops_outside_the_table_stay():
    mod = mlc.Module.parse("""
      func.func @main(%x: tensor<2x2xf32> {mlc.name = "x"}) -> tensor<2x2xf32> attributes {mlc.graph} {
        %a = "mlc.constant"() {value = dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>} : () -> tensor<2x2xf32>
        %t = "mlc.matmul"(%a, %a) : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
        %r = "mlc.add"(%x, %t) : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
        return %r : tensor<2x2xf32>
      }""")
    n, folded = _fold(mod)
    assert n == 0 and '"mlc.matmul"' in str(folded)


def test_a_resource_without_its_blob_stays():
    mod = _text_graph("dense_resource<gone> : tensor<4xf32>",
                      '%t = "mlc.relu"(%c) : (tensor<4xf32>) -> tensor<4xf32>\n'
                      '%r = "mlc.add"(%x, %t) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>', "tensor<4xf32>")
    n, folded = _fold(mod)
    assert n == 0 and '"mlc.relu"' in str(folded)


def test_a_binary_fold_is_named_after_its_first_operand():
    mod = _graph(CASES["add"][0])
    first, second = [s.split(">")[0] for s in str(mod).split("dense_resource<")[1:3]]
    assert first != second
    n, folded = _fold(mod)
    assert n == 1 and f"dense_resource<{first}_add>" in str(folded)


def test_folding_is_logged(caplog):
    import logging

    with caplog.at_level(logging.DEBUG, logger="mlc_mlir.graph.fold_constant"):
        _fold(_graph(CASES["relu"][0]))
        assert [r.getMessage() for r in caplog.records] == ["folded 1 constant graph op(s)"]
        caplog.clear()
        x = Var("x", (2,))
        bb = BlockBuilder()
        with bb.function("main", [x]):
            with bb.dataflow():
                gv = bb.emit_output(op.relu(x))
            bb.emit_func_output(gv)
        _fold(bb.get())
        assert caplog.records == []
