"""The one MLIR context of the process, with every dialect the project uses loaded once.

Loading an IRDL dialect twice into one context aborts the interpreter, and objects from
two contexts must never mix, so the whole project shares the context made here.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

from mlir import ir
from mlir.dialects import irdl

from .errors import ParseError
from .irutil import diagnostics_text  # noqa: F401 - re-exported (the old home)

__all__ = ["get_context", "mlc_context", "dialect_files", "DIALECTS_DIR", "diagnostics_text"]

_PKG_DIR = Path(__file__).resolve().parent


def _find_dialects_dir() -> Path:
    env = os.environ.get("MLC_DIALECTS_DIR")
    candidates = ([Path(env)] if env else []) + [_PKG_DIR.parent / "dialects", _PKG_DIR / "dialects"]
    for cand in candidates:
        if cand.is_dir() and any(cand.glob("*.irdl.mlir")):
            return cand
    return candidates[-1]


DIALECTS_DIR = _find_dialects_dir()
_CONTEXT: ir.Context | None = None


def dialect_files() -> list[Path]:
    """The IRDL files (``dialects/*.irdl.mlir``) that define the project's dialects."""
    return sorted(DIALECTS_DIR.glob("*.irdl.mlir"))


def get_context() -> ir.Context:
    """Return the process-wide context, creating it (and loading the IRDL dialects) once."""
    global _CONTEXT
    if _CONTEXT is None:
        ctx = ir.Context()
        ctx.load_all_available_dialects()
        with ctx, ir.Location.unknown():
            for path in dialect_files():
                try:
                    defs = ir.Module.parse(path.read_text())
                except ir.MLIRError as exc:
                    raise ParseError(f"dialect file {path} does not parse:\n{diagnostics_text(exc)}") from None
                irdl.load_dialects(defs)
        _CONTEXT = ctx
    return _CONTEXT


@contextlib.contextmanager
def mlc_context(loc: ir.Location | None = None) -> Iterator[ir.Context]:
    """Enter the shared context (and an unknown location unless ``loc`` is given)."""
    ctx = get_context()
    with ctx, (loc or ir.Location.unknown(ctx)):
        yield ctx
