"""``from_exported_program``: ``torch.export`` programs to graph modules (PyTorch 2's way).

    ep = torch.export.export(model.eval(), (example_input,))
    mod = mlc.frontend.from_exported_program(ep)

The program is decomposed to core aten ops (``ep.run_decompositions()``), as torch-mlir
and IREE's importers do; its lifted parameters and buffers become constants, its user
inputs the parameters of ``main`` (shapes and dtypes from the example inputs).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..errors import GraphError, MlcError
from ..graph import BlockBuilder, Var, op
from ..graph.ir.expr import Expr, const
from ..tensor_types import normalize_dtype
from . import emit as E

__all__ = ["from_exported_program", "ATEN_MAP"]

Rule = Callable[[BlockBuilder, list, dict], Any]


def _binary(graph_op: Callable[..., Any]) -> Rule:
    def rule(bb: BlockBuilder, a: list, kw: dict) -> Any:
        if kw.get("alpha", 1) != 1:
            raise GraphError(f"alpha={kw['alpha']} is not supported")
        return bb.emit(graph_op(a[0], a[1]))

    return rule


def _unary(graph_op: Callable[..., Any]) -> Rule:
    return lambda bb, a, kw: bb.emit(graph_op(a[0]))


def _gelu(bb: BlockBuilder, a: list, kw: dict) -> Any:
    if kw.get("approximate", "none") != "none":
        raise GraphError(f"gelu(approximate={kw['approximate']!r}) is not supported (only the exact form)")
    return bb.emit(op.gelu(a[0]))


def _convolution(bb: BlockBuilder, a: list, kw: dict) -> Any:
    x, w, b, stride, padding, dilation, transposed, _, groups = a[:9]
    if transposed:
        raise GraphError("transposed convolution is not supported")
    return E.conv2d(bb, x, w, b, stride, padding, dilation, groups)


def _conv2d(bb: BlockBuilder, a: list, kw: dict) -> Any:
    """``aten.conv2d(x, w, b=None, stride=1, padding=0, dilation=1, groups=1)``."""
    defaults = [None, None, None, 1, 0, 1, 1]
    x, w, b, stride, padding, dilation, groups = [*a, *defaults[len(a):]]
    return E.conv2d(bb, x, w, b, stride, padding, dilation, groups)


def _max_pool(bb: BlockBuilder, a: list, kw: dict) -> Any:
    x, kernel = a[0], a[1]
    stride = a[2] if len(a) > 2 else []
    padding = a[3] if len(a) > 3 else 0
    dilation = a[4] if len(a) > 4 else 1
    ceil = a[5] if len(a) > 5 else False
    return (E.max_pool2d(bb, x, kernel, stride, padding, dilation, ceil), None)


def _batch_norm(bb: BlockBuilder, a: list, kw: dict) -> Any:
    x, w, b, mean, var, _, eps = a[:7]
    return (E.batch_norm(bb, x, w, b, mean, var, eps), None, None)


def _layer_norm(bb: BlockBuilder, a: list, kw: dict) -> Any:
    x, shape, w, b, eps = a[:5]
    return (E.layer_norm(bb, x, shape, w, b, eps), None, None)


def _addmm(bb: BlockBuilder, a: list, kw: dict) -> Any:
    if kw.get("beta", 1) != 1 or kw.get("alpha", 1) != 1:
        raise GraphError("addmm with alpha/beta other than 1 is not supported")
    return bb.emit(op.add(bb.emit(op.matmul(a[1], a[2])), a[0]))


def _softmax(bb: BlockBuilder, a: list, kw: dict) -> Any:
    return E.softmax(bb, a[0], a[1])


def _flatten(bb: BlockBuilder, a: list, kw: dict) -> Any:
    return E.flatten(bb, a[0], a[1] if len(a) > 1 else 0, a[2] if len(a) > 2 else -1)


def _linear(bb: BlockBuilder, a: list, kw: dict) -> Any:
    return E.linear(bb, a[0], a[1], a[2] if len(a) > 2 else None)


def _identity(bb: BlockBuilder, a: list, kw: dict) -> Any:
    return a[0]


#: aten op (overload packet name, ``aten.addmm.default`` -> ``"addmm"``) -> rule(bb, args, kwargs)
ATEN_MAP: dict[str, Rule] = {
    "add": _binary(op.add), "sub": _binary(op.subtract), "mul": _binary(op.multiply),
    "div": _binary(op.divide), "mm": _binary(op.matmul), "matmul": _binary(op.matmul),
    "addmm": _addmm, "linear": _linear,
    "relu": _unary(op.relu), "sigmoid": _unary(op.sigmoid), "tanh": _unary(op.tanh), "gelu": _gelu,
    "view": lambda bb, a, kw: bb.emit(op.reshape(a[0], tuple(a[1]))),
    "reshape": lambda bb, a, kw: bb.emit(op.reshape(a[0], tuple(a[1]))),
    "_unsafe_view": lambda bb, a, kw: bb.emit(op.reshape(a[0], tuple(a[1]))),
    "permute": lambda bb, a, kw: bb.emit(op.permute_dims(a[0], tuple(a[1]))),
    "t": lambda bb, a, kw: bb.emit(op.permute_dims(a[0])),
    "transpose": lambda bb, a, kw: E.transpose(bb, a[0], int(a[1]), int(a[2])),
    "flatten": _flatten, "_softmax": _softmax, "softmax": _softmax,
    "convolution": _convolution, "conv2d": _conv2d,
    "max_pool2d_with_indices": _max_pool,
    "max_pool2d": lambda bb, a, kw: _max_pool(bb, a, kw)[0],
    "_native_batch_norm_legit_no_training": _batch_norm,
    "native_layer_norm": _layer_norm,
    "clone": _identity, "alias": _identity, "detach": _identity, "dropout": _identity,
}


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


def _call(bb: BlockBuilder, node: Any, env: dict, aten_map: dict[str, Rule]) -> Any:
    import operator

    if node.target is operator.getitem:
        value = env[node.args[0]][node.args[1]]
        if value is None:
            raise GraphError(f"node {node.name!r} reads result {node.args[1]} of {node.args[0].name!r}, "
                             "which is not supported (only the first result of pooling/normalization)")
        return value
    name = _aten_name(node.target)
    rule = aten_map.get(name)
    if rule is None:
        raise GraphError(f"from_exported_program: node {node.name!r} calls {node.target}, which has no "
                         f"translation; supported aten ops: {', '.join(sorted(aten_map))}")
    args = [_arg(env, a) for a in node.args]
    kwargs = {k: _arg(env, v) for k, v in node.kwargs.items()}
    try:
        return rule(bb, args, kwargs)
    except MlcError as exc:
        raise GraphError(f"from_exported_program: node {node.name!r} ({node.target}): {exc}") from exc


def _state(ep: Any, node: Any) -> Any:
    sig = ep.graph_signature
    for table in (sig.inputs_to_parameters, sig.inputs_to_buffers,
                  getattr(sig, "inputs_to_lifted_tensor_constants", {})):
        if node.name in table:
            key = table[node.name]
            return ep.state_dict[key] if key in ep.state_dict else ep.constants[key]
    return None


def from_exported_program(exported_program: Any, *, aten_map: dict[str, Rule] | None = None):
    """Translate ``torch.export.export(model, args)`` into a graph module with function ``main``.

    Args:
        exported_program: a ``torch.export.ExportedProgram`` (export a model in ``eval()`` mode).
        aten_map: extra/overriding rules, aten op name (``"addmm"``) -> ``fn(bb, args, kwargs)``.

    Returns:
        An :class:`mlc_mlir.Module`; ``main`` takes the user inputs, in order.

    Raises:
        GraphError: an aten op without a translation (naming the node and the op).
    """
    try:
        from torch.export import ExportedProgram
    except ImportError as exc:  # pragma: no cover - torch missing
        raise GraphError("from_exported_program needs torch (pip install mlc-mlir[torch])") from exc
    if not isinstance(exported_program, ExportedProgram):
        raise GraphError(f"from_exported_program expects a torch.export.ExportedProgram, got "
                         f"{type(exported_program).__name__}")
    ep = exported_program.run_decompositions()
    rules = {**ATEN_MAP, **(aten_map or {})}
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
                        env[node] = const(tensor.detach().cpu().numpy())
                        continue
                    val = node.meta["val"]
                    var = Var(node.name, tuple(int(d) for d in val.shape),
                              normalize_dtype(str(val.dtype).replace("torch.", ""), allow_bool=True, error=GraphError))
                    inputs.append(var)
                    env[node] = var
                elif node.op == "call_function":
                    value = _call(bb, node, env, rules)
                    env[node] = E.emit(bb, value) if isinstance(value, Expr) else value
                elif node.op == "output":
                    result = _arg(env, node.args[0])
                    results = list(result) if isinstance(result, (list, tuple)) else [result]
                    outputs = [bb.emit_output(r) for r in results]
                else:
                    raise GraphError(f"from_exported_program: node {node.name!r} has op kind {node.op!r}, "
                                     "which is not supported")
        bb.emit_func_output(outputs[0] if len(outputs) == 1 else outputs, inputs)
    return bb.get()
