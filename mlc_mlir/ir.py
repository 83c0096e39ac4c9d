"""``mlc.Module``: an MLIR module of tensor programs and graph functions.

The course's ``IRModule``. It wraps a ``builtin.module`` living in the shared context
(:mod:`mlc_mlir.context`) and adds the course's conveniences: ``mod["name"]``,
``mod.functions``, ``mod.update_func``, ``mod.script()``.
"""

from __future__ import annotations

from pathlib import Path

from mlir import ir

from .irutil import sym_name, to_attr
from .context import diagnostics_text, mlc_context
from .errors import MlcError, ParseError

__all__ = ["Module", "Function"]


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

    def __str__(self) -> str:
        return self.script()

    def __repr__(self) -> str:
        return f"<mlc.Function @{self.name}: {self.function_type}>"


class Module:
    """An MLIR ``builtin.module`` (the course's IRModule).

    Args:
        module: the wrapped ``mlir.ir.Module``; it must belong to the shared context.
    """

    def __init__(self, module: ir.Module):
        self.mlir_module = module

    # -- construction ------------------------------------------------------------------
    @classmethod
    def parse(cls, text: str, *, source_name: str = "<string>") -> Module:
        """Parse and verify MLIR text; raise :class:`ParseError` naming each diagnostic."""
        if not isinstance(text, str):
            raise ParseError(f"Module.parse expects MLIR text (str), got {type(text).__name__}")
        with mlc_context():
            try:
                mod = ir.Module.parse(text)
            except ir.MLIRError as exc:
                raise ParseError(f"cannot parse {source_name}:\n{diagnostics_text(exc)}") from None
        return cls(mod)

    @classmethod
    def from_file(cls, path: str | Path) -> Module:
        """Parse the MLIR file at ``path``."""
        path = Path(path)
        if not path.is_file():
            raise ParseError(f"no such MLIR file: {path}")
        return cls.parse(path.read_text(), source_name=str(path))

    def clone(self) -> Module:
        """A deep copy (transformable without touching this module); locations, hence
        value names such as ``%lv0`` and diagnostics' lines, are kept."""
        with mlc_context():
            text = self.mlir_module.operation.get_asm(print_generic_op_form=True, large_elements_limit=None,
                                                      enable_debug_info=True)
            return Module(ir.Module.parse(text))

    # -- printing ----------------------------------------------------------------------
    def _asm(self) -> str:
        return self.mlir_module.operation.get_asm(large_elements_limit=None)

    def script(self, *, large_elements_limit: int | None = 16, large_resource_limit: int | None = 64) -> str:
        """The module as MLIR text for reading: value names from name locations (``%lv0``),
        constants above ``large_elements_limit`` elements and resource blobs (bound
        weights) above ``large_resource_limit`` bytes elided. ``str(mod)`` prints all."""
        return self.mlir_module.operation.get_asm(large_elements_limit=large_elements_limit,
                                                  large_resource_limit=large_resource_limit,
                                                  use_name_loc_as_prefix=True)

    def show(self) -> None:
        """Print :meth:`script`."""
        print(self.script())

    def __str__(self) -> str:
        return self._asm()

    def __repr__(self) -> str:
        return f"<mlc.Module functions={self.functions}>"

    # -- functions ---------------------------------------------------------------------
    @property
    def operation(self) -> ir.Operation:
        return self.mlir_module.operation

    def _func_ops(self) -> list[ir.Operation]:
        return [op.operation for op in self.mlir_module.body.operations if op.operation.name == "func.func"]

    @property
    def functions(self) -> list[str]:
        """Names of the module's ``func.func`` operations, in order."""
        return [sym_name(op) for op in self._func_ops()]

    def __contains__(self, name: str) -> bool:
        return name in self.functions

    def __getitem__(self, name: str) -> Function:
        for op in self._func_ops():
            if sym_name(op) == name:
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
                if key == "global_symbol":
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
