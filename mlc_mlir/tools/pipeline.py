"""Upstream pass flags -> pass pipelines, with mlir-opt's implicit nesting.

mlir-opt adds each command-line pass to a ``builtin.module`` pass manager with implicit
nesting: a pass restricted to another op (``func.func``, ``gpu.module``, ``spirv.module``)
runs in a nested pass manager on that op. The Python bindings only parse textual
pipelines, so each pass is validated by parsing ``builtin.module(pass{options})``; when the
registry answers that the pass is restricted to op ``X``, it is nested as ``X(pass)``.
Consecutive passes are grouped into one pipeline; each nested pass gets its own nested pass
manager, as in mlir-opt's ``--dump-pass-pipeline``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from . import _upstream
from .cli import OPTION_HELP, Stage, UsageError

__all__ = ["PipelineStage", "resolve_stages", "pretty_pipeline", "closest_flag"]

_RESTRICTED = re.compile(r"restricted to '([^']+)' on a PassManager")
_UNKNOWN = "does not refer to a registered pass or pass pipeline"


@dataclass
class PipelineStage:
    """A stage ready to run: ``kind`` is ``"pipeline"`` (``text``), ``"mlc"`` or ``"script"``."""

    kind: str
    text: str
    label: str


def closest_flag(name: str) -> str | None:
    """The upstream pass or mlc-opt option closest to ``name`` (for 'Did you mean')."""
    import difflib

    names = list(_upstream.PASSES) + list(_upstream.PIPELINES) + list(OPTION_HELP)
    match = difflib.get_close_matches(name, names, n=1, cutoff=0.75)
    return match[0] if match else None


def _element(stage: Stage) -> str:
    opts = stage.options
    if opts is None or opts == "":
        return stage.name
    if opts.startswith("{") and opts.endswith("}"):
        opts = opts[1:-1]
    return f"{stage.name}{{{opts}}}"


def _anchor(stage: Stage) -> tuple[str | None, str]:
    """``(anchor op or None for module/any, element text)``; UsageError for a bad pass flag."""
    from mlir.passmanager import PassManager

    elem = _element(stage)
    try:
        PassManager.parse(f"builtin.module({elem})")
        return None, elem
    except ValueError as exc:
        msg = str(exc)
    if _UNKNOWN in msg:
        hint = closest_flag(stage.name)
        more = f"\nmlc-opt: Did you mean '--{hint}'?" if hint else ""
        raise UsageError(f"mlc-opt: Unknown command line argument '{stage.flag}'.  "
                         f"Try: 'mlc-opt --help'{more}") from None
    match = _RESTRICTED.search(msg)
    if match:
        anchor = match.group(1)
        try:
            PassManager.parse(f"builtin.module({anchor}({elem}))")
            return anchor, elem
        except ValueError as exc:
            msg = str(exc)
    # mlir-opt reports the option parser's message, without the bindings' "failed to add" line.
    text = msg.split("failed to add `")[0].rstrip("\n")
    raise UsageError("<unknown>:0: error: " + (text + "\n" if text else "")) from None


def _group(elems: list[tuple[str | None, str]]) -> str:
    # mlir-opt nests each op-restricted pass on its own (its dump shows one nest per pass).
    parts = [elem if anchor is None else f"{anchor}({elem})" for anchor, elem in elems]
    return f"builtin.module({','.join(parts)})"


def resolve_stages(stages: list[Stage]) -> list[PipelineStage]:
    """Validate pass flags and group them into pipelines, keeping command-line order.

    Raises:
        UsageError: an unknown pass, bad pass options, or ``--pass-pipeline`` together
            with individual pass flags (mlir-opt rejects that too).
    """
    if any(s.kind == "pass" for s in stages) and any(s.kind == "pipeline" for s in stages):
        raise UsageError("<unknown>:0: error: '-pass-pipeline' option can't be used with individual "
                         "pass options")
    out: list[PipelineStage] = []
    pending: list[tuple[str | None, str]] = []
    for stage in stages + [Stage("end", "")]:
        if stage.kind == "pass":
            pending.append(_anchor(stage))
            continue
        if pending:
            text = _group(pending)
            out.append(PipelineStage("pipeline", text, text))
            pending = []
        if stage.kind == "pipeline":
            out.append(PipelineStage("pipeline", stage.name.strip(), f"--pass-pipeline={stage.name}"))
        elif stage.kind == "mlc":
            out.append(PipelineStage("mlc", stage.name, f"--mlc-{stage.name}"))
        elif stage.kind == "script":
            out.append(PipelineStage("script", stage.name, f"--transform-script={stage.name}"))
    return out


def _split_top(text: str) -> list[str]:
    """Split ``a{..},b(c,d)`` at the commas outside braces and parentheses."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch in "({":
            depth += 1
        elif ch in ")}":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    if text[start:]:
        parts.append(text[start:])
    return parts


def _pretty(elem: str, indent: int, lines: list[str], last: bool) -> None:
    pad = "  " * indent
    comma = "" if last else ","
    brace = elem.find("{")
    paren = elem.find("(")
    if paren == -1 or (brace != -1 and brace < paren):
        lines.append(f"{pad}{elem}{comma}")
        return
    lines.append(f"{pad}{elem[:paren]}(")
    inner = _split_top(elem[paren + 1:-1])
    for k, sub in enumerate(inner):
        _pretty(sub, indent + 1, lines, k == len(inner) - 1)
    lines.append(f"{pad}){comma}")


def pretty_pipeline(text: str) -> str:
    """``--dump-pass-pipeline`` text of a one-line pipeline (as mlir-opt prints it)."""
    top = text[text.find("(") + 1:-1] if "(" in text else ""
    count = len(_split_top(top))
    lines = [f"Pass Manager with {count} passes:"]
    _pretty(text, 0, lines, True)
    return "\n".join(lines) + "\n\n"
