"""The graph AST (course ch.7): a graph function read back as Relax-style Python objects.

    func = mod["main"]                  # a graph Function
    func.params                         # [x, y]            (Var)
    func.body.blocks                    # [DataflowBlock]   (SeqExpr.blocks)
    block.bindings[0].var               # lv0               (Var)
    block.bindings[0].value             # multiply(x, y)    (Call: .op, .args)

The MLIR function stays the source of truth: :func:`lift` reads it into these objects,
the builder layer writes (params, SeqExpr) back into a ``func.func``
(:func:`mlc_mlir.graph.builder.block_builder.write_function`). ``mlc.constant`` values become inline
:class:`Constant` arguments (as in Relax), ``tensor.cast`` is transparent, a ``func.call``
of a graph function is a :class:`Call` whose ``op`` is a :class:`~mlc_mlir.ir.GlobalVar`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from mlir import ir

from ...context import mlc_context
from ...errors import GraphError
from ...ir import GlobalVar, Op
from .analysis import arg_attr, fail, op_attrs, value_name, value_shapes, walk_ops
from ...tensor_types import format_shape
from .expr import Call, Constant, Expr, Var, bound_var

__all__ = ["VarBinding", "BindingBlock", "DataflowBlock", "SeqExpr", "lift", "result_info"]


@dataclass(eq=False)
class VarBinding:
    """``var = value`` (``binding.var``, ``binding.value``)."""

    var: Var
    value: Expr

    def __repr__(self) -> str:
        return f"{self.var.name} = {self.value!r}"


@dataclass(eq=False)
class BindingBlock:
    """A sequence of bindings outside any dataflow block."""

    bindings: list[VarBinding] = field(default_factory=list)
    is_dataflow = False


@dataclass(eq=False)
class DataflowBlock(BindingBlock):
    """A dataflow block: its bindings; variables of kind ``"binding"`` are its outputs."""

    is_dataflow = True


@dataclass(eq=False)
class SeqExpr:
    """A function body: its binding ``blocks`` and the returned ``body`` (a Var or a tuple)."""

    blocks: list[BindingBlock]
    body: Expr | tuple[Expr, ...]


def _lifted_constant(op: ir.Operation, shape: tuple, dtype: str) -> Constant:
    c = Constant.__new__(Constant)
    c.shape, c.dtype, c.data = shape, dtype, None
    c.name = value_name(op.results[0], "") or None
    c._attr = op.attributes["value"]  # reused when written back: no new blob, no new name
    return c


def result_info(fop: ir.Operation) -> tuple[tuple | None, str | None]:
    """(shape, dtype) of the single result of function ``fop`` (symbolic dims kept)."""
    with mlc_context():
        ret = fop.regions[0].blocks[0].operations[len(fop.regions[0].blocks[0].operations) - 1]
        if ret.name != "func.return" or len(ret.operands) != 1:
            return None, None
        try:
            return value_shapes(fop)[ret.operands[0]]
        except (GraphError, KeyError):
            return None, None


class _Lifter:
    def __init__(self, fop: ir.Operation):
        self.fop = fop
        self.shapes = value_shapes(fop)
        self.env: dict[ir.Value, Expr] = {}
        self.block_id = 0
        self.used: set[str] = set()  # names taken: an unnamed op gets a fresh one
        self.named: set[str] = set()  # names given so far
        for o in walk_ops(fop):
            for r in o.results:
                name = value_name(r, "")
                if name:
                    self.used.add(name)

    def params(self) -> list[Var]:
        out = []
        for i, arg in enumerate(self.fop.regions[0].blocks[0].arguments):
            name = arg_attr(self.fop, i, "mlc.name")
            shape, dtype = self.shapes[arg]
            var = Var(ir.StringAttr(name).value if name is not None else f"arg{i}", shape, dtype)
            self.env[arg] = var
            out.append(var)
        return out

    def value(self, op: ir.Operation) -> Expr | None:
        """The expression of ``op``'s result, or None when it needs no binding."""
        res = op.results[0]
        shape, dtype = self.shapes[res]
        if op.name == "mlc.constant":
            self.env[res] = _lifted_constant(op, shape, dtype)
            return None
        if op.name == "tensor.cast":
            self.env[res] = self.env[op.operands[0]]
            return None
        args = [self.env[v] for v in op.operands]
        if op.name == "func.call":
            callee = GlobalVar(ir.FlatSymbolRefAttr(op.attributes["callee"]).value)
            callee.ret_shape, callee.ret_dtype = shape, dtype
            return Call(callee, args, {}, shape, dtype)
        if not op.name.startswith("mlc.") or len(op.results) != 1:
            raise fail(op, "has no graph AST form (only mlc ops, constants, casts and calls of graph "
                           "functions do)")
        attrs = op_attrs(op, shape)
        if "callee" in op.attributes:
            attr = op.attributes["callee"]
            attrs["callee"] = ir.FlatSymbolRefAttr(attr).value if isinstance(attr, ir.FlatSymbolRefAttr) \
                else ir.StringAttr(attr).value
        return Call(Op(op.name[4:]), args, attrs, shape, dtype)

    def _name(self, value: ir.Value, default: str) -> str:
        name = value_name(value, "")
        if name and name not in self.named:
            self.named.add(name)
            return name
        base = name or default.rstrip("0123456789") or "lv"
        i = 0
        while f"{base}{i}" in self.used:
            i += 1
        self.used.add(f"{base}{i}")
        self.named.add(f"{base}{i}")
        return f"{base}{i}"

    def bind(self, op: ir.Operation, kind: str, block: int | None, default: str) -> VarBinding | None:
        value = self.value(op)
        if value is None:
            return None
        var = bound_var(self._name(op.results[0], default), value.shape, value.dtype, kind=kind, value=value,
                        block=block)
        self.env[op.results[0]] = var
        return VarBinding(var, value)

    def dataflow(self, df: ir.Operation) -> DataflowBlock:
        block = DataflowBlock()
        bid, self.block_id = self.block_id, self.block_id + 1
        body = df.regions[0].blocks[0]
        out_op = next(o for o in body.operations if o.name == "mlc.output")
        collapsible = {v for v in out_op.operands if len(list(v.uses)) == 1 and not isinstance(v.owner, ir.Block)}
        by_value: dict[ir.Value, VarBinding] = {}
        for o in body.operations:
            if o.name in ("mlc.output", "omp.terminator"):
                continue
            # a value used only by mlc.output is bound as the block's output itself
            # (gv = op(...) directly, as Relax writes it): a Var, not a DataflowVar
            collapsed = len(o.results) > 0 and o.results[0] in collapsible
            b = self.bind(o, "binding" if collapsed else "dataflow", None if collapsed else bid,
                          f"lv{len(block.bindings)}")
            if b is not None:
                block.bindings.append(b)
                by_value[o.results[0]] = b
        df_name = df.location.name_str if df.location.is_a_name() else None
        for i, (v, r) in enumerate(zip(out_op.operands, df.results)):
            name = df_name if i == 0 and df_name else None
            b = by_value.get(v)
            if v in collapsible and b is not None:  # bound as a Var above
                b.var.name = name or b.var.name
                self.env[r] = b.var
                continue
            src = self.env[v]
            gv = bound_var(name or f"gv{i}", src.shape, src.dtype, kind="binding", value=src)
            block.bindings.append(VarBinding(gv, src))
            self.env[r] = gv
        return block

    def body(self) -> SeqExpr:
        blocks: list[BindingBlock] = []
        result: tuple[Expr, ...] = ()
        for o in self.fop.regions[0].blocks[0].operations:
            if o.name == "func.return":
                result = tuple(self.env[v] for v in o.operands)
            elif o.name == "mlc.dataflow":
                blocks.append(self.dataflow(o))
            else:
                if not blocks or blocks[-1].is_dataflow:
                    blocks.append(BindingBlock())
                b = self.bind(o, "binding", None, f"gv{len(blocks[-1].bindings)}")
                if b is not None:
                    blocks[-1].bindings.append(b)
        blocks = [b for b in blocks if b.bindings or b.is_dataflow]
        return SeqExpr(blocks, result[0] if len(result) == 1 else result)


def lift(fop: ir.Operation) -> tuple[list[Var], SeqExpr]:
    """Read graph function ``fop`` as (params, body).

    Raises:
        GraphError: an op that has no AST form (the message names it).
    """
    with mlc_context():
        lifter = _Lifter(fop)
        return lifter.params(), lifter.body()


def describe(expr: Expr) -> str:
    """A short text of ``expr`` for messages: a variable's name or the call's op and type."""
    if isinstance(expr, Var):
        return expr.name
    if isinstance(expr, Call):
        return f"{expr.op}(...) {format_shape(expr.shape)} {expr.dtype}"
    return repr(expr)

