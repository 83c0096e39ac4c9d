"""The IR-helper layer (mlc_mlir.irutil): lookup, walking, attributes, diagnostics, arguments."""

import numpy as np
import pytest
from mlir import ir

import mlc_mlir as mlc
from mlc_mlir.context import mlc_context
from mlc_mlir.runtime.checks import check_arity, check_array
from mlc_mlir.irutil import (diagnostics_text, find_func, func_ops, has_op, sym_name,
                             symbol_ops, to_attr, walk_ops)


def test_lookup_and_walk(mm_relu_text):
    mod = mlc.Module.parse(mm_relu_text + "\nfunc.func private @other() { return }\n")
    with mlc_context():
        assert [sym_name(f) for f in func_ops(mod.mlir_module)] == ["mm_relu", "other"]
        fn = find_func(mod.mlir_module, "mm_relu")
        assert find_func(mod.mlir_module, "nope") is None
        generics = walk_ops(fn, ["linalg.generic"])
        assert len(generics) == 1 and all(o.name == "linalg.generic" for o in generics)
        assert fn not in walk_ops(fn)
        assert has_op(mod.mlir_module, ["linalg.generic"]) and not has_op(mod.mlir_module, ["scf.forall"])


def test_symbol_ops_by_kind_and_body():
    """One lookup of a module's symbols by name: func.func by default, any op name, every
    symbol op (None), definitions (defined=True) or declarations (defined=False) only."""
    mod = mlc.Module.parse("""
      memref.global "private" @g : memref<4xf32>
      func.func private @decl(f32) -> f32
      func.func @f() { return }
      module attributes {transform.with_named_sequence} {}
      llvm.func @h() { llvm.return }
    """)
    m = mod.mlir_module
    with mlc_context():
        assert list(symbol_ops(m)) == ["decl", "f"]
        assert list(symbol_ops(m, defined=True)) == ["f"] and list(symbol_ops(m, defined=False)) == ["decl"]
        assert list(symbol_ops(m, "llvm.func")) == ["h"]
        assert list(symbol_ops(m, None)) == ["g", "decl", "f", "h"]
        assert symbol_ops(m)["f"] == find_func(m, "f") and [sym_name(f) for f in func_ops(m, defined=True)] == ["f"]


def test_to_attr():
    with mlc_context():
        assert str(to_attr(True)) == "true"
        assert str(to_attr(3)) == "3 : i64"
        assert str(to_attr(0.5)) == "5.000000e-01 : f64"
        assert str(to_attr(["a", [1]])) == '["a", [1]]'
        with pytest.raises(TypeError, match="cannot encode"):
            to_attr(object())


def test_diagnostics_text():
    with mlc_context():
        with pytest.raises(ir.MLIRError) as info:
            ir.Module.parse("func.func @f() -> i32 { return }")
    text = diagnostics_text(info.value)
    assert "loc(" in text and "return" in text


def test_argument_checks():
    check_arity("f", ["a", "b"], (1, 2))
    with pytest.raises(mlc.ArgumentError, match=r"@f takes 2 arguments \(a, b\), got 1"):
        check_arity("f", ["a", "b"], (1,))
    bound: dict = {}
    a = np.zeros((4, 3), "float32")
    check_array("@f argument 0 (A)", a, "float32", [None, 3], "(n, 3)", symbols=["n", None], bound=bound, owner="A")
    assert bound == {"n": (4, "A")}
    with pytest.raises(mlc.ArgumentError, match="symbol 'n' was bound to 4 by A"):
        check_array("@f argument 1 (B)", np.zeros(5, "float32"), "float32", [None], "(n,)", symbols=["n"],
                    bound=bound, owner="B")
    with pytest.raises(mlc.ArgumentError, match=r"expected shape \(n, 3\), got \(4, 2\) \(dimension 1 is 2, not 3\)"):
        check_array("w", np.zeros((4, 2), "float32"), "float32", [None, 3], "(n, 3)")
    with pytest.raises(mlc.ArgumentError, match="expected dtype float32, got float64"):
        check_array("w", a.astype("float64"), "float32", [None, 3], "(n, 3)")
