"""The JIT's compiled module: a :class:`~mlc_mlir.runtime.module.RuntimeModule` over an
MLIR ``ExecutionEngine``, with the sources of its pipeline (``rt.get_source``)."""

from __future__ import annotations

import os
import subprocess
import tempfile
from collections.abc import Callable, Sequence
from typing import Any

from mlir import ir
from mlir.execution_engine import ExecutionEngine

from ..errors import BuildError, MlcError
from ..runtime.fastcall import FastPlan
from ..runtime.module import RuntimeModule
from ..runtime.signature import FuncSignature
from ..toolchain import tool_path
from .export import export_library

__all__ = ["JitModule"]


class JitModule(RuntimeModule):
    """A JIT-compiled module (the course's ``tvm.build`` result): the engine keeps the code."""

    def __init__(self, *, engine: ExecutionEngine | None, signatures: dict[str, FuncSignature],
                 lowered: ir.Module, source: str, target: str,
                 after_call: Callable[[], None] | None = None, keep_alive: Sequence[Any] = (),
                 fast_plans: dict[str, FastPlan] | None = None):
        lookup = engine.raw_lookup if engine is not None else (lambda name: 0)  # compile-only (CUDA)
        super().__init__(lookup=lookup, signatures=signatures, target=target, after_call=after_call,
                         keep_alive=[engine, *keep_alive], fast_plans=fast_plans)
        self.engine = engine
        self._lowered = lowered
        self._source = source

    def get_source(self, fmt: str = "llvm") -> str:
        """Source of the compiled code.

        ``"mlir"`` (input), ``"llvm-dialect"`` (after the pipeline), ``"llvm"`` (LLVM IR
        handed to the JIT, before its O3 middle end), ``"asm"`` (the disassembled machine
        code the JIT runs: its object file, after O3 and instruction selection for the
        target's CPU).
        """
        if fmt == "mlir":
            return self._source
        if fmt == "llvm-dialect":
            return str(self._lowered)
        if fmt in ("llvm", "ll"):
            return _run_tool(["mlir-translate", "--mlir-to-llvmir"], str(self._lowered))
        if fmt in ("asm", "s"):
            return _jit_disassembly(self.engine)
        raise MlcError(f"get_source: unknown format {fmt!r}; use 'mlir', 'llvm-dialect', 'llvm' or 'asm'")

    def _export_library(self, path: str, graph: Any = None) -> None:
        """Write the library (:mod:`.export`); ``graph``: the ``Executable`` this module runs."""
        export_library(self, path, graph)


def _jit_disassembly(engine: ExecutionEngine) -> str:
    """``llvm-objdump -d`` of the object file the JIT compiled (built with ``enable_object_dump``)."""
    with tempfile.TemporaryDirectory(prefix="mlc-asm-") as tmp:
        path = os.path.join(tmp, "jit.o")
        engine.dump_to_object_file(path)
        if not os.path.isfile(path) or os.path.getsize(path) == 0:
            raise BuildError("get_source('asm'): the JIT kept no object file (engine built without object dump)")
        argv = [tool_path("llvm-objdump"), "-d", "--no-show-raw-insn", "--symbolize-operands", path]
        proc = subprocess.run(argv, capture_output=True, text=True)
    if proc.returncode != 0:
        raise BuildError(f"{' '.join(argv)} failed (exit {proc.returncode}):\n{proc.stderr}")
    return proc.stdout.replace(path, "<jit>")


def _run_tool(cmd: list[str], stdin: str) -> str:
    argv = [tool_path(cmd[0]), *cmd[1:]]
    proc = subprocess.run(argv, input=stdin, capture_output=True, text=True)
    if proc.returncode != 0:
        raise BuildError(f"{' '.join(argv)} failed (exit {proc.returncode}):\n{proc.stderr}")
    return proc.stdout
