"""Element types and shapes of tensors, written once for te, topi and the graph layer.

- dtypes: the names (:data:`TENSOR_DTYPES`, :data:`BOOL`), :func:`normalize_dtype` (a name
  or a NumPy dtype), :func:`is_float`, :func:`is_int`, :func:`bits`, :func:`int_range`;
- element types both ways: :func:`element_type` (dtype -> MLIR type) and
  :func:`dtype_of_element` (MLIR type -> dtype), through one table, :data:`ELEMENT_TYPES`;
- bool: the type of comparisons and conditions, ``i1`` in registers (its element type);
  a buffer of bool holds one byte (``i8``) per element, as NumPy's ``bool`` and LLVM's
  memory layout of ``i1`` do, so arrays of bool pass to compiled code as they are;
- shapes: :data:`Shape` is a tuple of ints and symbolic dimensions (identifiers such as
  ``"n"``): :func:`normalize_shape`, :func:`format_shape`, :func:`numel`,
  :func:`tensor_type` (a symbolic dimension is ``?``) and :func:`broadcast_shapes`
  (NumPy broadcasting, symbolic dimensions included); the ``mlc.shape`` attribute that
  names the symbolic dimensions of a function's arguments and values (:func:`shape_attr`,
  :func:`shape_from_attr`; see docs/conventions.md).

The helpers that check user input raise ``error`` (keyword-only; each layer passes its
own: ``TEError``, ``GraphError``). The helpers that build MLIR types and attributes must
be called inside the shared context (``mlc_context()``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from mlir import ir

from .errors import MlcError

__all__ = ["Dim", "Shape", "TENSOR_DTYPES", "BOOL", "ELEMENT_TYPES", "normalize_dtype", "is_float", "is_int",
           "bits", "int_range", "element_type", "dtype_of_element", "normalize_shape", "format_shape", "numel",
           "tensor_type", "broadcast_shapes", "shape_attr", "shape_from_attr"]

Dim = int | str
"""One dimension: a size, or a symbolic size named by an identifier (``"n"``)."""
Shape = tuple[Dim, ...]

_FLOATS = {"float16": 16, "float32": 32, "float64": 64}
_INTS = {"int8": 8, "int16": 16, "int32": 32, "int64": 64}
TENSOR_DTYPES = tuple(_FLOATS) + tuple(_INTS)
"""Element types of tensors (te placeholders and computes; graph tensors add :data:`BOOL`)."""
BOOL = "bool"
"""The type of comparisons and conditions: ``i1`` in registers, one byte in a buffer."""
ELEMENT_TYPES: dict[str, str] = {"float16": "f16", "float32": "f32", "float64": "f64", "int8": "i8",
                                 "int16": "i16", "int32": "i32", "int64": "i64", BOOL: "i1"}
"""dtype -> the spelling of its MLIR element type."""
_DTYPE_OF = {v: k for k, v in ELEMENT_TYPES.items()}
_FLOAT_TYPES = {"f16": ir.F16Type.get, "f32": ir.F32Type.get, "f64": ir.F64Type.get}


def normalize_dtype(dtype: Any, *, what: str = "dtype", allow_bool: bool = False,
                    error: type[MlcError] = MlcError) -> str:
    """The canonical name (``"float32"``) of a dtype name or a NumPy dtype.

    Args:
        dtype: a name (``"float32"``) or anything ``np.dtype`` takes (``np.float32``).
        what: what the dtype is, for the message (``"dtype of placeholder 'A'"``).
        allow_bool: whether :data:`BOOL` is accepted.
        error: the error class to raise.

    Raises:
        error: ``dtype`` is not one of :data:`TENSOR_DTYPES` (or ``"bool"`` when allowed).
    """
    name = dtype
    if not isinstance(dtype, str):
        try:
            name = np.dtype(dtype).name
        except TypeError:
            name = None
    allowed = TENSOR_DTYPES + ((BOOL,) if allow_bool else ())
    if name not in allowed:
        raise error(f"unknown {what} {dtype!r}; supported: {', '.join(allowed)}")
    return name


def is_float(dtype: str) -> bool:
    """Whether ``dtype`` is a floating-point type."""
    return dtype in _FLOATS


def is_int(dtype: str) -> bool:
    """Whether ``dtype`` is a signed integer type (``bool`` is not)."""
    return dtype in _INTS


def bits(dtype: str) -> int:
    """Width in bits of ``dtype`` in a register (1 for ``bool``)."""
    return 1 if dtype == BOOL else _FLOATS.get(dtype) or _INTS[dtype]


def int_range(dtype: str) -> tuple[int, int]:
    """Smallest and largest value of the integer type ``dtype``."""
    n = bits(dtype)
    return -(1 << (n - 1)), (1 << (n - 1)) - 1


def element_type(dtype: Any, *, error: type[MlcError] = MlcError) -> ir.Type:
    """The MLIR element type of ``dtype`` (``f32``, ``i8``; ``i1`` for ``bool``).

    Raises:
        error: an unknown dtype (see :func:`normalize_dtype`).
    """
    spelling = ELEMENT_TYPES.get(dtype) if isinstance(dtype, str) else None
    if spelling is None:
        spelling = ELEMENT_TYPES[normalize_dtype(dtype, allow_bool=True, error=error)]
    if spelling in _FLOAT_TYPES:
        return _FLOAT_TYPES[spelling]()
    return ir.IntegerType.get_signless(int(spelling[1:]))


def dtype_of_element(elem: ir.Type, *, error: type[MlcError] = MlcError) -> str:
    """The dtype of an MLIR element type (``f32`` -> ``"float32"``, ``i1`` -> ``"bool"``).

    Raises:
        error: a type with no dtype here (``bf16``, ``index``, ``ui8``...).
    """
    name = str(elem)
    if name not in _DTYPE_OF:
        raise error(f"element type {name} has no dtype; supported: {', '.join(_DTYPE_OF)}")
    return _DTYPE_OF[name]


def normalize_shape(shape: Any, *, what: str = "shape", positive: bool = False,
                    error: type[MlcError] = MlcError) -> Shape:
    """``shape`` as a tuple of ints and symbol names; a single int or name is a 1-D shape.

    Args:
        shape: ints (or NumPy integers) and identifiers (``"n"``) in a tuple, list or
            other sequence.
        what: what the shape is, for the message (``"shape of Var 'x'"``).
        positive: whether a size must be positive (else non-negative: 0 is allowed).
        error: the error class to raise.

    Raises:
        error: not a sequence, or a dimension that is not a (non-negative / positive)
            int or an identifier.
    """
    if isinstance(shape, (int, str, np.integer)):
        shape = (shape,)
    if not isinstance(shape, (Sequence, np.ndarray)):
        raise error(f"{what} must be a tuple of ints and symbol names, got {type(shape).__name__} {shape!r}")
    dims = tuple(shape)
    out: list[Dim] = []
    for k, d in enumerate(dims):
        if isinstance(d, (int, np.integer)) and not isinstance(d, (bool, np.bool_)):
            if d < 0:
                raise error(f"{what} {dims!r}: negative dimension {d}")
            if positive and d == 0:
                raise error(f"{what} {dims!r}: dimension {k} is 0; sizes must be positive")
            out.append(int(d))
        elif isinstance(d, str) and d.isidentifier():
            out.append(d)
        else:
            raise error(f"{what} {dims!r}: dimension {k} is {d!r}, not an int or a symbol name "
                        "(an identifier such as 'n')")
    return tuple(out)


def format_shape(shape: Shape) -> str:
    """A shape as text: ``(1, "m")`` -> ``(1, m)``, ``(4,)`` -> ``(4,)``."""
    return "(" + ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "") + ")"


def numel(shape: Shape) -> int | None:
    """Number of elements, or None when a dimension is symbolic."""
    n = 1
    for d in shape:
        if not isinstance(d, int):
            return None
        n *= d
    return n


def tensor_type(shape: Shape, dtype: Any, *, error: type[MlcError] = MlcError) -> ir.RankedTensorType:
    """``tensor<...>`` of ``shape`` and ``dtype``; every dimension that is not an int is ``?``.

    Raises:
        error: an unknown dtype (see :func:`normalize_dtype`).
    """
    dyn = ir.ShapedType.get_dynamic_size()
    return ir.RankedTensorType.get([d if isinstance(d, int) else dyn for d in shape],
                                   element_type(dtype, error=error))


def broadcast_shapes(a: Shape, b: Shape, *, what: str, error: type[MlcError] = MlcError) -> Shape:
    """The NumPy broadcast of shapes ``a`` and ``b``: aligned from the last dimension, two
    dimensions agree when they are equal (the same int or the same symbol) or one is 1.

    Raises:
        error: ``"{what}: shapes (2, 3) and (4,) do not broadcast (dimension 3 vs 4)"``; a
            symbol against another symbol or an int other than 1 does not broadcast.
    """
    out: list[Dim] = []
    for i in range(1, max(len(a), len(b)) + 1):
        da = a[-i] if i <= len(a) else 1
        db = b[-i] if i <= len(b) else 1
        if da == db or db == 1:
            out.append(da)
        elif da == 1:
            out.append(db)
        else:
            raise error(f"{what}: shapes {format_shape(a)} and {format_shape(b)} do not broadcast "
                        f"(dimension {da} vs {db})")
    return tuple(reversed(out))


def shape_attr(shape: Shape) -> ir.ArrayAttr:
    """The ``mlc.shape`` attribute of a shape: ``["n", 128]`` (string and i64 entries)."""
    i64 = ir.IntegerType.get_signless(64)
    return ir.ArrayAttr.get([ir.IntegerAttr.get(i64, d) if isinstance(d, int) else ir.StringAttr.get(d)
                             for d in shape])


def shape_from_attr(attr: ir.Attribute, *, error: type[MlcError] = MlcError) -> Shape:
    """The shape an ``mlc.shape`` attribute holds (inverse of :func:`shape_attr`).

    Raises:
        error: an entry that is neither a string nor an integer.
    """
    out: list[Dim] = []
    for d in ir.ArrayAttr(attr):
        if isinstance(d, ir.StringAttr):
            out.append(d.value)
        elif isinstance(d, ir.IntegerAttr):
            out.append(d.value)
        else:
            raise error(f"mlc.shape entries are i64 or strings, got {d}")
    return tuple(out)
