"""The dtype / shape / broadcasting layer shared by te, topi and the graph (mlc_mlir.tensor_types),
and that each layer raises its own error through it."""

import numpy as np
import pytest
from mlir import ir

import mlc_mlir as mlc
from mlc_mlir import te, topi
from mlc_mlir.context import mlc_context
from mlc_mlir.errors import GraphError, MlcError, TEError
from mlc_mlir.graph import Var, op
from mlc_mlir.tensor_types import (BOOL, ELEMENT_TYPES, TENSOR_DTYPES, bits, broadcast_shapes, dtype_of_element,
                                   element_type, format_shape, int_range, is_float, is_int, normalize_dtype,
                                   normalize_shape, numel, shape_attr, shape_from_attr, tensor_type)


@pytest.mark.parametrize("given, name", [("float32", "float32"), (np.float16, "float16"),
                                         (np.dtype("int64"), "int64"), ("int8", "int8")])
def test_normalize_dtype_names_and_numpy_dtypes(given, name):
    assert normalize_dtype(given) == name


def test_bool_is_accepted_only_when_allowed():
    assert normalize_dtype(np.bool_, allow_bool=True) == BOOL
    with pytest.raises(MlcError, match=r"unknown dtype of x 'bool'; supported: float16, .*, int64$"):
        normalize_dtype("bool", what="dtype of x")
    with pytest.raises(GraphError, match=r"unknown dtype 'complex64'; supported: .*, bool$"):
        normalize_dtype("complex64", allow_bool=True, error=GraphError)


def test_dtype_facts():
    assert TENSOR_DTYPES == ("float16", "float32", "float64", "int8", "int16", "int32", "int64")
    assert is_float("float16") and not is_float("int8") and is_int("int8") and not is_int(BOOL)
    assert (bits("float64"), bits("int16"), bits(BOOL)) == (64, 16, 1)
    assert int_range("int8") == (-128, 127)


def test_element_types_both_ways():
    with mlc_context():
        for dtype, spelling in ELEMENT_TYPES.items():
            t = element_type(dtype)
            assert str(t) == spelling and dtype_of_element(t) == dtype
        assert str(element_type(np.float32)) == "f32"
        assert str(element_type(BOOL)) == "i1"  # bool: i1 in registers
        assert ir.F32Type(element_type("float32")).width == 32
        with pytest.raises(GraphError, match="element type bf16 has no dtype; supported: f16"):
            dtype_of_element(ir.BF16Type.get(), error=GraphError)
        with pytest.raises(TEError, match="unknown dtype 'float8'"):
            element_type("float8", error=TEError)


def test_normalize_shape():
    assert normalize_shape((1, "n", np.int64(3))) == (1, "n", 3)
    assert normalize_shape(4) == (4,) and normalize_shape("m") == ("m",) and normalize_shape([0]) == (0,)
    cases = [((2, -1), r"\(2, -1\): negative dimension -1"),
             ((2.5,), r"dimension 0 is 2.5, not an int or a symbol name"),
             (("not id",), "not an int or a symbol name"), ((True,), "dimension 0 is True"),
             ({"n": 1}, "must be a tuple of ints and symbol names, got dict")]
    for shape, message in cases:
        with pytest.raises(GraphError, match=message):
            normalize_shape(shape, what="shape of x", error=GraphError)
    with pytest.raises(TEError, match="dimension 1 is 0; sizes must be positive"):
        normalize_shape((3, 0), positive=True, error=TEError)


def test_format_numel_and_tensor_type():
    assert format_shape((1, "m")) == "(1, m)" and format_shape((4,)) == "(4,)" and format_shape(()) == "()"
    assert numel((2, 3)) == 6 and numel(()) == 1 and numel((2, "n")) is None
    with mlc_context():
        assert str(tensor_type(("n", 4), "float32")) == "tensor<?x4xf32>"
        assert str(tensor_type((2,), BOOL)) == "tensor<2xi1>"
        assert shape_from_attr(shape_attr(("n", 128))) == ("n", 128)
        assert str(shape_attr(("n", 128))) == '["n", 128]'
        with pytest.raises(GraphError, match="mlc.shape entries are i64 or strings"):
            shape_from_attr(ir.ArrayAttr.get([ir.FloatAttr.get_f32(1.0)]), error=GraphError)


@pytest.mark.parametrize("a, b, out", [((2, 3), (3,), (2, 3)), (("n", 1), (1, 4), ("n", 4)), ((1,), ("n",), ("n",)),
                                       (("n", 3), ("n", 3), ("n", 3)), ((), (5, 1), (5, 1))])
def test_broadcast_shapes(a, b, out):
    assert broadcast_shapes(a, b, what="add") == out
    assert broadcast_shapes(b, a, what="add") == out


@pytest.mark.parametrize("a, b", [((2, 3), (4,)), (("n",), ("m",)), (("n",), (4,))])
def test_shapes_that_do_not_broadcast(a, b):
    with pytest.raises(TEError, match=r"topi.add: shapes \(.*\) and \(.*\) do not broadcast \(dimension"):
        broadcast_shapes(a, b, what="topi.add", error=TEError)


def test_each_layer_raises_its_own_error():
    """The graph and te/topi share the checks, each raising its own layer's error."""
    with pytest.raises(GraphError, match=r"add: shapes \(2, 3\) and \(4,\) do not broadcast"):
        op.add(Var("a", (2, 3)), Var("b", (4,)))
    A, B = te.placeholder((2, 3), name="A"), te.placeholder((4,), name="B")
    with pytest.raises(TEError, match=r"topi.add: shapes \(2, 3\) and \(4,\) do not broadcast"):
        topi.add(A, B)
    with pytest.raises(TEError, match="unknown dtype of placeholder 'C' 'complex64'"):
        te.placeholder((2,), "complex64", name="C")
    assert Var("m", (2,), "bool").dtype == "bool"  # graph tensors may be bool
    assert te.placeholder((2,), "bool", name="D").dtype == "bool"  # and te tensors (one byte each)
    with pytest.raises(GraphError, match="shape of Var 'x'"):
        Var("x", (2, -1))


def test_te_keeps_its_symbolic_sizes():
    """te shapes go through the same checks; a te.var given in a shape is kept (with its dtype)."""
    n = te.var("n", "int64")
    A = te.placeholder((n, "m", te.const(4)), name="A")
    assert A.shape[0] is n and A.shape[0].dtype == "int64" and A.shape[1].name == "m" and A.shape[2] == 4
    B = te.placeholder(("m", 1), name="B")
    C = topi.add(A, B)  # the broadcast keeps A's te.var
    assert C.shape[0] is n and repr(C) == "Tensor(compute 'add', shape=(n, m, 4), dtype='float32')"
    mod = te.create_prim_func([A, B, C])
    assert mlc.Module.parse(str(mod)) is not None
    assert 'mlc.shape = ["n", "m", 4]' in str(mod)
