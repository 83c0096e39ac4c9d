"""The scalar expression tree of tensor expressions and its Python operators.

An expression is built by calling the compute function of ``te.compute`` on axis
variables: ``A[i, k] * B[k, j]`` is a :class:`BinaryOp` of two :class:`TensorRead` nodes.
Every node knows its ``dtype``; implicit conversions (a Python literal adopting the other
operand's type, an integer operand meeting a float one) are explicit :class:`Cast` nodes,
so lowering never has to guess a type.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..errors import TEError
from ..tensor_types import BOOL, int_range, is_float, is_int, normalize_dtype
from .dtypes import INDEX_DTYPE, promote

if TYPE_CHECKING:
    from .tensor import Tensor

__all__ = ["Expr", "Const", "Var", "IterVar", "Cast", "BinaryOp", "Compare", "Call", "Select",
           "TensorRead", "Reduce", "as_expr", "const", "binary", "compare", "logical", "cast",
           "call", "select", "walk"]

_SYMBOLS = {"add": "+", "sub": "-", "mul": "*", "div": "/", "floordiv": "//", "floormod": "%",
            "lt": "<", "le": "<=", "gt": ">", "ge": ">=", "eq": "==", "ne": "!=",
            "and": "&", "or": "|"}
_PRECEDENCE = {"or": 1, "and": 2, "lt": 3, "le": 3, "gt": 3, "ge": 3, "eq": 3, "ne": 3,
               "add": 4, "sub": 4, "mul": 5, "div": 5, "floordiv": 5, "floormod": 5}
_FUNCTION_OPS = ("max", "min", "pow")
FLOAT_FUNCTIONS = ("exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "floor", "ceil", "round",
                   "sin", "cos")
"""Unary functions defined on float expressions only."""


class Expr:
    """A scalar expression of type ``dtype`` (``float32``, ``int32``, ``bool``...)."""

    __slots__ = ("dtype",)

    def __add__(self, other): return binary("add", self, other)
    def __radd__(self, other): return binary("add", other, self)
    def __sub__(self, other): return binary("sub", self, other)
    def __rsub__(self, other): return binary("sub", other, self)
    def __mul__(self, other): return binary("mul", self, other)
    def __rmul__(self, other): return binary("mul", other, self)
    def __truediv__(self, other): return binary("div", self, other)
    def __rtruediv__(self, other): return binary("div", other, self)
    def __floordiv__(self, other): return binary("floordiv", self, other)
    def __rfloordiv__(self, other): return binary("floordiv", other, self)
    def __mod__(self, other): return binary("floormod", self, other)
    def __rmod__(self, other): return binary("floormod", other, self)
    def __neg__(self): return call("neg", self)
    def __lt__(self, other): return compare("lt", self, other)
    def __le__(self, other): return compare("le", self, other)
    def __gt__(self, other): return compare("gt", self, other)
    def __ge__(self, other): return compare("ge", self, other)
    def __and__(self, other): return logical("and", self, other)
    def __rand__(self, other): return logical("and", other, self)
    def __or__(self, other): return logical("or", self, other)
    def __ror__(self, other): return logical("or", other, self)
    def __invert__(self): return logical("not", self)

    def __eq__(self, other):
        return compare("eq", self, other) if _convertible(other) else NotImplemented

    def __ne__(self, other):
        return compare("ne", self, other) if _convertible(other) else NotImplemented

    __hash__ = object.__hash__

    def __bool__(self) -> bool:
        raise TEError(f"the tensor expression {self} has no Python truth value; "
                      "use te.if_then_else(cond, a, b) for a condition")

    def astype(self, dtype: str) -> Expr:
        """This expression converted to ``dtype``."""
        return cast(self, normalize_dtype(dtype, allow_bool=True, error=TEError))

    def __repr__(self) -> str:
        return _format(self)


class Const(Expr):
    """A literal ``value`` of type ``dtype``."""

    __slots__ = ("value",)

    def __init__(self, value: int | float | bool, dtype: str):
        self.value, self.dtype = value, dtype


class Var(Expr):
    """A symbolic size (``te.var("n")``); two variables with one name are one symbol."""

    __slots__ = ("name",)

    def __init__(self, name: str, dtype: str = INDEX_DTYPE):
        self.name, self.dtype = name, dtype


class IterVar(Expr):
    """An axis: a spatial axis of a compute, or a reduce axis over ``[lo, lo + extent)``."""

    __slots__ = ("name", "extent", "lo", "kind")

    def __init__(self, name: str, extent: int | Var, lo: int, kind: str):
        self.name, self.extent, self.lo, self.kind = name, extent, lo, kind
        self.dtype = INDEX_DTYPE

    @property
    def var(self) -> IterVar:
        """The axis itself (TVM spells the axis variable ``axis.var``)."""
        return self


class Cast(Expr):
    """``value`` converted to ``dtype``."""

    __slots__ = ("value",)

    def __init__(self, value: Expr, dtype: str):
        self.value, self.dtype = value, dtype


class BinaryOp(Expr):
    """``a op b`` with ``op`` in add, sub, mul, div, floordiv, floormod, max, min, pow."""

    __slots__ = ("op", "a", "b")

    def __init__(self, op: str, a: Expr, b: Expr, dtype: str):
        self.op, self.a, self.b, self.dtype = op, a, b, dtype


class Compare(Expr):
    """A comparison (``lt le gt ge eq ne``) or a logical ``and`` / ``or``; type ``bool``."""

    __slots__ = ("op", "a", "b")

    def __init__(self, op: str, a: Expr, b: Expr):
        self.op, self.a, self.b, self.dtype = op, a, b, BOOL

    def __bool__(self) -> bool:
        # As in TVM: ``x == y`` between expressions is an expression node, but when Python
        # asks for a bool (``assert A.shape[1] == B.shape[0]``, list and dict lookups) it
        # is identity, with symbolic sizes equal by name.
        if self.op in ("eq", "ne"):
            a, b = self.a, self.b
            same = a is b or (isinstance(a, Var) and isinstance(b, Var) and a.name == b.name)
            return same if self.op == "eq" else not same
        return super().__bool__()


class Call(Expr):
    """A unary function (``neg``, ``not``, ``abs`` or one of :data:`FLOAT_FUNCTIONS`)."""

    __slots__ = ("fn", "arg")

    def __init__(self, fn: str, arg: Expr):
        self.fn, self.arg, self.dtype = fn, arg, arg.dtype


class Select(Expr):
    """``te.if_then_else(cond, true_value, false_value)``."""

    __slots__ = ("cond", "true_value", "false_value")

    def __init__(self, cond: Expr, true_value: Expr, false_value: Expr):
        self.cond, self.true_value, self.false_value = cond, true_value, false_value
        self.dtype = true_value.dtype


class TensorRead(Expr):
    """The element ``tensor[indices]``."""

    __slots__ = ("tensor", "indices")

    def __init__(self, tensor: Tensor, indices: tuple[Expr, ...]):
        self.tensor, self.indices, self.dtype = tensor, indices, tensor.dtype


class Reduce(Expr):
    """``combiner`` (sum, max, min) of ``source`` over the reduce ``axes``."""

    __slots__ = ("combiner", "source", "axes")

    def __init__(self, combiner: str, source: Expr, axes: tuple[IterVar, ...]):
        self.combiner, self.source, self.axes, self.dtype = combiner, source, axes, source.dtype


def children(e: Expr) -> tuple[Expr, ...]:
    """The operands of ``e``."""
    if isinstance(e, (BinaryOp, Compare)):
        return (e.a, e.b)
    if isinstance(e, Cast):
        return (e.value,)
    if isinstance(e, Call):
        return (e.arg,)
    if isinstance(e, Select):
        return (e.cond, e.true_value, e.false_value)
    if isinstance(e, TensorRead):
        return e.indices
    if isinstance(e, Reduce):
        return (e.source,)
    return ()


def walk(e: Expr, *, into_reads: bool = True) -> list[Expr]:
    """Every distinct node of ``e`` (a DAG: shared nodes once), operands before users.

    With ``into_reads=False`` the indices of tensor reads are not visited.
    """
    seen: set[int] = set()
    order: list[Expr] = []
    stack: list[tuple[Expr, bool]] = [(e, False)]
    while stack:
        node, expanded = stack.pop()
        if expanded:
            order.append(node)
            continue
        if id(node) in seen:
            continue
        seen.add(id(node))
        stack.append((node, True))
        if into_reads or not isinstance(node, TensorRead):
            stack.extend((c, False) for c in reversed(children(node)) if id(c) not in seen)
    return order


# -- construction helpers --------------------------------------------------------------------

def _convertible(value: object) -> bool:
    return isinstance(value, (Expr, bool, int, float, np.number, np.bool_))


def const(value: object, dtype: str | None = None) -> Const:
    """A literal; ``dtype`` defaults to int32 for ints, float32 for floats, bool for bools."""
    if isinstance(value, np.generic):
        value = value.item()
    if not isinstance(value, (bool, int, float)):
        raise TEError(f"te.const expects a Python number, got {type(value).__name__} {value!r}")
    if dtype is None:
        dtype = BOOL if isinstance(value, bool) else INDEX_DTYPE if isinstance(value, int) else "float32"
    dtype = normalize_dtype(dtype, allow_bool=True, error=TEError)
    if dtype == BOOL:
        return Const(bool(value), dtype)
    if is_float(dtype):
        return Const(float(value), dtype)
    if isinstance(value, float) and not value.is_integer():
        raise TEError(f"constant {value!r} is not an integer, so it cannot have type {dtype}")
    lo, hi = int_range(dtype)
    if not lo <= int(value) <= hi:
        raise TEError(f"constant {int(value)} does not fit in {dtype} (range {lo}..{hi})")
    return Const(int(value), dtype)


def as_expr(value: object, like: str | None = None) -> Expr:
    """``value`` as an expression; a Python literal adopts the type ``like`` when it fits.

    An int literal takes ``like`` (int or float); a float literal takes ``like`` if it is a
    float type, else float32.
    """
    if isinstance(value, Expr):
        return value
    if not _convertible(value):
        hint = "; index it first (A[i, j])" if type(value).__name__ == "Tensor" else ""
        raise TEError(f"cannot use {type(value).__name__} {value!r} in a tensor expression{hint}")
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, bool) or like is None or like == BOOL:
        return const(value)
    if isinstance(value, int):
        return const(value, like)
    return const(value, like if is_float(like) else "float32")


def _pair(a: object, b: object) -> tuple[Expr, Expr]:
    if not isinstance(a, Expr):
        b = as_expr(b)
        return as_expr(a, b.dtype), b
    return a, as_expr(b, a.dtype)


def cast(value: object, dtype: str) -> Expr:
    """``value`` converted to ``dtype`` (constants are converted at once)."""
    value = as_expr(value)
    if value.dtype == dtype:
        return value
    if isinstance(value, Const) and dtype != BOOL and value.dtype != BOOL:
        v = value.value
        return const(v if is_float(dtype) else int(v), dtype)
    return Cast(value, dtype)


def binary(op: str, a: object, b: object) -> Expr:
    """The arithmetic ``a op b`` after promoting both operands to their common type.

    Raises:
        TEError: a bool operand, ``/`` between integers, or ``pow`` of integers.
    """
    a, b = _pair(a, b)
    for x in (a, b):
        if x.dtype == BOOL:
            raise TEError(f"{_op_name(op)} of a bool value ({x}): convert it with .astype(...) "
                          "or use te.if_then_else")
    dtype = promote(a.dtype, b.dtype)
    if op == "div" and is_int(dtype):
        raise TEError(f"'/' between integers ({a} / {b}) is ambiguous: use '//' (floor "
                      "division) or convert an operand to a float type")
    if op == "pow" and not is_float(dtype):
        raise TEError(f"te.power expects float operands, got {a.dtype} and {b.dtype}")
    return BinaryOp(op, cast(a, dtype), cast(b, dtype), dtype)


def compare(op: str, a: object, b: object) -> Compare:
    """The comparison ``a op b`` (type bool) after promoting both operands."""
    a, b = _pair(a, b)
    if BOOL in (a.dtype, b.dtype) and not (a.dtype == b.dtype and op in ("eq", "ne")):
        raise TEError(f"cannot compare {a} ({a.dtype}) {_SYMBOLS[op]} {b} ({b.dtype})")
    dtype = promote(a.dtype, b.dtype)
    return Compare(op, cast(a, dtype), cast(b, dtype))


def logical(op: str, a: object, b: object = None) -> Expr:
    """``a & b``, ``a | b`` or ``~a`` on bool expressions (comparisons)."""
    operands = [as_expr(a)] + ([] if op == "not" else [as_expr(b)])
    for x in operands:
        if x.dtype != BOOL:
            raise TEError(f"logical {_op_name(op)} expects bool operands (comparisons), got "
                          f"{x} of type {x.dtype}")
    return Call("not", operands[0]) if op == "not" else Compare(op, *operands)


def call(fn: str, value: object) -> Call:
    """The unary function ``fn`` applied to ``value``."""
    value = as_expr(value)
    if fn in FLOAT_FUNCTIONS and not is_float(value.dtype):
        raise TEError(f"te.{fn} expects a float expression, got {value} of type {value.dtype}; "
                      "convert it with .astype('float32')")
    if fn in ("neg", "abs") and value.dtype == BOOL:
        raise TEError(f"{fn} of a bool value ({value}): convert it with .astype(...)")
    return Call(fn, value)


def select(cond: object, true_value: object, false_value: object) -> Select:
    """``true_value`` where ``cond`` holds, else ``false_value`` (promoted to one type)."""
    cond = as_expr(cond)
    if cond.dtype != BOOL:
        raise TEError(f"te.if_then_else expects a bool condition (a comparison), got {cond} "
                      f"of type {cond.dtype}")
    t, f = _pair(true_value, false_value)
    if t.dtype != f.dtype and BOOL in (t.dtype, f.dtype):
        raise TEError(f"te.if_then_else branches have types {t.dtype} and {f.dtype}")
    dtype = promote(t.dtype, f.dtype)
    return Select(cond, cast(t, dtype), cast(f, dtype))


# -- printing ---------------------------------------------------------------------------------

def _op_name(op: str) -> str:
    return repr(_SYMBOLS.get(op, op))


def _format(e: Expr, parent: int = 0) -> str:
    if isinstance(e, Const):
        return repr(e.value)
    if isinstance(e, (Var, IterVar)):
        return e.name
    if isinstance(e, TensorRead):
        return f"{e.tensor.name}[{', '.join(_format(i) for i in e.indices)}]"
    if isinstance(e, Cast):
        return f"{e.dtype}({_format(e.value)})"
    if isinstance(e, Select):
        return f"if_then_else({_format(e.cond)}, {_format(e.true_value)}, {_format(e.false_value)})"
    if isinstance(e, Reduce):
        return f"{e.combiner}({_format(e.source)}, axis=[{', '.join(a.name for a in e.axes)}])"
    if isinstance(e, Call):
        if e.fn in ("neg", "not"):
            return f"{'-' if e.fn == 'neg' else '~'}{_format(e.arg, 6)}"
        return f"{e.fn}({_format(e.arg)})"
    if isinstance(e, BinaryOp) and e.op in _FUNCTION_OPS:
        return f"{e.op}({_format(e.a)}, {_format(e.b)})"
    prec = _PRECEDENCE[e.op]
    text = f"{_format(e.a, prec)} {_SYMBOLS[e.op]} {_format(e.b, prec + 1)}"
    return f"({text})" if prec < parent else text
