"""``te.create_prim_func``: tensor expressions to one tensor program (``func.func``).

The function has the form of docs/conventions.md: tensor arguments in the listed order
(placeholders are the inputs, computed tensors the outputs), one ``linalg`` op per compute
in dependency order carrying ``mlc.block``, ``tensor.empty`` for intermediates, and a
``return`` of the output tensors.
"""

from __future__ import annotations

from collections.abc import Sequence

from mlir import ir
from mlir.dialects import func, tensor

from ..context import diagnostics_text, mlc_context
from ..errors import TEError
from ..ir import Module
from ..tensor_types import BOOL, element_type, shape_attr, tensor_type
from .dtypes import storage_dtype
from .generic import Sizes, emit_compute
from .named import emit_named
from .plan import ComputePlan, plan_compute
from .expr import Var
from .tensor import Tensor, shape_names

__all__ = ["create_prim_func", "BOOL_ATTR"]

BOOL_ATTR = "mlc.bool"
"""Argument attribute of a ``tensor<...xi8>`` argument holding bools (one byte each): the
build records its dtype as ``bool``, so callers pass NumPy bool arrays."""


def create_prim_func(args: Sequence[Tensor], name: str = "main") -> Module:
    """Build the tensor program whose arguments are ``args`` (inputs, then outputs).

    Example::

        A = te.placeholder((128, 128), "float32", name="A")
        B = te.placeholder((128, 128), "float32", name="B")
        k = te.reduce_axis((0, 128), "k")
        Y = te.compute((128, 128), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="Y")
        C = te.compute((128, 128), lambda i, j: te.max(Y[i, j], 0), name="C")
        mod = te.create_prim_func([A, B, C], name="mm_relu")

    gives ``func.func @mm_relu(%A, %B, %C) -> tensor<128x128xf32> attributes
    {mlc.prim_func}`` with ``Y`` in a ``tensor.empty`` (``linalg.fill`` +
    ``linalg.generic {mlc.block = "Y"}``) and ``linalg.generic {mlc.block = "C"}`` writing
    into ``%C``.

    Args:
        args: placeholders (the inputs), then computed tensors (the outputs). A computed
            tensor that others read may be listed too: it is then written into its argument.
        name: the function's name.

    Returns:
        A :class:`mlc_mlir.Module` holding the one function.

    Raises:
        TEError: a bad argument list, a placeholder that a compute reads but that is not
            listed, or a symbolic size that no argument's shape has.
    """
    args, outputs = _check_args(args, name)
    plans: dict[int, ComputePlan] = {}
    order = _dependency_order(outputs, {id(t) for t in args}, plans)
    blocks = _block_names(order)
    size_dims = _size_dims(args)
    for t in order:
        missing = sorted(plans[id(t)].symbols - size_dims.keys())
        if missing:
            raise TEError(f"create_prim_func: the symbolic size {missing[0]!r} of compute "
                          f"{t.name!r} is not a dimension of any argument; list a tensor with "
                          "that dimension among the arguments")
    with mlc_context():
        module = ir.Module.create()
        with ir.InsertionPoint(module.body):
            fn = _declare(name, args, outputs)
        entry = fn.add_entry_block()
        with ir.InsertionPoint(entry):
            values = {id(t): entry.arguments[k] for k, t in enumerate(args)}
            sizes = Sizes({s: (entry.arguments[a], d) for s, (a, d) in size_dims.items()})
            for t in order:
                if t.named is not None:  # an upstream named op computes it
                    values[id(t)] = emit_named(t, blocks[id(t)], values.get(id(t)), values, sizes)
                    continue
                if id(t) in values:
                    dest = values[id(t)]
                else:
                    dest = tensor.empty(sizes.mixed(t.shape), element_type(storage_dtype(t.dtype)))
                values[id(t)] = emit_compute(plans[id(t)], blocks[id(t)], dest, values, sizes)
            func.ReturnOp([values[id(t)] for t in outputs])
        try:
            module.operation.verify()
        except ir.MLIRError as exc:
            raise TEError(f"create_prim_func produced IR that does not verify (a bug in "
                          f"mlc_mlir.te):\n{diagnostics_text(exc)}\n{module}") from None
    return Module(module)


def _check_args(args: object, name: object) -> tuple[list[Tensor], list[Tensor]]:
    if not isinstance(name, str) or not name:
        raise TEError(f"create_prim_func: name must be a non-empty string, got {name!r}")
    if not isinstance(args, (list, tuple)) or not args:
        raise TEError(f"create_prim_func expects a non-empty list of tensors (inputs, then "
                      f"outputs), got {args!r}")
    for k, t in enumerate(args):
        if not isinstance(t, Tensor):
            raise TEError(f"create_prim_func: argument {k} is {type(t).__name__} {t!r}, not a "
                          "te tensor (te.placeholder or te.compute)")
        if any(t is u for u in args[:k]):
            raise TEError(f"create_prim_func: tensor {t.name!r} is listed twice")
    outputs = [t for t in args if not t.is_placeholder]
    if not outputs:
        raise TEError("create_prim_func: no output; list the computed tensors (te.compute) "
                      f"after the inputs, got only placeholders {[t.name for t in args]}")
    first = next(k for k, t in enumerate(args) if not t.is_placeholder)
    late = [t.name for t in args[first:] if t.is_placeholder]
    if late:
        raise TEError(f"create_prim_func: placeholder {late[0]!r} comes after the output "
                      f"{args[first].name!r}; list the inputs first, then the outputs")
    return list(args), outputs


def _dependency_order(outputs: list[Tensor], listed: set[int],
                      plans: dict[int, ComputePlan]) -> list[Tensor]:
    """The computes the outputs need, each after the computes it reads."""
    order: list[Tensor] = []

    def visit(t: Tensor, user: Tensor | None) -> None:
        if t.is_placeholder:
            if id(t) not in listed:
                raise TEError(f"create_prim_func: placeholder {t.name!r} is read by compute "
                              f"{user.name!r} but is not in the argument list")
            return
        if id(t) in plans:
            return
        plans[id(t)] = plan_compute(t)
        for dep in plans[id(t)].reads:
            visit(dep, t)
        order.append(t)

    for t in outputs:
        visit(t, None)
    return order


def _block_names(order: list[Tensor]) -> dict[int, str]:
    """Each compute's block name: its name, with ``_1``, ``_2``... when names repeat."""
    names: dict[int, str] = {}
    used: set[str] = set()
    for t in order:
        name, k = t.name, 0
        while name in used:
            k += 1
            name = f"{t.name}_{k}"
        used.add(name)
        names[id(t)] = name
    return names


def _size_dims(args: list[Tensor]) -> dict[str, tuple[int, int]]:
    """Symbol name -> (argument index, dimension) of its first occurrence in the arguments."""
    dims: dict[str, tuple[int, int]] = {}
    for a, t in enumerate(args):
        for d, size in enumerate(t.shape):
            if isinstance(size, Var):
                dims.setdefault(size.name, (a, d))
    return dims


def _declare(name: str, args: list[Tensor], outputs: list[Tensor]) -> func.FuncOp:
    types = [tensor_type(t.shape, storage_dtype(t.dtype)) for t in args]
    fn = func.FuncOp(name, ir.FunctionType.get(types, types[len(args) - len(outputs):]))
    fn.attributes["mlc.prim_func"] = ir.UnitAttr.get()
    fn.attributes["arg_attrs"] = ir.ArrayAttr.get([ir.DictAttr.get({
        "mlc.name": ir.StringAttr.get(t.name),
        "mlc.shape": shape_attr(shape_names(t.shape)),
        **({BOOL_ATTR: ir.UnitAttr.get()} if t.dtype == BOOL else {}),
    }) for t in args])
    return fn
