"""Graph expressions: variables, constants and op calls (the Relax ``Expr`` analogue).

The builder records expressions in Python and writes MLIR only when a function is
finished (its parameters may be given last, as in ``bb.emit_func_output(out, params)``).
Every expression knows its ``shape`` (a tuple of ints and strings; a string is a symbolic
dimension such as ``"n"``) and its ``dtype`` (``"float32"``...).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from mlir import ir

from ...errors import GraphError

__all__ = ["Expr", "Var", "DataflowVar", "bound_var",
           "Constant", "Call", "Shape", "const", "TensorStructInfo", "normalize_shape", "normalize_dtype",
           "format_shape", "element_type", "dtype_of_element", "tensor_type", "shape_attr",
           "shape_from_attr", "DTYPES"]

Shape = tuple[int | str, ...]

#: graph dtype -> MLIR element type spelling
DTYPES: dict[str, str] = {"float16": "f16", "float32": "f32", "float64": "f64", "int8": "i8",
                          "int16": "i16", "int32": "i32", "int64": "i64", "bool": "i1"}
_FROM_ELEMENT = {v: k for k, v in DTYPES.items()}


def normalize_dtype(dtype: Any, *, what: str = "dtype") -> str:
    """Canonical dtype name (``"float32"``) of a name or NumPy dtype; GraphError otherwise."""
    name = dtype if isinstance(dtype, str) else None
    if name is None:
        try:
            name = np.dtype(dtype).name
        except TypeError:
            name = None
    if name not in DTYPES:
        raise GraphError(f"unknown {what} {dtype!r}; supported: {', '.join(DTYPES)}")
    return name


def normalize_shape(shape: Any, *, what: str = "shape") -> Shape:
    """A shape as a tuple of non-negative ints and symbol names; GraphError otherwise."""
    if isinstance(shape, (int, str, np.integer)):
        shape = (shape,)
    try:
        dims = tuple(shape)
    except TypeError:
        raise GraphError(f"{what} must be a tuple of ints and symbol names, got {shape!r}") from None
    out: list[int | str] = []
    for d in dims:
        if isinstance(d, (bool, np.bool_)):
            raise GraphError(f"{what} {dims!r}: dimension {d!r} is not an int or a symbol name")
        if isinstance(d, (int, np.integer)):
            if d < 0:
                raise GraphError(f"{what} {dims!r}: negative dimension {d}")
            out.append(int(d))
        elif isinstance(d, str) and d.isidentifier():
            out.append(d)
        else:
            raise GraphError(f"{what} {dims!r}: dimension {d!r} is not an int or a symbol name "
                             "(an identifier such as 'n')")
    return tuple(out)


def format_shape(shape: Shape) -> str:
    """``(1, "m")`` -> ``(1, m)``."""
    return "(" + ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "") + ")"


def element_type(dtype: str) -> ir.Type:
    """The MLIR element type of ``dtype`` (inside the shared context)."""
    return ir.Type.parse(DTYPES[normalize_dtype(dtype)])


def dtype_of_element(elem: ir.Type) -> str:
    """The graph dtype of an MLIR element type; GraphError for other types."""
    name = str(elem)
    if name not in _FROM_ELEMENT:
        raise GraphError(f"element type {name} has no graph dtype; supported: {', '.join(_FROM_ELEMENT)}")
    return _FROM_ELEMENT[name]


def tensor_type(shape: Shape, dtype: str) -> ir.RankedTensorType:
    """``tensor<...>`` of ``shape`` (a symbol becomes ``?``) and ``dtype``."""
    dyn = ir.ShapedType.get_dynamic_size()
    return ir.RankedTensorType.get([d if isinstance(d, int) else dyn for d in shape], element_type(dtype))


def shape_attr(shape: Shape) -> ir.ArrayAttr:
    """The ``mlc.shape`` attribute of a shape: ``[ "n", 128 ]`` (i64 and string entries)."""
    i64 = ir.IntegerType.get_signless(64)
    return ir.ArrayAttr.get([ir.IntegerAttr.get(i64, d) if isinstance(d, int) else ir.StringAttr.get(d)
                             for d in shape])


def shape_from_attr(attr: ir.Attribute) -> Shape:
    """Inverse of :func:`shape_attr`."""
    out: list[int | str] = []
    for d in ir.ArrayAttr(attr):
        if isinstance(d, ir.StringAttr):
            out.append(d.value)
        elif isinstance(d, ir.IntegerAttr):
            out.append(d.value)
        else:
            raise GraphError(f"mlc.shape entries are i64 or strings, got {d}")
    return tuple(out)


class TensorStructInfo:
    """The type of a graph tensor (the course's ``relax.TensorStructInfo(shape, dtype)``)."""

    def __init__(self, shape: Sequence[int | str], dtype: Any = "float32"):
        self.shape = normalize_shape(shape, what="TensorStructInfo shape")
        self.dtype = normalize_dtype(dtype, what="TensorStructInfo dtype")

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TensorStructInfo) and (self.shape, self.dtype) == (other.shape, other.dtype)

    def __hash__(self) -> int:
        return hash((self.shape, self.dtype))

    def __repr__(self) -> str:
        return f"R.Tensor({format_shape(self.shape)}, dtype={self.dtype!r})"


class Expr:
    """A graph value of known ``shape`` and ``dtype``."""

    shape: Shape
    dtype: str

    @property
    def struct_info(self) -> TensorStructInfo:
        """Shape and dtype as a :class:`TensorStructInfo` (course ``expr.struct_info``)."""
        return TensorStructInfo(self.shape, self.dtype)

    @property
    def ndim(self) -> int:
        """Rank of the value."""
        return len(self.shape)

    def _type_str(self) -> str:
        return f"Tensor({format_shape(self.shape)}, {self.dtype!r})"


class Var(Expr):
    """A named graph variable: a function parameter, or a value bound by ``bb.emit``.

    Args:
        name: the variable's name (parameter names become ``mlc.name`` in the IR).
        shape: ints and symbol names, e.g. ``(1, "m")``.
        dtype: element type name (``"float32"``).
    """

    def __init__(self, name: str, shape: Sequence[int | str] | TensorStructInfo, dtype: Any = "float32"):
        if isinstance(shape, TensorStructInfo):
            shape, dtype = shape.shape, shape.dtype
        if not isinstance(name, str) or not name:
            raise GraphError(f"Var: the name must be a non-empty string, got {name!r}")
        self.name = name
        self.shape = normalize_shape(shape, what=f"shape of Var {name!r}")
        self.dtype = normalize_dtype(dtype, what=f"dtype of Var {name!r}")
        #: where the variable is bound: "param" (user-made), "dataflow" (inside a dataflow
        #: block, not visible outside it: a :class:`DataflowVar`) or "binding" (visible in
        #: the whole function)
        self.kind = "param"
        #: the bound expression for variables made by the builder
        self.value: Expr | None = None
        #: the dataflow block (an int id) a dataflow variable belongs to
        self.block: int | None = None

    def __repr__(self) -> str:
        return f"Var({self.name!r}, {format_shape(self.shape)}, {self.dtype!r})"


class DataflowVar(Var):
    """A variable bound inside a dataflow block (the course's ``relax.DataflowVar``).

    ``bb.emit`` inside ``with bb.dataflow():`` returns one; it is a :class:`Var` too
    (``isinstance(lv, relax.Var)``), visible only inside its block. ``bb.emit_output``
    gives the plain :class:`Var` that the rest of the function sees.
    """

    def __init__(self, name: str, shape: Sequence[int | str] | TensorStructInfo, dtype: Any = "float32"):
        super().__init__(name, shape, dtype)
        self.kind = "dataflow"


def bound_var(name: str, shape: Sequence[int | str], dtype: Any, *, kind: str, value: Expr | None,
              block: int | None = None) -> Var:
    """A variable bound to ``value``: a :class:`DataflowVar` when ``kind`` is ``"dataflow"``
    (the course's ``type(lv)`` inside a dataflow block), else a plain :class:`Var`."""
    var = (DataflowVar if kind == "dataflow" else Var)(name, shape, dtype)
    var.kind, var.value, var.block = kind, value, block
    return var


class Constant(Expr):
    """A constant tensor (``mlc.graph.const``); large ones are stored as ``dense_resource``."""

    def __init__(self, data: Any, dtype: Any = None, *, name: str | None = None):
        arr = np.asarray(data) if dtype is None else np.asarray(data, dtype=np.dtype(normalize_dtype(dtype)))
        if arr.dtype == np.dtype("float64") and dtype is None and not isinstance(data, np.ndarray):
            arr = arr.astype(np.float32)  # Python literals default to float32, like the course
        self.dtype = normalize_dtype(arr.dtype, what="dtype of constant")
        self.data = np.ascontiguousarray(arr).copy()
        self.shape = tuple(int(d) for d in self.data.shape)
        self.name = name

    def __repr__(self) -> str:
        return f"const({self._type_str()})"


class Call(Expr):
    """A call of graph op ``op`` (``"matmul"``, ``"call_tir"``...) on argument expressions.

    Made by :mod:`mlc_mlir.graph.ir.op`; ``attrs`` holds the op's attributes as Python values
    (``axes``, ``axis``, ``callee``).
    """

    def __init__(self, op: str, args: Sequence[Expr], attrs: dict[str, Any] | None = None,
                 shape: Shape | None = None, dtype: str | None = None):
        from ...ir import GlobalVar

        self.op = op
        self.args = tuple(args)
        self.attrs = dict(attrs or {})
        for i, a in enumerate(self.args):
            if not isinstance(a, Expr):
                raise GraphError(f"Call({op!r}): argument {i} is {type(a).__name__}, not a graph expression")
        if shape is None:  # the course's relax.Call(op, args, None, None): infer the type
            if isinstance(op, GlobalVar):
                if op.ret_shape is None:
                    raise GraphError(f"Call({op!r}): the callee's result type is unknown; use the "
                                     "GlobalVar returned by builder_.add_func or mod.get_global_var")
                shape, dtype = op.ret_shape, op.ret_dtype
            else:
                from .infer import infer

                shape, dtype = infer(str(op), [(a.shape, a.dtype) for a in self.args], self.attrs)
        self.shape = tuple(shape)
        self.dtype = dtype

    def __repr__(self) -> str:
        args = ", ".join(a.name if isinstance(a, Var) else repr(a) for a in self.args)
        attrs = "".join(f", {k}={v!r}" for k, v in self.attrs.items())
        return f"{self.op}({args}{attrs}) -> {self._type_str()}"


def const(value: Any, dtype: Any = None) -> Constant:
    """A constant tensor from a NumPy array (or anything ``np.asarray`` accepts).

    ``relax.const`` of the course: ``const(w0)`` inside a graph becomes ``mlc.constant``
    (``dense_resource`` storage above 16 elements, so the weights are not printed inline).
    """
    if isinstance(dtype, TensorStructInfo):
        dtype = dtype.dtype
    if hasattr(value, "numpy") and callable(value.numpy):
        value = value.numpy()
    elif hasattr(value, "__dlpack__") and not isinstance(value, np.ndarray):
        value = np.from_dlpack(value)
    return Constant(value, dtype)
