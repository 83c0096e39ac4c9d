"""``mlc-opt``: a drop-in ``mlir-opt`` with the project's dialects and passes on top.

    mlc-opt [options] [FILE]

Every upstream pass is a flag (``-canonicalize``, ``--one-shot-bufferize="opt=v"``), nested
under ``builtin.module`` as mlir-opt does; ``--pass-pipeline``/``-p`` takes an anchored
pipeline; ``--mlc-NAME`` runs a project pass and ``--transform-script=FILE`` a schedule.
Stages run in command-line order. ``--split-input-file``, ``--verify-diagnostics``, the
``--mlir-print-*`` flags, diagnostics and exit codes follow mlir-opt; ``--help`` lists it all.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TextIO

from .cli import Options, UsageError, parse_command_line

__all__ = ["main"]


def _version() -> str:
    """mlir-opt's version block, with the mlc-mlir version first, then the doctor's report."""
    from importlib import metadata

    from ..doctor import report

    def version(dist: str) -> str:
        try:
            return metadata.version(dist)
        except metadata.PackageNotFoundError:
            return "unknown"

    bindings = version("xtc-mlir-python-bindings")
    llvm = ".".join(bindings.split(".")[:3])
    return (f"mlc-opt (mlc-mlir {version('mlc-mlir')})\n"
            f"LLVM (http://llvm.org/):\n  LLVM version {llvm}\n"
            f"  MLIR Python bindings: xtc-mlir-python-bindings {bindings}\n\n{report()}\n")


def _help() -> str:
    from . import _mlc_passes, _upstream
    from .cli import OPTION_HELP

    lines = ["OVERVIEW: mlc-opt: MLIR modular optimizer driver with the mlc-mlir dialects and passes", "",
             "USAGE: mlc-opt [options] <input file>", "", "OPTIONS:"]
    for name, (kind, text) in OPTION_HELP.items():
        spell = {"value": "=<value>", "int": "=<int>", "optional": "[=<value>]"}.get(kind, "")
        if len(name) == 1:
            spell = " <value>" if kind == "value" else spell
        lines.append(f"  {'-' if len(name) == 1 else '--'}{name}{spell}".ljust(48) + f" - {text}")
    lines += ["", "  Project passes (--mlc-NAME):"]
    lines += [f"    --mlc-{name}".ljust(48) + f" - {text}" for name, text in _mlc_passes.PASSES.items()]
    lines += ["", "  Upstream passes (as in mlir-opt; --NAME or --NAME=\"opt=v ...\"):"]
    lines += [f"    --{k}".ljust(48) + f" - {v}" for k, v in {**_upstream.PASSES, **_upstream.PIPELINES}.items()]
    return "\n".join(lines) + "\n"


def _early_exit(opts: Options) -> int | None:
    """Handle --help / --version / --list-passes / --show-dialects (no input read)."""
    if opts.get("help"):
        sys.stdout.write(_help())
        return 0
    if opts.get("version"):
        sys.stdout.write(_version())
        return 0
    if opts.get("list-passes"):
        from . import _mlc_passes, _upstream

        for name in list(_upstream.PASSES) + list(_upstream.PIPELINES):
            print(f"--{name}")
        for name, text in _mlc_passes.PASSES.items():
            print(f"--mlc-{name}: {text}")
        return 0
    if opts.get("show-dialects"):
        from . import _upstream
        from ..context import dialect_files

        names = list(_upstream.DIALECTS) + [p.name.split(".")[0] for p in dialect_files()]
        print("Available Dialects: " + ", ".join(sorted(set(names))))
        return 0
    return None


def _read_input(name: str) -> str | bytes:
    """The input's text, or its bytes when it is MLIR bytecode."""
    try:
        data = sys.stdin.buffer.read() if name == "-" else Path(name).read_bytes()
    except OSError as exc:
        raise UsageError(f"cannot open input file '{name}': {exc.strerror}") from None
    if data.startswith(b"ML\xefR"):
        return data
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UsageError(f"cannot read input file '{name}': not UTF-8 text nor MLIR bytecode ({exc.reason} "
                         f"at byte {exc.start})") from None


def _open_output(name: str, binary: bool) -> TextIO:
    if name == "-":
        return sys.stdout.buffer if binary else sys.stdout
    try:
        return open(name, "wb" if binary else "w")  # noqa: SIM115 (closed in main)
    except OSError as exc:
        raise UsageError(f"cannot open output file '{name}': {exc.strerror}") from None


def _read_scripts(opts: Options) -> dict[str, str]:
    scripts = {}
    for st in opts.stages:
        if st.kind == "script":
            try:
                scripts[st.name] = Path(st.name).read_text()
            except (OSError, UnicodeDecodeError) as exc:
                reason = getattr(exc, "strerror", None) or str(exc)
                raise UsageError(f"mlc-opt: cannot open transform script '{st.name}': {reason}") from None
        elif st.kind == "mlc":
            from ..errors import MlcError
            from ..passes import get_pass

            if st.options is not None:
                raise UsageError(f"mlc-opt: {st.flag}: project passes take no options")
            try:
                get_pass(st.name)
            except MlcError as exc:
                raise UsageError(f"mlc-opt: {exc}") from None
    return scripts


def _dialect_files_light() -> list[Path] | None:
    """The project's IRDL files, found without importing MLIR (lookup order of mlc_mlir.context)."""
    import importlib.util

    env = os.environ.get("MLC_DIALECTS_DIR")
    candidates = [Path(env)] if env else []
    try:
        spec = importlib.util.find_spec("mlc_mlir.dialects")
    except (ImportError, ValueError):
        spec = None
    if spec is not None and spec.submodule_search_locations:
        candidates.append(Path(next(iter(spec.submodule_search_locations))))
    pkg = Path(__file__).resolve().parents[1]
    candidates += [pkg.parent / "dialects", pkg / "dialects"]
    for cand in candidates:
        files = sorted(cand.glob("*.irdl.mlir")) if cand.is_dir() else []
        if files:
            return files
    return None


def _exec_mlir_opt(opts: Options, argv: list[str]) -> None:
    """Become mlir-opt (with the project's dialects) when no stage needs Python.

    The bindings take ~0.2 s to load; mlir-opt starts in ~0.03 s and is, by definition, what
    mlc-opt imitates. Only for the console script (never for ``main(argv)`` calls) and unless
    ``MLC_OPT_PYTHON=1``; flags mlir-opt would read differently keep the Python path.
    """
    from . import _upstream
    from .gen_upstream import mlir_opt_path

    if os.environ.get("MLC_OPT_PYTHON") or "irdl-file" in opts.flags:
        return
    for st in opts.stages:
        if st.kind in ("mlc", "script"):
            return
        if st.kind == "pass" and (st.name not in _upstream.PASSES and st.name not in _upstream.PIPELINES
                                  or (st.options or "").startswith("{")):
            return
    if opts.input == "-" or _too_deep_for_mlir_opt(opts.input):
        # stdin cannot be checked before mlir-opt reads it, and a too-deep input would
        # overflow mlir-opt's stack: the Python path guards the parse and refuses it cleanly
        return
    files, binary = _dialect_files_light(), mlir_opt_path()
    if files is None or len(files) != 1 or binary is None or not os.access(binary, os.X_OK):
        return
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        os.execv(binary, ["mlc-opt", f"--irdl-file={files[0]}"] + argv)
    except OSError:
        return  # not executable here after all: the Python path does the same work


def _too_deep_for_mlir_opt(path: str) -> bool:
    """Whether the input file is nested too deeply (or is not text) for mlir-opt to parse safely."""
    from ..parse_guard import nesting_error

    try:
        return nesting_error(Path(path).read_bytes().decode("utf-8")) is not None
    except (OSError, UnicodeDecodeError):
        return True  # let the Python path report it


def main(argv: list[str] | None = None) -> int:
    """Entry point (console script ``mlc-opt``); returns the exit code."""
    console = argv is None
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        opts = parse_command_line(argv)
        code = _early_exit(opts)
        if code is not None:
            return code
        if console:
            _exec_mlir_opt(opts, argv)
        return _run(opts)
    except UsageError as exc:
        sys.stdout.flush()
        print(str(exc), file=sys.stderr)
        return 1


def _run(opts: Options) -> int:
    from .driver import Driver

    scripts = _read_scripts(opts)
    driver = Driver(opts, scripts)  # validates passes and pipelines before reading the input
    text = _read_input(opts.input)
    binary = bool(opts.get("emit-bytecode"))
    out = _open_output(opts.output, binary)
    ok = False
    try:
        ok = driver.run(text, out)
    finally:
        if out not in (sys.stdout, sys.stdout.buffer):
            out.close()
            if not ok:
                Path(opts.output).unlink(missing_ok=True)
        else:
            out.flush()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
