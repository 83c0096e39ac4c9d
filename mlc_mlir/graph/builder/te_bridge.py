"""From graph expressions to a tensor program made with ``te`` (``emit_te`` / ``call_te``).

Each graph expression argument becomes a ``te.placeholder`` of its shape (a symbolic
dimension stays the same symbolic size, by name) and dtype; the te function runs on
them; ``te.create_prim_func([inputs..., output])`` makes the tensor program, which is
copied into the module.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mlir import ir

from ... import te
from ...context import mlc_context
from ...errors import GraphError, MlcError
from ...ir import Module
from ...te.tensor import shape_names
from ...tensor_types import Shape
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
    return call_args, shape_names(out.shape), out.dtype


def _fname(fn: Any) -> str:
    return getattr(fn, "__name__", repr(fn))
