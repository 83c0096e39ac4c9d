"""``from_fx``: a ``torch.fx`` graph to a graph module (course ch.5, "Import Model From PyTorch").

    fx_module = torch.fx.symbolic_trace(model)
    mod = mlc.frontend.from_fx(fx_module, input_shapes=[(1, 784)])
    ex = mlc.graph.build(mod, "llvm")

It follows the course's translator: one function ``main`` with a dataflow block, nodes
visited in topological order, ``node_map`` from each ``fx.Node`` to its graph value.
A ``call_function`` node is translated by ``call_function_map[node.target](bb, node_map,
node)``, a ``call_module`` node by ``call_module_map[type(module)](bb, node_map, node,
module)``, a ``call_method`` node (``x.view(...)``) by ``call_function_map[method_name]``;
the given maps extend the defaults below. Parameters (``get_attr`` and modules' weights)
become constants.

Shapes are static, so fx's shape arithmetic (``x.size()``, ``x.shape[1]``, ``C // n``,
``math.sqrt(d)``) gives Python values at import; a node whose inputs are all Python values
or constants (``torch.tril(torch.ones(T, T))``, ``self.mask[:T, :T] == 0``) is evaluated by
torch at import and becomes a constant.
"""

from __future__ import annotations

import ast
import builtins
import math
import operator
from collections.abc import Callable, Sequence
from typing import Any

from ..errors import GraphError, MlcError
from ..graph import BlockBuilder, Var, op
from ..graph.ir.expr import Constant, Expr, const
from ..tensor_types import normalize_dtype
from . import emit as E

__all__ = ["from_fx", "DEFAULT_FUNCTION_MAP", "DEFAULT_METHOD_MAP", "DEFAULT_MODULE_MAP", "fetch_attr"]


def _a(node_map: dict, value: Any) -> Any:
    """An fx argument with nodes replaced by their graph values."""
    from torch import fx

    if isinstance(value, fx.Node):
        return node_map[value]
    if isinstance(value, (list, tuple)):
        return type(value)(_a(node_map, v) for v in value)
    if isinstance(value, slice):
        return slice(_a(node_map, value.start), _a(node_map, value.stop), _a(node_map, value.step))
    if isinstance(value, dict):
        return {k: _a(node_map, v) for k, v in value.items()}
    return value


def _args(node_map: dict, node: Any) -> tuple[list, dict]:
    return [_a(node_map, a) for a in node.args], {k: _a(node_map, v) for k, v in node.kwargs.items()}


def _params(node_map: dict, node: Any, names: str) -> list:
    """The node's arguments for the signature ``names`` (``"input, dim=None, keepdim=False"``),
    from positions or keywords, defaults filled in."""
    args, kw = _args(node_map, node)
    out = []
    for i, item in enumerate(names.split(",")):
        name, eq, default = (s.strip() for s in item.partition("="))
        if i < len(args):
            out.append(args[i])
        elif name in kw:
            out.append(kw[name])
        elif eq:
            out.append(ast.literal_eval(default))
        else:
            raise GraphError(f"missing argument {name!r}")
    return out


def _rule(names: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    """A rule calling ``fn(bb, *arguments)`` with the arguments of signature ``names``."""
    return lambda bb, node_map, node: fn(bb, *_params(node_map, node, names))


def _fn(graph_op: Callable[..., Any]) -> Callable[..., Expr]:
    def rule(bb: BlockBuilder, node_map: dict, node: Any) -> Expr:
        args, _ = _args(node_map, node)
        return bb.emit(graph_op(*args))

    return rule


def _arith(py_op: Callable[..., Any], graph_op: Callable[..., Any], reverse: bool = False) -> Callable[..., Any]:
    """``a OP b``: Python arithmetic on Python values (shapes), the graph op on tensors."""

    def rule(bb: BlockBuilder, node_map: dict, node: Any) -> Any:
        args, kw = _args(node_map, node)
        a, b = (args[1], args[0]) if reverse else (args[0], args[1])
        if kw.get("alpha", 1) != 1:
            b = b * kw["alpha"] if not isinstance(b, Expr) else bb.emit(op.multiply(b, kw["alpha"]))
        if not isinstance(a, Expr) and not isinstance(b, Expr):
            return py_op(a, b)
        if graph_op is None:
            raise GraphError(f"{py_op.__name__} of graph tensors is not supported (only of Python numbers)")
        if graph_op is op.matmul:
            return E.matmul(bb, a, b)
        if graph_op is E.power:
            return E.power(bb, a, b)
        return E.binary(bb, graph_op, a, b)

    return rule


def _shape_arg(args: list) -> tuple:
    return tuple(args[1]) if len(args) == 2 and isinstance(args[1], (list, tuple)) else tuple(args[1:])


def _reshape(bb: BlockBuilder, node_map: dict, node: Any) -> Expr:
    args, kw = _args(node_map, node)
    shape = kw.get("shape") or kw.get("size") or _shape_arg(args)
    return bb.emit(op.reshape(args[0], shape))


def _permute(bb: BlockBuilder, node_map: dict, node: Any) -> Expr:
    args, kw = _args(node_map, node)
    dims = kw.get("dims") or _shape_arg(args)
    return bb.emit(op.permute_dims(args[0], [E.norm_axis(d, args[0].ndim) for d in dims]))


def _expand(bb: BlockBuilder, node_map: dict, node: Any) -> Expr:
    args, kw = _args(node_map, node)
    return E.expand(bb, args[0], kw.get("size") or _shape_arg(args))


def _size(bb: BlockBuilder, node_map: dict, node: Any) -> Any:
    x, dim = _params(node_map, node, "self, dim=None")
    return tuple(x.shape) if dim is None else x.shape[E.norm_axis(dim, x.ndim)]


def _getattr(bb: BlockBuilder, node_map: dict, node: Any) -> Any:
    x, name = _a(node_map, node.args[0]), node.args[1]
    if isinstance(x, Expr) and name == "shape":
        return tuple(x.shape)
    if isinstance(x, Expr) and name == "ndim":
        return x.ndim
    raise GraphError(f"getattr(..., {name!r}) of a graph value is not supported (only shape and ndim)")


def _index(bb: BlockBuilder, x: Expr, index: Any) -> Expr:
    """``x[index]``: ints, slices, None, ``...`` and one tensor of indices."""
    items = list(index) if isinstance(index, tuple) else [index]
    if Ellipsis in items:
        k = items.index(Ellipsis)
        used = sum(1 for i in items if i is not None and i is not Ellipsis)
        items[k:k + 1] = [slice(None)] * (x.ndim - used)
    axis, out = 0, x
    for item in items:
        if item is None:
            out = E.unsqueeze(bb, out, axis)
            axis += 1
        elif isinstance(item, slice):
            out = E.slice_axis(bb, out, axis, item.start, item.stop, 1 if item.step is None else item.step)
            axis += 1
        elif isinstance(item, int):
            out = E.select(bb, out, axis, item)
        elif isinstance(item, Expr) and item.dtype != "bool":
            out = bb.emit(op.take(out, item, axis))
            axis += item.ndim
        else:
            raise GraphError(f"indexing with {type(item).__name__} {item!r} is not supported")
    return out


def _getitem(bb: BlockBuilder, node_map: dict, node: Any) -> Any:
    x, index = _a(node_map, node.args[0]), _a(node_map, node.args[1])
    return _index(bb, x, index) if isinstance(x, Expr) else x[index]


def _chunk(bb: BlockBuilder, x: Expr, chunks: int, dim: int = 0) -> list[Expr]:
    size = x.shape[E.norm_axis(dim, x.ndim)]
    return E.split(bb, x, -(-size // chunks), dim)


def _to(bb: BlockBuilder, node_map: dict, node: Any) -> Expr:
    import torch

    args, kw = _args(node_map, node)
    dtype = kw.get("dtype") or next((a for a in args[1:] if isinstance(a, torch.dtype)), None)
    return args[0] if dtype is None else E.cast(bb, args[0], _dtype(dtype))


def _dtype(dtype: Any) -> str:
    return normalize_dtype(str(dtype).replace("torch.", ""), allow_bool=True, error=GraphError)


def _cast(dtype: str) -> Callable[..., Expr]:
    return lambda bb, node_map, node: E.cast(bb, _a(node_map, node.args[0]), dtype)


def _reduce(name: str) -> Callable[..., Expr]:
    return _rule("input, dim=None, keepdim=False", lambda bb, x, dim, keep: E.reduce(bb, name, x, dim, keep))


def _clip(bb: BlockBuilder, x: Expr, lo: Any, hi: Any) -> Expr:
    return bb.emit(op.clip(x, None if lo is None else float(lo), None if hi is None else float(hi)))


def _where(bb: BlockBuilder, cond: Expr, x: Any, y: Any) -> Expr:
    like = x if isinstance(x, Expr) else y
    x, y = (v if isinstance(v, Expr) else const(v, like.dtype) for v in (x, y))
    return bb.emit(op.where(cond, x, y))


def _full_like(bb: BlockBuilder, x: Expr, value: Any, dtype: Any) -> Expr:
    return bb.emit(op.full_like(x, value, None if dtype is None else _dtype(dtype)))


def _max_pool(bb: BlockBuilder, x: Expr, kernel: Any, stride: Any, padding: Any, dilation: Any, ceil: bool,
              indices: bool) -> Expr:
    if indices:
        raise GraphError("max_pool2d(return_indices=True) is not supported")
    return E.max_pool2d(bb, x, kernel, stride, padding, dilation, ceil)


def _batch_norm(bb: BlockBuilder, x: Expr, mean: Expr, var: Expr, weight: Any, bias: Any, training: bool,
                momentum: float, eps: float) -> Expr:
    if training:
        raise GraphError("batch_norm(training=True) is not supported; call model.eval() before tracing")
    return E.batch_norm(bb, x, weight, bias, mean, var, eps)


#: rules shared by a torch function and the method of the same name (``torch.transpose(x, 0, 1)``
#: and ``x.transpose(0, 1)``): name -> rule
_SHARED: dict[str, Callable[..., Any]] = {
    "add": _arith(operator.add, op.add), "sub": _arith(operator.sub, op.subtract),
    "mul": _arith(operator.mul, op.multiply), "div": _arith(operator.truediv, op.divide),
    "matmul": _arith(operator.matmul, op.matmul), "bmm": _arith(operator.matmul, op.matmul),
    "pow": _arith(operator.pow, E.power), "maximum": _fn(op.maximum), "minimum": _fn(op.minimum),
    "eq": _arith(operator.eq, op.equal), "ne": _arith(operator.ne, op.not_equal),
    "lt": _arith(operator.lt, op.less), "le": _arith(operator.le, op.less_equal),
    "gt": _arith(operator.gt, op.greater), "ge": _arith(operator.ge, op.greater_equal),
    "logical_not": _fn(op.logical_not), "logical_and": _fn(op.logical_and), "logical_or": _fn(op.logical_or),
    "relu": _fn(op.relu), "sigmoid": _fn(op.sigmoid), "tanh": _fn(op.tanh), "exp": _fn(op.exp),
    "log": _fn(op.log), "sqrt": _fn(op.sqrt), "rsqrt": _fn(op.rsqrt), "erf": _fn(op.erf), "abs": _fn(op.abs),
    "neg": _fn(op.negative), "sin": _fn(op.sin), "cos": _fn(op.cos), "floor": _fn(op.floor),
    "ceil": _fn(op.ceil), "silu": _fn(op.nn.silu),
    "clamp": _rule("input, min=None, max=None", _clip), "clip": _rule("input, min=None, max=None", _clip),
    "reshape": _reshape, "permute": _permute,
    "transpose": _rule("input, dim0, dim1", E.transpose),
    "flatten": _rule("input, start_dim=0, end_dim=-1", E.flatten),
    "softmax": _rule("input, dim=None", E.softmax),
    "log_softmax": _rule("input, dim=None", lambda bb, x, d: bb.emit(op.nn.log_softmax(x, E.norm_axis(d, x.ndim)))),
    "_safe_softmax": _rule("input, dim, dtype=None", lambda bb, x, d, dtype: E.safe_softmax(bb, x, d)),
    "unsqueeze": _rule("input, dim", E.unsqueeze), "squeeze": _rule("input, dim=None", E.squeeze),
    "split": _rule("tensor, split_size_or_sections, dim=0", E.split),
    "chunk": _rule("input, chunks, dim=0", _chunk),
    "masked_fill": _rule("input, mask, value", E.masked_fill),
    "where": _rule("condition, input, other", _where),
    "tril": _rule("input, diagonal=0", lambda bb, x, k: bb.emit(op.tril(x, int(k)))),
    "triu": _rule("input, diagonal=0", lambda bb, x, k: bb.emit(op.triu(x, int(k)))),
    "mean": _reduce("mean"), "sum": _reduce("sum"), "amax": _reduce("max"), "amin": _reduce("min"),
    "prod": _reduce("prod"), "any": _reduce("any"), "all": _reduce("all"),
    "t": lambda bb, node_map, node: bb.emit(op.permute_dims(_a(node_map, node.args[0]))),
    "select": _rule("input, dim, index", E.select),
    "narrow": _rule("input, dim, start, length", lambda bb, x, d, s, n: E.slice_axis(bb, x, d, s, s + n)),
    "zeros_like": _rule("input, dtype=None", lambda bb, x, dt: _full_like(bb, x, 0, dt)),
    "ones_like": _rule("input, dtype=None", lambda bb, x, dt: _full_like(bb, x, 1, dt)),
    "full_like": _rule("input, fill_value, dtype=None", _full_like),
    "reciprocal": _rule("input", lambda bb, x: E.binary(bb, op.divide, 1.0, x)),
    "index_select": _rule("input, dim, index", lambda bb, x, d, i: bb.emit(op.take(x, i, E.norm_axis(d, x.ndim)))),
}


def _function_map() -> dict[Any, Callable[..., Expr]]:
    import torch
    import torch.nn.functional as F

    out: dict[Any, Callable[..., Expr]] = {}
    for name, rule in _SHARED.items():
        for ns in (torch, F):
            if hasattr(ns, name):
                out[getattr(ns, name)] = rule
    out.update({
        operator.add: _SHARED["add"], operator.sub: _SHARED["sub"], operator.mul: _SHARED["mul"],
        operator.truediv: _SHARED["div"], operator.matmul: _SHARED["matmul"], operator.pow: _SHARED["pow"],
        operator.floordiv: _arith(operator.floordiv, None),
        operator.mod: _arith(operator.mod, None), operator.eq: _SHARED["eq"], operator.ne: _SHARED["ne"],
        operator.lt: _SHARED["lt"], operator.le: _SHARED["le"], operator.gt: _SHARED["gt"],
        operator.ge: _SHARED["ge"], operator.and_: _arith(operator.and_, op.bitwise_and),
        operator.or_: _arith(operator.or_, op.bitwise_or), operator.invert: _fn(op.logical_not), operator.neg: _SHARED["neg"],
        operator.getitem: _getitem, builtins.getattr: _getattr,
        math.sqrt: _rule("x", lambda bb, v: math.sqrt(v)),
        torch.div: _arith(operator.truediv, op.divide), torch.cat: _rule("tensors, dim=0", E.concat),
        torch.concat: _rule("tensors, dim=0", E.concat), torch.flatten: _SHARED["flatten"],
        F.relu6: lambda bb, nm, node: _clip(bb, _a(nm, node.args[0]), 0.0, 6.0),
        F.hardtanh: _rule("input, min_val=-1.0, max_val=1.0, inplace=False", lambda bb, x, lo, hi, _: _clip(bb, x, lo, hi)),
        F.gelu: _rule("input, approximate='none'", E.gelu),
        F.linear: _rule("input, weight, bias=None", E.linear),
        F.conv2d: _rule("input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1", E.conv2d),
        F.max_pool2d: _rule("input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, "
                            "return_indices=False", _max_pool),
        F.avg_pool2d: _rule("input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True, "
                            "divisor_override=None", E.avg_pool2d),
        F.adaptive_avg_pool2d: _rule("input, output_size", E.adaptive_avg_pool2d),
        F.layer_norm: _rule("input, normalized_shape, weight=None, bias=None, eps=1e-05", E.layer_norm),
        F.batch_norm: _rule("input, running_mean, running_var, weight=None, bias=None, training=False, "
                            "momentum=0.1, eps=1e-05", _batch_norm),
        F.embedding: _rule("input, weight", lambda bb, ids, w: E.embedding(bb, w, ids)),
        F.dropout: lambda bb, nm, node: _a(nm, node.args[0]),
        torch.matmul: _SHARED["matmul"], torch.bmm: _SHARED["bmm"],
    })
    return out


#: method name (``x.view(...)``) -> rule
DEFAULT_METHOD_MAP: dict[str, Callable[..., Any]] = {
    **_SHARED, "view": _reshape, "expand": _expand, "size": _size, "contiguous": lambda bb, nm, node: nm[node.args[0]],
    "float": _cast("float32"), "bool": _cast("bool"), "long": _cast("int64"), "int": _cast("int32"), "to": _to,
    "type_as": lambda bb, nm, node: E.cast(bb, _a(nm, node.args[0]), _a(nm, node.args[1]).dtype),
    "expand_as": lambda bb, nm, node: E.expand(bb, _a(nm, node.args[0]), _a(nm, node.args[1]).shape),
    "view_as": lambda bb, nm, node: bb.emit(op.reshape(_a(nm, node.args[0]), _a(nm, node.args[1]).shape)),
    "dim": lambda bb, nm, node: _a(nm, node.args[0]).ndim,
}


def _module_map() -> dict[type, Callable[..., Expr]]:
    from torch import nn

    def p(t: Any) -> Any:
        return None if t is None else E.to_const(t)

    def act(graph_op: Callable[..., Any]) -> Callable[..., Expr]:
        return lambda bb, nm, node, m: bb.emit(graph_op(nm[node.args[0]]))

    def batch_norm(bb: BlockBuilder, nm: dict, node: Any, m: Any) -> Expr:
        if m.training or m.running_mean is None:
            raise GraphError(f"BatchNorm2d {node.target!r} is in training mode or has no running "
                             "statistics; call model.eval() before tracing")
        return E.batch_norm(bb, nm[node.args[0]], p(m.weight), p(m.bias), p(m.running_mean),
                            p(m.running_var), m.eps)

    def conv2d(bb: BlockBuilder, nm: dict, node: Any, m: Any) -> Expr:
        if m.padding_mode != "zeros":
            raise GraphError(f"Conv2d(padding_mode={m.padding_mode!r}) is not supported (only 'zeros')")
        return E.conv2d(bb, nm[node.args[0]], p(m.weight), p(m.bias), m.stride, m.padding, m.dilation, m.groups)

    def embedding(bb: BlockBuilder, nm: dict, node: Any, m: Any) -> Expr:
        if m.max_norm is not None:
            raise GraphError("Embedding(max_norm=...) is not supported")
        return E.embedding(bb, p(m.weight), nm[node.args[0]])

    return {
        nn.Linear: lambda bb, nm, node, m: E.linear(bb, nm[node.args[0]], p(m.weight), p(m.bias)),
        nn.ReLU: act(op.relu), nn.Sigmoid: act(op.sigmoid), nn.Tanh: act(op.tanh), nn.SiLU: act(op.nn.silu),
        nn.GELU: lambda bb, nm, node, m: E.gelu(bb, nm[node.args[0]], m.approximate),
        nn.ReLU6: lambda bb, nm, node, m: _clip(bb, nm[node.args[0]], 0.0, 6.0),
        nn.Hardtanh: lambda bb, nm, node, m: _clip(bb, nm[node.args[0]], m.min_val, m.max_val),
        nn.Softmax: lambda bb, nm, node, m: E.softmax(bb, nm[node.args[0]], m.dim),
        nn.Flatten: lambda bb, nm, node, m: E.flatten(bb, nm[node.args[0]], m.start_dim, m.end_dim),
        nn.Conv2d: conv2d,
        nn.MaxPool2d: lambda bb, nm, node, m: _max_pool(bb, nm[node.args[0]], m.kernel_size, m.stride, m.padding,
                                                        m.dilation, m.ceil_mode, m.return_indices),
        nn.AvgPool2d: lambda bb, nm, node, m: E.avg_pool2d(bb, nm[node.args[0]], m.kernel_size, m.stride, m.padding,
                                                           m.ceil_mode, m.count_include_pad, m.divisor_override),
        nn.AdaptiveAvgPool2d: lambda bb, nm, node, m: E.adaptive_avg_pool2d(bb, nm[node.args[0]], m.output_size),
        nn.BatchNorm2d: batch_norm,
        nn.LayerNorm: lambda bb, nm, node, m: E.layer_norm(bb, nm[node.args[0]], m.normalized_shape,
                                                           p(m.weight), p(m.bias), m.eps),
        nn.Embedding: embedding,
        nn.Identity: lambda bb, nm, node, m: nm[node.args[0]],
        nn.Dropout: lambda bb, nm, node, m: nm[node.args[0]],
    }


class _Defaults:
    """The default maps, built on first use (they need torch)."""

    functions: dict | None = None
    modules: dict | None = None


def DEFAULT_FUNCTION_MAP() -> dict[Any, Callable[..., Expr]]:  # noqa: N802 (a table, built lazily)
    """The default ``call_function`` map (torch function -> rule)."""
    if _Defaults.functions is None:
        _Defaults.functions = _function_map()
    return dict(_Defaults.functions)


def DEFAULT_MODULE_MAP() -> dict[type, Callable[..., Expr]]:  # noqa: N802
    """The default ``call_module`` map (module type -> rule)."""
    if _Defaults.modules is None:
        _Defaults.modules = _module_map()
    return dict(_Defaults.modules)


def fetch_attr(fx_mod: Any, target: str) -> Any:
    """``fx_mod.<target>`` through dotted names (the course's helper)."""
    attr = fx_mod
    atoms = target.split(".")
    for i, atom in enumerate(atoms):
        if not hasattr(attr, atom):
            raise GraphError(f"from_fx: node references nonexistent attribute {'.'.join(atoms[:i + 1])!r}")
        attr = getattr(attr, atom)
    return attr


def _describe(node: Any) -> str:
    target = node.target if isinstance(node.target, str) else getattr(node.target, "__name__", repr(node.target))
    return f"node {node.name!r} ({node.op} {target})"


def _fold(node: Any, node_map: dict) -> tuple[bool, Any]:
    """``(True, value)`` when ``node`` (a function or method call) has only Python values and
    constants as inputs: torch evaluates it (a tensor result becomes a constant)."""
    import torch

    def value(v: Any) -> Any:
        if isinstance(v, Constant):
            return torch.from_numpy(v.data.copy())
        if isinstance(v, (list, tuple)):
            return type(v)(value(x) for x in v)
        if isinstance(v, slice):
            return slice(value(v.start), value(v.stop), value(v.step))
        return v

    def plain(v: Any) -> bool:
        if isinstance(v, (list, tuple)):
            return all(plain(x) for x in v)
        if isinstance(v, slice):
            return plain(v.start) and plain(v.stop) and plain(v.step)
        return not isinstance(v, Expr) or isinstance(v, Constant)

    args, kw = _args(node_map, node)
    if not plain(args) or not plain(list(kw.values())) or (node.op == "call_method" and not args):
        return False, None
    args, kw = value(args), value(kw)
    try:
        with torch.no_grad():
            out = node.target(*args, **kw) if node.op == "call_function" else getattr(args[0], node.target)(
                *args[1:], **kw)
    except Exception as exc:  # noqa: BLE001 - torch's own error, reported with the node
        raise GraphError(f"evaluating it on constants failed: {type(exc).__name__}: {exc}") from exc
    if isinstance(out, torch.Tensor):
        return True, E.to_const(out)
    if isinstance(out, (list, tuple)) and any(isinstance(o, torch.Tensor) for o in out):
        return True, type(out)(E.to_const(o) if isinstance(o, torch.Tensor) else o for o in out)
    return True, tuple(out) if isinstance(out, torch.Size) else out


def _translate(bb: BlockBuilder, node: Any, node_map: dict, fx_mod: Any, fmap: dict, mmap: dict,
               modules: dict) -> Any:
    if node.op == "get_attr":
        return E.to_const(fetch_attr(fx_mod, node.target))
    if node.op == "call_function":
        rule = fmap.get(node.target)
    elif node.op == "call_method":
        rule = fmap.get(node.target, DEFAULT_METHOD_MAP.get(node.target))
    elif node.op == "call_module":
        module = modules[node.target]
        rule = mmap.get(type(module))
        if rule is not None:
            return rule(bb, node_map, node, module)
    else:
        raise GraphError(f"from_fx: {_describe(node)} has an unknown fx op kind")
    if node.op != "call_module":
        folded, value = _fold(node, node_map)
        if folded:
            return value
    if rule is None:
        what = "module type " + type(modules[node.target]).__name__ if node.op == "call_module" else "op"
        raise GraphError(f"from_fx: {_describe(node)}: no translation for this {what}; add it to "
                         f"{'call_module_map' if node.op == 'call_module' else 'call_function_map'}")
    return rule(bb, node_map, node)


def from_fx(fx_module: Any, input_shapes: Sequence[Sequence[int | str]],
            call_function_map: dict | None = None, call_module_map: dict | None = None,
            *, dtype: str | Sequence[str] = "float32"):
    """Translate a ``torch.fx.GraphModule`` into a graph module with function ``main``.

    Args:
        fx_module: ``torch.fx.symbolic_trace(model)`` (call ``model.eval()`` first).
        input_shapes: one shape per ``placeholder`` node, in order.
        call_function_map: extra/overriding rules ``target -> fn(bb, node_map, node)``;
            a method name (``"view"``) as key translates ``call_method`` nodes.
        call_module_map: extra/overriding rules ``module type -> fn(bb, node_map, node, module)``.
        dtype: the inputs' dtype, or one per input (``["int64", "bool"]``).

    Returns:
        An :class:`mlc_mlir.Module` (parameters bound as constants).

    Raises:
        GraphError: a node without a translation (naming the node and its op), a missing
            input shape, or a rule that fails (the message names the node).
    """
    fmap = {**DEFAULT_FUNCTION_MAP(), **(call_function_map or {})}
    mmap = {**DEFAULT_MODULE_MAP(), **(call_module_map or {})}
    modules = dict(fx_module.named_modules())
    placeholders = [n for n in fx_module.graph.nodes if n.op == "placeholder"]
    if len(input_shapes) != len(placeholders):
        raise GraphError(f"from_fx: the graph has {len(placeholders)} inputs "
                         f"({', '.join(n.name for n in placeholders)}), input_shapes has {len(input_shapes)}")
    dtypes = [dtype] * len(placeholders) if isinstance(dtype, str) else list(dtype)
    bb = BlockBuilder()
    node_map: dict[Any, Any] = {}
    fn_inputs: list[Var] = []
    outputs: list[Expr] = []
    with bb.function("main"):
        with bb.dataflow():
            for node in fx_module.graph.nodes:
                if node.op == "placeholder":
                    var = Var(node.target, input_shapes[len(fn_inputs)], dtypes[len(fn_inputs)])
                    fn_inputs.append(var)
                    node_map[node] = var
                elif node.op == "output":
                    result = _a(node_map, node.args[0])
                    results = list(result) if isinstance(result, (list, tuple)) else [result]
                    outputs = [bb.emit_output(r) for r in results]
                else:
                    try:
                        value = _translate(bb, node, node_map, fx_module, fmap, mmap, modules)
                    except MlcError as exc:
                        if _describe(node) in str(exc):
                            raise
                        raise GraphError(f"from_fx: {_describe(node)}: {exc}") from exc
                    node_map[node] = E.emit(bb, value) if isinstance(value, Expr) else value
        bb.emit_func_output(outputs[0] if len(outputs) == 1 else outputs, fn_inputs)
    return bb.get()
