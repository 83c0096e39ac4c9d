"""``mlc.Module``: an MLIR module of tensor programs and graph functions.

The course's ``IRModule``. It wraps a ``builtin.module`` living in the shared context
(:mod:`mlc_mlir.context`) and adds the course's conveniences: ``mod["name"]``,
``mod.functions``, ``mod.update_func``, ``mod.script()``.
"""

from __future__ import annotations

import re
from pathlib import Path

from mlir import ir

from .context import diagnostics_text, mlc_context
from .errors import MlcError, ParseError

__all__ = ["Module", "Function", "guarded_parse", "MAX_NESTING"]

#: Deepest bracket nesting (``(``, ``[``, ``{``, ``<``) accepted in MLIR text. MLIR's
#: parser, verifier and printer recurse once per level and overflow the C stack (a
#: segfault, not an exception) at a few thousand levels; real programs stay under 100.
MAX_NESTING = 512

_TOKENS = re.compile(r'"(?:[^"\\\n]|\\.)*"|//[^\n]*|->|[<>]=|[\[\](){}<>\n]')
_OPEN, _CLOSE = frozenset("([{<"), frozenset(")]}>")


def _nesting_error(text: str) -> tuple[int, int, str] | None:
    """``(line, column, message)`` of the first point nested deeper than MAX_NESTING."""
    if sum(text.count(c) for c in "([{<") <= MAX_NESTING:
        return None
    depth, line, line_start = 0, 1, 0
    for m in _TOKENS.finditer(text):
        tok = m.group()
        if tok == "\n":
            line, line_start = line + 1, m.end()
        elif tok in _OPEN:
            depth += 1
            if depth > MAX_NESTING:
                return (line, m.start() - line_start + 1,
                        f"brackets nested deeper than {MAX_NESTING} levels; such input would overflow "
                        "the MLIR parser's stack and is refused")
        elif tok in _CLOSE:
            depth = max(depth - 1, 0)
    return None


def guarded_parse(text: str, *, source_name: str = "-", report: bool = True) -> ir.Module:
    """``mlir.ir.Module.parse`` behind the checks that keep bad text from crashing the process.

    Refuses text that is not a ``str``, that cannot be encoded as UTF-8 (a lone surrogate)
    or that nests brackets deeper than :data:`MAX_NESTING` (the upstream parser would
    overflow the stack). Must run inside the shared context (``mlc_context()``).

    Args:
        text: MLIR text.
        source_name: file name used in the location of a refusal.
        report: also emit a refusal as an error diagnostic at its location (for tools
            such as ``mlc-opt`` that collect diagnostics through a handler).

    Raises:
        mlir.ir.MLIRError: the text does not parse or verify, or is refused by a check
            (then its message says why and ``error_diagnostics`` is empty).
    """
    problem = None
    if not isinstance(text, str):
        problem = (1, 1, f"expected MLIR text (str), got {type(text).__name__}")
    else:
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as exc:
            line = text.count("\n", 0, exc.start) + 1
            problem = (line, exc.start - text.rfind("\n", 0, exc.start),
                       f"text is not valid Unicode: {exc.object[exc.start]!r} at offset {exc.start} "
                       f"({exc.reason})")
        else:
            problem = _nesting_error(text)
    if problem is not None:
        line, col, msg = problem
        if report:
            ir.Location.file(source_name, line, col).emit_error(msg)
        raise ir.MLIRError(f"{source_name}:{line}:{col}: {msg}", [])
    return ir.Module.parse(text)


class Function:
    """A ``func.func`` of a :class:`Module` (a tensor program or a graph function)."""

    def __init__(self, module: Module, op: ir.Operation):
        self._module = module
        self.op = op

    @property
    def name(self) -> str:
        return ir.StringAttr(self.op.attributes["sym_name"]).value

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
                raise ParseError(f"cannot parse {source_name}:\n{diagnostics_text(exc)}") from None
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
        return [ir.StringAttr(op.attributes["sym_name"]).value for op in self._func_ops()]

    def __contains__(self, name: str) -> bool:
        return name in self.functions

    def __getitem__(self, name: str) -> Function:
        for op in self._func_ops():
            if ir.StringAttr(op.attributes["sym_name"]).value == name:
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
                elif isinstance(val, bool):
                    op.attributes[key] = ir.BoolAttr.get(val)
                elif isinstance(val, int):
                    op.attributes[key] = ir.IntegerAttr.get(ir.IntegerType.get_signless(64), val)
                elif isinstance(val, float):
                    op.attributes[key] = ir.FloatAttr.get_f64(val)
                elif isinstance(val, str):
                    op.attributes[key] = ir.StringAttr.get(val)
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
