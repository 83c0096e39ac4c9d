"""``PyExprMutator``: rewrite graph functions with a visitor (course ch.7).

    @mlc.graph.expr_functor.mutator
    class EwiseFMARewriter(mlc.graph.PyExprMutator):
        def visit_call_(self, call):
            call = self.visit_expr_post_order(call)
            if call.op != Op.get("relax.add"):
                return call
            value = self.lookup_binding(call.args[0])
            if not isinstance(value, mlc.graph.Call) or value.op != Op.get("relax.multiply"):
                return call
            return mlc.graph.Call(Op.get("relax.ewise_fma"), [*value.args, call.args[1]], None, None)

    updated_fn = EwiseFMARewriter().visit_expr(mod["main"])

``visit_expr(func)`` reads the graph function as its AST (:mod:`..ir.ast`), visits each
binding's value (``visit_call_`` for calls), binds the result to a new variable of the
same name and writes the new function into a module of its own (through the builder's
writer, :func:`.block_builder.write_function`): the result is a graph
:class:`~mlc_mlir.graph.Function` (``show()``, ``remove_all_unused``, ``update_func``).
``self.builder_`` is a :class:`~mlc_mlir.graph.BlockBuilder` usable inside the visit
(``call_te``, ``emit``, ``add_func``), whose module ``builder_.get()`` returns.
"""

from __future__ import annotations

from typing import Any

from mlir import ir

from ...context import mlc_context
from ...errors import GraphError
from ...ir import Module
from ..ir.analysis import PRIMITIVE_ATTR, walk_ops
from ..ir.ast import BindingBlock, DataflowBlock, SeqExpr, VarBinding
from ..ir.expr import Call, Constant, Expr, Var, bound_var
from ..ir.function import Function
from .block_builder import BlockBuilder, _Dataflow, _Function, write_function

__all__ = ["PyExprMutator", "mutator"]


def mutator(cls: type) -> type:
    """Class decorator of the course (``@relax.expr_functor.mutator``): checks that ``cls``
    is a :class:`PyExprMutator` and returns it."""
    if not (isinstance(cls, type) and issubclass(cls, PyExprMutator)):
        raise GraphError(f"@mutator applies to a subclass of PyExprMutator, got {cls!r}")
    return cls


class PyExprMutator:
    """Visit a graph function's bindings and rebuild it from what the visit returns.

    Args:
        mod: the module ``builder_`` starts from (default: an empty one, as in TVM).
    """

    def __init__(self, mod: Module | None = None):
        with mlc_context():
            start = mod.clone() if mod is not None else Module(ir.Module.create())
        self.builder_ = BlockBuilder(start)
        self._var_map: dict[int, Var] = {}

    # -- entry points ------------------------------------------------------------------
    def visit_expr(self, expr: Any) -> Any:
        """Visit ``expr``: a graph Function (returns the rewritten Function), a Call
        (``visit_call_``), a Var (its new variable) or a Constant."""
        if isinstance(expr, Function):
            return self._visit_function(expr)
        if isinstance(expr, Call):
            return self.visit_call_(expr)
        if isinstance(expr, Var):
            return self.visit_var_(expr)
        if isinstance(expr, Constant):
            return self.visit_constant_(expr)
        if isinstance(expr, tuple):
            return tuple(self.visit_expr(e) for e in expr)
        raise GraphError(f"visit_expr: cannot visit {type(expr).__name__} {expr!r}")

    def visit_expr_post_order(self, expr: Expr) -> Expr:
        """``expr`` with its arguments visited (a new Call when one of them changed)."""
        if not isinstance(expr, Call):
            return self.visit_expr(expr)
        args = [self.visit_expr(a) for a in expr.args]
        if all(a is b for a, b in zip(args, expr.args)):
            return expr
        return Call(expr.op, args, expr.attrs, expr.shape, expr.dtype)

    def visit_call_(self, call: Call) -> Expr:
        """Override to rewrite calls; the default visits the arguments."""
        return self.visit_expr_post_order(call)

    def visit_var_(self, var: Var) -> Expr:
        """The variable that replaced ``var`` in the function being built (or ``var``)."""
        return self._var_map.get(id(var), var)

    def visit_constant_(self, const: Constant) -> Expr:
        """Constants are kept."""
        return const

    def lookup_binding(self, var: Expr) -> Expr | None:
        """The value bound to ``var`` in the function being built, None for a parameter
        or a non-variable."""
        if not isinstance(var, Var) or var.kind == "param":
            return None
        return var.value

    # -- the function walk -------------------------------------------------------------
    def _remap(self, expr: Any) -> Any:
        """``expr`` with every old variable replaced by its new one."""
        if isinstance(expr, tuple):
            return tuple(self._remap(e) for e in expr)
        if isinstance(expr, Var):
            return self._var_map.get(id(expr), expr)
        if isinstance(expr, Call):
            args = [self._remap(a) for a in expr.args]
            if any(a is not b for a, b in zip(args, expr.args)):
                return Call(expr.op, args, expr.attrs, expr.shape, expr.dtype)
        return expr

    def _visit_function(self, func: Function) -> Function:
        params, body = func.params, func.body
        bb = self.builder_
        saved = bb._func, bb._block
        bb._func = _Function(f"<visit {func.name}>", list(params))
        blocks: list[BindingBlock] = []
        try:
            for block in body.blocks:
                blocks.append(self._visit_block(block))
        finally:
            bb._func, bb._block = saved
        new_body = SeqExpr(blocks, self._remap(body.body))
        with mlc_context():
            attrs = {PRIMITIVE_ATTR: ir.UnitAttr.get()} if func.attrs else None
            scratch = Module(ir.Module.create())
            fop = write_function(scratch, func.name, params, new_body, attrs)
            _declare_callees(scratch, fop)
        return scratch[func.name]

    def _visit_block(self, block: BindingBlock) -> BindingBlock:
        bb = self.builder_
        out = DataflowBlock() if block.is_dataflow else BindingBlock()
        scope = _Dataflow(bb._next_block) if block.is_dataflow else None
        bb._next_block += 1
        bb._block = scope
        for b in block.bindings:
            value = self._remap(self.visit_expr(b.value))
            if not isinstance(value, Expr):
                raise GraphError(f"visiting {b.var.name} returned {type(value).__name__}, not a graph expression")
            value = bb.normalize(value)
            emitted = scope.bindings if scope is not None else bb._func.items
            for e in list(emitted):  # bindings the visit emitted with builder_.emit
                out.bindings.append(VarBinding(e.var, e.expr))
            emitted.clear()
            var = bound_var(b.var.name, value.shape, value.dtype, kind=b.var.kind, value=value,
                            block=scope.id if scope is not None and b.var.kind == "dataflow" else None)
            self._var_map[id(b.var)] = var
            out.bindings.append(VarBinding(var, value))
        bb._block = None
        return out


def _declare_callees(module: Module, fop: ir.Operation) -> None:
    """Private declarations of the functions ``fop`` calls, so that its module verifies
    on its own (the bodies live in the mutator's ``builder_`` module)."""
    from mlir.dialects import func as func_d

    have = set(module.functions)
    body = module.mlir_module.body
    for op in walk_ops(fop):
        if op.name != "func.call":
            continue
        name = ir.FlatSymbolRefAttr(op.attributes["callee"]).value
        if name in have:
            continue
        have.add(name)
        with ir.InsertionPoint.at_block_begin(body), ir.Location.unknown():
            func_d.FuncOp(name, ([v.type for v in op.operands], [r.type for r in op.results]),
                          visibility="private")
