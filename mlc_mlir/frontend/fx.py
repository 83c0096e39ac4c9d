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
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from typing import Any

from ..errors import GraphError, MlcError
from ..graph import BlockBuilder, Var, op
from ..graph.ir.expr import Expr
from . import emit as E

__all__ = ["from_fx", "DEFAULT_FUNCTION_MAP", "DEFAULT_METHOD_MAP", "DEFAULT_MODULE_MAP", "fetch_attr"]


def _a(node_map: dict, value: Any) -> Any:
    """An fx argument with nodes replaced by their graph values."""
    from torch import fx

    if isinstance(value, fx.Node):
        return node_map[value]
    if isinstance(value, (list, tuple)):
        return type(value)(_a(node_map, v) for v in value)
    return value


def _args(node_map: dict, node: Any) -> tuple[list, dict]:
    return [_a(node_map, a) for a in node.args], {k: _a(node_map, v) for k, v in node.kwargs.items()}


def _fn(graph_op: Callable[..., Any]) -> Callable[..., Expr]:
    def rule(bb: BlockBuilder, node_map: dict, node: Any) -> Expr:
        args, _ = _args(node_map, node)
        return bb.emit(graph_op(*args))

    return rule


def _shape_arg(args: list) -> tuple:
    return tuple(args[1]) if len(args) == 2 and isinstance(args[1], (list, tuple)) else tuple(args[1:])


def _reshape(bb: BlockBuilder, node_map: dict, node: Any) -> Expr:
    args, kw = _args(node_map, node)
    shape = kw.get("shape") or _shape_arg(args)
    return bb.emit(op.reshape(args[0], shape))


def _permute(bb: BlockBuilder, node_map: dict, node: Any) -> Expr:
    args, kw = _args(node_map, node)
    dims = kw.get("dims") or _shape_arg(args)
    return bb.emit(op.permute_dims(args[0], dims))


def _transpose(bb: BlockBuilder, node_map: dict, node: Any) -> Expr:
    args, _ = _args(node_map, node)
    return E.transpose(bb, args[0], int(args[1]), int(args[2]))


def _flatten(bb: BlockBuilder, node_map: dict, node: Any) -> Expr:
    args, kw = _args(node_map, node)
    start = args[1] if len(args) > 1 else kw.get("start_dim", 0)
    end = args[2] if len(args) > 2 else kw.get("end_dim", -1)
    return E.flatten(bb, args[0], start, end)


def _softmax(bb: BlockBuilder, node_map: dict, node: Any) -> Expr:
    args, kw = _args(node_map, node)
    return E.softmax(bb, args[0], args[1] if len(args) > 1 else kw.get("dim"))


def _linear(bb: BlockBuilder, node_map: dict, node: Any) -> Expr:
    args, kw = _args(node_map, node)
    bias = args[2] if len(args) > 2 else kw.get("bias")
    return E.linear(bb, args[0], args[1], bias)


def _identity(bb: BlockBuilder, node_map: dict, node: Any) -> Expr:
    return _a(node_map, node.args[0])


def _gelu(bb: BlockBuilder, node_map: dict, node: Any) -> Expr:
    args, kw = _args(node_map, node)
    if kw.get("approximate", "none") != "none":
        raise GraphError(f"gelu(approximate={kw['approximate']!r}) is not supported (only the exact form)")
    return bb.emit(op.gelu(args[0]))


def _function_map() -> dict[Any, Callable[..., Expr]]:
    import torch
    import torch.nn.functional as F

    binary = {op.add: (operator.add, torch.add), op.subtract: (operator.sub, torch.sub),
              op.multiply: (operator.mul, torch.mul), op.divide: (operator.truediv, torch.div),
              op.matmul: (operator.matmul, torch.matmul)}
    out: dict[Any, Callable[..., Expr]] = {t: _fn(g) for g, ts in binary.items() for t in ts}
    out.update({torch.relu: _fn(op.relu), F.relu: _fn(op.relu), torch.sigmoid: _fn(op.sigmoid),
                F.sigmoid: _fn(op.sigmoid), torch.tanh: _fn(op.tanh), F.tanh: _fn(op.tanh), F.gelu: _gelu,
                torch.reshape: _reshape, torch.permute: _permute, torch.transpose: _transpose,
                torch.flatten: _flatten, torch.softmax: _softmax, F.softmax: _softmax, F.linear: _linear})
    return out


#: method name (``x.view(...)``) -> rule
DEFAULT_METHOD_MAP: dict[str, Callable[..., Expr]] = {
    "view": _reshape, "reshape": _reshape, "permute": _permute, "transpose": _transpose,
    "flatten": _flatten, "softmax": _softmax, "relu": _fn(op.relu), "sigmoid": _fn(op.sigmoid),
    "tanh": _fn(op.tanh), "add": _fn(op.add), "sub": _fn(op.subtract), "mul": _fn(op.multiply),
    "div": _fn(op.divide), "matmul": _fn(op.matmul), "contiguous": _identity,
    "t": lambda bb, node_map, node: bb.emit(op.permute_dims(_a(node_map, node.args[0]))),
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

    def gelu(bb: BlockBuilder, nm: dict, node: Any, m: Any) -> Expr:
        if m.approximate != "none":
            raise GraphError(f"GELU(approximate={m.approximate!r}) is not supported (only the exact form)")
        return bb.emit(op.gelu(nm[node.args[0]]))

    return {
        nn.Linear: lambda bb, nm, node, m: E.linear(bb, nm[node.args[0]], p(m.weight), p(m.bias)),
        nn.ReLU: act(op.relu), nn.Sigmoid: act(op.sigmoid), nn.Tanh: act(op.tanh), nn.GELU: gelu,
        nn.Softmax: lambda bb, nm, node, m: E.softmax(bb, nm[node.args[0]], m.dim),
        nn.Flatten: lambda bb, nm, node, m: E.flatten(bb, nm[node.args[0]], m.start_dim, m.end_dim),
        nn.Conv2d: lambda bb, nm, node, m: E.conv2d(bb, nm[node.args[0]], p(m.weight), p(m.bias), m.stride,
                                                     m.padding, m.dilation, m.groups),
        nn.MaxPool2d: lambda bb, nm, node, m: E.max_pool2d(bb, nm[node.args[0]], m.kernel_size, m.stride,
                                                           m.padding, m.dilation, m.ceil_mode),
        nn.BatchNorm2d: batch_norm,
        nn.LayerNorm: lambda bb, nm, node, m: E.layer_norm(bb, nm[node.args[0]], m.normalized_shape,
                                                           p(m.weight), p(m.bias), m.eps),
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
    if rule is None:
        what = "module type " + type(modules[node.target]).__name__ if node.op == "call_module" else "op"
        raise GraphError(f"from_fx: {_describe(node)}: no translation for this {what}; add it to "
                         f"{'call_module_map' if node.op == 'call_module' else 'call_function_map'}")
    return rule(bb, node_map, node)


def from_fx(fx_module: Any, input_shapes: Sequence[Sequence[int | str]],
            call_function_map: dict | None = None, call_module_map: dict | None = None,
            *, dtype: str = "float32"):
    """Translate a ``torch.fx.GraphModule`` into a graph module with function ``main``.

    Args:
        fx_module: ``torch.fx.symbolic_trace(model)`` (call ``model.eval()`` first).
        input_shapes: one shape per ``placeholder`` node, in order.
        call_function_map: extra/overriding rules ``target -> fn(bb, node_map, node)``;
            a method name (``"view"``) as key translates ``call_method`` nodes.
        call_module_map: extra/overriding rules ``module type -> fn(bb, node_map, node, module)``.
        dtype: the inputs' dtype.

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
    bb = BlockBuilder()
    node_map: dict[Any, Any] = {}
    fn_inputs: list[Var] = []
    outputs: list[Expr] = []
    with bb.function("main"):
        with bb.dataflow():
            for node in fx_module.graph.nodes:
                if node.op == "placeholder":
                    var = Var(node.target, input_shapes[len(fn_inputs)], dtype)
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
