"""Parsing MLIR text without letting bad text crash the process (issue 13).

The upstream parser, verifier and printer recurse once per nesting level and overflow
the C stack on deeply nested text (a segfault); a lone surrogate is a ``TypeError`` in
the bindings. :func:`guarded_parse` refuses such text first. ``mlc.Module.parse`` and
``mlc-opt`` parse through it.
"""

from __future__ import annotations

import re

from mlir import ir

__all__ = ["guarded_parse", "nesting_error", "MAX_NESTING"]

#: Deepest bracket nesting (``(``, ``[``, ``{``, ``<``) accepted in MLIR text. MLIR's
#: parser, verifier and printer recurse once per level and overflow the C stack (a
#: segfault, not an exception) at a few thousand levels; real programs stay under 100.
MAX_NESTING = 512

_TOKENS = re.compile(r'"(?:[^"\\\n]|\\.)*"|//[^\n]*|->|[<>]=|[\[\](){}<>\n]')
_OPEN, _CLOSE = frozenset("([{<"), frozenset(")]}>")


def nesting_error(text: str) -> tuple[int, int, str] | None:
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
            problem = nesting_error(text)
    if problem is not None:
        line, col, msg = problem
        if report:
            ir.Location.file(source_name, line, col).emit_error(msg)
        raise ir.MLIRError(f"{source_name}:{line}:{col}: {msg}", [])
    return ir.Module.parse(text)
