"""The IR-helper layer: the plumbing every layer shares, written once.

- symbol lookup: :func:`sym_name`, :func:`symbol_ops` (a module's functions by name), :func:`func_ops`,
  :func:`find_func`;
- op walking: :func:`walk_ops`, :func:`has_op`;
- attribute conversion: :func:`to_attr` (Python values -> MLIR attributes);
- diagnostics text: :func:`diagnostic_lines`, :func:`diagnostics_text`.

(The call paths' argument checks live in the runtime: :mod:`mlc_mlir.runtime.checks`.)

Helpers that build IR must be called inside the shared context (``mlc_context()``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from mlir import ir

__all__ = ["sym_name", "symbol_ops", "func_ops", "find_func", "walk_ops", "has_op", "row_major_strides", "is_row_major",
           "has_identity_layout", "to_attr", "diagnostic_lines", "diagnostics_text", "MEMREF_VIEW_OPS"]

#: memref ops whose result is a view of their first operand (the same buffer)
MEMREF_VIEW_OPS = frozenset({"memref.subview", "memref.expand_shape", "memref.collapse_shape", "memref.cast",
                             "memref.reinterpret_cast", "memref.view", "memref.transpose",
                             "memref.assume_alignment"})


# -- symbol lookup --------------------------------------------------------------------------

def sym_name(op: Any) -> str:
    """The ``sym_name`` of a symbol op (``func.func``, ``memref.global``, a named sequence)."""
    return ir.StringAttr(getattr(op, "operation", op).attributes["sym_name"]).value


def symbol_ops(module: ir.Module, op_name: str | None = "func.func", *,
               defined: bool | None = None) -> dict[str, ir.Operation]:
    """The top-level symbol ops of ``module`` by name, in order: the lookup of a module's
    functions (and named sequences, globals...) by name.

    Args:
        module: the module.
        op_name: the ops to keep (``"func.func"``, ``"llvm.func"``,
            ``"transform.named_sequence"``...); None keeps every op with a ``sym_name``.
        defined: True keeps the definitions only (ops with a body), False the
            declarations only; None keeps both.
    """
    out: dict[str, ir.Operation] = {}
    for op in module.body.operations:
        op = op.operation
        kept = "sym_name" in op.attributes if op_name is None else op.name == op_name
        if not kept:
            continue
        if defined is not None and defined != (len(op.regions) > 0 and len(op.regions[0].blocks) > 0):
            continue
        out[sym_name(op)] = op
    return out


def func_ops(module: ir.Module, *, defined: bool | None = None) -> list[ir.Operation]:
    """The top-level ``func.func`` ops of ``module``, in order (see :func:`symbol_ops`)."""
    return list(symbol_ops(module, defined=defined).values())


def find_func(module: ir.Module, name: str) -> ir.Operation | None:
    """The top-level ``func.func @name`` of ``module``, or None."""
    return symbol_ops(module).get(name)


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


def row_major_strides(sizes: list[int]) -> list[int]:
    """The strides of a row-major layout of ``sizes`` (the first size is not used)."""
    strides = [1] * len(sizes)
    for i in range(len(sizes) - 2, -1, -1):
        strides[i] = strides[i + 1] * sizes[i + 1]
    return strides


def has_identity_layout(t: ir.MemRefType) -> bool:
    """Whether memref type ``t`` has the identity layout (no strided or offset view)."""
    return isinstance(t.layout, ir.AffineMapAttr) and t.layout.value == ir.AffineMap.get_identity(t.rank)


def is_row_major(t: ir.MemRefType) -> bool:
    """Whether memref type ``t`` is laid out row-major from offset 0, every dim static but
    the first (a contiguous buffer its elements can be addressed in linearly)."""
    if any(t.is_dynamic_dim(i) for i in range(1, t.rank)):
        return False
    strides, offset = t.get_strides_and_offset()
    return offset == 0 and list(strides) == row_major_strides(list(t.shape))


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
