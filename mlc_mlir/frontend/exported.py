"""``from_exported_program``: ``torch.export`` programs to graph modules (PyTorch 2's way).

    ep = torch.export.export(model.eval(), (example_input,))
    mod = mlc.frontend.from_exported_program(ep)

The program is decomposed to core aten ops (``ep.run_decompositions()``), as torch-mlir
and IREE's importers do; its lifted parameters and buffers become constants, its user
inputs the parameters of ``main`` (shapes and dtypes from the example inputs).

Dynamic dimensions (``torch.export.Dim``) stay symbolic: each of torch's size symbols is
a graph dimension named as its ``Dim`` (``"batch"``; torch's own name, ``"s0"``, where
the ``Dim``'s is not known). A size that is a product (``s0*16``, a batch
flattened into rows) has no graph dimension; its tensor keeps the factors as separate
dimensions (see :func:`~mlc_mlir.frontend.emit.reshape_symbolic`), which views, matmuls,
elementwise ops, permutes and softmax accept. A node whose inputs are all constants and
whose result has a static shape (``arange``, ``full``, a causal mask built from them, a
transposed weight) is evaluated by torch at import and becomes a constant.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from contextvars import ContextVar
from typing import Any, NamedTuple

import numpy as np

from ..errors import GraphError, MlcError
from ..graph import BlockBuilder, Var, op
from ..graph.ir.expr import Constant, Expr, const
from ..tensor_types import format_shape, normalize_dtype
from . import emit as E
from .emit import SymProduct

__all__ = ["from_exported_program", "ATEN_MAP", "Info"]

Rule = Callable[..., Any]


class Info(NamedTuple):
    """What a rule may need of its node beyond the arguments: torch's result sizes and
    dtype, and the sizes of the node's arguments (None for non-tensors)."""

    name: str
    sizes: tuple | None
    dtype: str | None
    arg_sizes: list


def _info(fn: Callable[..., Any]) -> Rule:
    fn.needs_info = True  # type: ignore[attr-defined]
    return fn


def _binary(graph_op: Callable[..., Any]) -> Rule:
    def rule(bb: BlockBuilder, a: list, kw: dict) -> Any:
        b = a[1]
        if kw.get("alpha", 1) != 1:
            b = b * kw["alpha"] if not isinstance(b, Expr) else E.binary(bb, op.multiply, b, kw["alpha"])
        return E.binary(bb, graph_op, a[0], b)

    return rule


def _bitwise_not(bb: BlockBuilder, a: list, kw: dict) -> Any:
    if a[0].dtype != "bool":
        raise GraphError(f"bitwise_not of {a[0].dtype} tensors is not supported (only bool)")
    return bb.emit(op.logical_not(a[0]))


def _unary(graph_op: Callable[..., Any]) -> Rule:
    return lambda bb, a, kw: bb.emit(graph_op(a[0]))


def _scalar_first(graph_op: Callable[..., Any]) -> Rule:
    """``rsub(x, c)``: ``c - x``."""
    return lambda bb, a, kw: E.binary(bb, graph_op, a[1], a[0])


def _addmm(bb: BlockBuilder, a: list, kw: dict) -> Any:
    bias, x, w, beta, alpha = a[:5]
    out = bb.emit(op.matmul(x, w))
    if alpha != 1:
        out = bb.emit(op.multiply(out, float(alpha)))
    if beta == 0:
        return out
    return bb.emit(op.add(out, bias if beta == 1 else bb.emit(op.multiply(bias, float(beta)))))


def _convolution(bb: BlockBuilder, a: list, kw: dict) -> Any:
    x, w, b, stride, padding, dilation, transposed, _, groups = a[:9]
    if transposed:
        raise GraphError("transposed convolution is not supported")
    if x.ndim != 4:
        raise GraphError(f"only 2-D convolution (NCHW input) is supported, got input {format_shape(x.shape)}")
    return E.conv2d(bb, x, w, b, stride, padding, dilation, groups)


@_info
def _view(bb: BlockBuilder, a: list, kw: dict, info: Info) -> Any:
    return E.reshape_symbolic(bb, a[0], info.sizes)


@_info
def _expand(bb: BlockBuilder, a: list, kw: dict, info: Info) -> Any:
    if info.arg_sizes[0] == info.sizes:
        return a[0]
    if tuple(a[0].shape) != info.arg_sizes[0]:
        raise GraphError("expand of a tensor whose symbolic size is a product is not supported")
    return E.expand(bb, a[0], info.sizes)


def _torch_axes(x: Expr, sizes: tuple | None) -> list[list[int]]:
    """The graph axes of each of torch's axes of ``x`` (more than one where a symbolic
    product is kept split)."""
    groups = E.dim_groups(x.shape, sizes) if sizes is not None else None
    return groups if groups is not None else [[i] for i in range(x.ndim)]


@_info
def _permute(bb: BlockBuilder, a: list, kw: dict, info: Info) -> Any:
    groups = _torch_axes(a[0], info.arg_sizes[0])
    axes = [g for d in a[1] for g in groups[E.norm_axis(d, len(groups))]]
    return a[0] if axes == sorted(axes) else bb.emit(op.permute_dims(a[0], axes))


@_info
def _transpose(bb: BlockBuilder, a: list, kw: dict, info: Info) -> Any:
    groups = _torch_axes(a[0], info.arg_sizes[0])
    order = list(range(len(groups)))
    d0, d1 = E.norm_axis(a[1], len(groups)), E.norm_axis(a[2], len(groups))
    order[d0], order[d1] = order[d1], order[d0]
    axes = [g for d in order for g in groups[d]]
    return a[0] if axes == sorted(axes) else bb.emit(op.permute_dims(a[0], axes))


@_info
def _softmax(bb: BlockBuilder, a: list, kw: dict, info: Info) -> Any:
    return E.softmax(bb, a[0], _unsplit_axis(a, info, "softmax"))


@_info
def _safe_softmax(bb: BlockBuilder, a: list, kw: dict, info: Info) -> Any:
    return E.safe_softmax(bb, a[0], _unsplit_axis(a, info, "_safe_softmax"))


def _unsplit_axis(a: list, info: Info, what: str) -> int:
    """The graph axis of torch's dim ``a[1]`` of ``a[0]``, which must not be a symbolic product."""
    groups = _torch_axes(a[0], info.arg_sizes[0])
    group = groups[E.norm_axis(a[1], len(groups))]
    if len(group) != 1:
        raise GraphError(f"{what} along a symbolic size that is a product is not supported")
    return group[0]


def _max_pool(bb: BlockBuilder, a: list, kw: dict) -> Any:
    x, kernel, stride, padding, dilation, ceil = a[:6]
    return (E.max_pool2d(bb, x, kernel, stride, padding, dilation, ceil), None)


def _reduce(name: str) -> Rule:
    def rule(bb: BlockBuilder, a: list, kw: dict) -> Any:
        if kw.get("dtype") is not None:
            raise GraphError(f"{name} with dtype={kw['dtype']} is not supported")
        return E.reduce(bb, name, a[0], a[1] if len(a) > 1 else None, a[2] if len(a) > 2 else False)

    return rule


@_info
def _to_copy(bb: BlockBuilder, a: list, kw: dict, info: Info) -> Any:
    return E.cast(bb, a[0], info.dtype)


@_info
def _full_like(bb: BlockBuilder, a: list, kw: dict, info: Info) -> Any:
    return bb.emit(op.full_like(a[0], a[1], info.dtype))


def _where(bb: BlockBuilder, a: list, kw: dict) -> Any:
    cond, x, y = a[:3]
    like = x if isinstance(x, Expr) else y
    x = const(np.array(x, dtype=np.dtype(like.dtype))) if not isinstance(x, Expr) else x
    y = const(np.array(y, dtype=np.dtype(like.dtype))) if not isinstance(y, Expr) else y
    return bb.emit(op.where(cond, x, y))


def _index(bb: BlockBuilder, a: list, kw: dict) -> Any:
    """``x[i0, i1, ...]`` (``index.Tensor``): one index tensor is a ``take``; several constant
    ones on the leading dimensions are one ``take`` of their flat positions."""
    x, indices = a[0], list(a[1])
    grid = E.index_by_iotas(bb, x, indices) if all(i is not None for i in indices) else None
    if grid is not None:
        return grid
    given = [k for k, i in enumerate(indices) if i is not None]
    if len(given) == 1:
        return bb.emit(op.take(x, indices[given[0]], given[0]))
    indices = [i.materialize() if isinstance(i, E.Iota) else i for i in indices]
    if any(not isinstance(i, Constant) for i in indices) or not all(isinstance(d, int) for d in
                                                                      x.shape[:len(indices)]):
        raise GraphError("indexing with several index tensors is supported only for constant indices on "
                         "static dimensions")
    dims = x.shape[:len(indices)]
    flat = np.ravel_multi_index(np.broadcast_arrays(*[i.data.astype(np.int64) for i in indices]), dims,
                                mode="wrap")
    rows = bb.emit(op.reshape(x, (int(np.prod(dims)), *x.shape[len(indices):])))
    return bb.emit(op.take(rows, const(flat.astype(np.int64)), 0))


def _identity(bb: BlockBuilder, a: list, kw: dict) -> Any:
    return a[0]


def _iota(name: str, node: Any, args: list, kw: dict) -> Any:
    """The rule of a node with an :class:`~.emit.Iota` argument: an arange (of symbolic size)
    stays one through unsqueeze, ``+ 0`` and copies, and is consumed by ``index``; any other
    op gets its values (None: the node needs no special rule)."""
    if name == "arange":
        start, end, step = kw.get("start", 0), kw["end"], kw.get("step", 1)
        if start != 0 or step != 1:
            raise GraphError(f"arange({start}, {end}, {step}) of symbolic size is not supported (only arange(n))")
        return E.Iota((end,), 0, _dtype(node.meta["val"]))
    first = args[0] if args else None
    if isinstance(first, E.Iota):
        if name == "unsqueeze":
            return first.unsqueeze(args[1])
        if name in ("clone", "alias", "_to_copy", "lift_fresh_copy") and _dtype(node.meta["val"]) == first.dtype:
            return first
        if name in ("add", "sub") and args[1] == 0:
            return first
        size = first.shape[E.norm_axis(args[1], len(first.shape))] if name == "slice" else None
        if name == "slice" and args[2] in (0, None) and args[4] == 1 and (
                args[3] is None or args[3] == size or (isinstance(args[3], int) and args[3] >= 2 ** 62)):
            return first
    return None


#: aten op (overload packet name, ``aten.addmm.default`` -> ``"addmm"``) -> rule(bb, args, kwargs)
ATEN_MAP: dict[str, Rule] = {
    "add": _binary(op.add), "sub": _binary(op.subtract), "mul": _binary(op.multiply),
    "div": _binary(op.divide), "mm": _binary(op.matmul), "bmm": _binary(op.matmul),
    "matmul": lambda bb, a, kw: E.matmul(bb, a[0], a[1]), "rsub": _scalar_first(op.subtract),
    "reciprocal": lambda bb, a, kw: E.binary(bb, op.divide, 1.0, a[0]), "bitwise_not": _bitwise_not,
    "addmm": _addmm, "linear": lambda bb, a, kw: E.linear(bb, a[0], a[1], a[2]),
    "pow": lambda bb, a, kw: E.power(bb, a[0], a[1]), "maximum": _binary(op.maximum), "minimum": _binary(op.minimum),
    "eq": _binary(op.equal), "ne": _binary(op.not_equal), "lt": _binary(op.less), "le": _binary(op.less_equal),
    "gt": _binary(op.greater), "ge": _binary(op.greater_equal), "logical_not": _unary(op.logical_not),
    "logical_and": _binary(op.logical_and), "logical_or": _binary(op.logical_or),
    "bitwise_and": _binary(op.bitwise_and), "bitwise_or": _binary(op.bitwise_or), "where": _where,
    "relu": _unary(op.relu), "sigmoid": _unary(op.sigmoid), "tanh": _unary(op.tanh),
    "exp": _unary(op.exp), "log": _unary(op.log), "sqrt": _unary(op.sqrt), "rsqrt": _unary(op.rsqrt),
    "erf": _unary(op.erf), "neg": _unary(op.negative), "abs": _unary(op.abs), "sin": _unary(op.sin),
    "cos": _unary(op.cos), "floor": _unary(op.floor), "ceil": _unary(op.ceil),
    "gelu": lambda bb, a, kw: E.gelu(bb, a[0], kw.get("approximate", "none")),
    "hardtanh": lambda bb, a, kw: bb.emit(op.clip(a[0], float(a[1]), float(a[2]))),
    "clamp": lambda bb, a, kw: bb.emit(op.clip(a[0], a[1], a[2])),
    "view": _view, "reshape": _view, "_unsafe_view": _view, "expand": _expand,
    "permute": _permute, "transpose": _transpose, "t": lambda bb, a, kw: bb.emit(op.permute_dims(a[0])),
    "flatten": lambda bb, a, kw: E.flatten(bb, a[0], a[1], a[2]),
    "unsqueeze": lambda bb, a, kw: E.unsqueeze(bb, a[0], a[1]),
    "squeeze": lambda bb, a, kw: E.squeeze(bb, a[0], a[1] if len(a) > 1 else None),
    "slice": lambda bb, a, kw: E.slice_axis(bb, a[0], a[1], a[2], a[3], a[4]),
    "select": lambda bb, a, kw: E.select(bb, a[0], a[1], a[2]),
    "split_with_sizes": lambda bb, a, kw: E.split(bb, a[0], list(a[1]), a[2]),
    "split": lambda bb, a, kw: E.split(bb, a[0], a[1], a[2]),
    "cat": lambda bb, a, kw: E.concat(bb, a[0], a[1]),
    "embedding": lambda bb, a, kw: E.embedding(bb, a[0], a[1]),
    "index": _index, "index_select": lambda bb, a, kw: bb.emit(op.take(a[0], a[2], E.norm_axis(a[1], a[0].ndim))),
    "_softmax": _softmax, "softmax": _softmax, "_safe_softmax": _safe_softmax,
    "mean": _reduce("mean"), "sum": _reduce("sum"), "amax": _reduce("max"), "amin": _reduce("min"),
    "prod": _reduce("prod"), "any": _reduce("any"), "all": _reduce("all"),
    "convolution": _convolution, "conv2d": lambda bb, a, kw: E.conv2d(bb, *a[:7]),
    "max_pool2d_with_indices": _max_pool,
    "max_pool2d": lambda bb, a, kw: _max_pool(bb, a, kw)[0],
    "avg_pool2d": lambda bb, a, kw: E.avg_pool2d(bb, *a[:7]),
    "_adaptive_avg_pool2d": lambda bb, a, kw: E.adaptive_avg_pool2d(bb, a[0], a[1]),
    "adaptive_avg_pool2d": lambda bb, a, kw: E.adaptive_avg_pool2d(bb, a[0], a[1]),
    "_native_batch_norm_legit_no_training": lambda bb, a, kw: (E.batch_norm(bb, *a[:5], a[6]), None, None),
    "native_layer_norm": lambda bb, a, kw: (E.layer_norm(bb, *a[:5]), None, None),
    "masked_fill": lambda bb, a, kw: E.masked_fill(bb, a[0], a[1], a[2]),
    "_to_copy": _to_copy, "full_like": _full_like,
    "clone": _identity, "alias": _identity, "detach": _identity, "dropout": _identity, "contiguous": _identity,
    "lift_fresh_copy": _identity,
}

#: ops that accept an input whose symbolic product size is kept split (elementwise ops,
#: matmuls, views, axis permutations, softmax along an unsplit axis)
GROUPED = {"add", "sub", "mul", "div", "pow", "maximum", "minimum", "eq", "ne", "lt", "le", "gt", "ge",
           "where", "relu", "sigmoid", "tanh", "exp", "log", "sqrt", "rsqrt", "erf", "neg", "abs", "gelu",
           "hardtanh", "clamp", "logical_not", "reciprocal", "bitwise_not", "rsub", "logical_and", "logical_or", "bitwise_and", "bitwise_or",
           "mm", "bmm", "addmm", "view", "reshape", "_unsafe_view", "expand", "permute", "transpose",
           "_softmax", "softmax", "_safe_softmax", "native_layer_norm", "clone", "alias", "detach", "dropout",
           "contiguous",
           "_to_copy"}

#: aten ops that only check shapes or metadata at run time in torch: nothing to emit
DROPPED = {"_assert_tensor_metadata", "_assert_scalar", "sym_constrain_range", "sym_constrain_range_for_size",
           "_assert_async", "_print"}


def _arg(env: dict, value: Any) -> Any:
    from torch import fx

    if isinstance(value, fx.Node):
        return env[value]
    if isinstance(value, (list, tuple)):
        return type(value)(_arg(env, v) for v in value)
    return value


def _aten_name(target: Any) -> str:
    text = str(target)  # "aten.addmm.default"
    parts = text.split(".")
    return parts[1] if len(parts) >= 2 and parts[0] == "aten" else text


#: torch's size symbols -> the names of their ``torch.export.Dim`` (set during a translation)
_DIM_NAMES: ContextVar[dict[str, str]] = ContextVar("_DIM_NAMES", default={})


def _dim_names(ep: Any) -> dict[str, str]:
    """``{"s77": "batch"}``: each size symbol of a user input named as its ``Dim``, where
    torch recorded the name and it is an identifier used by one symbol only."""
    names: dict[str, str] = {}
    for node in ep.graph.nodes:
        for d in getattr(node.meta.get("val"), "shape", ()) if node.op == "placeholder" else ():
            expr = getattr(getattr(d, "node", None), "expr", None)
            if expr is None or not expr.is_Symbol:
                continue
            env = d.node.shape_env
            for src in getattr(env, "var_to_sources", {}).get(expr, []):
                name = getattr(env, "source_name_to_debug_name", {}).get(src.name)
                if isinstance(name, str) and name.isidentifier():
                    names.setdefault(str(expr), name)
    taken = list(names.values())
    return {k: v for k, v in names.items() if taken.count(v) == 1}


def _dim(value: Any) -> int | str | SymProduct:
    """A torch size (int or SymInt) as a graph size: an int, a symbol name or a product."""
    import torch

    if isinstance(value, int):
        return int(value)
    if not isinstance(value, torch.SymInt):
        raise GraphError(f"size {value!r} is not an int or a torch.SymInt")
    expr = value.node.expr
    if expr.is_Integer:
        return int(expr)
    names = _DIM_NAMES.get()
    if expr.is_Symbol:
        return names.get(str(expr), str(expr))
    coef, factors = expr.as_coeff_mul()
    syms: list[str] = []
    for f in factors:
        if f.is_Symbol:
            syms.append(names.get(str(f), str(f)))
        elif f.is_Pow and f.base.is_Symbol and f.exp.is_Integer and int(f.exp) > 0:
            syms += [names.get(str(f.base), str(f.base))] * int(f.exp)
        else:
            raise GraphError(f"symbolic size {expr} is not a product of symbols and an int")
    if not coef.is_Integer:
        raise GraphError(f"symbolic size {expr} is not a product of symbols and an int")
    return SymProduct(int(coef), tuple(sorted(syms)))


def _sizes(val: Any) -> tuple | None:
    """The graph sizes of a node's ``meta["val"]`` tensor (None when it is not a tensor)."""
    shape = getattr(val, "shape", None)
    return None if shape is None else tuple(_dim(d) for d in shape)


def _dtype(val: Any) -> str | None:
    dtype = getattr(val, "dtype", None)
    if dtype is None:
        return None
    return normalize_dtype(str(dtype).replace("torch.", ""), allow_bool=True, error=GraphError)


def _is_static(val: Any) -> bool:
    if isinstance(val, (list, tuple)):
        return all(_is_static(v) for v in val)
    shape = getattr(val, "shape", None)
    return shape is not None and all(isinstance(d, int) for d in shape)


def _bind(target: Any, args: list, kwargs: dict) -> tuple[list, dict]:
    """Arguments in schema order with the defaults filled in (and all of them by name)."""
    schema = getattr(target, "_schema", None)
    if schema is None:
        return args, kwargs
    full, named = [], {}
    for i, a in enumerate(schema.arguments):
        if i < len(args) and not a.kwarg_only:
            v = args[i]
        elif a.name in kwargs:
            v = kwargs[a.name]
        elif a.has_default_value():
            v = a.default_value
        else:
            v = None
        full.append(v)
        named[a.name] = v
    return full, named


def _fold(node: Any, env: dict) -> Any:
    """Evaluate ``node`` with torch on its constant inputs, or None when it cannot be."""
    import torch
    from torch import fx

    inputs = [a for a in (*node.args, *node.kwargs.values()) for a in (a if isinstance(a, (list, tuple)) else [a])]
    if not isinstance(node.target, torch._ops.OpOverload) or not _is_static(node.meta.get("val")):
        return None
    if any(isinstance(a, fx.Node) and not isinstance(env[a], Constant) for a in inputs):
        return None

    def value(v: Any) -> Any:
        if isinstance(v, fx.Node):
            return torch.from_numpy(np.array(env[v].data))
        if isinstance(v, (list, tuple)):
            return type(v)(value(x) for x in v)
        return v

    with torch.no_grad():
        out = node.target(*value(node.args), **{k: value(v) for k, v in node.kwargs.items()})
    if isinstance(out, (list, tuple)):
        return type(out)(E.to_const(o) if isinstance(o, torch.Tensor) else o for o in out)
    return E.to_const(out) if isinstance(out, torch.Tensor) else None


#: ops whose operands broadcast (NumPy rules, batch dims of matmul included)
_BROADCASTING = {"bmm", "matmul", "add", "sub", "mul", "div", "where", "maximum", "minimum"}
_VIEWS = {"view", "reshape", "_unsafe_view"}


def _broadcast_constant(node: Any, env: dict) -> Constant | None:
    """``expand`` of a constant read only by broadcasting ops, directly or through a view to
    the same shape (``bmm`` of a weight expanded over the batch: the decomposed ``linear`` of
    ``nn.MultiheadAttention``'s input projection at export): the constant without
    its leading unit dimensions, which those ops broadcast alike. Folding the expand instead
    made ``TransformerEncoderLayer`` (d 768, batch 8) a 905 MB constant. None otherwise."""
    src = env.get(node.args[0])
    val = node.meta.get("val")
    if not isinstance(src, Constant) or src.data is None or not _is_static(val) or not node.users:
        return None
    target = tuple(int(d) for d in val.shape)
    if _aten_name(node.target) in _VIEWS and tuple(int(d) for d in node.args[0].meta["val"].shape) != target:
        return None  # only a view to the expand's own shape (decomposed matmul) passes it on
    if not all(_aten_name(u.target) in _BROADCASTING or (
            _aten_name(u.target) in _VIEWS and tuple(int(d) for d in u.meta["val"].shape) == target)
            for u in node.users):
        return None
    data = np.asarray(src.data)
    lead = 0
    while lead < data.ndim and data.shape[lead] == 1:
        lead += 1
    rest = data.shape[lead:]
    if not rest or target[len(target) - len(rest):] != rest:
        return None  # the trailing dims change too: fold or emit as usual
    if any(_aten_name(u.target) == "bmm" for u in node.users) and len(rest) < 2:
        return None
    return const(np.ascontiguousarray(data.reshape(rest)))


def _grouped_input(node: Any, env: dict) -> str | None:
    """An input of ``node`` whose graph shape splits a symbolic product of torch's sizes, as
    ``"name (sizes)"``; None when there is none."""
    for a in node.all_input_nodes:
        value, sizes = env.get(a), _sizes(a.meta.get("val"))
        if isinstance(value, Expr) and sizes is not None and tuple(value.shape) != sizes:
            return f"{a.name!r} of sizes ({', '.join(map(str, sizes))})"
    return None


def _call(bb: BlockBuilder, node: Any, env: dict, aten_map: dict[str, Rule]) -> Any:
    if node.target is operator.getitem:
        value = env[node.args[0]][node.args[1]]
        if value is None:
            raise GraphError(f"node {node.name!r} reads result {node.args[1]} of {node.args[0].name!r}, "
                             "which is not supported (only the first result of pooling/normalization)")
        return value
    name = _aten_name(node.target)
    if name in DROPPED:
        return None
    val = node.meta.get("val")
    if not hasattr(val, "shape") and not isinstance(val, (list, tuple)) and val is not None:
        return _dim(val)  # a size: sym_size.int, s0 * 16 ...
    if name == "expand" or (name in _VIEWS and ("unexpanded", node.args[0]) in env):
        kept = _broadcast_constant(node, env)
        if kept is not None:
            env[("unexpanded", node)] = True
            return kept
    folded = _fold(node, env)
    if folded is not None:
        return folded
    args, kwargs = _bind(node.target, [_arg(env, a) for a in node.args],
                         {k: _arg(env, v) for k, v in node.kwargs.items()})
    rule = aten_map.get(name)
    if rule is None and name != "arange":
        raise GraphError(f"from_exported_program: node {node.name!r} calls {node.target}, which has no "
                         f"translation; supported aten ops: {', '.join(sorted(aten_map))}")
    grouped = _grouped_input(node, env)
    if grouped and name not in GROUPED:
        raise GraphError(f"from_exported_program: node {node.name!r} ({node.target}): input {grouped} has "
                         f"a symbolic size that is a product, which {name} does not support")
    info = Info(node.name, _sizes(val), _dtype(val),
                [_sizes(a.meta.get("val")) if hasattr(a, "meta") else None for a in node.args])
    try:
        if name == "arange" or any(isinstance(v, E.Iota) for v in args):
            lazy = _iota(name, node, args, kwargs)
            if lazy is not None:
                return lazy
            if name != "index":
                args = [v.materialize() if isinstance(v, E.Iota) else v for v in args]
        if getattr(rule, "needs_info", False):
            return rule(bb, args, kwargs, info)
        return rule(bb, args, kwargs)
    except MlcError as exc:
        raise GraphError(f"from_exported_program: node {node.name!r} ({node.target}): {exc}") from exc


def _check_result(node: Any, value: Any) -> None:
    sizes = _sizes(node.meta.get("val"))
    if not isinstance(value, Expr) or sizes is None or tuple(value.shape) == sizes:
        return
    if sizes == () and tuple(value.shape) == (1,):  # a 0-d constant is stored with shape (1,)
        return
    if E.dim_groups(value.shape, sizes) is None:
        raise GraphError(f"from_exported_program: node {node.name!r} ({node.target}) gave shape "
                         f"{format_shape(value.shape)}, torch says ({', '.join(map(str, sizes))})")


def _state(ep: Any, node: Any) -> Any:
    sig = ep.graph_signature
    for table in (sig.inputs_to_parameters, sig.inputs_to_buffers,
                  getattr(sig, "inputs_to_lifted_tensor_constants", {})):
        if node.name in table:
            key = table[node.name]
            return ep.state_dict[key] if key in ep.state_dict else ep.constants[key]
    return None


def _input(node: Any) -> Var:
    sizes = _sizes(node.meta["val"])
    bad = [s for s in sizes if isinstance(s, SymProduct)]
    if bad:
        raise GraphError(f"from_exported_program: input {node.name!r} has size {bad[0]}; an input's sizes "
                         "must be ints or single symbols")
    return Var(node.name, sizes, _dtype(node.meta["val"]))


def from_exported_program(exported_program: Any, *, aten_map: dict[str, Rule] | None = None):
    """Translate ``torch.export.export(model, args)`` into a graph module with function ``main``.

    Args:
        exported_program: a ``torch.export.ExportedProgram`` (export a model in ``eval()`` mode);
            its dynamic dimensions (``dynamic_shapes=`` with ``torch.export.Dim``) become
            symbolic dimensions named as the ``Dim`` (``"batch"``).
        aten_map: extra/overriding rules, aten op name (``"addmm"``) -> ``fn(bb, args, kwargs)``;
            ``args`` holds the op's arguments in schema order, defaults filled in.

    Returns:
        An :class:`mlc_mlir.Module`; ``main`` takes the user inputs, in order.

    Raises:
        GraphError: an aten op without a translation (naming the node and the op).
    """
    try:
        import torch
        from torch.export import ExportedProgram
    except ImportError as exc:  # pragma: no cover - torch missing
        raise GraphError("from_exported_program needs torch (pip install mlc-mlir[torch])") from exc
    if not isinstance(exported_program, ExportedProgram):
        raise GraphError(f"from_exported_program expects a torch.export.ExportedProgram, got "
                         f"{type(exported_program).__name__}")
    # (scaled_dot_product_attention's _safe_softmax kept whole: one kernel, where its
    # decomposition -- softmax, x == -inf, all, where -- took four passes over the scores)
    table = torch.export.default_decompositions()
    safe = getattr(torch.ops.aten, "_safe_softmax", None)  # (torch 2.5 and later)
    if safe is not None:
        table.pop(safe.default, None)
    ep = exported_program.run_decompositions(table)
    token = _DIM_NAMES.set(_dim_names(ep))
    try:
        return _translate(ep, {**ATEN_MAP, **(aten_map or {})})
    finally:
        _DIM_NAMES.reset(token)


def _translate(ep: Any, rules: dict[str, Rule]) -> Any:
    bb = BlockBuilder()
    env: dict[Any, Any] = {}
    inputs: list[Var] = []
    outputs: list[Expr] = []
    with bb.function("main"):
        with bb.dataflow():
            for node in ep.graph.nodes:
                if node.op == "placeholder":
                    tensor = _state(ep, node)
                    if tensor is not None:
                        env[node] = E.to_const(tensor)
                        continue
                    env[node] = _input(node)
                    inputs.append(env[node])
                elif node.op == "call_function":
                    value = _call(bb, node, env, rules)
                    env[node] = E.emit(bb, value) if isinstance(value, Expr) else value
                    if ("unexpanded", node) not in env:  # a weight left unexpanded has its own shape
                        _check_result(node, env[node])
                elif node.op == "output":
                    result = _arg(env, node.args[0])
                    results = list(result) if isinstance(result, (list, tuple)) else [result]
                    outputs = [bb.emit_output(r) for r in results]
                else:
                    raise GraphError(f"from_exported_program: node {node.name!r} has op kind {node.op!r}, "
                                     "which is not supported")
        bb.emit_func_output(outputs[0] if len(outputs) == 1 else outputs, inputs)
    return bb.get()
