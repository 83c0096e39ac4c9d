"""Constant padding (TVM's ``topi.nn.pad``), written with ``te.if_then_else`` guarded reads."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..errors import TEError
from ..te.named import as_named
from ..tensor_types import BOOL, is_float
from ._util import check_tensor
from .. import te

__all__ = ["pad", "pad_hw", "padded_pixel"]


def pad(data: Any, pad_before: Sequence[int], pad_after: Sequence[int] | None = None,
        pad_value: float = 0.0, name: str = "pad") -> Any:
    """``data`` with ``pad_before[k]`` / ``pad_after[k]`` elements of ``pad_value`` around dimension ``k``.

    Example (NCHW, a 3x3 convolution's padding of 1, max pooling's ``-inf``)::

        x = te.placeholder(("n", 3, 32, 32), name="x")
        p = topi.nn.pad(x, (0, 0, 1, 1), pad_value=-math.inf)     # ("n", 3, 34, 34)

    The body is ``te.if_then_else(te.all(h >= 1, h < 33, ...), x[b, c, h - 1, w - 1],
    pad_value)``: one ``linalg.generic`` whose read of ``x`` is a ``tensor.extract`` with
    clamped indices (see :mod:`mlc_mlir.te.plan`). Dimensions without padding are read
    directly (no condition).

    Args:
        data: the te tensor to pad.
        pad_before: per dimension, the number of elements before (non-negative ints).
        pad_after: per dimension, the number after; defaults to ``pad_before``.
        pad_value: the value of the padding (a float, ``-math.inf`` included, for float
            tensors; an integral value for integer tensors).
        name: the compute's name.

    Returns:
        The padded tensor: dimension ``k`` has ``pad_before[k] + size + pad_after[k]`` elements.

    Raises:
        TEError: a padding list whose length is not the rank, a negative or non-int
            padding, padding of a symbolic dimension, or a pad value the dtype cannot hold.
    """
    check_tensor(data, "nn.pad", "data")
    rank = len(data.shape)
    before = _widths(pad_before, rank, "pad_before")
    after = before if pad_after is None else _widths(pad_after, rank, "pad_after")
    for k, (b, a, d) in enumerate(zip(before, after, data.shape)):
        if (b or a) and not isinstance(d, int):
            raise TEError(f"topi.nn.pad: dimension {k} of {data.name} is the symbolic size {d.name!r}; "
                          f"it cannot be padded (pad_before {b}, pad_after {a}), only static ones")
    value = _pad_value(pad_value, data.dtype)
    shape = tuple(d if isinstance(d, te.Var) else b + d + a for b, d, a in zip(before, data.shape, after))

    def body(*i: Any) -> Any:
        conds = []
        for k, (b, a, d) in enumerate(zip(before, after, data.shape)):
            if b:
                conds.append(i[k] >= b)
            if a:
                conds.append(i[k] < b + d)
        read = data[tuple(ix - b if b else ix for ix, b in zip(i, before))]
        return te.if_then_else(te.all(*conds), read, value) if conds else read

    out = te.compute(shape, body, name=name)
    if data.dtype != BOOL and not isinstance(pad_value, te.Expr) and any(before + after):
        as_named(out, "tensor.pad", (data,), low=before, high=after, value=float(value.value))
    return out


def _widths(widths: Any, rank: int, what: str) -> tuple[int, ...]:
    if not isinstance(widths, (list, tuple)) or len(widths) != rank:
        raise TEError(f"topi.nn.pad: {what} must list one int per dimension ({rank}), got {widths!r}")
    out = []
    for w in widths:
        if isinstance(w, np.integer):
            w = int(w)
        if not isinstance(w, int) or isinstance(w, bool) or w < 0:
            raise TEError(f"topi.nn.pad: {what} must hold non-negative ints, got {widths!r}")
        out.append(w)
    return tuple(out)


def _pad_value(value: Any, dtype: str) -> Any:
    if isinstance(value, te.Expr):
        return value
    if isinstance(value, np.generic):
        value = value.item()
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        raise TEError(f"topi.nn.pad: pad_value must be a number, got {value!r}")
    if not is_float(dtype) and not (math.isfinite(value) and float(value).is_integer()):
        raise TEError(f"topi.nn.pad: pad_value {value!r} does not fit the {dtype} tensor")
    return te.const(value, dtype)


def pad_hw(data: Any, pads: tuple[int, int, int, int], value: float, *, named: bool = True) -> Any:
    """``data`` padded around H and W with ``value`` (:func:`pad`), or ``data`` itself.

    ``named=False`` keeps the padding a generic (no ``tensor.pad``), which fusion can
    merge into the compute reading it (im2col does)."""
    top, left, bottom, right = pads
    if not any(pads):
        return data
    out = pad(data, (0, 0, top, left), (0, 0, bottom, right), pad_value=value)
    if not named:
        out.named = None
    return out


def padded_pixel(data: Any, b: Any, c: Any, row: Any, col: Any, pads: tuple[int, int, int, int], value: Any) -> Any:
    """``data[b, c, row, col]`` (NCHW) where ``(row, col)`` lies inside the input, ``value`` in
    the padding ``pads`` (top, left, bottom, right) around it, for a compute that reads the
    input in place or builds its own padded layout (a window's strided taps, stride
    phases): the read at indices clamped into the input -- a ``tensor.extract``, vectorized
    as a gather (an affine read such as ``y * 2 + 1`` would be an operand whose map is no
    projected permutation, which the vectorizer refuses) -- under the conditions of the
    sides that have padding."""
    top, left, bottom, right = pads
    _, _, h, w = data.shape
    conds = [cond for cond, pad in ((row >= 0, top), (row < h, bottom), (col >= 0, left), (col < w, right)) if pad]
    read = data[b, c, te.min(te.max(row, 0), h - 1), te.min(te.max(col, 0), w - 1)]
    return te.if_then_else(te.all(*conds), read, value) if conds else read
