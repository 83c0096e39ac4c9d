"""Graph building blocks shared by the frontends: each takes the builder and graph
expressions (plus Python attributes, in torch's conventions) and returns the emitted
value. ``from_fx`` and ``from_exported_program`` parse their nodes' arguments and call these.

Symbolic sizes (``torch.export`` dynamic dims) are symbol names (``"s0"``); a size that is a
product of symbols and ints (``s0*16``, a flattened batch) is a :class:`SymProduct`, which no
graph dimension can hold: :func:`reshape_symbolic` keeps its factors as separate dimensions.
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import GraphError
from ..graph import op
from ..graph.ir.expr import Call, Constant, Expr, const
from ..tensor_types import format_shape

__all__ = ["linear", "conv2d", "max_pool2d", "avg_pool2d", "adaptive_avg_pool2d", "batch_norm", "layer_norm",
           "flatten", "transpose", "softmax", "safe_softmax", "emit", "to_const", "pair", "reduce", "split",
           "slice_axis",
           "select", "concat", "unsqueeze", "squeeze", "expand", "masked_fill", "embedding", "gelu", "cast",
           "matmul", "binary", "power", "norm_axis", "SymProduct", "reshape_symbolic", "dim_groups", "Iota", "as_iota",
           "index_by_iotas"]


def emit(bb: Any, value: Expr) -> Expr:
    """``value`` bound with ``bb.emit`` unless it is already a variable or a constant."""
    return bb.emit(value) if isinstance(value, Call) else value


def to_const(tensor: Any) -> Constant:
    """A torch tensor (parameter or buffer) as a graph constant (float64 made float32; bool
    and int tensors keep their dtype)."""
    data = tensor.detach().cpu().numpy()
    if data.dtype == np.float64:
        data = data.astype(np.float32)
    return const(data)


def pair(v: Any) -> tuple[int, int]:
    """An int or a 1/2-element sequence as a pair of ints."""
    if isinstance(v, int):
        return (v, v)
    v = tuple(int(x) for x in v)
    return (v[0], v[0]) if len(v) == 1 else (v[0], v[1])


def norm_axis(axis: int, ndim: int, what: str = "dim") -> int:
    """``axis`` in ``[0, ndim)`` (torch's negative axes counted from the end)."""
    if not -ndim <= int(axis) < max(ndim, 1):
        raise GraphError(f"{what} {axis} is out of range for a tensor of rank {ndim}")
    return int(axis) % max(ndim, 1)


_FLOAT_ORDER = ("float16", "bfloat16", "float32", "float64")
_INT_ORDER = ("int8", "uint8", "int16", "int32", "int64")


def _promote(a: str, b: str) -> str:
    """torch's type promotion of two tensor dtypes: bool < ints < floats, the wider wins."""
    for order in (_FLOAT_ORDER, _INT_ORDER):
        if a in order or b in order:
            return builtins.max((d for d in (a, b) if d in order), key=order.index)
    return a


def binary(bb: Any, graph_op: Any, a: Any, b: Any) -> Expr:
    """``graph_op(a, b)`` after torch's type promotion: operands of different dtypes are cast
    to the wider kind (``int64 + float32`` is float32), a Python float makes an int or bool
    tensor float32, a Python int makes a bool tensor int64."""
    if isinstance(a, Expr) and isinstance(b, Expr):
        dtype = _promote(a.dtype, b.dtype)
        a, b = cast(bb, a, dtype), cast(bb, b, dtype)
    else:
        t, v = (a, b) if isinstance(a, Expr) else (b, a)
        dtype = t.dtype
        if isinstance(v, float) and dtype not in _FLOAT_ORDER:
            dtype = "float32"
        elif isinstance(v, int) and not isinstance(v, bool) and dtype == "bool":
            dtype = "int64"
        v = const(np.array(v, dtype=np.dtype(dtype)))
        t = cast(bb, t, dtype)
        a, b = (t, v) if isinstance(a, Expr) else (v, t)
    return bb.emit(graph_op(a, b))


def power(bb: Any, x: Any, exponent: Any) -> Expr:
    """``x ** exponent``; a Python exponent of 1, 2 or 3 is multiplication (exact for negative
    ``x`` too, and cheaper), any other the ``power`` op."""
    if isinstance(x, Expr) and not isinstance(exponent, (Expr, bool)) and exponent in (1, 2, 3):
        out = x
        for _ in range(int(exponent) - 1):
            out = bb.emit(op.multiply(out, x))
        return out
    return binary(bb, op.power, x, exponent)


def _bias_nchw(bb: Any, bias: Expr) -> Expr:
    if isinstance(bias, Constant):
        return const(bias.data.reshape(1, -1, 1, 1))
    return bb.emit(op.reshape(bias, (1, bias.shape[0], 1, 1)))


def linear(bb: Any, x: Expr, weight: Expr, bias: Expr | None) -> Expr:
    """``x @ weight.T + bias`` (``nn.Linear``); a constant weight is transposed at import."""
    if isinstance(weight, Constant) and weight.data is not None:
        wt = const(np.ascontiguousarray(weight.data.T))
    else:
        wt = bb.emit(op.permute_dims(weight))
    out = bb.emit(op.matmul(x, wt))
    return bb.emit(op.add(out, bias)) if bias is not None else out


def matmul(bb: Any, a: Expr, b: Expr) -> Expr:
    """``torch.matmul``: batched, broadcasting; 1-D operands as in torch."""
    if a.ndim == 1 and b.ndim == 1:
        return bb.emit(op.sum(bb.emit(op.multiply(a, b)), (0,), False))
    return bb.emit(op.matmul(a, b))


def _padding(padding: Any) -> tuple[int, ...]:
    if isinstance(padding, str):
        raise GraphError(f"padding={padding!r} is not supported (give the sizes)")
    if isinstance(padding, int):
        return (padding, padding)
    pads = tuple(int(p) for p in padding)
    return pads if len(pads) == 4 else pair(pads)


def conv2d(bb: Any, x: Expr, weight: Expr, bias: Expr | None, stride: Any, padding: Any,
           dilation: Any, groups: int) -> Expr:
    """``nn.Conv2d`` (NCHW/OIHW, zero padding, grouped and depthwise): ``conv2d`` plus the bias."""
    out = bb.emit(op.nn.conv2d(x, weight, pair(stride), _padding(padding), pair(dilation), int(groups)))
    return out if bias is None else bb.emit(op.add(out, _bias_nchw(bb, bias)))


def max_pool2d(bb: Any, x: Expr, kernel: Any, stride: Any, padding: Any, dilation: Any,
               ceil_mode: bool) -> Expr:
    """``nn.MaxPool2d`` (stride defaults to the kernel; padding is -inf)."""
    stride = kernel if stride is None or stride == [] or stride == () else stride
    return bb.emit(op.nn.max_pool2d(x, pair(kernel), pair(stride), _padding(padding), pair(dilation),
                                    bool(ceil_mode)))


def avg_pool2d(bb: Any, x: Expr, kernel: Any, stride: Any, padding: Any, ceil_mode: bool,
               count_include_pad: bool, divisor_override: Any = None) -> Expr:
    """``nn.AvgPool2d`` (stride defaults to the kernel)."""
    if divisor_override is not None:
        raise GraphError(f"avg_pool2d with divisor_override={divisor_override} is not supported")
    stride = kernel if stride is None or stride == [] or stride == () else stride
    return bb.emit(op.nn.avg_pool2d(x, pair(kernel), pair(stride), _padding(padding), (1, 1), bool(ceil_mode),
                                    bool(count_include_pad)))


def adaptive_avg_pool2d(bb: Any, x: Expr, output_size: Any) -> Expr:
    """``nn.AdaptiveAvgPool2d``; ``(1, 1)`` is a mean over H and W (None keeps the input size)."""
    size = (output_size, output_size) if isinstance(output_size, int) else tuple(output_size)
    if len(size) == 1:
        size = (size[0], size[0])
    size = tuple(x.shape[2 + i] if s is None else int(s) for i, s in enumerate(size))
    if size == (1, 1):
        return bb.emit(op.mean(x, (2, 3), True))
    return bb.emit(op.nn.adaptive_avg_pool2d(x, size))


def batch_norm(bb: Any, x: Expr, weight: Expr | None, bias: Expr | None, mean: Expr, var: Expr,
               eps: float) -> Expr:
    """Inference ``nn.BatchNorm2d`` with running statistics (no affine: weight 1, bias 0)."""
    c = mean.shape[0]
    weight = weight if weight is not None else const(np.ones((c,), np.float32))
    bias = bias if bias is not None else const(np.zeros((c,), np.float32))
    return bb.emit(op.nn.batch_norm(x, weight, bias, mean, var, 1, float(eps)))


def layer_norm(bb: Any, x: Expr, shape: Sequence[int], weight: Expr | None, bias: Expr | None,
               eps: float) -> Expr:
    """``nn.LayerNorm`` over the trailing ``shape`` dims (no affine: weight 1, bias 0)."""
    shape = tuple(int(s) for s in shape)
    weight = weight if weight is not None else const(np.ones(shape, np.float32))
    bias = bias if bias is not None else const(np.zeros(shape, np.float32))
    axes = list(range(x.ndim - len(shape), x.ndim))
    return bb.emit(op.nn.layer_norm(x, weight, bias, axes, float(eps)))


def flatten(bb: Any, x: Expr, start_dim: int = 1, end_dim: int = -1) -> Expr:
    """``torch.flatten`` as a reshape (the merged dimensions must be static)."""
    n = max(x.ndim, 1)
    s, e = start_dim % n, end_dim % n
    if x.ndim == 0 or s == e:
        return x
    mid = 1
    for d in x.shape[s:e + 1]:
        if not isinstance(d, int):
            raise GraphError(f"flatten of symbolic dimension {d} is not supported")
        mid *= d
    return bb.emit(op.reshape(x, (*x.shape[:s], mid, *x.shape[e + 1:])))


def transpose(bb: Any, x: Expr, d0: int, d1: int) -> Expr:
    """Swap dimensions ``d0`` and ``d1``."""
    axes = list(range(x.ndim))
    d0, d1 = norm_axis(d0, x.ndim), norm_axis(d1, x.ndim)
    axes[d0], axes[d1] = axes[d1], axes[d0]
    return x if d0 == d1 else bb.emit(op.permute_dims(x, axes))


def softmax(bb: Any, x: Expr, dim: int | None) -> Expr:
    """Softmax along ``dim`` (default the last)."""
    return bb.emit(op.softmax(x, -1 if dim is None else norm_axis(dim, x.ndim)))


def safe_softmax(bb: Any, x: Expr, dim: int | None) -> Expr:
    """``torch._safe_softmax`` along ``dim`` (default the last): 0 on rows all ``-inf``."""
    return bb.emit(op.nn.safe_softmax(x, -1 if dim is None else norm_axis(dim, x.ndim)))


def _axes(x: Expr, dims: Any) -> tuple[int, ...]:
    if dims is None or dims == [] or dims == ():
        return tuple(range(x.ndim))
    dims = (dims,) if isinstance(dims, int) else tuple(dims)
    return tuple(sorted({norm_axis(d, x.ndim) for d in dims}))


def reduce(bb: Any, name: str, x: Expr, dims: Any, keepdim: bool = False) -> Expr:
    """``x.sum/mean/amax/amin/prod/any/all(dims, keepdim)`` (``dims`` None: all of them)."""
    graph_op = {"sum": op.sum, "mean": op.mean, "max": op.max, "min": op.min, "prod": op.prod,
                "any": op.any, "all": op.all}[name]
    return bb.emit(graph_op(x, _axes(x, dims), bool(keepdim)))


def slice_axis(bb: Any, x: Expr, dim: int, start: Any = None, end: Any = None, step: int = 1) -> Expr:
    """``x[..., start:end:step, ...]`` along ``dim`` (torch's clamping of out-of-range bounds;
    ``end`` may be a symbol: the first ``end`` elements)."""
    dim = norm_axis(dim, x.ndim)
    size = x.shape[dim]
    start = 0 if start is None else start
    if end is None or (isinstance(size, int) and isinstance(end, int) and end >= size) or end == size:
        end = size
    if isinstance(size, int):
        start = max(start + size, 0) if start < 0 else min(start, size)
        if isinstance(end, int):
            end = max(end + size, 0) if end < 0 else min(end, size)
    if start == 0 and end == size and step == 1:
        return x
    return bb.emit(op.strided_slice(x, (dim,), (start,), (end,), (int(step),)))


def select(bb: Any, x: Expr, dim: int, index: int) -> Expr:
    """``x.select(dim, index)``: a slice of one element, squeezed."""
    dim = norm_axis(dim, x.ndim)
    size = x.shape[dim]
    index = index + size if index < 0 and isinstance(size, int) else index
    part = bb.emit(op.strided_slice(x, (dim,), (index,), (index + 1,), (1,)))
    return bb.emit(op.squeeze(part, (dim,)))


def split(bb: Any, x: Expr, sizes: Any, dim: int = 0) -> list[Expr]:
    """``torch.split(x, sizes, dim)``: ``sizes`` an int (chunks of that size, the last maybe
    smaller) or a list of sizes; one ``strided_slice`` per part."""
    dim = norm_axis(dim, x.ndim)
    total = x.shape[dim]
    if not isinstance(total, int):
        raise GraphError(f"split along symbolic dimension {total} is not supported")
    if isinstance(sizes, int):
        sizes = [min(sizes, total - i) for i in range(0, total, sizes)]
    if sum(sizes) != total:
        raise GraphError(f"split sizes {list(sizes)} do not add up to dimension {dim} of size {total}")
    out, begin = [], 0
    for s in sizes:
        out.append(slice_axis(bb, x, dim, begin, begin + s))
        begin += s
    return out


def concat(bb: Any, xs: Sequence[Expr], dim: int = 0) -> Expr:
    """``torch.cat(xs, dim)`` (empty tensors of shape (0,) dropped, as torch does)."""
    xs = [x for x in xs if not (x.ndim == 1 and x.shape[0] == 0)]
    if len(xs) == 1:
        return xs[0]
    return bb.emit(op.concat(list(xs), norm_axis(dim, xs[0].ndim)))


def unsqueeze(bb: Any, x: Expr, dim: int) -> Expr:
    """``x.unsqueeze(dim)``."""
    return bb.emit(op.expand_dims(x, norm_axis(dim, x.ndim + 1)))


def squeeze(bb: Any, x: Expr, dims: Any = None) -> Expr:
    """``x.squeeze(dims)``: only the listed (default: all) dimensions of size 1 go."""
    axes = tuple(a for a in _axes(x, dims) if x.shape[a] == 1)
    return bb.emit(op.squeeze(x, axes)) if axes else x


def expand(bb: Any, x: Expr, shape: Sequence[Any]) -> Expr:
    """``x.expand(shape)`` (``-1`` keeps a dimension) as ``broadcast_to``."""
    shape = tuple(shape)
    lead = len(shape) - x.ndim
    if lead < 0:
        raise GraphError(f"expand to {shape} has fewer dimensions than {format_shape(x.shape)}")
    target = tuple(x.shape[i - lead] if (d == -1 and i >= lead) else d for i, d in enumerate(shape))
    return x if target == tuple(x.shape) else bb.emit(op.broadcast_to(x, target))


def masked_fill(bb: Any, x: Expr, mask: Expr, value: Any) -> Expr:
    """``x.masked_fill(mask, value)``: ``where(mask, value, x)``."""
    if isinstance(value, Constant) and value.data.size == 1:
        value = const(value.data.reshape(()).astype(x.dtype))
    elif isinstance(value, Expr):
        value = cast(bb, value, x.dtype)
    else:
        value = const(np.array(value, dtype=np.dtype(x.dtype)))
    if mask.dtype != "bool":
        mask = cast(bb, mask, "bool")
    return bb.emit(op.where(mask, value, x))


def embedding(bb: Any, weight: Expr, ids: Expr) -> Expr:
    """``F.embedding(ids, weight)``: rows of ``weight`` (``take`` along axis 0)."""
    return bb.emit(op.take(weight, ids, 0))


def gelu(bb: Any, x: Expr, approximate: str = "none") -> Expr:
    """``F.gelu(x, approximate)``: the exact (erf) form or the tanh approximation."""
    if approximate == "none":
        return bb.emit(op.gelu(x))
    if approximate == "tanh":
        return bb.emit(op.nn.gelu_tanh(x))
    raise GraphError(f"gelu(approximate={approximate!r}) is not supported ('none' or 'tanh')")


def cast(bb: Any, x: Expr, dtype: str) -> Expr:
    """``x.to(dtype)`` (nothing when the dtype is already ``dtype``)."""
    return x if x.dtype == dtype else bb.emit(op.astype(x, dtype))


# -- symbolic sizes ------------------------------------------------------------------------
@dataclass(frozen=True)
class SymProduct:
    """A size that is a product of symbols and an int (``s0*16``): not a graph dimension."""

    coef: int
    syms: tuple[str, ...]

    def __str__(self) -> str:
        return "*".join([str(self.coef)] * (self.coef != 1) + list(self.syms))


def _factors(d: Any) -> tuple[int, tuple[str, ...]]:
    if isinstance(d, SymProduct):
        return d.coef, d.syms
    return (d, ()) if isinstance(d, int) else (1, (d,))


def _consume(atoms: list[Any], size: Any, split: bool) -> list[Any] | None:
    """Take from the front of ``atoms`` (graph dimensions) the run whose product is ``size``;
    with ``split``, an int dimension may be split to give the part the run needs."""
    coef, syms = _factors(size)
    left_syms, need, run = list(syms), coef, []
    if need == 1 and not left_syms:
        if atoms and atoms[0] == 1:
            run.append(atoms.pop(0))
        return run if run or split else None
    while need != 1 or left_syms:
        if not atoms:
            return None
        a = atoms[0]
        if isinstance(a, str):
            if a not in left_syms:
                return None
            left_syms.remove(a)
        elif need % a == 0:
            need //= a
        elif split and a % need == 0 and need > 1:
            atoms[0] = a // need
            run.append(need)
            need = 1
            continue
        else:
            return None
        run.append(atoms.pop(0))
    return run


def dim_groups(graph_shape: Sequence[Any], sizes: Sequence[Any]) -> list[list[int]] | None:
    """Which graph dimensions make up each of torch's ``sizes`` (maybe :class:`SymProduct`):
    consecutive runs whose product is the size, as lists of indices; None when
    ``graph_shape`` does not split ``sizes`` so."""
    atoms, groups, i = list(graph_shape), [], 0
    for size in sizes:
        run = _consume(atoms, size, split=False)
        if run is None:
            return None
        groups.append(list(range(i, i + len(run))))
        i += len(run)
    return groups if not atoms else None


def reshape_symbolic(bb: Any, x: Expr, sizes: Sequence[Any]) -> Expr:
    """``x.view(sizes)`` where a size may be a :class:`SymProduct`: that size stays split into
    its factors, as ``x``'s dimensions hold them (``(s0, 16, 64)`` viewed as ``(s0*16, 64)``
    stays ``(s0, 16, 64)``; an int dimension is split where a product needs part of it, so
    ``(8, s0, 32)`` viewed as ``(8, 4*s0, 8)`` is ``(8, s0, 4, 8)``).

    Raises:
        GraphError: the factors of a product are not a run of ``x``'s dimensions.
    """
    if not any(isinstance(s, SymProduct) for s in sizes):
        return x if tuple(sizes) == tuple(x.shape) else bb.emit(op.reshape(x, tuple(sizes)))
    atoms, out = list(x.shape), []
    for size in sizes:
        run = _consume(atoms, size, split=True)
        if run is None:
            raise GraphError(f"cannot view {format_shape(x.shape)} as ({', '.join(map(str, sizes))}): the "
                             f"size {size} is not a run of its dimensions")
        if isinstance(size, SymProduct):
            out.extend(d for d in run if d != 1)
        else:
            out.append(size)
    if any(a != 1 for a in atoms):
        raise GraphError(f"cannot view {format_shape(x.shape)} as ({', '.join(map(str, sizes))})")
    return x if tuple(out) == tuple(x.shape) else bb.emit(op.reshape(x, tuple(out)))


# -- index grids --------------------------------------------------------------------------
@dataclass(frozen=True)
class Iota:
    """``arange(n)`` laid along ``axis`` of ``shape`` (1 elsewhere), kept unemitted: torch
    builds index grids of these (``mask[arange(b)[:, None], arange(t)]``, as transformers'
    masks do), and indexing with a grid reads the tensor in place (:func:`index_by_iotas`)."""

    shape: tuple
    axis: int
    dtype: str

    def unsqueeze(self, dim: int) -> Iota:
        """``iota.unsqueeze(dim)``."""
        dim = norm_axis(dim, len(self.shape) + 1)
        shape = (*self.shape[:dim], 1, *self.shape[dim:])
        return Iota(shape, self.axis + (dim <= self.axis), self.dtype)

    def materialize(self) -> Constant:
        """The values as a constant (the size must be static)."""
        size = self.shape[self.axis]
        if not isinstance(size, int):
            raise GraphError(f"arange of symbolic size {size} is supported only as an index grid "
                             "(x[arange(n)[:, None], ...])")
        return const(np.arange(size, dtype=np.dtype(self.dtype)).reshape(self.shape))


def as_iota(value: Any) -> Iota | None:
    """``value`` as an :class:`Iota` when it is one, or a constant holding ``arange`` along one
    axis; else None."""
    if isinstance(value, Iota):
        return value
    if not isinstance(value, Constant) or value.dtype not in _INT_ORDER:
        return None
    axes = [k for k, d in enumerate(value.shape) if d != 1]
    if len(axes) > 1 or not value.shape:
        return None
    axis = axes[0] if axes else 0
    n = value.shape[axis]
    if not np.array_equal(value.data.reshape(-1), np.arange(n)):
        return None
    return Iota(tuple(value.shape), axis, value.dtype)


def index_by_iotas(bb: Any, x: Expr, indices: Sequence[Any]) -> Expr | None:
    """``x[i0, i1, ...]`` where each ``ik`` is ``arange(x.shape[k])`` along its own axis of
    the broadcast index shape, the axes in order: ``x`` itself, reshaped to that shape
    (``(b, t)`` indexed by ``(b, 1, 1, 1)`` and ``(1, 1, 1, t)`` grids is ``(b, 1, 1, t)``);
    None when the indices are not such a grid."""
    grid = [as_iota(i) for i in indices]
    if not indices or any(g is None for g in grid) or len(indices) > x.ndim:
        return None
    rank = builtins.max(len(g.shape) for g in grid)
    places = [g.axis + rank - len(g.shape) for g in grid]
    if places != sorted(set(places)) or any(g.shape[g.axis] != x.shape[k] for k, g in enumerate(grid)):
        return None
    shape = [1] * rank
    for k, p in enumerate(places):
        shape[p] = x.shape[k]
    out = (*shape, *x.shape[len(indices):])
    return x if out == tuple(x.shape) else bb.emit(op.reshape(x, out))
