"""From graph expressions to a tensor program made with ``te`` (``emit_te`` / ``call_te``).

Each graph expression argument becomes a ``te.placeholder`` of its shape (a symbolic
dimension stays the same symbolic size, by name) and dtype; the te function runs on
them; ``te.create_prim_func([inputs..., output])`` makes the tensor program, which is
copied into the module. A bool tensor, one byte per element in te's program
(``tensor<...xi8>``, ``mlc.bool``), is ``tensor<...xi1>`` in the graph: the copy takes the
graph's type at its boundary, cast (``builtin.unrealized_conversion_cast``) to the bytes
inside, and is marked ``mlc.bool_boundary``; the build stores every bool of the graph as a
byte and drops the casts (:func:`mlc_mlir.compiler.abi.store_bools_as_bytes`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mlir import ir
from mlir.dialects import builtin

from ... import te
from ...compiler.abi import BOOL_BOUNDARY_ATTR
from ...context import mlc_context
from ...errors import GraphError, MlcError
from ...ir import Module
from ...te.lower import BOOL_ATTR
from ...te.tensor import shape_names
from ...tensor_types import BOOL, Shape, element_type
from ..ir.expr import Expr, Var

__all__ = ["import_te_program"]


def import_te_program(module: Module, name: str, te_func: Callable[..., Any], args: tuple[Any, ...],
                      kwargs: dict[str, Any]) -> tuple[list[Expr], Shape, str]:
    """Build ``te_func``'s tensor program into ``module`` as ``name``.

    Returns:
        The call arguments (the graph expressions, in placeholder order), the output shape
        and its dtype.

    Raises:
        GraphError: ``te_func`` does not return one te tensor, or te rejects the program
            (the te error is chained).
    """
    if not callable(te_func):
        raise GraphError(f"emit_te/call_te: {te_func!r} is not callable")
    placeholders: dict[int, Any] = {}
    call_args: list[Expr] = []

    def convert(value: Any, where: str) -> Any:
        if isinstance(value, Expr):
            key = id(value)
            if key not in placeholders:
                pname = value.name if isinstance(value, Var) else f"arg{len(call_args)}"
                placeholders[key] = te.placeholder(value.shape, value.dtype, name=pname)
                call_args.append(value)
            return placeholders[key]
        if isinstance(value, (list, tuple)) and any(isinstance(v, Expr) for v in value):
            raise GraphError(f"emit_te({_fname(te_func)}): {where} is a sequence of graph expressions; "
                             "pass each tensor as its own argument")
        return value

    te_args = [convert(a, f"argument {i}") for i, a in enumerate(args)]
    te_kwargs = {k: convert(v, f"keyword {k}") for k, v in kwargs.items()}
    try:
        out = te_func(*te_args, **te_kwargs)
    except MlcError as exc:
        raise GraphError(f"emit_te({_fname(te_func)}): {exc}") from exc
    if isinstance(out, (list, tuple)):
        if len(out) != 1:
            raise GraphError(f"emit_te({_fname(te_func)}) returned {len(out)} tensors; tensor programs "
                             "with several outputs are not supported by call_tir here")
        out = out[0]
    if not isinstance(out, te.Tensor):
        raise GraphError(f"emit_te({_fname(te_func)}) must return a te tensor, got {type(out).__name__}")
    if out.is_placeholder:
        raise GraphError(f"emit_te({_fname(te_func)}) returned its input {out.name}; it must compute a "
                         "new tensor (te.compute)")
    inputs = list(placeholders.values())
    try:
        prim = te.create_prim_func([*inputs, out], name=name)
    except MlcError as exc:
        raise GraphError(f"emit_te({_fname(te_func)}): te.create_prim_func failed: {exc}") from exc
    src_name = prim.functions[0] if name not in prim.functions else name
    with mlc_context():
        new = prim[src_name].op.clone(ip=ir.InsertionPoint(module.mlir_module.body))
        new.attributes["sym_name"] = ir.StringAttr.get(name)
        if BOOL in [t.dtype for t in inputs] + [out.dtype]:
            _bool_boundary(new.operation if hasattr(new, "operation") else new)
    return call_args, shape_names(out.shape), out.dtype


def _bool_boundary(fn: ir.Operation) -> None:
    """Type the bool arguments and result of ``fn`` ``tensor<...xi1>`` (the graph's bool),
    each cast to / from te's bytes inside; mark ``fn`` :data:`BOOL_BOUNDARY_ATTR`."""
    block = fn.regions[0].blocks[0]
    n = len(block.arguments)
    attrs = [ir.DictAttr(a) for a in ir.ArrayAttr(fn.attributes["arg_attrs"])]
    bits = element_type(BOOL)
    new_attrs = []
    with ir.InsertionPoint.at_block_begin(block), ir.Location.unknown():
        for k, arg in enumerate(block.arguments):
            d = {attrs[k][i].name: attrs[k][i].attr for i in range(len(attrs[k]))}
            if d.pop(BOOL_ATTR, None) is not None:
                byte_type = ir.RankedTensorType(arg.type)
                arg.set_type(ir.RankedTensorType.get(byte_type.shape, bits))
                cast = builtin.UnrealizedConversionCastOp([byte_type], [arg])
                arg.replace_all_uses_except(cast.result, cast.operation)
            new_attrs.append(ir.DictAttr.get(d))
    ret = block.operations[len(block.operations) - 1]
    results = []
    with ir.InsertionPoint(ret), ir.Location.unknown():
        for j, value in enumerate(ret.operands):
            param = block.arguments[n - len(ret.operands) + j].type
            if value.type != param:  # a bool output: its bytes back to the graph's i1
                ret.operands[j] = builtin.UnrealizedConversionCastOp([param], [value]).result
            results.append(param)
    fn.attributes["function_type"] = ir.TypeAttr.get(
        ir.FunctionType.get([a.type for a in block.arguments], results))
    fn.attributes["arg_attrs"] = ir.ArrayAttr.get(new_attrs)
    fn.attributes[BOOL_BOUNDARY_ATTR] = ir.UnitAttr.get()


def _fname(fn: Any) -> str:
    return getattr(fn, "__name__", repr(fn))
