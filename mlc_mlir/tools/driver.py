"""mlc-opt's processing of one input: split, parse, run the stages, print (mlir-opt's rules).

A chunk of a split input is parsed with its line and column offset restored (blank lines
and spaces in front of it), so locations, diagnostics and ``expected-*`` designators count
lines in the whole file, as mlir-opt does; locations then name the input file.
"""

from __future__ import annotations

import io
import sys
from dataclasses import dataclass
from typing import TextIO

from mlir import ir

from ..compiler.pipeline import GraphStage, run_stage
from ..context import get_context
from ..errors import MlcError
from ..ir import Module
from ..parse_guard import data_layout_error, guarded_parse
from ..passes import get_pass
from ..schedule import apply_transform_script
from .cli import DEFAULT_SPLIT_MARKER, Options, UsageError
from .diagnostics import Diag, Loc, Renderer, SourceFiles, Verifier, diag_from_mlir
from .gen_upstream import mlir_opt_path
from .irdl_files import load_irdl_file
from .mlc_opt import _dialect_files_light
from .pipeline import PipelineStage, pretty_pipeline, resolve_stages

__all__ = ["Driver", "Chunk", "split_input", "parse_chunk"]


@dataclass
class Chunk:
    """A piece of the input: its text and where it starts in the file (1-based)."""

    text: str | bytes
    line: int
    col: int
    first: bool


def _line_col(text: str, offset: int) -> tuple[int, int]:
    line = text.count("\n", 0, offset) + 1
    return line, offset - (text.rfind("\n", 0, offset) + 1) + 1


def split_input(text: str, marker: str | None, warn) -> list[Chunk]:
    """mlir-opt's ``splitAndProcessBuffer``: chunks, and ``warn(line, col)`` for near misses."""
    if marker is None:
        return [Chunk(text, 1, 1, True)]
    check = 2 if len(marker) > 2 else 0
    head, tail = marker[:len(marker) - check], marker[len(marker) - check:]
    raw = text.split(head)
    starts, pos = [0], len(raw[0])
    for piece in raw[1:]:
        at = pos + len(head)
        if piece.startswith(tail) and len(piece) > check:
            starts.append(at + check)
        else:
            warn(*_line_col(text, at))
            starts.append(-1)  # merged into the previous chunk
        pos = at + len(piece)
    bounds = [s for s in starts if s >= 0]
    chunks = []
    for k, start in enumerate(bounds):
        end = bounds[k + 1] - len(marker) if k + 1 < len(bounds) else len(text)
        line, col = _line_col(text, start)
        chunks.append(Chunk(text[start:end], line, col, k == 0))
    return chunks


def _bytecode_problem(data: bytes) -> str | None:
    """Why MLIR bytecode must not reach the bindings' parser, or None.

    Bytecode that mentions ``dl_spec`` is printed as text by the wheel's ``mlir-opt`` (which
    accepts a module with two data layout specs where the bindings abort) and that text
    goes through :func:`mlc_mlir.parse_guard.data_layout_error`.
    """
    if b"dl_spec" not in data:
        return None
    import subprocess

    binary = mlir_opt_path()
    if binary is None:
        return "bytecode with a data layout spec (#dlti.dl_spec) cannot be checked without mlir-opt; " \
               "give the input as text"
    flags = [f"--irdl-file={f}" for f in _dialect_files_light() or []]
    proc = subprocess.run([str(binary), *flags, "--allow-unregistered-dialect", "--mlir-print-op-generic", "-"],
                          input=data, capture_output=True, timeout=120)
    if proc.returncode != 0:
        return None  # not readable bytecode: the bindings' parser reports it
    problem = data_layout_error(proc.stdout.decode("utf-8", "replace"))
    return None if problem is None else problem[2]


def parse_chunk(chunk: Chunk) -> ir.Module:
    """Parse a chunk at its position in the file (raises ``ir.MLIRError``)."""
    if isinstance(chunk.text, bytes):  # MLIR bytecode
        problem = _bytecode_problem(chunk.text)
        if problem is not None:
            ir.Location.file("-", 1, 1).emit_error(problem)
            raise ir.MLIRError(f"-:1:1: {problem}", [])
        return ir.Module.parse(chunk.text)
    padded = "\n" * (chunk.line - 1) + " " * (chunk.col - 1) + chunk.text

    return guarded_parse(padded)


def _relocate(module: ir.Module, name: str, chunk: Chunk) -> None:
    """Name the input file in every location (the parser calls the buffer ``-``)."""
    cache: dict[str, ir.Location] = {}

    def fix(loc: ir.Location) -> ir.Location:
        key = str(loc)
        if "\"-\"" not in key:
            return loc
        if key not in cache:
            if loc.is_a_file():
                cache[key] = ir.Location.file(name, loc.start_line, loc.start_col, loc.end_line, loc.end_col) \
                    if (loc.end_line, loc.end_col) != (loc.start_line, loc.start_col) \
                    else ir.Location.file(name, loc.start_line, loc.start_col)
            elif loc.is_a_name():
                cache[key] = ir.Location.name(loc.name_str, childLoc=fix(loc.child_loc))
            elif loc.is_a_callsite():
                cache[key] = ir.Location.callsite(fix(loc.callee), [fix(loc.caller)])
            elif loc.is_a_fused():
                cache[key] = ir.Location.fused([fix(c) for c in loc.locations])
            else:
                cache[key] = loc
        return cache[key]

    def visit(op: ir.Operation):
        op.location = fix(op.location)
        for region in op.regions:
            for block in region.blocks:
                for arg in block.arguments:
                    # as BlockArgument: transform.extras' value casters hand transform-typed
                    # arguments back as OpHandle, which has no set_location
                    ir.BlockArgument(arg).set_location(fix(arg.location))
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    line, col = (0, 0) if chunk.first else (chunk.line, chunk.col)
    module.operation.location = ir.Location.file(name, line, col)


class Driver:
    """Runs the stages of an :class:`Options` on an input text."""

    def __init__(self, opts: Options, scripts: dict[str, str]):
        self.opts, self.scripts = opts, scripts
        self.name = "<stdin>" if opts.input == "-" else opts.input
        self.ctx = get_context()
        self._configure_context()
        with self.ctx, ir.Location.unknown(self.ctx):
            self.stages = resolve_stages(opts.stages)
            self.managers = {id(st): self._pass_manager(st) for st in self.stages if st.kind == "pipeline"}
        self.sources = SourceFiles()
        self.renderer = Renderer(self.sources, sys.stderr)

    def _configure_context(self) -> None:
        flags = self.opts.flags
        self._saved = (self.ctx.allow_unregistered_dialects,)
        self.ctx.allow_unregistered_dialects = bool(flags.get("allow-unregistered-dialect"))
        if flags.get("mlir-disable-threading"):
            self.ctx.enable_multithreading(False)
        if flags.get("irdl-file"):
            load_irdl_file(self.ctx, str(flags["irdl-file"]))

    def _pass_manager(self, st: PipelineStage):
        from mlir.passmanager import PassManager

        f = self.opts.flags
        try:
            pm = PassManager.parse(st.text)
        except ValueError as exc:
            raise UsageError("<unknown>:0: error: " + str(exc)) from None
        if f.get("dump-pass-pipeline"):
            sys.stderr.write(pretty_pipeline(str(pm)))
        pm.enable_verifier(bool(f.get("verify-each", True)))
        before, after = bool(f.get("mlir-print-ir-before-all")), bool(f.get("mlir-print-ir-after-all"))
        failure = bool(f.get("mlir-print-ir-after-failure"))
        if before or after or failure:
            pm.enable_ir_printing(
                print_before_all=before, print_after_all=after,
                print_module_scope=bool(f.get("mlir-print-ir-module-scope")),
                print_after_change=bool(f.get("mlir-print-ir-after-change")), print_after_failure=failure,
                large_elements_limit=f.get("mlir-elide-elementsattrs-if-larger"),
                enable_debug_info=bool(f.get("mlir-print-debuginfo")),
                print_generic_op_form=bool(f.get("mlir-print-op-generic")),
                tree_printing_dir_path=f.get("mlir-print-ir-tree-dir"))
        if f.get("mlir-timing"):
            pm.enable_timing()
        if f.get("mlir-pass-statistics"):
            pm.enable_statistics()
        return pm

    def run(self, data: str | bytes, out: TextIO) -> bool:
        """Process ``data`` (text, or bytecode: never split); write the output to ``out``; True on
        success (mlir-opt's exit 0)."""
        text = data if isinstance(data, str) else ""
        self.sources.add(self.name, text)
        marker = self.opts.get("split-input-file") if isinstance(data, str) else None

        def warn(line: int, col: int) -> None:
            self.renderer.message(self.name, line, col, "warning", "near miss with file split marker")

        verify = self.opts.get("verify-diagnostics")
        # One verifier for the whole file, as in mlir-opt: designators count lines in the file
        # and expectations nobody produced are reported once, at the end. mlir-opt 22 reads the
        # expected-* comments even without --verify-diagnostics and lists them at the end as
        # not produced (its exit code unchanged); so does mlc-opt.
        verifier = Verifier(text, self.name, self.renderer, only_expected=verify == "only-expected")
        self.verifier = verifier if verify else None
        chunks = split_input(text, marker if isinstance(marker, str) else None, warn) if text \
            else [Chunk(data, 1, 1, True)]
        sep = str(self.opts.get("output-split-marker") or DEFAULT_SPLIT_MARKER) + "\n"
        ok = True
        try:
            with self.ctx, ir.Location.unknown(self.ctx):
                for k, chunk in enumerate(chunks):
                    if k:
                        out.write(sep.encode() if self.opts.get("emit-bytecode") else sep)
                    ok &= self._chunk(chunk, out)
        finally:
            self.ctx.allow_unregistered_dialects = self._saved[0]
            if self.opts.get("mlir-disable-threading"):
                self.ctx.enable_multithreading(True)
        verified = verifier.finish()
        return verified if self.verifier is not None else ok

    def _verify(self, diag: Diag) -> None:
        # mlir-opt turns printOpOnDiagnostic off in this mode; the bindings cannot, so the
        # notes it adds are dropped here.
        diag.notes = [n for n in diag.notes if not n.message.startswith("see current operation: ")]
        self.verifier.process(diag)

    def _emit(self, diag: Diag) -> None:
        if self.opts.get("mlir-print-debuginfo"):
            # mlir-opt prints the "current operation" of a note with its location too (the
            # context's printing flags follow the command line there); one-line ops here.
            for n in diag.notes:
                if n.message.startswith("see current operation: ") and "\n" not in n.message:
                    n.message += f" {n.loc.text}"
        self.renderer.emit(diag)

    def _chunk(self, chunk: Chunk, out: TextIO) -> bool:
        sink = self._verify if self.verifier is not None else self._emit
        rename = {"-": self.name}

        def handler(d) -> bool:
            sink(diag_from_mlir(d, rename))
            return True

        handle = self.ctx.attach_diagnostic_handler(handler)
        try:
            module = self._transform(chunk, sink, rename)
            if module is not None:
                self._print(module, out)
        finally:
            handle.detach()
        return module is not None

    def _transform(self, chunk: Chunk, sink, rename: dict[str, str]):
        try:
            module = parse_chunk(chunk)
        except ir.MLIRError as exc:
            for d in exc.error_diagnostics:
                sink(diag_from_mlir(d, rename))
            return None
        _relocate(module, self.name, chunk)
        for st in self.stages:
            try:
                module = self._stage(st, module)
            except ir.MLIRError as exc:
                for d in exc.error_diagnostics:
                    sink(diag_from_mlir(d, rename))
                return None
            except (MlcError, ValueError) as exc:
                line = getattr(exc, "line", None)
                loc = Loc("file", file=self.name, line=line, col=getattr(exc, "col", 1)) if line \
                    else Loc("unknown")
                sink(Diag("error", loc, f"{st.label}: {exc}"))
                return None
        return module

    def _stage(self, st: PipelineStage, module: ir.Module) -> ir.Module:
        if st.kind == "pipeline":
            self.managers[id(st)].run(module.operation)
            return module

        if st.kind == "mlc":
            stage = GraphStage(st.label, get_pass(st.text).run)
        else:
            stage = GraphStage(st.label, lambda m: apply_transform_script(m, self.scripts[st.text]))
        return run_stage(Module(module), stage).mlir_module  # the pipeline's runner (compiler/pipeline.py)

    def _print(self, module: ir.Module, out: TextIO) -> None:
        f = self.opts.flags
        if f.get("emit-bytecode"):
            module.operation.write_bytecode(out)
            return
        buf = io.StringIO()
        module.operation.print(
            large_elements_limit=f.get("mlir-elide-elementsattrs-if-larger"),
            large_resource_limit=f.get("mlir-elide-resource-strings-if-larger"),
            enable_debug_info=bool(f.get("mlir-print-debuginfo") or f.get("mlir-pretty-debuginfo")),
            pretty_debug_info=bool(f.get("mlir-pretty-debuginfo")),
            print_generic_op_form=bool(f.get("mlir-print-op-generic")),
            use_local_scope=bool(f.get("mlir-print-local-scope")),
            use_name_loc_as_prefix=bool(f.get("mlir-use-nameloc-as-prefix")),
            assume_verified=bool(f.get("mlir-print-assume-verified")),
            skip_regions=bool(f.get("mlir-print-skip-regions")), file=buf)
        text = buf.getvalue()
        out.write((text if text.endswith("\n") else text + "\n") + "\n")
