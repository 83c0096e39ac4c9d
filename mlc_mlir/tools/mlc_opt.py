"""``mlc-opt``: mlir-opt with the project's dialects and passes.

    mlc-opt FILE [--pass-pipeline=PIPELINE] [--mlc-PASS ...] [--transform-script=FILE]
            [--split-input-file] [--verify-diagnostics] [-o OUT]

Stages run in the order they are given on the command line. The project's IRDL dialects
are loaded; ``--pass-pipeline`` accepts every upstream pass; ``--mlc-NAME`` runs a
project pass (``--list-passes`` shows them).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

from mlir import ir

from ..context import diagnostics_text, mlc_context
from ..errors import MlcError
from ..ir import Module
from ..passes import get_pass, list_passes
from .diagnostics import Diag, check_diagnostics, diag_from_mlir, parse_expectations

__all__ = ["main"]

SPLIT_MARKER = "// -----"


class _Stage:
    def __init__(self, label: str, run: Callable[[Module], Module]):
        self.label, self.run = label, run


def _parse_args(argv: list[str]) -> tuple[argparse.Namespace, list[_Stage]]:
    parser = argparse.ArgumentParser(
        prog="mlc-opt", description="Run MLIR pass pipelines and mlc-mlir passes on an MLIR file.",
        formatter_class=argparse.RawDescriptionHelpFormatter,  # one pass per line, never wrapped
        epilog="Project passes:\n" + "\n".join(f"  --mlc-{p.name}" for p in list_passes()))
    parser.add_argument("input", nargs="?", default="-", help="input file (default: stdin)")
    parser.add_argument("-o", dest="output", default="-", help="output file (default: stdout)")
    parser.add_argument("--pass-pipeline", action="append", default=[], metavar="PIPELINE",
                        help="upstream pass pipeline, e.g. 'builtin.module(canonicalize)'")
    parser.add_argument("--transform-script", action="append", default=[], metavar="FILE",
                        help="apply the transform script in FILE (a schedule)")
    parser.add_argument("--split-input-file", action="store_true", help="split the input at '// -----'")
    parser.add_argument("--verify-diagnostics", action="store_true",
                        help="check diagnostics against expected-* comments")
    parser.add_argument("--mlir-print-op-generic", action="store_true", help="print generic op form")
    parser.add_argument("--list-passes", action="store_true", help="list the project passes and exit")
    args, rest = parser.parse_known_args(argv)
    stages: list[_Stage] = []
    # Order of stages = order on the command line.
    for tok in argv:
        if tok.startswith("--pass-pipeline="):
            text = tok.split("=", 1)[1]
            stages.append(_Stage(f"pass-pipeline {text}", lambda m, t=text: _run_pipeline(m, t)))
        elif tok.startswith("--transform-script="):
            path = tok.split("=", 1)[1]
            stages.append(_Stage(f"transform-script {path}", lambda m, p=path: _apply_script(m, p)))
        elif tok.startswith("--mlc-"):
            name = tok[len("--mlc-"):]
            mpass = get_pass(name)  # raises MlcError naming the known passes
            stages.append(_Stage(f"--mlc-{name}", lambda m, p=mpass: p.run(m) or m))
    unknown = [t for t in rest if not t.startswith("--mlc-")]
    if unknown:
        parser.error(f"unrecognized arguments: {' '.join(unknown)}")
    if any(t in ("--pass-pipeline", "--transform-script") for t in argv):
        parser.error("write --pass-pipeline=... and --transform-script=... with '='")
    return args, stages


def _run_pipeline(mod: Module, text: str) -> Module:
    from mlir.passmanager import PassManager

    text = text.strip()
    if not text.startswith("builtin.module("):
        text = f"builtin.module({text})"
    pm = PassManager.parse(text)
    pm.run(mod.operation)
    return mod


def _apply_script(mod: Module, path: str) -> Module:
    from ..schedule import apply_transform_script

    return apply_transform_script(mod, Path(path).read_text())


def _process(chunk: str, stages: list[_Stage], diags: list[Diag], name: str) -> Module | None:
    """Parse and transform one chunk; diagnostics go to ``diags``. None on failure."""
    ctx = ir.Context.current

    def handler(d: ir.Diagnostic) -> bool:
        diags.extend(diag_from_mlir(d))
        return True

    handle = ctx.attach_diagnostic_handler(handler)
    try:
        try:
            mod = Module(Module.guarded_parse(chunk, source_name=name))
        except ir.MLIRError as exc:
            for d in exc.error_diagnostics:
                diags.extend(diag_from_mlir(d))
            return None
        for stage in stages:
            try:
                mod = stage.run(mod)
            except ir.MLIRError as exc:
                for d in exc.error_diagnostics:
                    diags.extend(diag_from_mlir(d))
                return None
            except (MlcError, ValueError) as exc:
                line = getattr(exc, "line", None)
                diags.append(Diag("error", line, f"{stage.label}: {exc}"))
                return None
        return mod
    finally:
        handle.detach()


def main(argv: list[str] | None = None) -> int:
    """Entry point; returns the exit code."""
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        args, stages = _parse_args(argv)
    except MlcError as exc:
        print(f"mlc-opt: {exc}", file=sys.stderr)
        return 2
    if args.list_passes:
        for p in list_passes():
            print(f"--mlc-{p.name}: {p.help}")
        return 0
    try:
        text = sys.stdin.read() if args.input == "-" else Path(args.input).read_text()
    except OSError as exc:
        print(f"mlc-opt: cannot read {args.input}: {exc.strerror}", file=sys.stderr)
        return 1
    chunks = text.split(f"\n{SPLIT_MARKER}") if args.split_input_file else [text]
    chunks = [c if i == 0 else c.split("\n", 1)[1] if "\n" in c else "" for i, c in enumerate(chunks)]
    outputs: list[str] = []
    failed = False
    with mlc_context():
        for chunk in chunks:
            diags: list[Diag] = []
            mod = _process(chunk, stages, diags, args.input)
            if args.verify_diagnostics:
                problems = check_diagnostics(diags, parse_expectations(chunk))
                for p in problems:
                    print(f"{args.input}: {p}", file=sys.stderr)
                failed |= bool(problems)
            else:
                for d in diags:
                    where = f"{args.input}:{d.line}" if d.line is not None else args.input
                    print(f"{where}: {d.severity}: {d.message}", file=sys.stderr)
                if mod is None or any(d.severity == "error" for d in diags):
                    failed = True
                    continue
            if mod is not None:
                outputs.append(mod.operation.get_asm(print_generic_op_form=args.mlir_print_op_generic))
    if not args.verify_diagnostics or not failed:
        out = f"\n{SPLIT_MARKER}\n".join(outputs)
        if args.output == "-":
            sys.stdout.write(out)
        else:
            Path(args.output).write_text(out)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
