"""The default op map of legalization: one rule per graph op, each a ``te`` function of :mod:`mlc_mlir.topi`.

A rule receives the builder and the op as a :class:`Call` whose arguments are variables
of the op's operand shapes and returns the replacement expression (course ch.7,
``LowerToTensorIR``)::

    def map_relu(bb, call):
        return bb.call_te(te_relu, call.args[0])

:func:`normalize_op_map` merges a user's map into :data:`DEFAULT_OP_MAP` (keys ``"mlc.relu"``,
``"relu"`` or the course's ``"relax.nn.relu"``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ... import topi
from ...errors import GraphError
from ..builder.block_builder import BlockBuilder
from ..ir.analysis import GRAPH_OPS
from ..ir.expr import Call, Expr
from .nn import NN_LEGALIZE
from .rule import LegalizeRule, _rule
from .tensor_ops import TENSOR_LEGALIZE

__all__ = ["LegalizeRule", "DEFAULT_OP_MAP", "normalize_op_map", "te_matmul", "te_binary", "te_relu",
           "te_ewise_fma", "te_permute_dims", "te_reshape", "te_softmax"]



# -- tensor expressions of the graph ops: the public operator library mlc.topi -------------
# (the te_* names stay for code written against earlier versions; a tensor program made
# with one of them is still named after it, e.g. "te_relu")
def te_matmul(a: Any, b: Any) -> Any:
    """``a @ b`` (:func:`mlc_mlir.topi.nn.matmul`)."""
    return topi.nn.matmul(a, b)


def te_relu(x: Any) -> Any:
    """``max(x, 0)`` (:func:`mlc_mlir.topi.nn.relu`)."""
    return topi.nn.relu(x)


def te_ewise_fma(a: Any, b: Any, c: Any) -> Any:
    """``a * b + c`` (:func:`mlc_mlir.topi.ewise_fma`)."""
    return topi.ewise_fma(a, b, c)


def te_permute_dims(x: Any, axes: tuple[int, ...]) -> Any:
    """Transpose (:func:`mlc_mlir.topi.transpose`)."""
    return topi.transpose(x, axes)


def te_reshape(x: Any, shape: tuple) -> Any:
    """Reshape (:func:`mlc_mlir.topi.reshape`)."""
    return topi.reshape(x, shape)


def te_softmax(x: Any, axis: int) -> Any:
    """Softmax along ``axis`` (:func:`mlc_mlir.topi.nn.softmax`)."""
    return topi.nn.softmax(x, axis)


_BINARY = {"add": topi.add, "subtract": topi.subtract, "multiply": topi.multiply, "divide": topi.divide}


def te_binary(kind: str) -> Callable[[Any, Any], Any]:
    """The topi function of elementwise ``kind`` (add, subtract, multiply, divide)."""
    return _BINARY[kind]


DEFAULT_OP_MAP: dict[str, LegalizeRule] = {
    "mlc.matmul": _rule(topi.nn.matmul, "matmul"),
    **{f"mlc.{k}": _rule(te_binary(k), k) for k in ("add", "subtract", "multiply", "divide")},
    "mlc.relu": _rule(topi.nn.relu, "relu"),
    "mlc.gelu": _rule(topi.nn.gelu, "gelu"),
    "mlc.sigmoid": _rule(topi.sigmoid, "sigmoid"),
    "mlc.tanh": _rule(topi.tanh, "tanh"),
    "mlc.ewise_fma": _rule(topi.ewise_fma, "ewise_fma"),
    "mlc.permute_dims": _rule(topi.transpose, "permute_dims", "axes"),
    "mlc.reshape": _rule(topi.reshape, "reshape", "shape"),
    "mlc.softmax": _rule(topi.nn.softmax, "softmax", "axis"),
    **NN_LEGALIZE,
    **TENSOR_LEGALIZE,
}


def normalize_op_map(op_map: dict[str, LegalizeRule] | None) -> dict[str, LegalizeRule]:
    """:data:`DEFAULT_OP_MAP` updated with ``op_map``.

    Keys are graph op names: ``"relu"``, ``"mlc.relu"``, or the course's Relax spelling
    (``"relax.nn.relu"``, ``"relax.matmul"``).
    """
    out = dict(DEFAULT_OP_MAP)
    for key, fn in (op_map or {}).items():
        if not isinstance(key, str) or not callable(fn):
            raise GraphError(f"op map entries must be 'op name' -> callable, got {key!r} -> {fn!r}")
        short = key
        for prefix in ("mlc.", "relax.nn.", "relax.op.nn.", "relax.op.", "relax."):
            if key.startswith(prefix):
                short = key[len(prefix):]
                break
        name = f"mlc.{short}"
        if name[4:] not in GRAPH_OPS:
            raise GraphError(f"op map: {key!r} is not a graph op; graph ops: {', '.join(GRAPH_OPS)}")
        out[name] = fn
    return out
