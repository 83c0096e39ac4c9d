"""``--verify-diagnostics``: match emitted diagnostics against ``expected-*`` comments.

Syntax as in mlir-opt: ``// expected-error @+1 {{message substring}}``; the location is
``@+N`` / ``@-N`` (relative line), ``@above`` / ``@below``, ``@unknown``, or nothing (this line).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from mlir import ir

__all__ = ["Diag", "Expectation", "parse_expectations", "check_diagnostics", "diag_from_mlir"]

_EXPECT = re.compile(r"expected-(error|warning|note|remark)\s*(@[-+]?\w+)?\s*\{\{(.*?)\}\}")
_SEVERITY = {ir.DiagnosticSeverity.ERROR: "error", ir.DiagnosticSeverity.WARNING: "warning",
             ir.DiagnosticSeverity.NOTE: "note", ir.DiagnosticSeverity.REMARK: "remark"}


@dataclass
class Diag:
    severity: str
    line: int | None
    message: str


@dataclass
class Expectation:
    severity: str
    line: int | None
    message: str
    source_line: int
    matched: bool = field(default=False)


def diag_from_mlir(diag: ir.DiagnosticInfo | ir.Diagnostic) -> list[Diag]:
    """A diagnostic and its notes as :class:`Diag` records."""
    loc = diag.location
    line = None
    match = re.search(r":(\d+):(\d+)", str(loc))
    if match:
        line = int(match.group(1))
    out = [Diag(_SEVERITY.get(diag.severity, "error"), line, str(diag.message))]
    for note in diag.notes:
        out += diag_from_mlir(note)
    return out


def parse_expectations(text: str) -> list[Expectation]:
    """The ``expected-*`` comments of ``text`` (line numbers 1-based)."""
    out = []
    for lineno, line in enumerate(text.splitlines(), start=1):
        for m in _EXPECT.finditer(line):
            sev, where, msg = m.group(1), m.group(2), m.group(3)
            if where is None:
                target: int | None = lineno
            elif where == "@unknown":
                target = None
            elif where == "@above":
                target = lineno - 1
            elif where == "@below":
                target = lineno + 1
            else:
                try:
                    target = lineno + int(where[1:])
                except ValueError:
                    target = -1
            out.append(Expectation(sev, target, msg, lineno))
    return out


def check_diagnostics(diags: list[Diag], expected: list[Expectation]) -> list[str]:
    """Errors of the match (empty when every diagnostic was expected and every expectation met)."""
    problems = []
    for d in diags:
        for e in expected:
            if not e.matched and e.severity == d.severity and e.line == d.line and e.message in d.message:
                e.matched = True
                break
        else:
            if d.severity in ("error", "warning"):
                where = f"line {d.line}" if d.line is not None else "unknown location"
                problems.append(f"unexpected {d.severity} at {where}: {d.message}")
    for e in expected:
        if not e.matched:
            where = f"line {e.line}" if e.line is not None else "unknown location"
            problems.append(f"expected {e.severity} at {where} (from line {e.source_line}) "
                            f"was not produced: {{{{{e.message}}}}}")
    return problems
