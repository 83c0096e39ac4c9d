"""The IR-helper layer: the plumbing every layer shares, written once.

- function lookup: :func:`sym_name`, :func:`func_ops`, :func:`find_func`;
- op walking: :func:`walk_ops`, :func:`has_op`;
- attribute conversion: :func:`to_attr` (Python values -> MLIR attributes);
- diagnostics text: :func:`diagnostic_lines`, :func:`diagnostics_text`;
- argument checking: :func:`check_arity`, :func:`check_array` (compiled functions and
  graph functions check their arguments with the same messages).

Helpers that build IR must be called inside the shared context (``mlc_context()``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

from mlir import ir

from .errors import ArgumentError

__all__ = ["sym_name", "func_ops", "find_func", "walk_ops", "has_op", "to_attr", "diagnostic_lines",
           "diagnostics_text", "check_arity", "check_array"]


# -- function lookup -------------------------------------------------------------------------

def sym_name(op: Any) -> str:
    """The ``sym_name`` of a symbol op (``func.func``, ``memref.global``, a named sequence)."""
    return ir.StringAttr(getattr(op, "operation", op).attributes["sym_name"]).value


def func_ops(module: ir.Module) -> list[ir.Operation]:
    """The top-level ``func.func`` ops of ``module``, in order."""
    return [op.operation for op in module.body.operations if op.operation.name == "func.func"]


def find_func(module: ir.Module, name: str) -> ir.Operation | None:
    """The top-level ``func.func @name`` of ``module``, or None."""
    return next((op for op in func_ops(module) if sym_name(op) == name), None)


# -- walking --------------------------------------------------------------------------------

def walk_ops(op: Any, names: Iterable[str] | None = None) -> list[ir.Operation]:
    """Every operation nested in ``op`` (pre-order, ``op`` excluded), only ``names`` if given."""
    root = getattr(op, "operation", op)
    wanted = None if names is None else set(names)
    out: list[ir.Operation] = []

    def visit(o: ir.Operation) -> ir.WalkResult:
        if o != root and (wanted is None or o.name in wanted):
            out.append(o)
        return ir.WalkResult.ADVANCE

    root.walk(visit, ir.WalkOrder.PRE_ORDER)
    return out


def has_op(op: Any, names: Iterable[str]) -> bool:
    """Whether an op named one of ``names`` is nested in ``op`` (a module or an operation)."""
    root = getattr(op, "operation", op)
    wanted = set(names)
    found = False

    def visit(o: ir.Operation) -> ir.WalkResult:
        nonlocal found
        if o.name in wanted:
            found = True
            return ir.WalkResult.INTERRUPT
        return ir.WalkResult.ADVANCE

    root.walk(visit)
    return found


# -- attributes -----------------------------------------------------------------------------

def to_attr(value: Any) -> ir.Attribute:
    """A Python value as an attribute: bool, int (i64), float (f64), str, list/tuple of those.

    Raises:
        TypeError: any other value (callers wrap it in their layer's error).
    """
    if isinstance(value, ir.Attribute):
        return value
    if isinstance(value, bool):
        return ir.BoolAttr.get(value)
    if isinstance(value, int):
        return ir.IntegerAttr.get(ir.IntegerType.get_signless(64), value)
    if isinstance(value, float):
        return ir.FloatAttr.get(ir.F64Type.get(), value)
    if isinstance(value, str):
        return ir.StringAttr.get(value)
    if isinstance(value, (list, tuple)):
        return ir.ArrayAttr.get([to_attr(v) for v in value])
    raise TypeError(f"cannot encode {value!r} as an attribute")


# -- diagnostics ----------------------------------------------------------------------------

def diagnostic_lines(diag: Any, depth: int = 0) -> list[str]:
    """``loc: message`` lines of one diagnostic and its notes (indented two spaces per level)."""
    lines = ["  " * depth + f"{diag.location}: {diag.message}"]
    for note in diag.notes:
        lines += diagnostic_lines(note, depth + 1)
    return lines


def diagnostics_text(exc: ir.MLIRError, source: str | None = None, source_name: str = "-") -> str:
    """Render the diagnostics carried by an ``MLIRError`` as ``loc: message`` lines.

    With ``source`` (the text that was parsed), a diagnostic located in it reads as
    mlir-opt prints it: ``source_name:line:col: message``, the source line and a caret.
    """
    lines = [line for diag in exc.error_diagnostics for line in diagnostic_lines(diag)]
    if source is not None:
        lines = [_with_source_line(line, source, source_name) for line in lines]
    return "\n".join(lines) or str(exc)


_FILE_LOC = re.compile(r'^(\s*)loc\("[^"]*":(\d+):(\d+)\): (.*)$', re.S)


def _with_source_line(line: str, source: str, source_name: str) -> str:
    m = _FILE_LOC.match(line)
    if m is None:
        return line
    indent, row, col, msg = m.group(1), int(m.group(2)), int(m.group(3)), m.group(4)
    rows = source.splitlines()
    if not 1 <= row <= len(rows):
        return f"{indent}{source_name}:{row}:{col}: {msg}"
    text = rows[row - 1]
    return f"{indent}{source_name}:{row}:{col}: {msg}\n{indent}{text}\n{indent}{' ' * (col - 1)}^"


# -- argument checking ----------------------------------------------------------------------

def check_arity(func: str, names: Sequence[str], args: Sequence[Any], noun: str = "arguments") -> None:
    """:class:`ArgumentError` unless ``len(args) == len(names)`` (``@f takes 2 arguments (a, b), got 3``)."""
    if len(args) != len(names):
        raise ArgumentError(f"@{func} takes {len(names)} {noun} ({', '.join(names)}), got {len(args)}")


def check_array(where: str, arr: Any, dtype: Any, shape: Sequence[int | None], shape_text: str, *,
                symbols: Sequence[str | None] | None = None, bound: dict[str, tuple[int, str]] | None = None,
                owner: str = "") -> None:
    """Check one NumPy argument against its declared dtype and shape; bind its symbols.

    ``shape`` holds ints (static) or None (any size); ``symbols`` (optional) names the
    symbol of each dimension, bound in ``bound`` (symbol -> ``(size, owner)``, updated).
    Raises :class:`ArgumentError` naming ``where``, the expected and the actual value.
    """
    if str(arr.dtype) != str(dtype):
        raise ArgumentError(f"{where}: expected dtype {dtype}, got {arr.dtype}")
    if arr.ndim != len(shape):
        raise ArgumentError(f"{where}: expected rank {len(shape)} (shape {shape_text}), got shape {arr.shape}")
    for d, (want, got) in enumerate(zip(shape, arr.shape)):
        if want is not None and want != got:
            raise ArgumentError(f"{where}: expected shape {shape_text}, got {arr.shape} "
                                f"(dimension {d} is {got}, not {want})")
        sym = symbols[d] if symbols is not None else None
        if sym is not None and bound is not None:
            if sym in bound and bound[sym][0] != got:
                raise ArgumentError(f"{where}: dimension {d} is {got} but symbol {sym!r} was "
                                    f"bound to {bound[sym][0]} by {bound[sym][1]}")
            bound.setdefault(sym, (got, owner))
