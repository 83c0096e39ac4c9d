"""Parsing MLIR text without letting bad text crash the process (issue 13).

The upstream parser, verifier and printer recurse once per nesting level and overflow
the C stack on deeply nested text (a segfault); a lone surrogate is a ``TypeError`` in
the bindings; a ``builtin.module`` with two data layout specs (``#dlti.dl_spec``) makes
the module verifier report an error yet succeed, and the bindings' debug assertion
("unhandled captured errors") then aborts the interpreter. :func:`guarded_parse` refuses
such text first. ``mlc.Module.parse`` and ``mlc-opt`` parse through it.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the bindings load in guarded_parse: mlc-opt's hand-off to mlir-opt reads no MLIR
    from mlir import ir

__all__ = ["guarded_parse", "nesting_error", "data_layout_error", "MAX_NESTING"]

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


# Tokens of MLIR text that the data layout check reads; anything else (numbers, SSA names,
# other punctuation) is skipped. ``->``, ``<=`` and ``>=`` are tokens so that their angle
# bracket does not count as one.
_DL_TOKENS = re.compile(r'''
    (?P<str>"(?:[^"\\\n]|\\.)*")
  | (?P<comment>//[^\n]*)
  | (?P<op>->|<=|>=)
  | (?P<hash>\#[A-Za-z_][\w$.]*)
  | (?P<sym>@(?:"(?:[^"\\\n]|\\.)*"|[\w$.]+))
  | (?P<id>[A-Za-z_][\w$.]*)
  | (?P<punct>[{}()\[\]<>=,])
''', re.X)
_OPEN_GROUP, _CLOSE_GROUP = frozenset("([{"), frozenset(")]}")
_DEPTH = {"(": 1, "[": 1, "{": 1, "<": 1, ")": -1, "]": -1, "}": -1, ">": -1}


def _tokens(text: str) -> list[tuple[str, int]]:
    return [(m.group(), m.start()) for m in _DL_TOKENS.finditer(text) if m.lastgroup != "comment"]


def _skip_group(toks: list[tuple[str, int]], i: int) -> int:
    """Index after the bracket group (``(``/``[``/``{``, angles not counted) opening at ``i``."""
    depth = 0
    for j in range(i, len(toks)):
        tok = toks[j][0]
        if tok in _OPEN_GROUP:
            depth += 1
        elif tok in _CLOSE_GROUP:
            depth -= 1
            if depth == 0:
                return j + 1
    return len(toks)


def _is_spec(toks: list[tuple[str, int]], i: int, aliases: set[str]) -> bool:
    """Whether the attribute value starting at token ``i`` is a ``#dlti.dl_spec``."""
    tok = toks[i][0] if i < len(toks) else ""
    return tok == "#dlti.dl_spec" or tok in aliases or (
        tok == "#dlti" and i + 2 < len(toks) and toks[i + 1][0] == "<" and toks[i + 2][0] == "dl_spec")


def _module_dicts(toks: list[tuple[str, int]]) -> list[tuple[int, int]]:
    """``(module token, "{" token)`` index pairs: the attribute dictionary of every
    ``builtin.module``, custom (``module @m attributes {...}``) or generic form
    (``"builtin.module"() <{...}> ({...}) {...}``)."""
    found = []
    for i, (tok, _) in enumerate(toks):
        if tok in ("module", "builtin.module"):
            j = i + 1 + (i + 1 < len(toks) and toks[i + 1][0].startswith("@"))
            if j + 1 < len(toks) and toks[j][0] == "attributes" and toks[j + 1][0] == "{":
                found.append((i, j + 1))
        elif tok == '"builtin.module"' and i + 1 < len(toks) and toks[i + 1][0] == "(":
            j = _skip_group(toks, i + 1)  # operands
            if j + 1 < len(toks) and toks[j][0] == "<" and toks[j + 1][0] == "{":  # properties
                j = _skip_group(toks, j + 1) + 1
            if j < len(toks) and toks[j][0] == "(":  # regions
                j = _skip_group(toks, j)
            if j < len(toks) and toks[j][0] == "{":
                found.append((i, j))
    return found


def data_layout_error(text: str) -> tuple[int, int, str] | None:
    """``(line, column, message)`` of a ``builtin.module`` holding more than one data layout
    spec, or None.

    MLIR allows at most one attribute implementing ``DataLayoutSpecInterface`` (only
    ``#dlti.dl_spec`` does) on a module, but its verifier reports the error and returns
    success; the Python bindings then abort on the error nobody collected. The check reads
    the module's attribute dictionary, inline specs (``#dlti.dl_spec<...>``,
    ``#dlti<dl_spec<...>>``) and aliases of them (``#spec = #dlti.dl_spec<...>``).
    """
    if "dl_spec" not in text:
        return None
    toks = _tokens(text)
    aliases: set[str] = set()
    depth = 0
    for i, (tok, _) in enumerate(toks):  # aliases are defined at the top level, before use
        if depth == 0 and tok.startswith("#") and i + 1 < len(toks) and toks[i + 1][0] == "=" \
                and _is_spec(toks, i + 2, aliases):
            aliases.add(tok)
        depth += _DEPTH.get(tok, 0)
    for mod, start in _module_dicts(toks):
        names, depth = [], 0
        for j in range(start, len(toks)):
            tok = toks[j][0]
            depth += _DEPTH.get(tok, 0)
            if depth == 0:
                break
            if depth == 1 and tok == "=" and _is_spec(toks, j + 1, aliases):
                names.append(toks[j - 1][0].strip('"'))
        if len(names) > 1:
            line, col = _line_col(text, toks[mod][1])
            listed = ", ".join(f"'{n}'" for n in names)
            return (line, col,
                    f"module carries {len(names)} data layout specs (#dlti.dl_spec: {listed}); MLIR allows "
                    "at most one, and its verifier reports this without failing, which would abort the "
                    "Python bindings: refused")
    return None


def _line_col(text: str, offset: int) -> tuple[int, int]:
    return text.count("\n", 0, offset) + 1, offset - (text.rfind("\n", 0, offset) + 1) + 1


def guarded_parse(text: str, *, source_name: str = "-", report: bool = True) -> ir.Module:
    """``mlir.ir.Module.parse`` behind the checks that keep bad text from crashing the process.

    Refuses text that is not a ``str``, that cannot be encoded as UTF-8 (a lone surrogate),
    that nests brackets deeper than :data:`MAX_NESTING` (the upstream parser would
    overflow the stack) or that gives a module two data layout specs (see
    :func:`data_layout_error`). Must run inside the shared context (``mlc_context()``).

    Args:
        text: MLIR text.
        source_name: file name used in the location of a refusal.
        report: also emit a refusal as an error diagnostic at its location (for tools
            such as ``mlc-opt`` that collect diagnostics through a handler).

    Raises:
        mlir.ir.MLIRError: the text does not parse or verify, or is refused by a check
            (then its message says why and ``error_diagnostics`` is empty).
    """
    from mlir import ir

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
            problem = nesting_error(text) or data_layout_error(text)
    if problem is not None:
        line, col, msg = problem
        if report:
            ir.Location.file(source_name, line, col).emit_error(msg)
        raise ir.MLIRError(f"{source_name}:{line}:{col}: {msg}", [])
    return ir.Module.parse(text)
