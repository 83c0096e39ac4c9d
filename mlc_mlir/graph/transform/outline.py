"""Graph subfunctions: outline a group of ops into a primitive function, inline calls back.

Fusion (``FuseDenseAddPass``, ``FuseOps``) groups graph ops into a *primitive* graph
function (course ch.7, ``R.func_attr({"Primitive": 1})``) and calls it from the graph
with the upstream ``func.call``:

    func.func private @fused_matmul_add0(%x: tensor<1x64xf32> {mlc.name = "x"}, ...)
        -> tensor<1x128xf32> attributes {mlc.graph, mlc.primitive} {
      %lv0 = "mlc.matmul"(%x, %w) : ...
      %lv1 = "mlc.add"(%lv0, %b) : ...
      return %lv1 : tensor<1x128xf32>
    }
    func.func @main(...) attributes {mlc.graph} {
      ... %lv1 = func.call @fused_matmul_add0(%x, %w, %b) {mlc.shape = [...]} ...

``func.call`` is verified by MLIR itself (callee and types). A result with a symbolic
dimension carries ``mlc.shape`` like every graph op. :func:`inline_graph_calls` undoes
outlining (the graph build inlines every call of a graph function that FuseTIR did not
turn into a tensor program).
"""

from __future__ import annotations

from collections.abc import Sequence

from mlir import ir
from mlir.dialects import func

from ...irutil import symbol_ops
from ...errors import GraphError
from ..ir.analysis import PRIMITIVE_ATTR, arg_attr, fail, is_graph_function, type_shape, value_name, walk_ops
from ..builder.emit import CALL_SLOTS
from ...tensor_types import Shape, shape_attr, shape_from_attr

__all__ = ["outline_ops", "inline_graph_calls", "unique_symbol", "symbol_uses", "erase_unreferenced",
           "call_result_shape", "users"]


def users(value: ir.Value) -> list[ir.Operation]:
    """The distinct operations that use ``value``, in use order."""
    out: list[ir.Operation] = []
    for use in value.uses:
        owner = use.owner.operation if hasattr(use.owner, "operation") else use.owner
        if owner not in out:
            out.append(owner)
    return out


def unique_symbol(module: ir.Module, hint: str) -> str:
    """``hint``, or ``hint1``, ``hint2``... whichever no top-level op of ``module`` is named."""
    taken = set(symbol_ops(module, None))
    if hint not in taken:
        return hint
    i = 1
    while f"{hint}{i}" in taken:
        i += 1
    return f"{hint}{i}"


def call_result_shape(shapes: dict, op: ir.Operation, callee_shape: Shape, callee: ir.Operation) -> Shape:
    """The caller-side shape of a call result whose callee-side shape is ``callee_shape``.

    A callee symbol is renamed to the caller dimension of the argument that carries it.
    """
    block = callee.regions[0].blocks[0]
    callee_shapes = _arg_shapes(callee)
    rename: dict[str, int | str] = {}
    for arg, value in zip(block.arguments, op.operands):
        if value in shapes:
            for d_callee, d_caller in zip(callee_shapes[arg.arg_number], shapes[value][0]):
                if isinstance(d_callee, str):
                    rename.setdefault(d_callee, d_caller)
    return tuple(rename.get(d, d) if isinstance(d, str) else d for d in callee_shape)


def _arg_shapes(fop: ir.Operation) -> list[Shape]:
    out = []
    for i, arg in enumerate(fop.regions[0].blocks[0].arguments):
        attr = arg_attr(fop, i, "mlc.shape")
        out.append(shape_from_attr(attr, error=GraphError) if attr is not None else type_shape(arg.type, f"arg{i}"))
    return out


def _inputs(ops: Sequence[ir.Operation]) -> list[ir.Value]:
    """Operands of ``ops`` defined outside them, in first-use order."""
    inside = {r for o in ops for r in o.results}
    seen: list[ir.Value] = []
    for o in ops:
        for v in o.operands:
            if v not in inside and v not in seen:
                seen.append(v)
    return seen


def outline_ops(module: ir.Module, ops: Sequence[ir.Operation], name_hint: str,
                shapes: dict[ir.Value, tuple[Shape, str]], *, replace: bool = True,
                param_names: Sequence[str] | None = None) -> tuple[ir.Operation, ir.Operation]:
    """Copy ``ops`` into a new primitive function and call it in place of the last one.

    ``ops`` are in program order and only the last one's result may be used outside
    them. The function (private, ``mlc.graph``, ``mlc.primitive``) is inserted before the
    caller; its parameters are the values ``ops`` use from outside, in first-use order,
    named ``param_names`` or after the values (an unnamed one after its op). The
    ``func.call`` is created right before the last op and (with ``replace``) takes over
    its uses; the original ops are left in place for the caller to erase.

    Returns:
        (the new ``func.func``, the ``func.call``).

    Raises:
        GraphError: more than 16 inputs (call_tir slots), or an op whose result escapes.
    """
    root = ops[-1]
    for o in ops[:-1]:
        for r in o.results:
            escaping = [u for u in users(r) if u not in ops]
            if escaping:
                raise fail(o, f"cannot be outlined into @{name_hint}: its result is also used by "
                              f"'{escaping[0].name}' outside the group")
    inputs = _inputs(ops)
    if len(inputs) > CALL_SLOTS:
        raise fail(root, f"outlining {len(ops)} ops into @{name_hint} needs {len(inputs)} parameters; "
                         f"a call takes at most {CALL_SLOTS}")
    caller = _enclosing_function(root)
    name = unique_symbol(module, name_hint)
    names = _param_names(inputs, param_names)
    result = root.results[0]
    with ir.InsertionPoint(caller), ir.Location.name(name):
        fop = func.FuncOp(name, ([v.type for v in inputs], [result.type]), visibility="private")
    fop.attributes["mlc.graph"] = ir.UnitAttr.get()
    fop.attributes[PRIMITIVE_ATTR] = ir.UnitAttr.get()
    fop.arg_attrs = ir.ArrayAttr.get([ir.DictAttr.get(_param_attr(n, shapes.get(v))) for n, v in
                                      zip(names, inputs)])
    entry = fop.add_entry_block(arg_locs=[ir.Location.name(n) for n in names])
    mapping = dict(zip(inputs, entry.arguments))
    with ir.InsertionPoint(entry):
        for o in ops:
            new = o.clone().operation
            for old, repl in mapping.items():
                new.replace_uses_of_with(old, repl)
            for r_old, r_new in zip(o.results, new.results):
                mapping[r_old] = r_new
        func.ReturnOp([mapping[result]], loc=root.location)
    with ir.InsertionPoint(root), root.location:
        call = func.CallOp([result.type], ir.FlatSymbolRefAttr.get(name), inputs)
    shape = shapes.get(result)
    if shape is not None:
        shapes[call.results[0]] = shape
        if any(isinstance(d, str) for d in shape[0]):
            call.attributes["mlc.shape"] = shape_attr(shape[0])
    if replace:
        result.replace_all_uses_with(call.results[0])
    return fop.operation, call.operation


def _param_names(values: Sequence[ir.Value], given: Sequence[str] | None) -> list[str]:
    out: list[str] = []
    for i, v in enumerate(values):
        if given is not None and i < len(given):
            n = given[i]
        else:
            owner = v.owner
            kind = "p" if isinstance(owner, ir.Block) else owner.operation.name.split(".", 1)[1]
            n = value_name(v, kind)
        if not n.isidentifier():
            n = f"p{i}"
        base, k = n, 1
        while n in out:
            n, k = f"{base}{k}", k + 1
        out.append(n)
    return out


def _param_attr(name: str, shape: tuple[Shape, str] | None) -> dict[str, ir.Attribute]:
    attrs: dict[str, ir.Attribute] = {"mlc.name": ir.StringAttr.get(name)}
    if shape is not None and any(isinstance(d, str) for d in shape[0]) \
            and not any(isinstance(d, str) and d.startswith("?") for d in shape[0]):
        attrs["mlc.shape"] = shape_attr(shape[0])
    return attrs


def _enclosing_function(op: ir.Operation) -> ir.Operation:
    parent = op.parent
    while parent is not None and parent.operation.name != "func.func":
        parent = parent.operation.parent
    if parent is None:
        raise fail(op, "is not inside a func.func")
    return parent.operation


def symbol_uses(module: ir.Module) -> set[str]:
    """Names referenced by a ``callee`` attribute anywhere in ``module``."""
    used: set[str] = set()
    for top in module.body.operations:
        for o in walk_ops(top.operation):
            if "callee" in o.attributes and isinstance(o.attributes["callee"], ir.FlatSymbolRefAttr):
                used.add(ir.FlatSymbolRefAttr(o.attributes["callee"]).value)
    return used


def erase_unreferenced(module: ir.Module, names: set[str]) -> list[str]:
    """Erase the functions among ``names`` that no ``callee`` attribute refers to any more.

    Returns the erased names (repeated until stable: an erased function may have been
    the last caller of another one of ``names``).
    """
    erased: list[str] = []
    while True:
        used = symbol_uses(module)
        victims = {name: fop for name, fop in symbol_ops(module).items() if name in names and name not in used}
        if not victims:
            return erased
        for name, fop in victims.items():
            erased.append(name)
            fop.erase()


def _is_private(fop: ir.Operation) -> bool:
    return "sym_visibility" in fop.attributes and \
        ir.StringAttr(fop.attributes["sym_visibility"]).value == "private"


def _inline_call(call: ir.Operation, callee: ir.Operation) -> None:
    """Replace ``call`` by a copy of ``callee``'s body (its dataflow blocks flattened)."""
    tmp = callee.clone(ip=ir.InsertionPoint(call))
    block = tmp.regions[0].blocks[0]
    for arg, value in zip(block.arguments, call.operands):
        arg.replace_all_uses_with(value)
    ops = [o.operation for o in block.operations]
    ret = ops[-1]
    for o in ops[:-1]:
        o.move_before(call)
        if o.name == "mlc.dataflow":
            inner = [i.operation for i in o.regions[0].blocks[0].operations]
            for i in inner[:-2]:
                i.move_before(o)
            for r, v in zip(o.results, inner[-2].operands):
                r.replace_all_uses_with(v)
            o.erase()
    for r, v in zip(call.results, ret.operands):
        r.replace_all_uses_with(v)
    call.erase()
    tmp.erase()


def inline_graph_calls(module: ir.Module, *, max_depth: int = 32) -> int:
    """Inline every ``func.call`` of a graph function into its caller; erase unused private ones.

    Returns:
        The number of calls inlined.

    Raises:
        GraphError: graph functions that call each other recursively.
    """
    count = 0
    inlined: set[str] = set()
    for _ in range(max_depth):
        funcs = symbol_ops(module)
        calls = [o for fop in funcs.values() if is_graph_function(fop) for o in walk_ops(fop)
                 if o.name == "func.call" and ir.FlatSymbolRefAttr(o.attributes["callee"]).value in funcs
                 and is_graph_function(funcs[ir.FlatSymbolRefAttr(o.attributes["callee"]).value])]
        if not calls:
            erase_unreferenced(module, {n for n in inlined if _is_private(funcs[n])})
            return count
        for call in calls:
            name = ir.FlatSymbolRefAttr(call.attributes["callee"]).value
            _inline_call(call, funcs[name])
            inlined.add(name)
            count += 1
    raise GraphError(f"graph functions call each other more than {max_depth} levels deep "
                     "(recursion is not supported)")
