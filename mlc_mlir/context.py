"""The one MLIR context of the process, with every dialect the project uses loaded once.

Loading an IRDL dialect twice into one context aborts the interpreter, and objects from
two contexts must never mix, so the whole project shares the context made here.
"""

from __future__ import annotations

import contextlib
import importlib.resources
import logging
import os
from collections.abc import Iterator
from pathlib import Path

from mlir import ir
from mlir.dialects import irdl

from .errors import InstallError, ParseError

__all__ = ["get_context", "mlc_context", "dialect_files", "dialects_dir", "DIALECTS_DIR",
           "REQUIRED_DIALECTS", "diagnostics_text"]

log = logging.getLogger(__name__)

#: Dialects every context must have; ``NAME`` is defined by ``NAME.irdl.mlir``.
REQUIRED_DIALECTS = ("mlc",)
_CONTEXT: ir.Context | None = None


def dialects_dir() -> Path:
    """The directory the IRDL definitions are read from, looked up now (not at import).

    ``$MLC_DIALECTS_DIR`` when set, else the installed package ``mlc_mlir.dialects`` (the
    repository's top-level ``dialects/``, which wheels, sdists and editable installs carry).

    Raises:
        InstallError: the package ``mlc_mlir.dialects`` is missing from the installation.
    """
    env = os.environ.get("MLC_DIALECTS_DIR")
    if env:
        return Path(env)
    try:
        return Path(str(importlib.resources.files("mlc_mlir.dialects")))
    except ModuleNotFoundError:
        raise InstallError("the package mlc_mlir.dialects (the IRDL dialect definitions) is not "
                           "installed; reinstall mlc-mlir or set MLC_DIALECTS_DIR") from None


def dialect_files() -> list[Path]:
    """The IRDL files (``*.irdl.mlir``) that define the project's dialects.

    Raises:
        InstallError: the directory is missing, or lacks a file of ``REQUIRED_DIALECTS``.
    """
    where = dialects_dir()
    origin = "MLC_DIALECTS_DIR" if os.environ.get("MLC_DIALECTS_DIR") else "the installed mlc_mlir.dialects"
    if not where.is_dir():
        raise InstallError(f"dialect directory {where} (from {origin}) does not exist")
    files = sorted(where.glob("*.irdl.mlir"))
    missing = [f"{name}.irdl.mlir" for name in REQUIRED_DIALECTS if where / f"{name}.irdl.mlir" not in files]
    if missing:
        raise InstallError(f"dialect definition {', '.join(missing)} not found in {where} (from {origin}); "
                           "the graph dialect cannot be loaded")
    return files


def __getattr__(name: str) -> Path:
    # DIALECTS_DIR is computed when asked for, so MLC_DIALECTS_DIR set after import counts.
    if name == "DIALECTS_DIR":
        return dialects_dir()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def get_context() -> ir.Context:
    """Return the process-wide context, creating it (and loading the IRDL dialects) once.

    Raises:
        InstallError: a dialect definition is missing (see :func:`dialect_files`).
        ParseError: a dialect definition does not parse.
    """
    global _CONTEXT
    if _CONTEXT is None:
        files = dialect_files()
        ctx = ir.Context()
        ctx.load_all_available_dialects()
        with ctx, ir.Location.unknown():
            for path in files:
                try:
                    defs = ir.Module.parse(path.read_text())
                except ir.MLIRError as exc:
                    raise ParseError(f"dialect file {path} does not parse:\n{diagnostics_text(exc)}") from None
                irdl.load_dialects(defs)
        log.debug("MLIR context created; IRDL dialects loaded from %s", ", ".join(map(str, files)))
        _CONTEXT = ctx
    return _CONTEXT


@contextlib.contextmanager
def mlc_context(loc: ir.Location | None = None) -> Iterator[ir.Context]:
    """Enter the shared context (and an unknown location unless ``loc`` is given)."""
    ctx = get_context()
    with ctx, (loc or ir.Location.unknown(ctx)):
        yield ctx


def diagnostics_text(exc: ir.MLIRError) -> str:
    """Render the diagnostics carried by an ``MLIRError`` as ``loc: message`` lines."""
    lines = []

    def add(diag: ir.DiagnosticInfo, depth: int) -> None:
        lines.append("  " * depth + f"{diag.location}: {diag.message}")
        for note in diag.notes:
            add(note, depth + 1)

    for diag in exc.error_diagnostics:
        add(diag, 0)
    return "\n".join(lines) or str(exc)
