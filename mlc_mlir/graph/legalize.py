"""Legalization: graph ops to calls of tensor programs built with ``te`` (``LegalizeOps``).

Each rule of an op map receives the builder and the op as a :class:`Call` whose
arguments are variables of the op's operand shapes, and returns the replacement
expression, usually ``bb.call_te(te_fn, *call.args)`` (course ch.7, ``LowerToTensorIR``):

    def map_relu(bb, call):
        return bb.call_te(te_relu, call.args[0])

    mlc.graph.transform.LegalizeOps({"mlc.relu": map_relu})(mod)

:data:`DEFAULT_OP_MAP` covers every graph op of the dialect; a user map overrides or
extends it (keys ``"mlc.relu"`` or ``"relu"``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mlir import ir
from mlir.dialects import tensor

from ..context import mlc_context
from ..errors import GraphError
from ..ir import Module
from .analysis import GRAPH_OPS, fail, graph_functions, op_attrs, value_shapes, walk_ops
from .builder import BlockBuilder
from .emit import Emitter
from .expr import Call, Expr, Var
from .infer import broadcast_shapes

__all__ = ["DEFAULT_OP_MAP", "legalize", "normalize_op_map", "te_matmul", "te_binary", "te_relu",
           "te_ewise_fma", "te_permute_dims", "te_reshape", "te_softmax"]

LegalizeRule = Callable[[BlockBuilder, Call], Expr]


# -- tensor expressions of the graph ops ("topi") ---------------------------------------
def te_matmul(a: Any, b: Any) -> Any:
    """``a @ b`` for ``a`` of rank >= 1 and ``b`` of rank 1 or 2 (one reduction)."""
    from .. import te

    k = te.reduce_axis((0, a.shape[-1]), "k")
    if len(b.shape) == 1:
        return te.compute(a.shape[:-1], lambda *i: te.sum(a[(*i, k)] * b[k], axis=k), name="matmul")
    shape = (*a.shape[:-1], b.shape[-1])
    return te.compute(shape, lambda *i: te.sum(a[(*i[:-1], k)] * b[k, i[-1]], axis=k), name="matmul")


def _bcast_index(t: Any, out_rank: int, idx: tuple) -> tuple:
    """Indices into ``t`` for output indices ``idx`` under NumPy broadcasting."""
    off = out_rank - len(t.shape)
    return tuple(0 if isinstance(d, int) and d == 1 else idx[off + j] for j, d in enumerate(t.shape))


def te_binary(kind: str) -> Callable[[Any, Any], Any]:
    """The te function of elementwise ``kind`` (add, subtract, multiply, divide) with broadcasting."""
    from .. import te

    ops = {"add": lambda x, y: x + y, "subtract": lambda x, y: x - y,
           "multiply": lambda x, y: x * y, "divide": lambda x, y: x / y}
    fn = ops[kind]

    def binary(a: Any, b: Any) -> Any:
        shape = broadcast_shapes(kind, _dims(a), _dims(b))
        shape = tuple(_te_dim(a, b, d) for d in shape)
        n = len(shape)
        return te.compute(shape, lambda *i: fn(a[_bcast_index(a, n, i)], b[_bcast_index(b, n, i)]), name=kind)

    binary.__name__ = kind
    return binary


def _dims(t: Any) -> tuple:
    return tuple(d if isinstance(d, int) else d.name for d in t.shape)


def _te_dim(a: Any, b: Any, d: Any) -> Any:
    """The te dimension object for graph dim ``d`` (a symbol is taken from ``a`` or ``b``)."""
    if isinstance(d, int):
        return d
    for t in (a, b):
        for x in t.shape:
            if not isinstance(x, int) and x.name == d:
                return x
    return d


def te_relu(x: Any) -> Any:
    """``max(x, 0)``."""
    from .. import te

    return te.compute(x.shape, lambda *i: te.max(x(*i), 0), name="relu")


def te_ewise_fma(a: Any, b: Any, c: Any) -> Any:
    """``a * b + c``."""
    from .. import te

    return te.compute(a.shape, lambda *i: a(*i) * b(*i) + c(*i), name="ewise_fma")


def te_permute_dims(x: Any, axes: tuple[int, ...]) -> Any:
    """Result dimension ``k`` is ``x``'s dimension ``axes[k]``."""
    from .. import te

    shape = tuple(x.shape[a] for a in axes)

    def body(*i: Any) -> Any:
        src = [None] * len(axes)
        for k, a in enumerate(axes):
            src[a] = i[k]
        return x[tuple(src)]

    return te.compute(shape, body, name="permute_dims")


def te_reshape(x: Any, shape: tuple) -> Any:
    """``x`` read in row-major order into ``shape`` (strides from the static trailing dims)."""
    from .. import te

    def strides(dims: tuple) -> list:
        out, acc = [], 1
        for d in reversed(dims):
            out.append(acc)
            acc = acc * d if isinstance(d, int) and isinstance(acc, int) else None
        return list(reversed(out))

    in_dims, out_dims = _dims(x), tuple(shape)
    s_in, s_out = strides(in_dims), strides(out_dims)
    if None in s_in + s_out:
        raise GraphError(f"reshape {in_dims} -> {out_dims}: only the leading dimension may be symbolic")
    te_shape = tuple(_te_dim(x, x, d) for d in out_dims)

    def body(*i: Any) -> Any:
        flat = 0
        for ix, s in zip(i, s_out):
            flat = flat + ix * s
        src = []
        for j, (s, d) in enumerate(zip(s_in, in_dims)):
            q = flat // s if s != 1 else flat
            src.append(q % d if j > 0 and isinstance(d, int) else q)
        return x[tuple(src)]

    return te.compute(te_shape, body, name="reshape")


def te_softmax(x: Any, axis: int) -> Any:
    """``exp(x - max) / sum(exp(x - max))`` along ``axis`` (max and sum keep a size-1 dim)."""
    from .. import te

    n = len(x.shape)
    red_shape = tuple(1 if d == axis else x.shape[d] for d in range(n))

    def at(i: tuple, k: Any) -> tuple:
        return tuple(k if d == axis else i[d] for d in range(n))

    k1 = te.reduce_axis((0, x.shape[axis]), "k")
    mx = te.compute(red_shape, lambda *i: te.max(x[at(i, k1)], axis=k1), name="max")
    ex = te.compute(x.shape, lambda *i: te.exp(x(*i) - mx[at(i, 0)]), name="exp")
    k2 = te.reduce_axis((0, x.shape[axis]), "k")
    sm = te.compute(red_shape, lambda *i: te.sum(ex[at(i, k2)], axis=k2), name="sum")
    return te.compute(x.shape, lambda *i: ex(*i) / sm[at(i, 0)], name="softmax")


# -- the default op map -----------------------------------------------------------------
def _rule(te_fn: Callable[..., Any], name: str, *attr_names: str) -> LegalizeRule:
    def rule(bb: BlockBuilder, call: Call) -> Expr:
        extra = [call.attrs[a] for a in attr_names]
        return bb.call_te(te_fn, *call.args, *extra, primfunc_name_hint=name)

    rule.__name__ = f"legalize_{name}"
    return rule


DEFAULT_OP_MAP: dict[str, LegalizeRule] = {
    "mlc.matmul": _rule(te_matmul, "matmul"),
    **{f"mlc.{k}": _rule(te_binary(k), k) for k in ("add", "subtract", "multiply", "divide")},
    "mlc.relu": _rule(te_relu, "relu"),
    "mlc.ewise_fma": _rule(te_ewise_fma, "ewise_fma"),
    "mlc.permute_dims": _rule(te_permute_dims, "permute_dims", "axes"),
    "mlc.reshape": _rule(te_reshape, "reshape", "shape"),
    "mlc.softmax": _rule(te_softmax, "softmax", "axis"),
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


def legalize(mod: Module, op_map: dict[str, LegalizeRule] | None = None) -> Module:
    """Replace every graph op of ``mod`` (in place) by the expression its rule returns.

    Returns:
        ``mod``, whose graph functions now call tensor programs (added to the module).

    Raises:
        GraphError: a rule that fails or returns something that is not a graph expression.
    """
    rules = normalize_op_map(op_map)
    bb = BlockBuilder(mod)
    with mlc_context():
        for fop in graph_functions(mod.mlir_module):
            shapes = value_shapes(fop)
            for op in walk_ops(fop):
                if op.name in rules:
                    _legalize_op(bb, op, rules[op.name], shapes)
    return mod


def _legalize_op(bb: BlockBuilder, op: ir.Operation, rule: LegalizeRule,
                 shapes: dict[ir.Value, tuple]) -> None:
    args = []
    for i, v in enumerate(op.operands):
        shape, dtype = shapes[v]
        var = Var("abcdefgh"[i] if i < 8 else f"x{i}", shape, dtype)
        args.append(var)
    res_shape, res_dtype = shapes[op.results[0]]
    call = Call(op.name[4:], args, op_attrs(op, res_shape), res_shape, res_dtype)
    with bb._rewriting(op.name):
        try:
            new = rule(bb, call)
        except GraphError as exc:
            raise fail(op, f"legalization failed: {exc}") from exc
    if not isinstance(new, Expr):
        raise fail(op, f"legalization rule {getattr(rule, '__name__', rule)} returned "
                       f"{type(new).__name__}, not a graph expression")
    with ir.InsertionPoint(op), op.location:
        emitter = Emitter({id(a): v for a, v in zip(args, op.operands)}, func_name=op.name)
        value = emitter.value(new)
        old_type = op.results[0].type
        if str(value.type) != str(old_type):
            value = tensor.CastOp(old_type, value).result
    shapes[value] = shapes[op.results[0]]
    op.results[0].replace_all_uses_with(value)
    op.erase()
