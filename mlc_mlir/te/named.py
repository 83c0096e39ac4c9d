"""Computes that lower to an upstream named op instead of a ``linalg.generic``.

A topi function that computes exactly what an upstream op does marks its compute with
:func:`as_named`; :func:`mlc_mlir.te.create_prim_func` then emits that op (carrying the
compute's ``mlc.block`` name) where it would emit a generic, so upstream's transforms
(``convert_conv2d_to_img2col``, ``decompose``, ``specialize``...) and the schedule rules
see the op by its name. The compute's expression stays the definition of its values (the
named op computes the same), which keeps printing, shape checks and dependencies as they
are for any compute.

Kinds (``NamedOp.kind``) and their attributes:

``linalg.conv_2d_nchw_fchw``, ``linalg.depthwise_conv_2d_nchw_chw`` (kernel ``(C, 1, KH, KW)``,
collapsed to ``(C, KH, KW)``), ``linalg.pooling_nchw_max``, ``linalg.pooling_nchw_sum``
    inputs (data, kernel) or (data,) for pooling; ``strides``, ``dilations`` (pairs),
    pooling's ``window`` (kh, kw). The result starts from a ``linalg.fill`` of the
    reduction's identity (``mlc.block_init``).
``linalg.batch_matmul``
    inputs (a, b) of shapes (B, M, K) and (B, K, N).
``linalg.broadcast``
    input (data): its unit dimensions are collapsed away (``tensor.collapse_shape``), the
    others keep their position; ``dimensions`` lists the added ones.
``tensor.pad``
    input (data); ``low``, ``high`` (per dimension), ``value`` (a Python number).
``tensor.extract_slice``
    input (data); ``offsets``, ``strides`` (static), the sizes are the compute's shape.
``tensor.concat``
    inputs (the tensors); ``dim``.

The ``tensor`` ops make a value, not a write into a destination: when the compute is an
output of the function its value is copied into the output argument by a ``linalg.copy``
named like the compute.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from mlir import ir
from mlir.dialects import linalg, tensor

from ..errors import TEError
from ..tensor_types import element_type, tensor_type
from .dtypes import reduce_identity, storage_dtype
from .scalar import constant
from .tensor import Tensor, shape_names

__all__ = ["NamedOp", "as_named", "emit_named", "NAMED_KINDS"]


@dataclass(frozen=True, eq=False)
class NamedOp:
    """The upstream op a compute lowers to: its ``kind``, input tensors and attributes."""

    kind: str
    inputs: tuple[Tensor, ...]
    attrs: dict[str, Any] = field(default_factory=dict)


def as_named(t: Tensor, kind: str, inputs: tuple[Tensor, ...] | list[Tensor], **attrs: Any) -> Tensor:
    """Mark compute ``t`` as computed by the upstream op ``kind`` on ``inputs``; returns ``t``.

    Raises:
        TEError: an unknown kind, or ``t`` a placeholder.
    """
    if kind not in NAMED_KINDS:
        raise TEError(f"te.as_named: unknown named op {kind!r}; known: {', '.join(sorted(NAMED_KINDS))}")
    if t.is_placeholder:
        raise TEError(f"te.as_named: {t.name!r} is a placeholder, not a compute")
    t.named = NamedOp(kind, tuple(inputs), dict(attrs))
    return t


def emit_named(t: Tensor, block: str, out: ir.Value | None, values: dict[int, ir.Value], sizes: Any) -> ir.Value:
    """Emit the named op of compute ``t`` (``t.named``); return its value.

    Args:
        t: the compute.
        block: its block name.
        out: the output argument it is written into, or None for an intermediate.
        values: id of each tensor emitted so far -> its value.
        sizes: the values of symbolic sizes (:class:`mlc_mlir.te.generic.Sizes`).
    """
    spec = t.named
    assert spec is not None
    ins = [values[id(x)] for x in spec.inputs]
    return NAMED_KINDS[spec.kind](_Ctx(t, block, out, sizes), ins, spec.attrs)


@dataclass
class _Ctx:
    t: Tensor
    block: str
    out: ir.Value | None
    sizes: Any

    @property
    def result_type(self) -> ir.Type:
        return tensor_type(self.t.shape, storage_dtype(self.t.dtype))

    def dest(self) -> ir.Value:
        if self.out is not None:
            return self.out
        return tensor.empty(self.sizes.mixed(self.t.shape), element_type(storage_dtype(self.t.dtype)))

    def named(self, value: Any) -> ir.Value:
        """The result of ``value`` (an op's result, or an op: linalg.broadcast's builder), named."""
        op = value.owner if isinstance(value, ir.Value) else value.operation
        op.attributes["mlc.block"] = ir.StringAttr.get(self.block)
        return op.results[0]

    def init(self, combiner: str) -> ir.Value:
        init = linalg.fill(constant(reduce_identity(combiner, self.t.dtype), self.t.dtype), outs=[self.dest()])
        init.owner.attributes["mlc.block_init"] = ir.StringAttr.get(self.block)
        return init

    def into_output(self, value: ir.Value) -> ir.Value:
        """A value made by a tensor op, copied into the output argument if there is one."""
        if self.out is None:
            return value
        return self.named(linalg.copy(value, outs=[self.out]))


def _window(fn: Callable[..., ir.Value], combiner: str) -> Callable[..., ir.Value]:
    def emit(ctx: _Ctx, ins: list[ir.Value], attrs: dict[str, Any]) -> ir.Value:
        if "window" in attrs:  # pooling: the window is a shape-only operand
            ins = [*ins, tensor.empty(list(attrs["window"]), ir.IntegerType.get_signless(8))]
        return ctx.named(fn(*ins, outs=[ctx.init(combiner)], strides=list(attrs["strides"]),
                            dilations=list(attrs["dilations"])))

    return emit


def _depthwise(ctx: _Ctx, ins: list[ir.Value], attrs: dict[str, Any]) -> ir.Value:
    data, kernel = ins
    kt = ir.RankedTensorType(kernel.type)
    shape = [kt.shape[0], kt.shape[2], kt.shape[3]]
    kernel = tensor.collapse_shape(ir.RankedTensorType.get(shape, kt.element_type), kernel, [[0, 1], [2], [3]])
    return _window(linalg.depthwise_conv_2d_nchw_chw, "sum")(ctx, [data, kernel], attrs)


def _batch_matmul(ctx: _Ctx, ins: list[ir.Value], attrs: dict[str, Any]) -> ir.Value:
    return ctx.named(linalg.batch_matmul(*ins, outs=[ctx.init("sum")]))


def _broadcast(ctx: _Ctx, ins: list[ir.Value], attrs: dict[str, Any]) -> ir.Value:
    (data,) = ins
    src = ctx.t.named.inputs[0]  # type: ignore[union-attr]
    have, want = shape_names(src.shape), shape_names(ctx.t.shape)
    rank, off = len(want), len(want) - len(have)
    kept = [k for k, d in enumerate(have) if not (d == 1 and want[off + k] != 1)]
    if len(kept) != len(src.shape):  # unit dims to expand: collapse them away first
        groups: list[list[int]] = [[] for _ in kept]
        for k in range(len(src.shape)):
            nearest = min(range(len(kept)), key=lambda g: (abs(kept[g] - k), kept[g])) if kept else None
            if nearest is not None:
                groups[nearest].append(k)
        shape = [src.shape[k] for k in kept]
        data = tensor.collapse_shape(tensor_type(shape, storage_dtype(src.dtype)), data,
                                     [sorted(g) for g in groups] if kept else [])
    added = [d for d in range(rank) if d - off not in kept]
    return ctx.named(linalg.broadcast(data, outs=[ctx.dest()], dimensions=added))


def _pad(ctx: _Ctx, ins: list[ir.Value], attrs: dict[str, Any]) -> ir.Value:
    (data,) = ins
    # the padding value is defined outside the region: a constant inside it makes upstream's
    # pad tiling (GPU rules fusing the pad into a forall) erase an op that still has uses
    value = constant(attrs["value"], ctx.t.dtype)
    pad = tensor.PadOp(ctx.result_type, data, [], [], list(attrs["low"]), list(attrs["high"]))
    body = pad.region.blocks.append(*([ir.IndexType.get()] * len(attrs["low"])))
    with ir.InsertionPoint(body):
        tensor.YieldOp(value)
    return ctx.into_output(pad.result)


def _extract_slice(ctx: _Ctx, ins: list[ir.Value], attrs: dict[str, Any]) -> ir.Value:
    (data,) = ins
    dyn = ir.ShapedType.get_dynamic_size()
    static = [d if isinstance(d, int) else dyn for d in ctx.t.shape]
    dynamic = [ctx.sizes.value(d.name) for d in ctx.t.shape if not isinstance(d, int)]
    value = tensor.extract_slice(ctx.result_type, data, [], dynamic, [], list(attrs["offsets"]), static,
                                 list(attrs["strides"]))
    return ctx.into_output(value)


def _concat(ctx: _Ctx, ins: list[ir.Value], attrs: dict[str, Any]) -> ir.Value:
    return ctx.into_output(tensor.ConcatOp(ctx.result_type, attrs["dim"], ins).result)


NAMED_KINDS: dict[str, Callable[[_Ctx, list[ir.Value], dict[str, Any]], ir.Value]] = {
    "linalg.conv_2d_nchw_fchw": _window(linalg.conv_2d_nchw_fchw, "sum"),
    "linalg.depthwise_conv_2d_nchw_chw": _depthwise,
    "linalg.pooling_nchw_max": _window(linalg.pooling_nchw_max, "max"),
    "linalg.pooling_nchw_sum": _window(linalg.pooling_nchw_sum, "sum"),
    "linalg.batch_matmul": _batch_matmul,
    "linalg.broadcast": _broadcast,
    "tensor.pad": _pad,
    "tensor.extract_slice": _extract_slice,
    "tensor.concat": _concat,
}
