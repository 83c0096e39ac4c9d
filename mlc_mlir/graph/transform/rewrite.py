"""Pattern rewriting of graph functions (course ch.7, the ``EwiseFMARewriter``).

A pattern is a Python function on one op of the graph, run by MLIR's own greedy rewrite
driver (``mlir.rewrite.RewritePatternSet`` + ``apply_patterns_and_fold_greedily``):

    from mlc_mlir.graph import op, rewrite

    @rewrite.pattern("add")
    def ewise_fma(add):                          # add: the matched mlc.add
        mul = add.args[0]                        # its first operand (course lookup_binding)
        if mul.op != "multiply":
            return None                          # no match: leave the op alone
        return op.ewise_fma(mul.args[0], mul.args[1], add.args[1])

    mod = ewise_fma(mod)                         # or rewrite.apply_patterns(mod, [ewise_fma, ...])
    mod = mlc.graph.transform.remove_all_unused(mod)   # drop the now unused multiply

The function receives a :class:`Node` for the matched op's result: ``.op`` is the op's
name (``"add"``), ``.args`` its operands as nodes (a parameter's ``.op`` is None),
``.shape``/``.dtype``/``.attrs``/``.num_users``. It returns the replacement, any graph
expression built with :mod:`mlc_mlir.graph.ir.op` on nodes, or None for "no match" (the
driver's inverted convention, "None means rewritten", is handled here). A function
with a second parameter also gets a :class:`Rewriter`, whose :meth:`Rewriter.outline`
moves a group of ops into a primitive subfunction (``FuseDenseAddPass``). Patterns
apply to graph functions, not inside primitive (already fused) ones.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable, Sequence
from typing import Any

from mlir import ir
from mlir import rewrite as mlir_rewrite
from mlir.dialects import tensor

from ...context import mlc_context
from ...errors import GraphError
from ...ir import Module
from ..ir import op
from ..ir.analysis import (PURE_MLC_OPS, clone_module, func_name, graph_functions, is_primitive, op_attrs, value_name,
                           value_shapes)
from ..builder.emit import Emitter
from ...tensor_types import format_shape
from ..ir.expr import Call, Expr
from .outline import outline_ops, users

__all__ = ["Node", "Rewriter", "Pattern", "pattern", "apply_patterns", "ewise_fma", "unary_through_reshapes",
           "matmul_before_permute", "SINKABLE_UNARY"]


class _Scope:
    """What one callback sees: the module, the function, the matched op and its nodes."""

    def __init__(self, module: ir.Module, fop: ir.Operation, root: ir.Operation):
        self.module, self.fop, self.root = module, fop, root
        self.env: dict[int, ir.Value] = {}
        self._nodes: dict[ir.Value, Node] = {}
        self._shapes: dict | None = None
        self.created = False

    @property
    def shapes(self) -> dict:
        if self._shapes is None:
            self._shapes = value_shapes(self.fop)
        return self._shapes

    def node(self, value: ir.Value) -> Node:
        if value not in self._nodes:
            if value not in self.shapes:  # made during this callback
                self._shapes = None
            node = Node(self, value)
            self._nodes[value] = node
            self.env[id(node)] = value
        return self._nodes[value]


class Node(Expr):
    """A value of the graph function being rewritten: a parameter or an op's result.

    Use nodes as arguments of :mod:`mlc_mlir.graph.ir.op` calls to build the replacement.
    """

    def __init__(self, scope: _Scope, value: ir.Value):
        self._scope = scope
        self.mlir_value = value
        self.shape, self.dtype = scope.shapes[value]
        self.name = value_name(value, "v")

    @property
    def operation(self) -> ir.Operation | None:
        """The op that defines the value (None for a function parameter)."""
        owner = self.mlir_value.owner
        return None if isinstance(owner, ir.Block) else owner.operation

    @property
    def op(self) -> str | None:
        """The defining op's name: ``"matmul"`` for ``mlc.matmul``, the full name for other
        dialects (``"func.call"``), None for a parameter."""
        o = self.operation
        if o is None:
            return None
        return o.name[4:] if o.name.startswith("mlc.") else o.name

    @property
    def args(self) -> tuple[Node, ...]:
        """The defining op's operands (empty for a parameter)."""
        o = self.operation
        return () if o is None else tuple(self._scope.node(v) for v in o.operands)

    @property
    def attrs(self) -> dict[str, Any]:
        """The defining op's attributes as Python values (``axes``, ``axis``, ``callee``)."""
        o = self.operation
        if o is None:
            return {}
        attrs = op_attrs(o, self.shape)
        if "callee" in o.attributes:
            attr = o.attributes["callee"]
            attrs["callee"] = ir.FlatSymbolRefAttr(attr).value if isinstance(attr, ir.FlatSymbolRefAttr) \
                else ir.StringAttr(attr).value
        return attrs

    @property
    def num_users(self) -> int:
        """How many ops use the value (``mlc.output`` counts: a dataflow output has a user)."""
        return len(users(self.mlir_value))

    @property
    def block(self) -> ir.Block:
        """The block the value is defined in (compare two nodes' blocks: same dataflow block?)."""
        owner = self.mlir_value.owner
        return owner if isinstance(owner, ir.Block) else owner.operation.block

    def __repr__(self) -> str:
        what = "param" if self.op is None else self.op
        return f"Node({self.name}: {what}, {format_shape(self.shape)}, {self.dtype!r})"


class Rewriter:
    """Extra actions for a pattern function that takes a second parameter."""

    def __init__(self, scope: _Scope):
        self._scope = scope

    def outline(self, nodes: Sequence[Node], name: str, *, param_names: Sequence[str] | None = None) -> Node:
        """Move the ops of ``nodes`` into a new primitive function and return its call.

        ``nodes`` must include the matched op, be in its block, and only the matched op's
        result may be used outside the group. The function is named ``name`` (made unique)
        and marked ``mlc.primitive``; its parameters (the values the group uses from
        outside, in first-use order) are named ``param_names`` or after the values. The
        call is created before the matched op. Return
        the call node to replace the matched op; the other ops become unused (remove them
        with ``remove_all_unused``).

        Raises:
            GraphError: a node that is a parameter, outside the block, or used elsewhere.
        """
        scope = self._scope
        ops = []
        for n in nodes:
            if not isinstance(n, Node) or n.operation is None:
                raise GraphError(f"Rewriter.outline: {n!r} is not the result of an op")
            if n.block != scope.root.block:
                raise GraphError(f"Rewriter.outline: {n.name} is defined in another block than the "
                                 "matched op (fusion does not cross dataflow blocks)")
            if n.operation not in ops:
                ops.append(n.operation)
        if scope.root not in ops:
            raise GraphError("Rewriter.outline: the nodes must include the matched op")
        ops.sort(key=lambda o: sum(1 for p in ops if p.is_before_in_block(o)))
        if ops[-1] != scope.root:
            raise GraphError("Rewriter.outline: the matched op must come last (it is the group's output)")
        _, call = outline_ops(scope.module, ops, name, scope.shapes, replace=False, param_names=param_names)
        scope.created = True
        return scope.node(call.results[0])

    def emit(self, expr: Expr) -> Node:
        """Emit ``expr`` before the matched op now (to inspect it); returns its node."""
        value = _emit(self._scope, expr, named=False)
        self._scope.created = True
        return self._scope.node(value)


class Pattern:
    """A rewrite pattern: ``fn(node)`` or ``fn(node, rewriter)`` on each ``root`` op.

    Args:
        root: the op to match, ``"add"`` or ``"mlc.add"`` (any pure ``mlc`` op).
        fn: returns the replacement expression, or None when the op does not match.
        name: shown in errors (default: ``fn``'s name).
        benefit: MLIR pattern benefit (higher is tried first).
    """

    def __init__(self, root: str, fn: Callable[..., Any], *, name: str | None = None, benefit: int = 1):
        short = root[4:] if isinstance(root, str) and root.startswith("mlc.") else root
        if not isinstance(short, str) or short not in PURE_MLC_OPS:
            raise GraphError(f"rewrite pattern root must be a graph op name, got {root!r}; "
                             f"known: {', '.join(PURE_MLC_OPS)}")
        if not callable(fn):
            raise GraphError(f"rewrite pattern for {root!r}: {fn!r} is not callable")
        self.root = f"mlc.{short}"
        self.fn = fn
        self.name = name or getattr(fn, "__name__", "pattern")
        self.benefit = int(benefit)
        try:
            params = [p for p in inspect.signature(fn).parameters.values()
                      if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        except (TypeError, ValueError):
            params = []
        self.wants_rewriter = len(params) >= 2
        self.__doc__ = getattr(fn, "__doc__", None)

    def __call__(self, mod: Module) -> Module:
        """Apply this pattern alone: :func:`apply_patterns` ``(mod, [self])``."""
        return apply_patterns(mod, [self])

    def __repr__(self) -> str:
        return f"<rewrite.Pattern {self.name} on {self.root}>"


def pattern(root: str, *, name: str | None = None, benefit: int = 1) -> Callable[[Callable[..., Any]], Pattern]:
    """Decorator: make ``fn`` a :class:`Pattern` on ``root`` ops (see the module docstring)."""

    def wrap(fn: Callable[..., Any]) -> Pattern:
        return Pattern(root, fn, name=name, benefit=benefit)

    return wrap


def _emit(scope: _Scope, expr: Expr, *, named: bool = True) -> ir.Value:
    """Emit ``expr`` right before the matched op (named after it when ``named``)."""
    if isinstance(expr, Node):
        return expr.mlir_value
    loc = scope.root.location
    name = loc.name_str if named and loc.is_a_name() else None
    with ir.InsertionPoint(scope.root), loc:
        emitter = Emitter(scope.env, func_name=func_name(scope.fop))
        return emitter.call(expr, name=name) if isinstance(expr, Call) else emitter.value(expr)


class _State:
    def __init__(self, module: ir.Module):
        self.module = module
        self.fop: ir.Operation | None = None
        self.error: BaseException | None = None
        self.count = 0


def _callback(p: Pattern, state: _State) -> Callable[[Any, Any], bool | None]:
    def match_and_rewrite(op: Any, rw: mlir_rewrite.PatternRewriter) -> bool | None:
        if state.error is not None:
            return True
        operation = op.operation
        scope = _Scope(state.module, state.fop, operation)
        try:
            node = scope.node(operation.results[0])
            out = p.fn(node, Rewriter(scope)) if p.wants_rewriter else p.fn(node)
            if out is None or out is False or out is node:
                if scope.created:
                    raise GraphError(f"rewrite pattern {p.name}: created IR (outline/emit) but returned "
                                     f"{out!r}; return the replacement")
                return True  # no match (MLIR's inverted convention)
            if not isinstance(out, Expr):
                raise GraphError(f"rewrite pattern {p.name} returned {type(out).__name__}; return a graph "
                                 "expression (mlc.graph.op call or node) or None")
            if len(out.shape) != len(node.shape) or out.dtype != node.dtype or any(
                    isinstance(a, int) and isinstance(b, int) and a != b for a, b in zip(out.shape, node.shape)):
                raise GraphError(f"rewrite pattern {p.name} replaced {node.op} {format_shape(node.shape)} "
                                 f"{node.dtype} by a value of {format_shape(out.shape)} {out.dtype}")
            value = _emit(scope, out)
            old = operation.results[0].type
            if str(value.type) != str(old):
                with ir.InsertionPoint(operation), operation.location:
                    value = tensor.CastOp(old, value).result
            rw.replace_op(operation, [value])
            state.count += 1
            return None
        except BaseException as exc:  # noqa: BLE001 - must not unwind through the C++ driver
            state.error = exc
            return True

    return match_and_rewrite


def apply_patterns(mod: Module, patterns: Sequence[Pattern], *, max_iterations: int = 10) -> Module:
    """Apply ``patterns`` greedily to every graph function of a copy of ``mod``.

    Primitive (fused) functions are skipped. The driver repeats until no pattern
    matches (at most ``max_iterations`` sweeps).

    Returns:
        The rewritten copy; its ``rewrite_count`` attribute tells how many ops were replaced.

    Raises:
        GraphError: a pattern returned something that is not an expression, the rewriting
            did not converge, or a replacement is not a valid graph op (the op's error).
            An exception raised by a pattern function is re-raised as it is.
    """
    if not isinstance(mod, Module):
        raise GraphError(f"apply_patterns expects an mlc.Module, got {type(mod).__name__}")
    patterns = list(patterns)
    for p in patterns:
        if not isinstance(p, Pattern):
            raise GraphError(f"apply_patterns: {p!r} is not a rewrite.Pattern (use @rewrite.pattern)")
    work = clone_module(mod)
    state = _State(work.mlir_module)
    with mlc_context():
        config = mlir_rewrite.GreedyRewriteConfig()
        config.enable_folding = False
        config.use_top_down_traversal = True  # program order (fused_matmul_add0 is the first)
        config.max_iterations = max_iterations
        config.region_simplification_level = mlir_rewrite.GreedySimplifyRegionLevel.DISABLED
        for fop in graph_functions(work.mlir_module):
            if is_primitive(fop):
                continue
            state.fop = fop
            pset = mlir_rewrite.RewritePatternSet()
            for p in patterns:
                pset.add(p.root, _callback(p, state), p.benefit)
            try:
                mlir_rewrite.apply_patterns_and_fold_greedily(fop, pset.freeze(), config)
            except (ir.MLIRError, RuntimeError) as exc:
                if state.error is None:
                    raise GraphError(f"rewriting @{func_name(fop)} did not converge in {max_iterations} "
                                     f"iterations (a pattern keeps matching its own output?): {exc}") from None
            if state.error is not None:
                raise state.error
    work.rewrite_count = state.count
    return work


@pattern("add", name="ewise_fma")
def ewise_fma(add: Node) -> Expr | None:
    """``add(multiply(a, b), c)`` (either operand order) -> ``ewise_fma(a, b, c)`` (course ch.7).

    Only when ``a``, ``b``, ``c`` and the result have one shape (ewise_fma does not
    broadcast). The multiply stays, unused if the add was its only user: follow with
    ``remove_all_unused``.

    Before::

        %lv0 = "mlc.multiply"(%x, %y) : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
        %gv0 = "mlc.add"(%lv0, %y) : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>

    After::

        %lv0 = "mlc.multiply"(%x, %y) : ...
        %gv0 = "mlc.ewise_fma"(%x, %y, %y) : (...) -> tensor<3x4xf32>
    """
    for mul, c in ((add.args[0], add.args[1]), (add.args[1], add.args[0])):
        if mul.op == "multiply" and mul.block == add.block and \
                mul.args[0].shape == mul.args[1].shape == c.shape == add.shape:
            return op.ewise_fma(mul.args[0], mul.args[1], c)
    return None


#: the attribute-free (or scalar-attribute) elementwise ops :func:`unary_through_reshapes` moves
SINKABLE_UNARY = ("relu", "gelu", "gelu_tanh", "silu", "sigmoid", "tanh", "clip")


@pattern("reshape", name="unary_through_reshapes")
def unary_through_reshapes(back: Node) -> Expr | None:
    """``reshape(f(reshape(x, s)), shape(x))`` -> ``f(x)`` for an elementwise ``f`` of one
    operand (:data:`SINKABLE_UNARY`): the shape a linear layer on a 3-D input leaves
    around its activation (torch decomposes it as view -> addmm -> view), which stopped
    FuseOps at the reshape, so the activation ran as a kernel of its own over the whole
    result (GPT-2's ``fused_reshape_gelu_tanh_reshape``, 2.5% of the block at batch 8)
    instead of on the contraction's blocks. Only when ``f``'s result has no other user.

    Before::

        %lv1 = "mlc.reshape"(%lv0) {shape = [8, 128, 1024]} : (tensor<1024x1024xf32>) -> tensor<8x128x1024xf32>
        %lv2 = "mlc.relu"(%lv1) : (tensor<8x128x1024xf32>) -> tensor<8x128x1024xf32>
        %lv3 = "mlc.reshape"(%lv2) {shape = [1024, 1024]} : (...) -> tensor<1024x1024xf32>

    After::

        %lv3 = "mlc.relu"(%lv0) : (tensor<1024x1024xf32>) -> tensor<1024x1024xf32>
    """
    f = back.args[0]
    if f.op not in SINKABLE_UNARY or f.num_users != 1 or f.block != back.block:
        return None
    there = f.args[0]
    if there.op != "reshape" or there.block != back.block:
        return None
    x = there.args[0]
    if x.shape != back.shape or x.dtype != back.dtype:
        return None
    return Call(f.op, [x], dict(f.attrs), x.shape, f.dtype)  # elementwise: x's shape


@pattern("matmul", name="matmul_before_permute")
def matmul_before_permute(mm: Node) -> Expr | None:
    """``matmul(permute_dims(x, axes), w)`` -> ``permute_dims(matmul(x, w), axes)`` for a matrix
    ``w`` when ``axes`` keeps ``x``'s last dim last: the matmul acts on that dim alone, so the
    transpose of the other dims can follow it. ``nn.MultiheadAttention`` with
    ``batch_first=True`` turns its input seq-first before the packed q/k/v projection; fused
    into the matmul, that transpose made a batched matmul of 8 rows per batch, each batch
    streaming the whole weight (BERT d768 at batch 8, one thread: 90 ms, against 53 for the
    batch-first matmul and 1.3 for the transpose after it, fused with the bias add into the
    kernel that splits q, k and v). Only when the transpose has no other user.

    Before::

        %lv1 = "mlc.permute_dims"(%x) {axes = array<i64: 1, 0, 2>} : (tensor<8x128x768xf32>) -> tensor<128x8x768xf32>
        %lv2 = "mlc.matmul"(%lv1, %w) : (tensor<128x8x768xf32>, tensor<768x2304xf32>) -> tensor<128x8x2304xf32>

    After (static batch dims: the rows of the batch as one dim)::

        %lv0 = "mlc.reshape"(%x) {shape = [1024, 768]} : (tensor<8x128x768xf32>) -> tensor<1024x768xf32>
        %lv1 = "mlc.matmul"(%lv0, %w) : (tensor<1024x768xf32>, tensor<768x2304xf32>) -> tensor<1024x2304xf32>
        %lv2 = "mlc.reshape"(%lv1) {shape = [8, 128, 2304]} : (...) -> tensor<8x128x2304xf32>
        %lv3 = "mlc.permute_dims"(%lv2) {axes = array<i64: 1, 0, 2>} : (...) -> tensor<128x8x2304xf32>
    """
    t, w = mm.args[0], mm.args[1]
    if t.op != "permute_dims" or t.num_users != 1 or t.block != mm.block or len(w.shape) != 2:
        return None
    axes = tuple(int(a) for a in t.attrs["axes"])
    if len(axes) < 3 or axes[-1] != len(axes) - 1:
        return None
    x = t.args[0]
    lead = tuple(x.shape[:-1])
    if not all(isinstance(d, int) for d in lead):
        return op.permute_dims(op.matmul(x, w), axes)
    # the batch's rows as one dim: the reshapes are views (a lone reshape kernel is called as
    # a view of its input, reshape_view.py), and the contraction's rows tile without a
    # partial register tile per batch item (BERT d768's 8 x 128 rows at batch 8, one core,
    # 29.1 ms in the model as a batched product, 24.8 over 1024 rows)
    rows = math.prod(lead)
    flat = op.matmul(op.reshape(x, (rows, int(x.shape[-1]))), w)
    return op.permute_dims(op.reshape(flat, (*lead, int(w.shape[-1]))), axes)
