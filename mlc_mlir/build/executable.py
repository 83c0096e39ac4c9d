"""Compiled modules: ``rt["name"](*arrays)``, ``rt.time_evaluator``, ``rt.get_source``."""

from __future__ import annotations

import ctypes
import os
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from mlir import ir
from mlir.execution_engine import ExecutionEngine

from ..errors import ArgumentError, BuildError, MlcError
from ..runtime.memref import numpy_dtype, packed_args
from ..runtime.ndarray import as_numpy
from .abi import FuncSignature
from .pipeline import tool_path

__all__ = ["RuntimeModule", "CompiledFunction", "ProfileResult"]


@dataclass(frozen=True)
class ProfileResult:
    """Timing of a compiled function: seconds per call (``results``: one mean per repeat)."""

    mean: float
    median: float
    min: float
    max: float
    std: float
    results: tuple[float, ...]

    def __str__(self) -> str:
        return (f"ProfileResult(mean={self.mean:.6g}s, median={self.median:.6g}s, "
                f"min={self.min:.6g}s, max={self.max:.6g}s, repeats={len(self.results)})")


class CompiledFunction:
    """One compiled function; call it with arrays (NumPy, ``mlc.runtime`` arrays, DLPack)."""

    def __init__(self, rt: RuntimeModule, sig: FuncSignature, fn: Callable[[Any], None]):
        self._rt = rt
        self.signature = sig
        self._fn = fn
        self._dtypes = [numpy_dtype(a.elem) for a in sig.args]

    @property
    def name(self) -> str:
        return self.signature.name

    def _prepare(self, args: Sequence[Any]) -> list[np.ndarray]:
        sig = self.signature
        if len(args) != len(sig.args):
            raise ArgumentError(f"@{sig.name} takes {len(sig.args)} arguments "
                                f"({', '.join(a.name for a in sig.args)}), got {len(args)}")
        arrays: list[np.ndarray] = []
        bound: dict[str, tuple[int, str]] = {}
        for i, (spec, dtype, value) in enumerate(zip(sig.args, self._dtypes, args)):
            try:
                arr = as_numpy(value)
            except MlcError as exc:
                raise ArgumentError(f"@{sig.name} argument {i} ({spec.name}): {exc}") from None
            where = f"@{sig.name} argument {i} ({spec.name})"
            if arr.dtype != dtype:
                raise ArgumentError(f"{where}: expected dtype {dtype}, got {arr.dtype}")
            if arr.ndim != len(spec.shape):
                raise ArgumentError(f"{where}: expected rank {len(spec.shape)} (shape "
                                    f"{_fmt_shape(spec)}), got shape {arr.shape}")
            for d, (want, sym, got) in enumerate(zip(spec.shape, spec.symbols, arr.shape)):
                if want is not None and want != got:
                    raise ArgumentError(f"{where}: expected shape {_fmt_shape(spec)}, got {arr.shape} "
                                        f"(dimension {d} is {got}, not {want})")
                if sym is not None:
                    if sym in bound and bound[sym][0] != got:
                        raise ArgumentError(f"{where}: dimension {d} is {got} but symbol {sym!r} was "
                                            f"bound to {bound[sym][0]} by {bound[sym][1]}")
                    bound.setdefault(sym, (got, spec.name))
            if not arr.flags.c_contiguous:
                if spec.is_output:
                    raise ArgumentError(f"{where}: output arrays must be C-contiguous")
                arr = np.ascontiguousarray(arr)
            if spec.is_output and not arr.flags.writeable:
                raise ArgumentError(f"{where}: output array is read-only")
            arrays.append(arr)
        self._check_aliasing(arrays)
        return arrays

    def _check_aliasing(self, arrays: list[np.ndarray]) -> None:
        outs = [i for i, a in enumerate(self.signature.args) if a.is_output]
        for o in outs:
            for i, arr in enumerate(arrays):
                if i != o and arr.size and arrays[o].size and np.may_share_memory(arr, arrays[o]):
                    raise ArgumentError(f"@{self.name}: output argument {o} ({self.signature.args[o].name}) "
                                        f"overlaps argument {i} ({self.signature.args[i].name}) in memory")

    def __call__(self, *args: Any) -> None:
        arrays = self._prepare(args)
        packed, keep = packed_args(arrays)
        self._fn(packed)
        del keep
        self._rt._after_call()

    def __repr__(self) -> str:
        params = ", ".join(f"{a.name}: {_fmt_shape(a)}x{a.elem}" for a in self.signature.args)
        return f"<mlc.CompiledFunction @{self.name}({params})>"


def _fmt_shape(spec: Any) -> str:
    dims = [s if s is not None else (sym or "?") for s, sym in zip(spec.shape, spec.symbols)]
    return "(" + ", ".join(str(d) for d in dims) + ("," if len(dims) == 1 else "") + ")"


class RuntimeModule:
    """A JIT-compiled module (the course's ``tvm.build`` result)."""

    def __init__(self, *, engine: ExecutionEngine, signatures: dict[str, FuncSignature],
                 lowered: ir.Module, source: str, target: str,
                 after_call: Callable[[], None] | None = None, keep_alive: Sequence[Any] = ()):
        self.engine = engine
        self.signatures = signatures
        self._lowered = lowered
        self._source = source
        self.target = target
        self._after = after_call
        self._keep_alive = list(keep_alive)
        self._funcs: dict[str, CompiledFunction] = {}

    def _after_call(self) -> None:
        if self._after is not None:
            self._after()

    @property
    def functions(self) -> list[str]:
        return list(self.signatures)

    def __getitem__(self, name: str) -> CompiledFunction:
        if name not in self._funcs:
            if name not in self.signatures:
                raise MlcError(f"the built module has no public function {name!r}; it has {self.functions}")
            raw = self.engine.raw_lookup("_mlir_ciface_" + name)
            if not raw:
                raise BuildError(f"compiled code has no symbol for @{name}")
            fn = ctypes.CFUNCTYPE(None, ctypes.c_void_p)(raw)
            self._funcs[name] = CompiledFunction(self, self.signatures[name], fn)
        return self._funcs[name]

    def __contains__(self, name: str) -> bool:
        return name in self.signatures

    def time_evaluator(self, name: str, dev: Any = None, *, number: int = 10, repeat: int = 1,
                       min_repeat_ms: float = 0.0) -> Callable[..., ProfileResult]:
        """A function that runs ``name`` ``number`` times per repeat and reports seconds per call.

        Arguments are checked and marshalled once, outside the timed region.
        """
        if number < 1 or repeat < 1:
            raise MlcError(f"time_evaluator: number and repeat must be >= 1, got {number}, {repeat}")
        func = self[name]

        def evaluate(*args: Any) -> ProfileResult:
            arrays = func._prepare(args)
            packed, keep = packed_args(arrays)
            func._fn(packed)  # warm-up
            self._after_call()
            results = []
            for _ in range(repeat):
                n = number
                while True:
                    t0 = time.perf_counter()
                    for _ in range(n):
                        func._fn(packed)
                    dt = time.perf_counter() - t0
                    if dt * 1e3 >= min_repeat_ms or n > 1 << 24:
                        break
                    n *= 2
                results.append(dt / n)
            self._after_call()
            del keep
            return ProfileResult(statistics.fmean(results), statistics.median(results), min(results),
                                 max(results), statistics.pstdev(results), tuple(results))

        return evaluate

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
