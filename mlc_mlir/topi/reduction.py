"""Reductions: ``sum``, ``mean``, ``max``, ``min``, ``prod``, ``any``, ``all`` over axes, and
the running sum ``cumsum``.

One ``te.compute`` per reduction (a reduce axis per reduced dimension, symbolic sizes
included); ``mean`` divides in a second compute, ``any``/``all`` reduce the bool tensor as
``int8`` and compare in a second one. ``prod`` is an unrolled product (te has no product
reduction), so it takes static extents only.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ..errors import TEError
from ..tensor_types import BOOL, is_float, normalize_dtype
from ._util import check_tensor, normalize_axis
from .. import te
from .transform import reshape

__all__ = ["sum", "mean", "max", "min", "prod", "any", "all", "cumsum", "MAX_PROD_ELEMENTS"]

#: most elements one :func:`prod` multiplies (the product is unrolled)
MAX_PROD_ELEMENTS = 64


def _axes(data: Any, axis: Any, op: str) -> list[int]:
    """The sorted reduced axes (None: all)."""
    ndim = len(data.shape)
    if axis is None:
        return list(range(ndim))
    items = (axis,) if isinstance(axis, int) else tuple(axis)
    out = sorted(normalize_axis(a, ndim, op) for a in items)
    if len(set(out)) != len(out):
        raise TEError(f"topi.{op}: axis {items} names a dimension twice")
    return out


def _out_shape(data: Any, axes: list[int], keepdims: bool) -> tuple:
    return tuple(1 if a in axes else d for a, d in enumerate(data.shape) if keepdims or a not in axes)


def _source_index(data: Any, axes: list[int], keepdims: bool, out_index: tuple, red: Sequence[Any]) -> tuple:
    """The index of ``data`` read for output ``out_index`` and reduced positions ``red``."""
    red_it, out_it = iter(red), iter(out_index)
    src = []
    for a in range(len(data.shape)):
        if a in axes:
            if keepdims:
                next(out_it)
            src.append(next(red_it))
        else:
            src.append(next(out_it))
    return tuple(src)


def _reduce(data: Any, axis: Any, keepdims: bool, combiner: str, op: str,
            read: Callable[[Any], Any] = lambda v: v) -> Any:
    check_tensor(data, op, "data")
    axes = _axes(data, axis, op)
    shape = _out_shape(data, axes, keepdims)
    if not axes:
        return te.compute(shape, lambda *i: read(data[i]), name=op)
    rvs = [te.reduce_axis((0, data.shape[a]), f"k{a}") for a in axes]
    reducer = getattr(te, combiner)  # te.sum, te.max, te.min
    return te.compute(shape, lambda *i: reducer(read(data[_source_index(data, axes, keepdims, i, rvs)]),
                                                axis=rvs), name=op)


def sum(data: Any, axis: Any = None, keepdims: bool = False) -> Any:  # noqa: A001 - topi.sum
    """The sum of ``data`` over ``axis`` (None: all; an int or a sequence)."""
    return _reduce(data, axis, keepdims, "sum", "sum")


def max(data: Any, axis: Any = None, keepdims: bool = False) -> Any:  # noqa: A001 - topi.max
    """The maximum of ``data`` over ``axis`` (None: all; an int or a sequence)."""
    return _reduce(data, axis, keepdims, "max", "max")


def min(data: Any, axis: Any = None, keepdims: bool = False) -> Any:  # noqa: A001 - topi.min
    """The minimum of ``data`` over ``axis`` (None: all; an int or a sequence)."""
    return _reduce(data, axis, keepdims, "min", "min")


def mean(data: Any, axis: Any = None, keepdims: bool = False) -> Any:
    """The mean of the float ``data`` over ``axis``: a sum, then a division by the count."""
    check_tensor(data, "mean", "data")
    if not is_float(data.dtype):
        raise TEError(f"topi.mean: needs a float tensor, got {data.dtype}")
    total = _reduce(data, axis, keepdims, "sum", "mean_sum")
    count: Any = 1
    for a in _axes(data, axis, "mean"):
        count = count * data.shape[a]
    if isinstance(count, int):
        scale = te.const(1.0 / count, data.dtype)
        return te.compute(total.shape, lambda *i: total[i] * scale, name="mean")
    return te.compute(total.shape, lambda *i: total[i] / count.astype(data.dtype), name="mean")


def prod(data: Any, axis: Any = None, keepdims: bool = False) -> Any:
    """The product of ``data`` over ``axis``, unrolled: at most :data:`MAX_PROD_ELEMENTS` static
    elements per product."""
    check_tensor(data, "prod", "data")
    axes = _axes(data, axis, "prod")
    extents = [data.shape[a] for a in axes]
    n = 1
    for e in extents:
        if not isinstance(e, int):
            raise TEError(f"topi.prod: reduced dimension {e} is symbolic; the unrolled product needs static ones")
        n *= e
    if n > MAX_PROD_ELEMENTS:
        raise TEError(f"topi.prod: {n} elements per product; at most {MAX_PROD_ELEMENTS} (it is unrolled)")
    positions: list[tuple[int, ...]] = [()]
    for e in extents:
        positions = [p + (k,) for p in positions for k in range(e)]

    def body(*i: Any) -> Any:
        acc = None
        for p in positions:
            v = data[_source_index(data, axes, keepdims, i, p)]
            acc = v if acc is None else acc * v
        return acc

    return te.compute(_out_shape(data, axes, keepdims), body, name="prod")


def _bool_reduce(data: Any, axis: Any, keepdims: bool, combiner: str, op: str) -> Any:
    check_tensor(data, op, "data")
    if data.dtype != BOOL:
        raise TEError(f"topi.{op}: needs a bool tensor, got {data.dtype}")
    acc = _reduce(data, axis, keepdims, combiner, f"{op}_int8", read=lambda v: v.astype("int8"))
    return te.compute(acc.shape, lambda *i: acc[i] != 0, name=op)


def any(data: Any, axis: Any = None, keepdims: bool = False) -> Any:  # noqa: A001 - topi.any
    """Whether any element of the bool ``data`` over ``axis`` is True."""
    return _bool_reduce(data, axis, keepdims, "max", "any")


def all(data: Any, axis: Any = None, keepdims: bool = False) -> Any:  # noqa: A001 - topi.all
    """Whether every element of the bool ``data`` over ``axis`` is True."""
    return _bool_reduce(data, axis, keepdims, "min", "all")


def cumsum(data: Any, axis: int | None = None, dtype: str | None = None) -> Any:
    """The inclusive running sum of ``data`` along ``axis`` (None: of the flattened ``data``),
    in ``dtype`` (default ``data``'s; int64 for bool).

    One compute: ``out[.., i, ..] = sum_k (k <= i ? data[.., k, ..] : 0)``, a reduction of
    ``n`` terms per element (quadratic in the scanned extent).
    """
    check_tensor(data, "cumsum", "data")
    dtype = normalize_dtype(dtype or ("int64" if data.dtype == BOOL else data.dtype), what="topi.cumsum dtype",
                            error=TEError)
    if axis is None:
        if len(data.shape) != 1:
            data = reshape(data, (-1,))
        axis = 0
    ax = normalize_axis(axis, len(data.shape), "cumsum")
    k = te.reduce_axis((0, data.shape[ax]), "k")
    zero = te.const(0, dtype)

    def body(*i: Any) -> Any:
        src = tuple(k if a == ax else ix for a, ix in enumerate(i))
        return te.sum(te.if_then_else(k <= i[ax], data[src].astype(dtype), zero), axis=k)

    return te.compute(data.shape, body, name="cumsum")

