"""Layout and indexing operators: transpose, reshape, flatten, broadcast_to, expand_dims,
squeeze, strided_slice, concatenate, take, tril/triu."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..errors import TEError
from ..tensor_types import numel
from ._util import bcast_index, check_tensor, normalize_axis, te_dim
from .. import te
from ..te.named import as_named
from ..te.tensor import shape_names

__all__ = ["transpose", "permute_dims", "reshape", "flatten", "broadcast_to", "expand_dims", "squeeze",
           "strided_slice", "concatenate", "take", "trilu", "tril", "triu"]


def transpose(a: Any, axes: Sequence[int] | None = None) -> Any:
    """Result dimension ``k`` is ``a``'s dimension ``axes[k]`` (default: reversed)."""
    check_tensor(a, "transpose")
    n = len(a.shape)
    axes = tuple(reversed(range(n))) if axes is None else tuple(int(x) % max(n, 1) for x in axes)
    if sorted(axes) != list(range(n)):
        raise TEError(f"topi.transpose: axes {axes} are not a permutation of {n} dimensions")
    shape = tuple(a.shape[x] for x in axes)

    def body(*i: Any) -> Any:
        src = [None] * n
        for k, x in enumerate(axes):
            src[x] = i[k]
        return a[tuple(src)]

    return te.compute(shape, body, name="permute_dims")


def permute_dims(a: Any, axes: Sequence[int] | None = None) -> Any:
    """Same as :func:`transpose` (the Relax name)."""
    return transpose(a, axes)


def _strides(shape: tuple) -> list:
    out: list[int | None] = []
    acc: int | None = 1
    for d in reversed(shape):
        out.append(acc)
        acc = acc * d if isinstance(d, int) and isinstance(acc, int) else None
    return list(reversed(out))


def reshape(a: Any, newshape: Sequence[int | str]) -> Any:
    """``a`` read in row-major order into ``newshape`` (one ``-1`` inferred when static).

    Dimensions that both shapes start or end with (the same size or symbol, e.g. a
    symbolic batch and sequence) are kept as they are; of the ones between, only the
    leading dimension may be symbolic: ``(8, "batch", 96) -> (8, "batch", 3, 32)``,
    ``(1, "seq", 256) -> ("seq", 256)`` and ``("n", 12) -> ("n", 3, 4)`` work,
    ``(4, "n") -> ("n", 4)`` does not.
    """
    check_tensor(a, "reshape")
    in_dims, out_dims = shape_names(a.shape), tuple(newshape)
    if -1 in out_dims:
        total, rest = numel(in_dims), numel(tuple(d for d in out_dims if d != -1))
        if total is None or not rest or total % rest:
            raise TEError(f"topi.reshape: cannot infer the -1 in {out_dims} from {in_dims}")
        out_dims = tuple(total // rest if d == -1 else d for d in out_dims)
    keep = 0  # the dimensions both shapes start with
    while keep < min(len(in_dims), len(out_dims)) and in_dims[keep] == out_dims[keep]:
        keep += 1
    tail = 0  # and end with
    while (tail < min(len(in_dims), len(out_dims)) - keep
           and in_dims[len(in_dims) - 1 - tail] == out_dims[len(out_dims) - 1 - tail]):
        tail += 1
    mid_in, mid_out = in_dims[keep:len(in_dims) - tail], out_dims[keep:len(out_dims) - tail]
    s_in, s_out = _strides(mid_in), _strides(mid_out)
    if None in s_in + s_out:
        raise TEError(f"topi.reshape {in_dims} -> {out_dims}: between the dimensions both shapes start and "
                      "end with, only the leading dimension may be symbolic")
    shape = tuple(te_dim((a,), d) for d in out_dims)
    n_out = len(out_dims)

    def body(*i: Any) -> Any:
        flat = 0
        for ix, s in zip(i[keep:n_out - tail], s_out):
            flat = flat + ix * s
        src = list(i[:keep])
        for j, (s, d) in enumerate(zip(s_in, mid_in)):
            q = flat // s if s != 1 else flat
            src.append(q % d if j > 0 and isinstance(d, int) else q)
        src += list(i[n_out - tail:])
        return a[tuple(src)]

    return te.compute(shape, body, name="reshape")


def flatten(a: Any, start_dim: int = 1) -> Any:
    """Collapse dimensions ``start_dim..`` into one (``torch.flatten(x, 1)``, ``nn.Flatten``)."""
    check_tensor(a, "flatten")
    d = shape_names(a.shape)
    rest = 1
    for x in d[start_dim:]:
        if not isinstance(x, int):
            raise TEError(f"topi.flatten: dimension {x} after start_dim {start_dim} is symbolic")
        rest *= x
    return reshape(a, (*d[:start_dim], rest))


def broadcast_to(data: Any, shape: Sequence[int | str]) -> Any:
    """``data`` broadcast to ``shape`` (NumPy rules; a symbolic size is looked up in ``data``)."""
    check_tensor(data, "broadcast_to", "data")
    target = tuple(te_dim((data,), d) for d in shape)
    names = shape_names(data.shape)
    off = len(target) - len(names)
    if off < 0 or any(d not in (1, t) for d, t in zip(names, shape_names(target)[off:])):
        raise TEError(f"topi.broadcast_to: {names} does not broadcast to {tuple(shape)}")
    out = te.compute(target, lambda *i: data[bcast_index(data, len(target), i)], name="broadcast_to")
    return as_named(out, "linalg.broadcast", (data,))


def expand_dims(a: Any, axis: int | Sequence[int]) -> Any:
    """``a`` with a new dimension of size 1 at each position ``axis`` of the result."""
    check_tensor(a, "expand_dims")
    items = (axis,) if isinstance(axis, int) else tuple(axis)
    rank = len(a.shape) + len(items)
    new = {normalize_axis(x, rank, "expand_dims") for x in items}
    if len(new) != len(items):
        raise TEError(f"topi.expand_dims: axis {items} names a position twice")
    it = iter(a.shape)
    shape = tuple(1 if k in new else next(it) for k in range(rank))
    return te.compute(shape, lambda *i: a[tuple(ix for k, ix in enumerate(i) if k not in new)],
                      name="expand_dims")


def squeeze(a: Any, axis: int | Sequence[int] | None = None) -> Any:
    """``a`` without the dimensions ``axis`` (each of size 1; None: every static 1): a
    :func:`reshape` where that applies (only the leading dimension symbolic)."""
    check_tensor(a, "squeeze")
    if axis is None:
        gone = {k for k, d in enumerate(a.shape) if isinstance(d, int) and d == 1}
    else:
        items = (axis,) if isinstance(axis, int) else tuple(axis)
        gone = {normalize_axis(x, len(a.shape), "squeeze") for x in items}
    for k in gone:
        if not (isinstance(a.shape[k], int) and a.shape[k] == 1):
            raise TEError(f"topi.squeeze: dimension {k} of {shape_names(a.shape)} is not 1")
    shape = tuple(d for k, d in enumerate(a.shape) if k not in gone)
    if None not in _strides(shape_names(a.shape)) + _strides(shape_names(shape)):
        return reshape(a, shape_names(shape))  # a read a[i, 0, j] does not vectorize; reshape's does

    def body(*i: Any) -> Any:
        it = iter(i)
        return a[tuple(0 if k in gone else next(it) for k in range(len(a.shape)))]

    return te.compute(shape, body, name="squeeze")


def strided_slice(a: Any, begin: Sequence[int], end: Sequence[int], strides: Sequence[int] | None = None,
                  axes: Sequence[int] | None = None) -> Any:
    """``a[begin:end:stride]`` along ``axes`` (default: the first ``len(begin)``), NumPy's bounds
    (negative from the end, clamped); sliced axes must be static."""
    check_tensor(a, "strided_slice")
    axes = tuple(range(len(begin))) if axes is None else tuple(axes)
    strides = (1,) * len(axes) if strides is None else tuple(strides)
    if not len(axes) == len(begin) == len(end) == len(strides):
        raise TEError(f"topi.strided_slice: axes {axes}, begin {tuple(begin)}, end {tuple(end)} and strides "
                      f"{strides} must have one entry per sliced axis")
    picks: dict[int, range] = {}
    prefix: dict[int, tuple[str, int]] = {}  # axis -> (symbolic end, the axis's size)
    for x, b, e, s in zip(axes, begin, end, strides):
        k = normalize_axis(x, len(a.shape), "strided_slice")
        d = a.shape[k]
        if isinstance(e, str):  # a[:seq]
            if b != 0 or s != 1 or not isinstance(d, int):
                raise TEError(f"topi.strided_slice: a symbolic end {e!r} needs begin 0, stride 1 and a static "
                              f"axis, got {b}:{e}:{s} on axis {k} of {shape_names(a.shape)}")
            prefix[k] = (e, d)
            continue
        if not isinstance(d, int) or s == 0:
            raise TEError(f"topi.strided_slice: axis {k} of {shape_names(a.shape)} is symbolic or stride is 0")
        picks[k] = range(*slice(b, e, s).indices(d))
        if not picks[k]:
            raise TEError(f"topi.strided_slice: {b}:{e}:{s} selects nothing from axis {k} of size {d}")
    shape = tuple(len(picks[k]) if k in picks else prefix[k][0] if k in prefix else d for k, d in enumerate(a.shape))

    def index(k: int, ix: Any) -> Any:
        if k in picks:
            return picks[k].start + picks[k].step * ix
        if k in prefix:  # a larger size at run time reads the last element (an extract read, clamped)
            return te.min(ix, prefix[k][1] - 1)
        return ix

    out = te.compute(shape, lambda *i: a[tuple(index(k, ix) for k, ix in enumerate(i))], name="strided_slice")
    if prefix or any(r.step < 0 for r in picks.values()):
        return out  # a clamped read, or a reversed one: the generic
    return as_named(out, "tensor.extract_slice", (a,), offsets=tuple(picks[k].start if k in picks else 0
                                                                      for k in range(len(a.shape))),
                    strides=tuple(picks[k].step if k in picks else 1 for k in range(len(a.shape))))


def concatenate(a_tuple: Sequence[Any], axis: int = 0) -> Any:
    """The tensors joined along the static ``axis``: one compute whose branches select the
    source tensor by position (reads in untaken branches are clamped, see te.if_then_else)."""
    tensors = list(a_tuple)
    if not tensors:
        raise TEError("topi.concatenate: no tensors")
    for t in tensors:
        check_tensor(t, "concatenate")
    first = tensors[0]
    k = normalize_axis(axis, len(first.shape), "concatenate")
    if len(tensors) == 1:
        return te.compute(first.shape, lambda *i: first[i], name="concat")
    offsets, total = [], 0
    for t in tensors:
        if len(t.shape) != len(first.shape) or not isinstance(t.shape[k], int) or any(
                shape_names(t.shape)[j] != shape_names(first.shape)[j] for j in range(len(t.shape)) if j != k):
            raise TEError(f"topi.concatenate: {[shape_names(x.shape) for x in tensors]} cannot be joined "
                          f"along the static axis {k}")
        offsets.append(total)
        total += t.shape[k]
    shape = tuple(total if j == k else d for j, d in enumerate(first.shape))

    def body(*i: Any) -> Any:
        def read(n: int) -> Any:
            return tensors[n][tuple(ix - offsets[n] if j == k else ix for j, ix in enumerate(i))]
        out = read(len(tensors) - 1)
        for n in range(len(tensors) - 2, -1, -1):
            out = te.if_then_else(i[k] < offsets[n + 1], read(n), out)
        return out

    return as_named(te.compute(shape, body, name="concat"), "tensor.concat", tensors, dim=k)


def take(a: Any, indices: Any, axis: int | None = None) -> Any:
    """Elements of ``a`` at the integer ``indices`` along ``axis`` (None: of the flattened
    ``a``): ``a.shape[:axis] + indices.shape + a.shape[axis + 1:]``. A negative index counts
    from the end; an out-of-range one reads the nearest end."""
    check_tensor(a, "take")
    check_tensor(indices, "take", "indices")
    if indices.dtype not in ("int32", "int64"):
        raise TEError(f"topi.take: indices must be int32 or int64, got {indices.dtype}")
    if axis is None:
        if len(a.shape) != 1:
            a = reshape(a, (-1,))
        axis = 0
    k = normalize_axis(axis, len(a.shape), "take")
    r = len(indices.shape)
    shape = (*a.shape[:k], *indices.shape, *a.shape[k + 1:])
    dim = a.shape[k]

    def body(*i: Any) -> Any:
        v = indices[i[k:k + r]]
        v = te.if_then_else(v < 0, v + dim, v)
        return a[tuple(i[:k]) + (v,) + tuple(i[k + r:])]

    return te.compute(shape, body, name="take")


def trilu(data: Any, k: int, upper: bool) -> Any:
    """``data`` with the elements below (``upper``) or above the ``k``-th diagonal of its last
    two dimensions zeroed."""
    check_tensor(data, "trilu", "data")
    if len(data.shape) < 2:
        raise TEError(f"topi.trilu: needs a tensor of rank 2 or more, got {shape_names(data.shape)}")
    zero = te.const(False, "bool") if data.dtype == "bool" else te.const(0, data.dtype)

    def body(*i: Any) -> Any:
        keep = (i[-1] - i[-2] >= k) if upper else (i[-1] - i[-2] <= k)
        return te.if_then_else(keep, data(*i), zero)

    return te.compute(data.shape, body, name="triu" if upper else "tril")


def tril(data: Any, k: int = 0) -> Any:
    """The lower triangle: elements above the ``k``-th diagonal zeroed."""
    return trilu(data, k, False)


def triu(data: Any, k: int = 0) -> Any:
    """The upper triangle: elements below the ``k``-th diagonal zeroed."""
    return trilu(data, k, True)
