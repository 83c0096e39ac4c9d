"""Diagnostics as mlir-opt prints them, and ``--verify-diagnostics`` with mlir-opt's rules.

Rendering follows MLIR's ``SourceMgrDiagnosticHandler``: ``file:line:col: error: message``,
the source line and a caret; call-site locations add ``called from`` notes; a location
without a file position prints as ``<unknown>:0: error: loc(...): message``.

Verification follows ``SourceMgrDiagnosticVerifierHandler``: ``expected-error``,
``-warning``, ``-remark``, ``-note``, each with an optional ``-re`` (``{{regex}}`` parts in
the text), a location designator ``@+N``, ``@-N``, ``@above``, ``@below`` or ``@unknown``,
then ``{{text}}`` (a substring of the message). Every emitted diagnostic (notes and remarks
included) must be expected, unless ``only-expected`` is asked for.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

__all__ = ["Loc", "Diag", "Expectation", "SourceFiles", "Renderer", "Verifier", "parse_expectations",
           "diag_from_mlir", "loc_from_mlir"]

_SEVERITY = ("error", "warning", "note", "remark")


@dataclass(frozen=True)
class Loc:
    """A location tree: ``kind`` is file, name, callsite, fused or unknown (``text`` = ``str(loc)``)."""

    kind: str
    text: str = "loc(unknown)"
    file: str = ""
    line: int = 0
    col: int = 0
    children: tuple[Loc, ...] = ()

    def file_loc(self) -> Loc | None:
        """The first file location inside (MLIR's ``findInstanceOf<FileLineColLoc>``)."""
        if self.kind == "file":
            return self
        for child in self.children:
            found = child.file_loc()
            if found is not None:
                return found
        return None

    def callsite(self) -> Loc | None:
        """The call-site location this one stands for (through names and fusions), if any."""
        if self.kind == "callsite":
            return self
        if self.kind in ("name", "fused"):
            for child in self.children:
                found = child.callsite()
                if found is not None:
                    return found
        return None


@dataclass
class Diag:
    """One diagnostic with its notes."""

    severity: str
    loc: Loc
    message: str
    notes: list[Diag] = field(default_factory=list)


def loc_from_mlir(loc, rename: dict[str, str] | None = None) -> Loc:
    """Convert an ``mlir.ir.Location`` (``rename`` maps buffer names to file names)."""
    rename = rename or {}
    text = str(loc)
    if loc.is_a_file():
        name = loc.filename
        return Loc("file", text, rename.get(name, name), loc.start_line, loc.start_col)
    if loc.is_a_name():
        return Loc("name", text, children=(loc_from_mlir(loc.child_loc, rename),))
    if loc.is_a_callsite():
        return Loc("callsite", text,
                   children=(loc_from_mlir(loc.callee, rename), loc_from_mlir(loc.caller, rename)))
    if loc.is_a_fused():
        return Loc("fused", text, children=tuple(loc_from_mlir(c, rename) for c in loc.locations))
    return Loc("unknown" if text == "loc(unknown)" else "other", text)


def diag_from_mlir(diag, rename: dict[str, str] | None = None) -> Diag:
    """Convert an ``mlir.ir.Diagnostic`` / ``DiagnosticInfo`` (and its notes) to a :class:`Diag`."""
    sev = str(diag.severity).rsplit(".", 1)[-1].lower()
    return Diag(sev if sev in _SEVERITY else "error", loc_from_mlir(diag.location, rename), str(diag.message),
                [diag_from_mlir(n, rename) for n in diag.notes])


class SourceFiles:
    """Source lines by file name: the input's text, other files read on demand."""

    def __init__(self) -> None:
        self._lines: dict[str, list[str] | None] = {}

    def add(self, name: str, text: str) -> None:
        self._lines[name] = text.split("\n")

    def line(self, name: str, lineno: int) -> str | None:
        if name not in self._lines:
            try:
                self._lines[name] = Path(name).read_text().split("\n")
            except (OSError, UnicodeDecodeError, ValueError):
                self._lines[name] = None
        lines = self._lines[name]
        if lines is None or not 1 <= lineno <= len(lines):
            return None
        return lines[lineno - 1]


def _expand_tabs(text: str) -> str:
    return text.expandtabs(8)


def _caret(src: str, col: int, length: int) -> str:
    prefix = _expand_tabs(src[:col - 1])
    marks = "^" + "~" * max(0, min(length, len(src) - col + 1) - 1)
    return (" " * len(prefix) + marks).rstrip()


class Renderer:
    """Prints diagnostics the way MLIR's source-manager handler does."""

    def __init__(self, sources: SourceFiles, out: TextIO):
        self.sources, self.out = sources, out

    def message(self, file: str, line: int, col: int, severity: str, msg: str, *,
                show_source: bool = True, length: int = 0) -> None:
        """``file:line:col: severity: msg`` plus the source line and caret when available."""
        src = self.sources.line(file, line) if show_source and line > 0 and col > 0 else None
        self.out.write(f"{file}:{line}:{col}: {severity}: {msg}\n")
        if src is not None:
            self.out.write(_expand_tabs(src) + "\n" + _caret(src, col, length) + "\n")

    def at(self, loc: Loc, severity: str, msg: str, show_source: bool = True) -> None:
        fl = loc.file_loc()
        if fl is None:
            prefix = "" if loc.kind == "unknown" else f"{loc.text}: "
            self.out.write(f"<unknown>:0: {severity}: {prefix}{msg}\n")
            return
        self.message(fl.file, fl.line, fl.col, severity, msg, show_source=show_source)

    def emit(self, diag: Diag) -> None:
        """Print ``diag``, its call stack and its notes."""
        stack = [(diag.loc, diag.message, diag.severity)]
        loc = diag.loc
        call = loc.callsite()
        if call is not None:
            loc = call.children[1]
            for _ in range(10):
                stack.append((loc, "called from", "note"))
                call = loc.callsite()
                if call is None:
                    break
                loc = call.children[1]
        for where, msg, sev in stack:
            self.at(_shown(where), sev, msg)
        for note in diag.notes:
            self.at(_shown(note.loc), note.severity, note.message, show_source=note.loc != loc)
            loc = note.loc


def _shown(loc: Loc) -> Loc:
    return loc.children[0] if loc.kind == "callsite" else loc


_EXPECTED = re.compile(r"expected-(error|note|remark|warning)(-re)? *(@([+-][0-9]+|above|below|unknown))? *"
                       r"\{\{(.*)\}\}$")


@dataclass
class Expectation:
    """An ``expected-*`` comment: severity, target line (None for @unknown), text."""

    severity: str
    line: int | None
    text: str
    file: str
    at_line: int
    at_col: int
    regex: re.Pattern | None = None
    matched: bool = False

    def match(self, msg: str) -> bool:
        return bool(self.regex.search(msg)) if self.regex is not None else self.text in msg


# POSIX (LLVM Regex) bracket classes and error texts, for Python's re.
_POSIX_CLASSES = {"[:alnum:]": "a-zA-Z0-9", "[:alpha:]": "a-zA-Z", "[:digit:]": "0-9", "[:lower:]": "a-z",
                  "[:upper:]": "A-Z", "[:space:]": " \\t\\n\\r\\f\\v", "[:xdigit:]": "0-9A-Fa-f",
                  "[:punct:]": re.escape("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")}
_POSIX_ERRORS = (("unterminated character set", "brackets ([ ]) not balanced"),
                 ("missing ), unterminated subpattern", "parentheses not balanced"),
                 ("unbalanced parenthesis", "parentheses not balanced"),
                 ("nothing to repeat", "repetition-operator operand invalid"),
                 ("multiple repeat", "repetition-operator operand invalid"))


def _posix(regex: str) -> str:
    for cls, chars in _POSIX_CLASSES.items():
        regex = regex.replace(cls, chars)
    try:
        re.compile(regex)
    except re.error as exc:
        msg = str(exc).split(" at position")[0]
        raise ValueError("invalid regex: " + dict(_POSIX_ERRORS).get(msg, msg)) from None
    return regex


def _compile(text: str) -> re.Pattern:
    """The regex of an ``-re`` expectation; ValueError naming the problem."""
    out, rest = [], text
    while rest:
        start = rest.find("{{")
        if start == -1:
            out.append(re.escape(rest))
            break
        out.append(re.escape(rest[:start]))
        rest = rest[start + 2:]
        end = rest.find("}}")
        if end == -1:
            raise ValueError("found start of regex with no end '}}'")
        out.append(f"({_posix(rest[:end])})")
        rest = rest[end + 2:]
    return re.compile("".join(out))


def parse_expectations(text: str, file: str, problems: list[tuple[Expectation, str]] | None = None
                       ) -> list[Expectation]:
    """The ``expected-*`` comments of ``text`` (its lines numbered from 1)."""
    out: list[Expectation] = []
    last_plain = 0
    pending: list[Expectation] = []
    lines = text.split("\n")
    for idx, line in enumerate(lines):
        m = _EXPECTED.search(line.rstrip())
        if m is None:
            for e in pending:
                e.line = idx + 1
            pending, last_plain = [], idx
            continue
        e = Expectation(m.group(1), idx + 1, m.group(5), file, idx + 1, m.start() + 1)
        if m.group(2):
            try:
                e.regex = _compile(e.text)
            except ValueError as exc:
                if problems is not None:
                    problems.append((e, str(exc)))
                continue
        where = m.group(4)
        if where is None:
            pass
        elif where[0] in "+-":
            e.line = idx + 1 + int(where)
        elif where == "unknown":
            e.line = None
        elif where == "above":
            e.line = last_plain + 1
        else:
            pending.append(e)
            e.line = len(lines)
        out.append(e)
    return out


class Verifier:
    """Matches diagnostics against the expectations of one chunk (mlir-opt's semantics)."""

    def __init__(self, text: str, file: str, renderer: Renderer, *, only_expected: bool = False):
        self.renderer, self.only_expected, self.file = renderer, only_expected, file
        self.ok = True
        bad: list[tuple[Expectation, str]] = []
        self.by_file = {file: parse_expectations(text, file, bad)}
        for e, msg in bad:
            self._fail_at(e, msg)

    def _fail_at(self, e: Expectation, msg: str) -> None:
        self.ok = False
        self.renderer.message(e.file, e.at_line, e.at_col, "error", msg, length=len(e.text))

    def _expectations(self, fl: Loc | None) -> list[Expectation]:
        if fl is None:
            return [e for es in self.by_file.values() for e in es if e.line is None]
        if fl.file not in self.by_file:
            src = []
            n = 1
            while (line := self.renderer.sources.line(fl.file, n)) is not None:
                src.append(line)
                n += 1
            self.by_file[fl.file] = parse_expectations("\n".join(src), fl.file)
        return [e for e in self.by_file[fl.file] if e.line is not None]

    def process(self, diag: Diag) -> None:
        """Check ``diag`` and each of its notes."""
        for d in [diag] + diag.notes:
            self._one(d)

    def _one(self, d: Diag) -> None:
        fl = d.loc.file_loc()
        near = None
        for e in self._expectations(fl):
            if fl is not None and fl.line != e.line:
                continue
            if e.match(d.message):
                if e.severity == d.severity:
                    e.matched = True
                    return
                near = e
        if self.only_expected:
            return
        self.ok = False
        if near is not None:
            self.renderer.message(near.file, near.at_line, near.at_col, "error",
                                  f"'{d.severity}' diagnostic emitted when expecting a '{near.severity}'")
        else:
            self.renderer.at(d.loc, "error", f"unexpected {d.severity}: {d.message}")

    def finish(self) -> bool:
        """Report expectations that were not produced; True when everything matched."""
        pending = [e for es in self.by_file.values() for e in es if e.line is not None]
        pending += [e for es in self.by_file.values() for e in es if e.line is None]
        for e in pending:
            if not e.matched:
                self._fail_at(e, f'expected {e.severity} "{e.text}" was not produced')
        return self.ok
