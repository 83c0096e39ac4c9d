"""Layout operators: transpose, reshape, flatten."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..errors import TEError
from ..tensor_types import numel
from ._util import check_tensor, te_dim
from .. import te
from ..te.tensor import shape_names

__all__ = ["transpose", "permute_dims", "reshape", "flatten"]


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
    out, acc = [], 1
    for d in reversed(shape):
        out.append(acc)
        acc = acc * d if isinstance(d, int) and isinstance(acc, int) else None
    return list(reversed(out))


def reshape(a: Any, newshape: Sequence[int | str]) -> Any:
    """``a`` read in row-major order into ``newshape`` (one ``-1`` inferred when static).

    Only the leading dimension may be symbolic.
    """
    check_tensor(a, "reshape")
    in_dims, out_dims = shape_names(a.shape), tuple(newshape)
    if -1 in out_dims:
        total, rest = numel(in_dims), numel(tuple(d for d in out_dims if d != -1))
        if total is None or not rest or total % rest:
            raise TEError(f"topi.reshape: cannot infer the -1 in {out_dims} from {in_dims}")
        out_dims = tuple(total // rest if d == -1 else d for d in out_dims)
    s_in, s_out = _strides(in_dims), _strides(out_dims)
    if None in s_in + s_out:
        raise TEError(f"topi.reshape {in_dims} -> {out_dims}: only the leading dimension may be symbolic")
    shape = tuple(te_dim((a,), d) for d in out_dims)

    def body(*i: Any) -> Any:
        flat = 0
        for ix, s in zip(i, s_out):
            flat = flat + ix * s
        src = []
        for j, (s, d) in enumerate(zip(s_in, in_dims)):
            q = flat // s if s != 1 else flat
            src.append(q % d if j > 0 and isinstance(d, int) else q)
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
