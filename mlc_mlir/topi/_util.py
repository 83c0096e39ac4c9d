"""Helpers shared by the topi operators: shapes of te tensors, broadcasting indices."""

from __future__ import annotations

from typing import Any

from ..errors import TEError
from ..tensor_types import broadcast_shapes
from .. import te
from ..te.tensor import shape_names

__all__ = ["te_dim", "bcast_index", "broadcast", "check_tensor", "normalize_axis", "const_int", "window_pair",
           "padding4", "static_dim", "window_out_size"]


def check_tensor(x: Any, op: str, what: str = "argument") -> None:
    """Raise :class:`TEError` unless ``x`` is a te tensor."""
    if not isinstance(x, te.Tensor):
        raise TEError(f"topi.{op}: {what} must be a te tensor (te.placeholder / te.compute), "
                      f"got {type(x).__name__}")


def te_dim(tensors: tuple, d: Any) -> Any:
    """The te dimension object for dim ``d`` (a symbol name is looked up in ``tensors``)."""
    if isinstance(d, int):
        return d
    for t in tensors:
        for x in t.shape:
            if not isinstance(x, int) and x.name == d:
                return x
    return d


def bcast_index(t: Any, out_rank: int, idx: tuple) -> tuple:
    """Indices into ``t`` for output indices ``idx`` under NumPy broadcasting."""
    off = out_rank - len(t.shape)
    return tuple(0 if isinstance(d, int) and d == 1 else idx[off + j] for j, d in enumerate(t.shape))


def broadcast(op: str, a: Any, b: Any) -> tuple:
    """The NumPy-broadcast shape of ``a`` and ``b`` as te dims; TEError if they do not broadcast."""
    shape = broadcast_shapes(shape_names(a.shape), shape_names(b.shape), what=f"topi.{op}", error=TEError)
    return tuple(te_dim((a, b), d) for d in shape)


def normalize_axis(axis: Any, ndim: int, op: str) -> int:
    """``axis`` in ``[0, ndim)`` (negative counts from the end); TEError when out of range."""
    if not isinstance(axis, int) or isinstance(axis, bool) or not -ndim <= axis < ndim:
        raise TEError(f"topi.{op}: axis {axis!r} is out of range for a tensor of rank {ndim}")
    return axis % ndim


def const_int(value: Any, op: str, what: str) -> int:
    """``value`` as a non-negative int; TEError otherwise."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise TEError(f"topi.{op}: {what} must be a non-negative int, got {value!r}")
    return value


def window_pair(value: Any, op: str, what: str, *, positive: bool = True) -> tuple[int, int]:
    """An int or a 1/2-sequence as a pair of ints (positive unless ``positive=False``); TEError otherwise."""
    vals = (value, value) if isinstance(value, int) else tuple(value)
    if len(vals) == 1:
        vals = (vals[0], vals[0])
    if len(vals) != 2:
        raise TEError(f"topi.{op}: {what} must be an int or a pair, got {value!r}")
    out = const_int(vals[0], op, what), const_int(vals[1], op, what)
    if positive and 0 in out:
        raise TEError(f"topi.{op}: {what} must be positive, got {value!r}")
    return out


def padding4(padding: Any, op: str) -> tuple[int, int, int, int]:
    """(top, left, bottom, right) of an int, a pair (h, w) or a 4-tuple (Relax's order)."""
    if padding is None:
        return 0, 0, 0, 0
    vals = (padding,) if isinstance(padding, int) else tuple(padding)
    if len(vals) in (1, 2):
        vals = vals * (4 // len(vals))
    if len(vals) != 4:
        raise TEError(f"topi.{op}: padding must be an int, (h, w) or (top, left, bottom, right), got {padding!r}")
    top, left, bottom, right = (const_int(v, op, "padding") for v in vals)
    return top, left, bottom, right


def static_dim(size: Any, op: str, what: str) -> int:
    """``size`` if it is a static int; TEError naming ``what`` otherwise."""
    if not isinstance(size, int):
        raise TEError(f"topi.{op}: {what} must be static, got {shape_names((size,))[0]!r}")
    return size


def window_out_size(size: int, kernel: int, stride: int, dilation: int, op: str) -> int:
    """Output size of a sliding window (no ceil mode); TEError when the window does not fit."""
    out = (size - dilation * (kernel - 1) - 1) // stride + 1
    if out <= 0:
        raise TEError(f"topi.{op}: (padded) input size {size} is smaller than the (dilated) kernel {kernel}")
    return out
