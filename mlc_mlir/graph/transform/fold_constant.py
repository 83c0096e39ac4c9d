"""``FoldConstant``: graph ops whose operands are all constants become constants (TVM's FoldConstant).

With the weights bound (``BindParams``, or ``mlc.graph.const``), ``x @ permute_dims(w)``
transposes a constant at every call. Folding evaluates that op once, at compile time:
the kernel then reads ``w.T`` laid out for it (``k`` rows, contiguous columns), which is
what the contraction rules schedule best (the course MLP at batch 64: 1.17x NumPy's time
with the transpose in the kernel, 0.93x folded).

Before::

    %w = "mlc.constant"() {value = dense_resource<w> : tensor<128x784xf32>} : () -> tensor<128x784xf32>
    %wt = "mlc.permute_dims"(%w) {axes = array<i64: 1, 0>} : (tensor<128x784xf32>) -> tensor<784x128xf32>
    %y = "mlc.matmul"(%x, %wt) : (tensor<1x784xf32>, tensor<784x128xf32>) -> tensor<1x128xf32>

After::

    %wt = "mlc.constant"() {value = dense_resource<w_T> : tensor<784x128xf32>} : () -> tensor<784x128xf32>
    %y = "mlc.matmul"(%x, %wt) : (tensor<1x784xf32>, tensor<784x128xf32>) -> tensor<1x128xf32>

Folded ops are those with an exact NumPy equivalent (:data:`FOLDABLE`: layout changes and
elementwise arithmetic that rounds as the kernels do); others are left for the kernels. A
folded result larger than :data:`MAX_GROWTH` times its largest operand (a broadcast) is
not folded either: the constant would cost more memory than the work it saves.
"""

from __future__ import annotations

import logging
import re
from typing import Callable

import numpy as np
from mlir import ir

from ...context import mlc_context
from ...errors import GraphError
from ...ir import Module
from ..builder.emit import constant_attr
from ..ir.analysis import clone_module, graph_functions, remove_unused_ops, walk_ops
from ...tensor_types import dtype_of_element

__all__ = ["FoldConstant", "fold_constants", "rewrite_graph_ops", "FOLDABLE", "MAX_GROWTH", "constant_op", "constant_value", "resource_blobs",
           "resource_name"]

log = logging.getLogger("mlc_mlir.graph.fold_constant")

#: a folded result may be at most this many times larger than its largest operand
MAX_GROWTH = 1


def _axes(op: ir.Operation) -> tuple[int, ...]:
    return tuple(ir.DenseI64ArrayAttr(op.attributes["axes"]))


#: graph op -> NumPy evaluation ``fn(op, *arrays)`` (results must round as the kernels do)
FOLDABLE: dict[str, Callable[..., np.ndarray]] = {
    "mlc.permute_dims": lambda op, a: np.transpose(a, _axes(op)),
    "mlc.reshape": lambda op, a: a.reshape(_result_shape(op)),
    "mlc.add": lambda op, a, b: a + b,
    "mlc.subtract": lambda op, a, b: a - b,
    "mlc.multiply": lambda op, a, b: a * b,
    "mlc.relu": lambda op, a: np.maximum(a, a.dtype.type(0)),
}


def _result_shape(op: ir.Operation) -> tuple[int, ...]:
    rt = ir.RankedTensorType(op.results[0].type)
    return tuple(rt.get_dim_size(d) for d in range(rt.rank))


class FoldConstant:
    """Fold graph ops whose operands are all constants into new constants (a copy of the module).

        mod = mlc.graph.transform.FoldConstant()(mod)

    ``mlc.graph.build`` runs it first from ``opt_level=1`` (``mlc-opt --mlc-fold-constant``).
    """

    def __call__(self, mod: Module) -> Module:
        if not isinstance(mod, Module):
            raise GraphError(f"FoldConstant expects an mlc.Module, got {type(mod).__name__}")
        work = clone_module(mod)
        fold_constants(work)
        return work


def fold_constants(mod: Module) -> int:
    """Fold the constant graph ops of every graph function of ``mod`` in place; returns how many."""
    # in program order: an op whose operands an earlier fold made constant folds too
    folded = rewrite_graph_ops(mod, _foldable, _fold)
    if folded:
        log.debug("folded %d constant graph op(s)", folded)
    return folded


def rewrite_graph_ops(mod: Module, takes: Callable[[ir.Operation], bool],
                      rewrite: Callable[[ir.Operation, dict[str, bytes]], bool]) -> int:
    """``rewrite(op, blobs)`` on each op of ``mod``'s graph functions that ``takes`` (in
    program order; ``blobs``: the module's resource blobs, :func:`resource_blobs`, read once,
    only when some function has such an op); the bindings left unused removed from each
    function where a rewrite applied. Returns how many applied (what FoldConstant,
    FoldBatchNorm and transpose-conv-weights share)."""
    done = 0
    with mlc_context():
        blobs: dict[str, bytes] | None = None
        for fop in graph_functions(mod.mlir_module):
            ops = walk_ops(fop)
            if not any(takes(o) for o in ops):
                continue
            if blobs is None:
                blobs = resource_blobs(mod.mlir_module)
            here = sum(rewrite(o, blobs) for o in ops if takes(o))
            if here:
                remove_unused_ops(fop, set())
            done += here
    return done


def _foldable(op: ir.Operation) -> bool:
    if op.name not in FOLDABLE or len(op.results) != 1 or not op.operands:
        return False
    if not isinstance(op.results[0].type, ir.RankedTensorType) or not ir.RankedTensorType(
            op.results[0].type).has_static_shape:
        return False
    return all(constant_op(v) is not None for v in op.operands)


def constant_op(value: ir.Value) -> ir.Operation | None:
    """The ``mlc.constant`` op that defines ``value``, else None (a block argument, another op)."""
    owner = value.owner
    if isinstance(owner, ir.Block):
        return None
    owner = owner.operation
    return owner if owner.name == "mlc.constant" else None


def _fold(op: ir.Operation, blobs: dict[str, bytes]) -> bool:
    """Evaluate ``op`` (its operands are constants: checked again, an earlier fold may feed it)."""
    if not _foldable(op):
        return False
    arrays = []
    for v in op.operands:
        arr = constant_value(constant_op(v), blobs)
        if arr is None:
            return False
        arrays.append(arr)
    out = np.ascontiguousarray(FOLDABLE[op.name](op, *arrays))
    rtype = ir.RankedTensorType(op.results[0].type)
    if out.shape != _result_shape(op) or str(out.dtype) != dtype_of_element(rtype.element_type, error=GraphError):
        return False  # (NumPy broadcasting or promotion differs from the op's inferred type: leave it)
    if out.size > MAX_GROWTH * max(a.size for a in arrays):
        return False
    name = _fold_name(op)
    with ir.InsertionPoint(op), op.location:
        const = ir.Operation.create("mlc.constant", results=[rtype],
                                    attributes={"value": constant_attr(out, name, rtype)})
    op.results[0].replace_all_uses_with(const.results[0])
    op.erase()
    blobs_key = resource_name(const.attributes["value"])
    if blobs_key is not None:
        blobs[blobs_key] = b"\x08\x00\x00\x00" + out.tobytes()
    return True


def _fold_name(op: ir.Operation) -> str:
    src = resource_name(constant_op(op.operands[0]).attributes["value"]) or "const"
    return f"{src}_{op.name.split('.', 1)[1]}"


def resource_name(attr: ir.Attribute) -> str | None:
    m = re.match(r"dense_resource<([^>]+)>", str(attr))
    return m.group(1) if m else None


def constant_value(const: ir.Operation, blobs: dict[str, bytes]) -> np.ndarray | None:
    """The array of an ``mlc.constant`` (``dense<...>`` or ``dense_resource<...>``); None for
    element types without a NumPy dtype here (i1 bit-packed constants)."""
    attr = const.attributes["value"]
    rtype = ir.RankedTensorType(const.results[0].type)
    shape = tuple(rtype.get_dim_size(d) for d in range(rtype.rank))
    try:
        dtype = np.dtype(dtype_of_element(rtype.element_type, error=GraphError))
    except (GraphError, TypeError):
        return None
    if dtype == np.dtype("bool"):
        return None
    if isinstance(attr, ir.DenseElementsAttr):
        arr = np.array(ir.DenseElementsAttr(attr), copy=True).astype(dtype, copy=False)
        return np.broadcast_to(arr.reshape(-1)[:1], shape).copy() if arr.size == 1 else arr.reshape(shape)
    name = resource_name(attr)
    if name is None or name not in blobs:
        return None
    data = blobs[name][4:]  # (the blob's leading 4 bytes are its alignment)
    if len(data) != dtype.itemsize * int(np.prod(shape, dtype=np.int64)):
        return None
    return np.frombuffer(data, dtype=dtype).reshape(shape).copy()


_BLOB = re.compile(r'^\s*("(?:[^"\\]|\\.)*"|[^\s:"]+)\s*:\s*"0x([0-9A-Fa-f]*)"', re.M)


def resource_blobs(module: ir.Module) -> dict[str, bytes]:
    """The ``builtin`` dialect resource blobs of ``module`` (name -> bytes, alignment first).

    The Python bindings give no access to a ``dense_resource`` blob's bytes; the module's
    printed form carries them (hex, in its ``dialect_resources`` section).
    """
    text = module.operation.get_asm(large_elements_limit=None)
    start = text.rfind("{-#")
    if start < 0:
        return {}
    return {k.strip('"'): bytes.fromhex(v) for k, v in _BLOB.findall(text[start:])}
