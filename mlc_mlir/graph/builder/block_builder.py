"""``BlockBuilder``: write graph functions in Python (course ch.5, ``relax.BlockBuilder``).

    bb = mlc.graph.BlockBuilder()
    x = mlc.graph.Var("x", (1, 64), "float32")
    with bb.function("main", params=[x]):
        with bb.dataflow():
            lv0 = bb.emit_te(te_linear, x, w0, b0)      # tensor program + call_tir
            lv1 = bb.emit(op.relu(lv0))                  # graph op
            gv = bb.emit_output(lv1)
        bb.emit_func_output(gv)
    mod = bb.get()

The builder records bindings and writes the ``func.func`` (``mlc.dataflow`` regions of
``mlc`` ops) when the function is finished, because its parameters may be given last
(``bb.emit_func_output(gv, params=[x])``). Tensor programs made by ``emit_te`` /
``call_te`` are added to the module at once. :func:`write_function` writes a function
read as its AST (:mod:`..ir.ast`) back the same way.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mlir import ir
from mlir.dialects import func

from ...context import mlc_context
from ...errors import GraphError
from ...ir import Function, GlobalVar, Module
from .emit import OUTPUT_SLOTS, Emitter, create_op, segment_sizes
from ...tensor_types import shape_attr, tensor_type
from ..ir.ast import SeqExpr
from ..ir.expr import Call, Expr, Var, bound_var, const
from .te_bridge import import_te_program

__all__ = ["BlockBuilder", "write_function"]

_SIDE_EFFECTING = ("alloc_tensor",)


@dataclass
class _Binding:
    var: Var
    expr: Expr


@dataclass
class _Dataflow:
    id: int
    bindings: list[_Binding] = field(default_factory=list)
    outputs: list[Var] = field(default_factory=list)


@dataclass
class _Function:
    name: str
    params: list[Var] | None
    items: list[_Binding | _Dataflow] = field(default_factory=list)
    output: list[Var] | None = None


class BlockBuilder:
    """Build graph functions (and the tensor programs they call) into one module.

    Args:
        mod: a module to add functions to (default: a new empty one).
    """

    def __init__(self, mod: Module | None = None):
        with mlc_context():
            self._module = mod if mod is not None else Module(ir.Module.create())
        self._func: _Function | None = None
        self._block: _Dataflow | None = None
        self._next_block = 0
        self._counters: dict[str, int] = {}

    # -- scopes ------------------------------------------------------------------------
    @contextlib.contextmanager
    def function(self, name: str, params: Sequence[Var] | None = None) -> Iterator[None]:
        """Scope of graph function ``name``; end it with :meth:`emit_func_output`.

        Args:
            name: the function's symbol name.
            params: its parameters (or give them to ``emit_func_output``).
        """
        if self._func is not None:
            raise GraphError(f"bb.function({name!r}) inside function {self._func.name!r}: functions "
                             "do not nest")
        if not isinstance(name, str) or not name.isidentifier():
            raise GraphError(f"bb.function: the name must be an identifier, got {name!r}")
        if name in self._module.functions:
            raise GraphError(f"bb.function({name!r}): the module already has a function named {name!r}")
        self._func = _Function(name, self._check_params(params, name) if params is not None else None)
        ok = False
        try:
            yield
            ok = True
        finally:
            fn, self._func, self._block = self._func, None, None
            if ok and fn.output is None:
                raise GraphError(f"function {name!r} ended without bb.emit_func_output(...)")

    @contextlib.contextmanager
    def dataflow(self) -> Iterator[None]:
        """Scope of a dataflow block: pure bindings whose results leave via :meth:`emit_output`."""
        fn = self._require_function("bb.dataflow()")
        if self._block is not None:
            raise GraphError("bb.dataflow() inside a dataflow block: dataflow blocks do not nest")
        if fn.output is not None:
            raise GraphError(f"bb.dataflow() after bb.emit_func_output in function {fn.name!r}")
        block = _Dataflow(self._next_block)
        self._next_block += 1
        self._block = block
        try:
            yield
        finally:
            self._block = None
        fn.items.append(block)

    # -- bindings ----------------------------------------------------------------------
    def emit(self, expr: Expr, name_hint: str = "") -> Var:
        """Bind ``expr`` to a new variable (``lv<N>`` in a dataflow block, ``gv<N>`` outside)."""
        fn = self._require_function("bb.emit")
        if not isinstance(expr, Expr):
            raise GraphError(f"bb.emit expects a graph expression (op call, Var, const), got "
                             f"{type(expr).__name__}")
        self._check_uses(expr, "bb.emit")
        if self._block is not None and isinstance(expr, Call) and expr.op in _SIDE_EFFECTING:
            raise GraphError(f"{expr.op} has side effects and cannot be emitted inside a dataflow block; "
                             "emit it outside bb.dataflow()")
        inside = self._block is not None
        var = bound_var(self._fresh(name_hint or ("lv" if inside else "gv")), expr.shape, expr.dtype,
                        kind="dataflow" if inside else "binding", value=expr,
                        block=self._block.id if inside else None)
        binding = _Binding(var, expr)
        if inside:
            self._block.bindings.append(binding)
        else:
            fn.items.append(binding)
        return var

    def emit_output(self, expr: Expr, name_hint: str = "") -> Var:
        """Make ``expr`` (usually a dataflow variable) visible after the dataflow block."""
        self._require_function("bb.emit_output")
        if self._block is None:
            raise GraphError("bb.emit_output must be called inside a dataflow block (with bb.dataflow():)")
        if not isinstance(expr, Expr):
            raise GraphError(f"bb.emit_output expects a graph expression, got {type(expr).__name__}")
        if not (isinstance(expr, Var) and expr.kind == "dataflow" and expr.block == self._block.id):
            expr = self.emit(expr)
        if len(self._block.outputs) >= OUTPUT_SLOTS:
            raise GraphError(f"a dataflow block has at most {OUTPUT_SLOTS} outputs (IRDL slots of mlc.output)")
        gv = bound_var(self._fresh(name_hint or "gv"), expr.shape, expr.dtype, kind="binding", value=expr)
        self._block.outputs.append(gv)
        return gv

    def emit_func_output(self, output: Expr | Sequence[Expr], params: Sequence[Var] | None = None) -> None:
        """End the function: it returns ``output`` (an expression or a tuple of them).

        Args:
            output: the returned value(s); not a dataflow variable (use ``emit_output``).
            params: the parameters, when not given to :meth:`function`.
        """
        fn = self._require_function("bb.emit_func_output")
        if self._block is not None:
            raise GraphError("bb.emit_func_output inside a dataflow block: call it after the "
                             "`with bb.dataflow():` block")
        if fn.output is not None:
            raise GraphError(f"bb.emit_func_output called twice in function {fn.name!r}")
        if params is not None and fn.params is not None:
            raise GraphError(f"function {fn.name!r}: params given both to bb.function and to "
                             "bb.emit_func_output")
        if params is not None:
            fn.params = self._check_params(params, fn.name)
        if fn.params is None:
            raise GraphError(f"function {fn.name!r} has no parameter list: pass params= to "
                             "bb.function or bb.emit_func_output")
        outs = [output] if isinstance(output, Expr) else list(output)
        if not outs:
            raise GraphError(f"function {fn.name!r} must return at least one value")
        results: list[Var] = []
        for o in outs:
            if not isinstance(o, Expr):
                raise GraphError(f"bb.emit_func_output: {o!r} is not a graph expression")
            if isinstance(o, Var) and o.kind == "dataflow":
                # TVM accepts the dataflow variable that bb.emit_output exposed (course ch.5)
                exposed = [gv for item in fn.items if isinstance(item, _Dataflow) for gv in item.outputs
                           if gv.value is o]
                if exposed:
                    results.append(exposed[0])
                    continue
                raise GraphError(f"bb.emit_func_output({o.name}): {o.name} is a dataflow variable; "
                                 "make it visible with bb.emit_output inside the dataflow block")
            results.append(o if isinstance(o, Var) else self.emit(o))
        fn.output = results
        self._materialize(fn)

    # -- tensor expressions ------------------------------------------------------------
    def call_te(self, te_func: Callable[..., Any], *args: Any, primfunc_name_hint: str | None = None,
                **kwargs: Any) -> Call:
        """Create the tensor program of ``te_func(*args)`` and return its ``call_tir`` (not emitted).

        Graph expressions among ``args``/``kwargs`` become ``te.placeholder`` inputs (a
        symbolic dimension stays symbolic); NumPy arrays (of rank >= 1) become constants of
        the graph first (``mlc.graph.const``), so weights can be passed as they are; other
        arguments are passed through unchanged.
        The program (``te.create_prim_func``) is added to the module, named after
        ``te_func`` (``te_matmul``, then ``te_matmul1``...).
        """
        self._require_function("bb.call_te")
        args = tuple(_as_graph_value(a) for a in args)
        kwargs = {k: _as_graph_value(v) for k, v in kwargs.items()}
        name = self._unique_func_name(primfunc_name_hint or getattr(te_func, "__name__", "te_func"))
        call_args, shape, dtype = import_te_program(self._module, name, te_func, args, kwargs)
        for a in call_args:
            self._check_uses(a, "bb.call_te")
        return Call("call_tir", call_args, {"callee": name}, shape, dtype)

    def emit_te(self, te_func: Callable[..., Any], *args: Any, **kwargs: Any) -> Var:
        """:meth:`call_te` and :meth:`emit` in one step (course ``bb.emit_te``)."""
        return self.emit(self.call_te(te_func, *args, **kwargs))

    def get(self) -> Module:
        """The module built so far (graph functions and tensor programs)."""
        if self._func is not None:
            raise GraphError(f"bb.get() inside function {self._func.name!r}: finish it first")
        return self._module

    def add_func(self, func: Module | Function, name: str) -> GlobalVar:
        """Copy ``func`` (a Function, or a module's single function) into the module as
        ``name`` (made unique); returns its :class:`~mlc_mlir.ir.GlobalVar`."""
        unique = self._unique_func_name(name)
        src = func.op if isinstance(func, Function) else func[func.functions[0]].op
        with mlc_context():
            new = src.clone(ip=ir.InsertionPoint(self._module.mlir_module.body))
            new.attributes["sym_name"] = ir.StringAttr.get(unique)
        return self._module.get_global_var(unique)

    def update_func(self, gv: str, func: Function) -> None:
        """Replace (or add) function ``gv`` of the module by a copy of ``func`` (course
        ``builder_.update_func``)."""
        if not isinstance(func, Function):
            raise GraphError(f"update_func({gv!r}) expects a Function, got {type(func).__name__}")
        with mlc_context():
            old = self._module[str(gv)].op if str(gv) in self._module.functions else None
            ip = ir.InsertionPoint(old) if old is not None else ir.InsertionPoint(self._module.mlir_module.body)
            new = func.op.clone(ip=ip)
            new.attributes["sym_name"] = ir.StringAttr.get(str(gv))
            if old is not None:
                old.erase()

    def normalize(self, expr: Expr) -> Expr:
        """``expr`` with its type known (graph expressions always carry shape and dtype)."""
        if not isinstance(expr, Expr):
            raise GraphError(f"normalize expects a graph expression, got {type(expr).__name__}")
        return expr

    @contextlib.contextmanager
    def _rewriting(self, what: str) -> Iterator[None]:
        """A function scope for passes that build replacement expressions (legalization)."""
        saved = self._func, self._block
        self._func, self._block = _Function(f"<{what}>", []), None
        try:
            yield
        finally:
            self._func, self._block = saved

    # -- helpers -----------------------------------------------------------------------
    def _require_function(self, what: str) -> _Function:
        if self._func is None:
            raise GraphError(f"{what} outside a function: use `with bb.function(name):` first")
        return self._func

    def _check_params(self, params: Sequence[Var], name: str) -> list[Var]:
        params = list(params)
        for p in params:
            if not isinstance(p, Var) or p.kind != "param":
                raise GraphError(f"function {name!r}: parameter {p!r} is not a Var made with "
                                 "mlc.graph.Var(name, shape, dtype)")
        names = [p.name for p in params]
        dup = {n for n in names if names.count(n) > 1}
        if dup:
            raise GraphError(f"function {name!r}: duplicate parameter name(s) {sorted(dup)}")
        return params

    def _check_uses(self, expr: Expr, what: str) -> None:
        stack = [expr]
        while stack:
            e = stack.pop()
            if isinstance(e, Var):
                if e.kind == "dataflow" and (self._block is None or e.block != self._block.id):
                    raise GraphError(f"{what}: {e.name} is a dataflow variable of another block; "
                                     "use the variable returned by bb.emit_output")
            elif isinstance(e, Call):
                stack.extend(e.args)

    def _fresh(self, hint: str) -> str:
        n = self._counters.get(hint, 0)
        self._counters[hint] = n + 1
        return f"{hint}{n}"

    def _unique_func_name(self, hint: str) -> str:
        names = set(self._module.functions)
        if hint not in names:
            return hint
        i = 1
        while f"{hint}{i}" in names:
            i += 1
        return f"{hint}{i}"

    def _materialize(self, fn: _Function) -> None:
        """Write ``fn`` as a ``func.func`` at the end of the module."""
        with mlc_context():
            in_types = [tensor_type(p.shape, p.dtype, error=GraphError) for p in fn.params]
            out_types = [tensor_type(v.shape, v.dtype, error=GraphError) for v in fn.output]
            with ir.InsertionPoint(self._module.mlir_module.body):
                fop = func.FuncOp(fn.name, (in_types, out_types))
            fop.attributes["mlc.graph"] = ir.UnitAttr.get()
            fop.arg_attrs = ir.ArrayAttr.get([ir.DictAttr.get(_param_attrs(p)) for p in fn.params])
            entry = fop.add_entry_block(arg_locs=[ir.Location.name(p.name) for p in fn.params])
            env = {id(p): arg for p, arg in zip(fn.params, entry.arguments)}
            emitter = Emitter(env, func_name=fn.name)
            with ir.InsertionPoint(entry):
                for item in fn.items:
                    if isinstance(item, _Binding):
                        emitter.bind(item.var, item.expr)
                    else:
                        _emit_dataflow(emitter, item)
                func.ReturnOp([emitter.value(v) for v in fn.output])


def write_function(module: Module, name: str, params: Sequence[Var], body: SeqExpr,
                   attrs: dict[str, ir.Attribute] | None = None) -> ir.Operation:
    """Write (params, body), a function read as its AST (:mod:`..ir.ast`, e.g. rewritten by a
    :class:`~mlc_mlir.graph.PyExprMutator`), as graph function ``name`` at the end of
    ``module`` through the builder's writer; returns the op."""
    fn = _Function(name, list(params))
    restore: list[tuple[Var, Expr]] = []
    for i, block in enumerate(body.blocks):
        if not block.is_dataflow:
            fn.items.extend(_Binding(b.var, b.value) for b in block.bindings)
            continue
        df = _Dataflow(i)
        for b in block.bindings:
            if b.var.kind == "dataflow":
                df.bindings.append(_Binding(b.var, b.value))
                continue
            value = b.value
            if not isinstance(value, Var):  # an output bound to a call: name the op after it
                inner = bound_var(b.var.name, value.shape, value.dtype, kind="dataflow", value=value, block=i)
                df.bindings.append(_Binding(inner, value))
                value = inner
            restore.append((b.var, b.var.value))
            b.var.value = value
            df.outputs.append(b.var)
        fn.items.append(df)
    outs = body.body if isinstance(body.body, tuple) else (body.body,)
    for o in outs:
        if not isinstance(o, Expr):
            raise GraphError(f"function {name!r} returns {o!r}, not a graph expression")
    fn.output = list(outs)
    bb = BlockBuilder(module)
    try:
        bb._materialize(fn)
    finally:
        for var, value in restore:
            var.value = value
    fop = module[name].op
    for key, val in (attrs or {}).items():
        fop.attributes[key] = val
    return fop


def _param_attrs(p: Var) -> dict[str, ir.Attribute]:
    attrs: dict[str, ir.Attribute] = {"mlc.name": ir.StringAttr.get(p.name)}
    if any(isinstance(d, str) for d in p.shape):
        attrs["mlc.shape"] = shape_attr(p.shape)
    return attrs


def _emit_dataflow(emitter: Emitter, block: _Dataflow) -> None:
    """``mlc.dataflow`` with the block's bindings, ``mlc.output`` and ``omp.terminator``."""
    types = [tensor_type(v.shape, v.dtype, error=GraphError) for v in block.outputs]
    loc = ir.Location.name(block.outputs[0].name) if block.outputs else ir.Location.unknown()
    df = ir.Operation.create("mlc.dataflow", results=types, operands=[],
                             attributes={"resultSegmentSizes": segment_sizes(len(types), OUTPUT_SLOTS,
                                                                              "dataflow outputs")},
                             regions=1, loc=loc)
    body = df.regions[0].blocks.append()
    before = set(emitter.env)
    with ir.InsertionPoint(body):
        for b in block.bindings:
            emitter.bind(b.var, b.expr)
        values = [emitter.value(v.value) for v in block.outputs]
        create_op("mlc.output", values, None,
                  {"operandSegmentSizes": segment_sizes(len(values), OUTPUT_SLOTS, "mlc.output")})
        ir.Operation.create("omp.terminator")
    # Values of the block are not visible after it: only its outputs are.
    for key in set(emitter.env) - before:
        del emitter.env[key]
    for v, r in zip(block.outputs, df.results):
        emitter.env[id(v)] = r


def _as_graph_value(value: Any) -> Any:
    """A NumPy array of rank >= 1 as a graph constant; anything else unchanged."""
    if isinstance(value, np.ndarray) and value.ndim >= 1:
        return const(value)
    return value
