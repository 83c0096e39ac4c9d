"""Graph expressions: variables, constants and op calls (the Relax ``Expr`` analogue).

The builder records expressions in Python and writes MLIR only when a function is
finished (its parameters may be given last, as in ``bb.emit_func_output(out, params)``).
Every expression knows its ``shape`` (a tuple of ints and strings; a string is a symbolic
dimension such as ``"n"``) and its ``dtype`` (``"float32"``...), checked by
:mod:`mlc_mlir.tensor_types`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ...errors import GraphError
from ...ir import GlobalVar
from ...tensor_types import Shape, format_shape, normalize_dtype, normalize_shape
from .infer import infer

__all__ = ["Expr", "Var", "DataflowVar", "bound_var", "Constant", "Call", "const", "TensorStructInfo"]


class TensorStructInfo:
    """The type of a graph tensor (the course's ``relax.TensorStructInfo(shape, dtype)``)."""

    def __init__(self, shape: Sequence[int | str], dtype: Any = "float32"):
        self.shape = normalize_shape(shape, what="TensorStructInfo shape", error=GraphError)
        self.dtype = normalize_dtype(dtype, what="TensorStructInfo dtype", allow_bool=True, error=GraphError)

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
        self.shape = normalize_shape(shape, what=f"shape of Var {name!r}", error=GraphError)
        self.dtype = normalize_dtype(dtype, what=f"dtype of Var {name!r}", allow_bool=True, error=GraphError)
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
        arr = np.asarray(data) if dtype is None else np.asarray(
            data, dtype=np.dtype(normalize_dtype(dtype, allow_bool=True, error=GraphError)))
        if arr.dtype == np.dtype("float64") and dtype is None and not isinstance(data, np.ndarray):
            arr = arr.astype(np.float32)  # Python literals default to float32, like the course
        self.dtype = normalize_dtype(arr.dtype, what="dtype of constant", allow_bool=True, error=GraphError)
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
