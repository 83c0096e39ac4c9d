"""``mlc.Module``: an MLIR module of tensor programs and graph functions.

The course's ``IRModule``. It wraps a ``builtin.module`` living in the shared context
(:mod:`mlc_mlir.context`) and adds the course's conveniences: ``mod["name"]``,
``mod.functions``, ``mod.update_func``, ``mod.script()``.
"""

from __future__ import annotations

import re
from pathlib import Path

from mlir import ir

from ..context import diagnostics_text, mlc_context
from ..errors import MlcError, ParseError
from ..irutil import find_func, func_ops, sym_name, symbol_ops, to_attr, walk_ops
from ..parse_guard import MAX_NESTING, guarded_parse
from ..views import graph_view

__all__ = ["Module", "IRModule", "Function", "Op", "GlobalVar", "FunctionNames", "guarded_parse", "MAX_NESTING",
           "is_graph_function", "graph_functions"]



_OP_PREFIXES = ("relax.op.nn.", "relax.op.", "relax.nn.", "relax.", "mlc.")
_OP_ALIASES = {"call_dps_packed": "call_dps", "transpose": "permute_dims"}


class Op(str):
    """A graph op by name (the course's ``tvm.ir.Op``): ``Op.get("relax.add") == "add"``.

    It is the short op name as a string, so it compares equal to ``call.op`` of graph
    expressions (``call.op == Op.get("relax.nn.relu")``).
    """

    @classmethod
    def get(cls, name: str) -> Op:
        """The op called ``name`` (``"relax.add"``, ``"relax.nn.relu"``, ``"mlc.add"``, ``"add"``).

        Raises:
            MlcError: no graph op has that name.
        """
        if not isinstance(name, str):
            raise MlcError(f"Op.get expects an op name (str), got {name!r}")
        short = next((name[len(p):] for p in _OP_PREFIXES if name.startswith(p)), name)
        short = _OP_ALIASES.get(short, short)
        ops = graph_view().op_names
        if short not in ops and short != "alloc_tensor":
            raise MlcError(f"Op.get({name!r}): no graph op {short!r}; graph ops: {', '.join(ops)}")
        return cls(short)

    @property
    def name(self) -> str:
        return f"relax.{str(self)}"

    def __repr__(self) -> str:
        return f"Op({self.name})"


class GlobalVar(str):
    """A reference to a function of a module by name (the course's ``tvm.ir.GlobalVar``).

    A string (the function's name), so everything that takes a function name takes it.
    ``ret_shape`` / ``ret_dtype`` describe the function's result when known (graph
    functions), so ``relax.Call(gv, args)`` knows its type.
    """

    ret_shape: tuple | None = None
    ret_dtype: str | None = None

    @property
    def name_hint(self) -> str:
        return str(self)

    def __repr__(self) -> str:
        return f"I.GlobalVar({str(self)!r})"


class FunctionNames(list):
    """``mod.functions``: the function names (a list), plus the dict view of the course's
    ``mod.functions.items()`` (``GlobalVar`` -> function)."""

    def __init__(self, module: Module, names: list[str]):
        super().__init__(names)
        self._module = module

    def __reduce__(self):  # pickles / copies as a plain list of names
        return (list, (list(self),))

    def keys(self) -> list[GlobalVar]:
        return [self._module.get_global_var(n) for n in self]

    def values(self) -> list[Function]:
        return [self._module[n] for n in self]

    def items(self) -> list[tuple[GlobalVar, Function]]:
        return list(zip(self.keys(), self.values()))


class Function:
    """A ``func.func`` of a :class:`Module` (a tensor program or a graph function)."""

    def __init__(self, module: Module, op: ir.Operation):
        self._module = module
        self.op = op

    @property
    def name(self) -> str:
        return sym_name(self.op)

    @property
    def module(self) -> Module:
        return self._module

    @property
    def function_type(self) -> ir.FunctionType:
        return ir.FunctionType(ir.TypeAttr(self.op.attributes["function_type"]).value)

    def script(self) -> str:
        return str(self.op)

    def show(self) -> None:
        print(self.script())

    def with_attr(self, attrs: dict[str, object] | str, value: object = None) -> Function:
        """A copy of this function, in a module of its own, with attributes set (course
        ``func.with_attr("global_symbol", "main")``; see :meth:`Module.with_attr`)."""
        mod = Module.from_expr(self).with_attr(attrs, value)
        return mod[mod.functions[0]]

    def __str__(self) -> str:
        return self.script()

    def __repr__(self) -> str:
        return f"<mlc.Function @{self.name}: {self.function_type}>"


class Module:
    """An MLIR ``builtin.module`` (the course's IRModule).

    Args:
        module: the wrapped ``mlir.ir.Module``; it must belong to the shared context.
    """

    def __init__(self, module: ir.Module | dict[str, Function | Module]):
        if isinstance(module, dict):
            module = _module_of_functions(module)
        elif not isinstance(module, ir.Module):
            raise MlcError(f"mlc.Module expects an mlir.ir.Module or a dict name -> function, "
                           f"got {type(module).__name__}")
        self.mlir_module = module

    @classmethod
    def from_expr(cls, func: Function) -> Module:
        """A new module holding a copy of ``func`` (the course's ``IRModule.from_expr``)."""
        if not isinstance(func, Function):
            raise MlcError(f"Module.from_expr expects a Function, got {type(func).__name__}")
        return cls({func.name: func})

    # -- construction ------------------------------------------------------------------
    #: :func:`guarded_parse`, reachable from tools that import only ``Module``.
    guarded_parse = staticmethod(guarded_parse)

    @classmethod
    def parse(cls, text: str, *, source_name: str = "<string>") -> Module:
        """Parse and verify MLIR text; raise :class:`ParseError` naming each diagnostic.

        Text that would crash the upstream parser is refused first (see :func:`guarded_parse`):
        a lone surrogate, brackets nested deeper than :data:`MAX_NESTING`.
        """
        if not isinstance(text, str):
            raise ParseError(f"Module.parse expects MLIR text (str), got {type(text).__name__}")
        with mlc_context():
            try:
                mod = guarded_parse(text, source_name=source_name, report=False)
            except ir.MLIRError as exc:
                detail = diagnostics_text(exc, text, source_name)
                raise ParseError(f"cannot parse {source_name}:\n{detail}") from None
        return cls(mod)

    @classmethod
    def from_file(cls, path: str | Path) -> Module:
        """Parse the MLIR file at ``path``."""
        path = Path(path)
        if not path.is_file():
            raise ParseError(f"no such MLIR file: {path}")
        try:
            text = path.read_bytes().decode("utf-8")
        except OSError as exc:
            raise ParseError(f"cannot read MLIR file {path}: {exc.strerror}") from None
        except UnicodeDecodeError as exc:
            raise ParseError(f"MLIR file {path} is not UTF-8 text: byte {exc.object[exc.start]:#04x} at offset "
                             f"{exc.start}") from None
        return cls.parse(text, source_name=str(path))

    def clone(self) -> Module:
        """A deep copy (transformable without touching this module); locations, hence
        value names such as ``%lv0`` and diagnostics' lines, are kept."""
        with mlc_context():
            # Op-level clone: locations kept, and bound weights (dense_resource blobs) shared
            # rather than re-parsed, so their names do not grow (const_1_1...) with each pass.
            new = ir.Module.create(loc=self.mlir_module.operation.location)
            old_attrs = self.mlir_module.operation.attributes
            for name in old_attrs:
                new.operation.attributes[name] = old_attrs[name]
            for op in self.mlir_module.body.operations:
                op.clone(ip=ir.InsertionPoint(new.body))
            return Module(new)

    # -- printing ----------------------------------------------------------------------
    def _asm(self) -> str:
        return self.mlir_module.operation.get_asm(large_elements_limit=None)

    def script(self, *, large_elements_limit: int | None = 16, large_resource_limit: int | None = 64) -> str:
        """The module as MLIR text for reading: value names from name locations (``%lv0``),
        constants above ``large_elements_limit`` elements and resource blobs (bound
        weights) above ``large_resource_limit`` bytes elided. ``str(mod)`` prints all."""
        text = self.mlir_module.operation.get_asm(large_elements_limit=large_elements_limit,
                                                  large_resource_limit=large_resource_limit,
                                                  use_name_loc_as_prefix=True)
        return re.sub(r"\n*\{-#\s*#-\}\s*$", "\n", text)  # no empty resource block once blobs are elided

    def show(self) -> None:
        """Print the module for reading: graph functions as Relax-like text (dataflow
        blocks, ``call_tir(@f, (x, w), out=(1, 128) float32)``, constants summarized),
        tensor programs as MLIR. A module without graph functions prints :meth:`script`."""
        if graph_functions(self.mlir_module):
            print(graph_view().module_text(self))
        else:
            print(self.script())

    def __str__(self) -> str:
        return self._asm()

    def __repr__(self) -> str:
        return f"<mlc.Module functions={self.functions}>"

    # -- functions ---------------------------------------------------------------------
    @property
    def operation(self) -> ir.Operation:
        return self.mlir_module.operation

    @property
    def functions(self) -> FunctionNames:
        """Names of the module's ``func.func`` operations, in order (``.items()`` gives
        ``(GlobalVar, Function)`` pairs, as the course's ``mod.functions.items()``)."""
        return FunctionNames(self, list(symbol_ops(self.mlir_module)))

    def get_global_var(self, name: str) -> GlobalVar:
        """The :class:`GlobalVar` of function ``name`` (course ``mod.get_global_var``)."""
        func = self[name]
        gv = GlobalVar(name)
        if func.function_type.results and len(func.function_type.results) == 1:
            gv.ret_shape, gv.ret_dtype = graph_view().result_info(func.op)
        return gv

    def __contains__(self, name: str) -> bool:
        return name in self.functions

    def __getitem__(self, name: str) -> Function:
        op = find_func(self.mlir_module, name)
        if op is not None:
            if is_graph_function(op):
                return graph_view().function_class(self, op)
            return Function(self, op)
        raise MlcError(f"module has no function named {name!r}; it has {self.functions}")

    def update_func(self, name: str, func: Function | Module) -> None:
        """Replace function ``name`` by ``func`` (the tuned-kernel swap of course ch.4).

        ``func`` is a :class:`Function` or a :class:`Module` that holds exactly one function
        (or one called ``name``). The new body keeps the name ``name``.
        """
        old = self[name].op
        if isinstance(func, Module):
            names = func.functions
            if name in names:
                func = func[name]
            elif len(names) == 1:
                func = func[names[0]]
            else:
                raise MlcError(f"update_func({name!r}): the module given has functions {names}; "
                               "pass one Function or a module with a single function")
        if not isinstance(func, Function):
            raise MlcError(f"update_func({name!r}) expects a Function or a Module, got {type(func).__name__}")
        if func.function_type != Function(self, old).function_type:
            raise MlcError(f"update_func({name!r}): type {func.function_type} differs from the "
                           f"existing {Function(self, old).function_type}")
        with mlc_context():
            new = func.op.clone(ip=ir.InsertionPoint(old))
            new.attributes["sym_name"] = ir.StringAttr.get(name)
            old.erase()

    def with_attr(self, attrs: dict[str, object] | str, value: object = None) -> Module:
        """A copy whose single function gets attributes (the course's ``PrimFunc.with_attr``).

        ``{"global_symbol": "mm_relu"}`` renames the function; any other key becomes a
        discardable attribute of the function (string, int, float or bool values).
        """
        items = {attrs: value} if isinstance(attrs, str) else dict(attrs)
        names = self.functions
        if len(names) != 1:
            raise MlcError(f"with_attr applies to a module with one function; this one has {names}")
        out = self.clone()
        op = out[names[0]].op
        with mlc_context():
            for key, val in items.items():
                if key == "Primitive":
                    if val:
                        op.attributes["mlc.primitive"] = ir.UnitAttr.get()
                    elif "mlc.primitive" in op.attributes:
                        del op.attributes["mlc.primitive"]
                elif key == "global_symbol":
                    if not isinstance(val, str) or not val:
                        raise MlcError(f"with_attr: global_symbol must be a non-empty string, got {val!r}")
                    op.attributes["sym_name"] = ir.StringAttr.get(val)
                elif isinstance(val, (bool, int, float, str)):
                    op.attributes[key] = to_attr(val)
                else:
                    raise MlcError(f"with_attr: unsupported value {val!r} for attribute {key!r}")
        return out

    def verify(self) -> None:
        """Verify the module; raise :class:`ParseError` with the diagnostics if invalid."""
        with mlc_context():
            try:
                self.mlir_module.operation.verify()
            except ir.MLIRError as exc:
                raise ParseError(f"module does not verify:\n{diagnostics_text(exc)}") from None


def _module_of_functions(funcs: dict[str, Function | Module]) -> ir.Module:
    """A new ``builtin.module`` with a copy of each function, named by its key."""
    with mlc_context():
        mod = ir.Module.create()
        for name, func in funcs.items():
            if isinstance(func, Module):
                names = func.functions
                if len(names) != 1:
                    raise MlcError(f"mlc.Module({{{name!r}: ...}}): the module given has functions {names}; "
                                   "pass a Function or a module with one function")
                func = func[names[0]]
            if not isinstance(name, str) or not name or not isinstance(func, Function):
                raise MlcError(f"mlc.Module({{...}}) maps function names to Functions; got {name!r} -> "
                               f"{type(func).__name__}")
            new = func.op.clone(ip=ir.InsertionPoint(mod.body))
            new.attributes["sym_name"] = ir.StringAttr.get(name)
        return mod


#: the course's name of :class:`Module` (``tvm.IRModule``, ``tvm.ir.module.IRModule``)
IRModule = Module


def is_graph_function(fop: ir.Operation) -> bool:
    """Whether ``fop`` is a graph function (``mlc.graph`` attribute or ``mlc`` ops inside)."""
    if fop.name != "func.func":
        return False
    if "mlc.graph" in fop.attributes:
        return True
    return any(o.name.startswith("mlc.") for o in walk_ops(fop))


def graph_functions(module: ir.Module) -> list[ir.Operation]:
    """The graph functions of ``module``, in order."""
    return [op for op in func_ops(module) if is_graph_function(op)]
