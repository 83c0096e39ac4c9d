"""``--irdl-file``: load the IRDL dialects of a file into the shared context, once.

Loading a dialect that is already loaded aborts the process, so each dialect name is loaded
at most once per process; a second file defining an already loaded dialect is an error.
"""

from __future__ import annotations

from pathlib import Path

from mlir import ir

from ..context import dialect_files
from ..irutil import symbol_ops
from ..parse_guard import guarded_parse
from .cli import UsageError

__all__ = ["load_irdl_file"]

_LOADED: dict[str, str] = {}  # dialect name -> text of the file that defined it


def _project_dialects() -> set[str]:
    names = set()
    for path in dialect_files():
        names |= set(_dialect_names(ir.Module.parse(path.read_text())))
    return names


def _dialect_names(module: ir.Module) -> list[str]:
    return list(symbol_ops(module, "irdl.dialect"))


def load_irdl_file(ctx: ir.Context, path: str) -> None:
    """Load the dialects defined in ``path`` (UsageError when unreadable, invalid or clashing)."""
    from mlir.dialects import irdl

    try:
        text = Path(path).read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"mlc-opt: cannot open IRDL file '{path}': {getattr(exc, 'strerror', exc)}") from None
    with ctx, ir.Location.unknown(ctx):
        try:
            module = guarded_parse(text, source_name=path, report=False)  # bad text refused, not a crash
        except ir.MLIRError as exc:
            raise UsageError(f"mlc-opt: IRDL file '{path}' does not parse: {exc}") from None
        names = _dialect_names(module)
        if all(_LOADED.get(n) == text for n in names) and names:
            return
        taken = [n for n in names if n in _LOADED or n in _project_dialects()]
        if taken:
            raise UsageError(f"mlc-opt: IRDL file '{path}' redefines the loaded dialect(s) {', '.join(taken)}")
        try:
            irdl.load_dialects(module)
        except ir.MLIRError as exc:
            raise UsageError(f"mlc-opt: IRDL file '{path}' does not load: {exc}") from None
        for n in names:
            _LOADED[n] = text
