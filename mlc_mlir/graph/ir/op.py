"""Graph ops (``mlc.graph.op``, the course's ``relax.op``): each returns a :class:`Call`.

An op checks its arguments and infers its result shape at once (:mod:`.infer`), so a
mistake such as a matmul with mismatched inner dimensions raises :class:`GraphError`
where it is written. Emit the call with ``bb.emit(...)``; it becomes the ``mlc`` op of
the same name (``mlc.matmul``, ``mlc.call_tir``...).
"""

from __future__ import annotations

import difflib
import types
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ...errors import GraphError
from ...tensor_types import format_shape, normalize_dtype, normalize_shape, numel
from .expr import Call, Expr, TensorStructInfo
from . import op_nn, op_tensor
from .op_base import _call, _expr
from .op_tensor import *  # noqa: F401,F403 - tensor ops are graph ops too (mlc.graph.op.where...)

__all__ = ["matmul", "add", "subtract", "multiply", "divide", "relu", "gelu", "sigmoid", "tanh", "nn", "permute_dims",
           "reshape", "ewise_fma", "softmax", "call_tir", "call_dps_packed", "alloc_tensor", "MAX_CALL_ARGS",
           "UnknownOpError", *op_tensor.__all__]

#: the public name of this module (``relax.op`` of the course)
PUBLIC_NAME = "mlc_mlir.graph.op"


class UnknownOpError(GraphError, AttributeError):
    """A graph op that does not exist (``relax.op.no_such_op``); an AttributeError too."""


def _unknown_op(namespace: str, name: str, known: Sequence[str]) -> UnknownOpError:
    close = difflib.get_close_matches(name, known, n=3, cutoff=0.7)
    hint = f"; did you mean {' or '.join(close)}?" if close else ""
    return UnknownOpError(f"{namespace} has no op {name!r}{hint} (its ops: {', '.join(sorted(known))})")


#: the most arguments a call op takes (IRDL declares one optional slot per argument)
MAX_CALL_ARGS = 16


def matmul(a: Any, b: Any) -> Call:
    """``a @ b`` (NumPy rules; ``b`` of rank 1 or 2)."""
    return _call("matmul", [a, b])


def add(a: Any, b: Any) -> Call:
    """Elementwise ``a + b`` with NumPy broadcasting."""
    return _call("add", [a, b])


def subtract(a: Any, b: Any) -> Call:
    """Elementwise ``a - b`` with NumPy broadcasting."""
    return _call("subtract", [a, b])


def multiply(a: Any, b: Any) -> Call:
    """Elementwise ``a * b`` with NumPy broadcasting."""
    return _call("multiply", [a, b])


def divide(a: Any, b: Any) -> Call:
    """Elementwise ``a / b`` with NumPy broadcasting."""
    return _call("divide", [a, b])


def relu(x: Any) -> Call:
    """``max(x, 0)`` elementwise (``relax.op.nn.relu``)."""
    return _call("relu", [x])


def gelu(x: Any) -> Call:
    """``0.5 * x * (1 + erf(x / sqrt(2)))`` elementwise (``relax.op.nn.gelu``)."""
    return _call("gelu", [x])


def sigmoid(x: Any) -> Call:
    """``1 / (1 + exp(-x))`` elementwise (``relax.op.sigmoid``)."""
    return _call("sigmoid", [x])


def tanh(x: Any) -> Call:
    """``tanh(x)`` elementwise (``relax.op.tanh``)."""
    return _call("tanh", [x])


def ewise_fma(a: Any, b: Any, c: Any) -> Call:
    """``a * b + c`` elementwise (three tensors of one shape)."""
    return _call("ewise_fma", [a, b, c])


def permute_dims(x: Any, axes: Sequence[int] | None = None) -> Call:
    """Transpose: result dimension ``i`` is ``x``'s dimension ``axes[i]`` (default: reversed)."""
    x = _expr(x, "permute_dims", 0)
    if axes is None:
        axes = tuple(reversed(range(x.ndim)))
    try:
        axes = tuple(int(a) % (x.ndim or 1) for a in axes)  # (max is the graph op here)
    except (TypeError, ValueError):
        raise GraphError(f"permute_dims: axes must be ints, got {axes!r}") from None
    return _call("permute_dims", [x], {"axes": axes})


def reshape(x: Any, shape: Sequence[int | str]) -> Call:
    """``x`` with a new shape of the same size; one ``-1`` is inferred when sizes are static."""
    x = _expr(x, "reshape", 0)
    dims = tuple(shape) if not isinstance(shape, (int, str)) else (shape,)
    if dims.count(-1) > 1:
        raise GraphError(f"reshape: at most one -1 in the new shape, got {dims}")
    if -1 in dims:
        total, rest = numel(x.shape), numel(tuple(d for d in dims if d != -1))
        if total is None or rest is None or rest == 0 or total % rest:
            raise GraphError(f"reshape: cannot infer the -1 in {dims} from {format_shape(x.shape)}")
        dims = tuple(total // rest if d == -1 else d for d in dims)
    return _call("reshape", [x], {"shape": normalize_shape(dims, what="reshape shape", error=GraphError)})


def softmax(x: Any, axis: int = -1) -> Call:
    """``exp(x - max) / sum(exp(x - max))`` along ``axis``."""
    x = _expr(x, "softmax", 0)
    if not isinstance(axis, (int, np.integer)) or isinstance(axis, bool):
        raise GraphError(f"softmax: axis must be an int, got {axis!r}")
    if x.ndim and -x.ndim <= axis < x.ndim:
        axis = int(axis) % x.ndim
    return _call("softmax", [x], {"axis": int(axis)})


def _call_args(op: str, args: Any) -> tuple[Expr, ...]:
    if isinstance(args, Expr):
        args = (args,)
    if not isinstance(args, (tuple, list)):
        raise GraphError(f"{op}: args must be a tuple of graph expressions, got {type(args).__name__}")
    if len(args) > MAX_CALL_ARGS:
        raise GraphError(f"{op}: {len(args)} arguments; a call takes at most {MAX_CALL_ARGS} "
                         "(one IRDL operand slot each, see dialects/mlc.irdl.mlir)")
    return tuple(_expr(a, op, i) for i, a in enumerate(args))


def _callee_name(func: Any, op: str) -> str:
    name = getattr(func, "name", func)
    if not isinstance(name, str) or not name:
        raise GraphError(f"{op}: the callee must be a function name (str), got {func!r}")
    return name


def call_tir(func: Any, args: Any, out_shape: Sequence[int | str], dtype: Any = "float32") -> Call:
    """Call tensor program ``func`` (a name in the module) destination-passing style.

    The result, of ``out_shape`` and ``dtype``, is allocated by the call and passed as the
    program's last argument (course ``R.call_tir``).
    """
    name = _callee_name(func, "call_tir")
    if isinstance(out_shape, TensorStructInfo):  # R.Tensor((1, n), "float32") of the course
        out_shape, dtype = out_shape.shape, out_shape.dtype
    shape = normalize_shape(out_shape, what="call_tir out_shape", error=GraphError)
    return Call("call_tir", _call_args("call_tir", args), {"callee": name}, shape,
                normalize_dtype(dtype, what="call_tir dtype", allow_bool=True, error=GraphError))


def call_dps_packed(func: Any, args: Any, out_shape: Sequence[int | str], dtype: Any = "float32") -> Call:
    """Call environment function ``func`` (registered with ``mlc.register_func``).

    Destination-passing: the function receives (inputs..., output) as zero-copy arrays and
    writes the output (course ``R.call_dps_packed``).
    """
    name = _callee_name(func, "call_dps_packed")
    if isinstance(out_shape, TensorStructInfo):  # R.Tensor((1, n), "float32") of the course
        out_shape, dtype = out_shape.shape, out_shape.dtype
    shape = normalize_shape(out_shape, what="call_dps_packed out_shape", error=GraphError)
    return Call("call_dps", _call_args("call_dps_packed", args), {"callee": name}, shape,
                normalize_dtype(dtype, what="call_dps_packed dtype", allow_bool=True, error=GraphError))


def alloc_tensor(shape: Sequence[int | str], dtype: Any = "float32") -> Call:
    """A fresh, uninitialised tensor (``R.alloc_tensor``): side-effecting, so only outside
    dataflow blocks."""
    return Call("alloc_tensor", (), {}, normalize_shape(shape, what="alloc_tensor shape", error=GraphError),
                normalize_dtype(dtype, what="alloc_tensor dtype", allow_bool=True, error=GraphError))



class _OpNamespace(types.SimpleNamespace):
    """A namespace of ops whose missing names raise :class:`UnknownOpError`."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        raise _unknown_op(f"{PUBLIC_NAME}.nn", name, [k for k in vars(self) if not k.startswith("_")])


#: ``mlc.graph.op.nn``: the neural-network ops under their ``relax.op.nn`` names
def _nn() -> _OpNamespace:
    return _OpNamespace(relu=relu, gelu=gelu, softmax=softmax, sigmoid=sigmoid, tanh=tanh,
                        **{name: getattr(op_nn, name) for name in op_nn.__all__})


nn = _nn()


if not TYPE_CHECKING:  # hidden from type checkers, so that a misspelt op is an error there too

    def __getattr__(name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(f"module {PUBLIC_NAME!r} has no attribute {name!r}")
        ops = [n for n in __all__ if n[0].islower() and n != "nn"]
        raise _unknown_op(PUBLIC_NAME, name, ops + [f"nn.{n}" for n in vars(nn) if n not in ops])
