"""Logging: the ``mlc_mlir`` logger tree and the IR dumps that users ask for.

Every module logs to ``logging.getLogger(__name__)``, so records come from child loggers
per layer (``mlc_mlir.context``, ``mlc_mlir.compiler.pipeline``, ``mlc_mlir.graph.optimize``,
...). The package logger has a ``NullHandler``: nothing is printed unless the application
configures logging (``logging.basicConfig(level=logging.DEBUG)``) or sets
``MLC_LOG=debug|info|warning|error``, which attaches a stderr handler to ``mlc_mlir``.

IR dumps requested with ``print_after_all=True`` are output, not log records: like
mlir-opt's ``--mlir-print-ir-after-all`` they always go to stderr (:func:`print_ir`).
"""

from __future__ import annotations

import logging
import os
import sys
import warnings

__all__ = ["LOGGER_NAME", "configure_from_env", "print_ir"]

LOGGER_NAME = "mlc_mlir"
_LEVELS = ("debug", "info", "warning", "error")
_ENV_HANDLER: logging.Handler | None = None


def configure_from_env() -> None:
    """Attach a stderr handler to the ``mlc_mlir`` logger at the level named by ``$MLC_LOG``.

    Does nothing when ``MLC_LOG`` is unset or empty; calling it again replaces the handler.
    A value that names no level (``MLC_LOG=verbose``) only warns, naming the valid ones:
    an environment variable must not make ``import mlc_mlir`` fail.
    """
    global _ENV_HANDLER
    logger = logging.getLogger(LOGGER_NAME)
    level = os.environ.get("MLC_LOG", "").strip().lower()
    if _ENV_HANDLER is not None:
        logger.removeHandler(_ENV_HANDLER)
        _ENV_HANDLER = None
    if not level:
        return
    if level not in _LEVELS:
        warnings.warn(f"MLC_LOG={level!r} is not a log level (ignored); use one of {', '.join(_LEVELS)}",
                      RuntimeWarning, stacklevel=2)
        return
    _ENV_HANDLER = logging.StreamHandler(sys.stderr)
    _ENV_HANDLER.setFormatter(logging.Formatter("%(name)s: %(levelname)s: %(message)s"))
    logger.addHandler(_ENV_HANDLER)
    logger.setLevel(level.upper())


def print_ir(after: str, text: str) -> None:
    """Write one IR dump to stderr, labelled like mlir-opt's (``// -----// IR Dump After X``)."""
    sys.stderr.write(f"// -----// IR Dump After {after} //----- //\n{text}\n")
    sys.stderr.flush()
