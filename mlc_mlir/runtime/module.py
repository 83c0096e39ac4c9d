"""Compiled modules as the runtime calls them: ``rt["name"](*arrays)``, ``rt.time_evaluator``.

A :class:`RuntimeModule` finds its functions through a symbol lookup and calls them
through the fast entries (:mod:`.fastcall`) or the checked Python path. Needs no MLIR:
the compiler's backends (``mlc_mlir.compiler.cpu_backend``...) make one from the JIT.
"""

from __future__ import annotations

import ctypes
import os
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import ArgumentError, BuildError, MlcError
from .checks import check_arity, check_array
from .fastcall import FastPlan, entry_address, make_builtin
from .memref import numpy_dtype, packed_args
from .ndarray import as_numpy
from .signature import FuncSignature

__all__ = ["RuntimeModule", "CompiledFunction", "ProfileResult", "measure", "check_timing"]


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


def check_timing(number: Any, repeat: Any, min_repeat_ms: Any) -> None:
    """MlcError unless ``number``/``repeat`` are ints >= 1 and ``min_repeat_ms`` a number >= 0."""
    for what, value in (("number", number), ("repeat", repeat)):
        if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value < 1:
            raise MlcError(f"time_evaluator: {what} must be an int >= 1, got {value!r}")
    if not isinstance(min_repeat_ms, (int, float)) or min_repeat_ms < 0:
        raise MlcError(f"time_evaluator: min_repeat_ms must be a number >= 0, got {min_repeat_ms!r}")


def measure(run: Callable[[], Any], *, number: int, repeat: int, min_repeat_ms: float) -> ProfileResult:
    """Seconds per ``run()``: ``repeat`` loops of ``number`` calls (doubled until a loop lasts
    ``min_repeat_ms``), one mean per loop."""
    results = []
    for _ in range(repeat):
        n = number
        while True:
            t0 = time.perf_counter()
            for _ in range(n):
                run()
            dt = time.perf_counter() - t0
            if dt * 1e3 >= min_repeat_ms or n > 1 << 24:
                break
            n *= 2
        results.append(dt / n)
    return ProfileResult(statistics.fmean(results), statistics.median(results), min(results), max(results),
                         statistics.pstdev(results), tuple(results))


class CompiledFunction:
    """One compiled function; call it with arrays (NumPy, ``mlc.runtime`` arrays, DLPack).

    Calls with exact C-contiguous NumPy arrays that match the signature run through a
    JIT-compiled builtin that makes every check in native code (:mod:`.fastcall`); any
    other call takes :meth:`call_checked`, which converts what it can and raises the same
    :class:`ArgumentError` for what it cannot.
    """

    def __new__(cls, *args: Any, **kwargs: Any) -> CompiledFunction:
        # each function a class of its own, so that its __call__ can be the builtin entry
        # itself (a builtin class attribute is called without a Python frame in between)
        return object.__new__(type(cls.__name__, (cls,), {"__module__": cls.__module__}))

    def __init__(self, rt: RuntimeModule, sig: FuncSignature, fn: Callable[[Any], None]):
        self._rt = rt
        self.signature = sig
        self._fn = fn
        #: the builtin entry, called by :meth:`call_checked` with the prepared arrays
        #: (its fallback is the ctypes call, so it never comes back here)
        self._direct: Callable[..., None] | None = None
        try:
            self._dtypes = [numpy_dtype(a.elem) for a in sig.args]
        except ArgumentError as exc:
            raise ArgumentError(f"@{sig.name} cannot be called from Python: {exc}") from None

    @property
    def name(self) -> str:
        return self.signature.name

    def _prepare(self, args: Sequence[Any]) -> list[np.ndarray]:
        sig = self.signature
        check_arity(sig.name, [a.name for a in sig.args], args)
        checked: list[tuple[str, Any, np.ndarray]] = []
        bound: dict[str, tuple[int, str]] = {}
        for i, (spec, dtype, value) in enumerate(zip(sig.args, self._dtypes, args)):
            where = f"@{sig.name} argument {i} ({spec.name})"
            try:
                arr = as_numpy(value)
            except MlcError as exc:
                raise ArgumentError(f"{where}: {exc}") from None
            check_array(where, arr, dtype, spec.shape, _fmt_shape(spec), symbols=spec.symbols, bound=bound,
                        owner=spec.name)
            if spec.is_output:
                arr = _laid_out(where, spec, arr)  # never copied: refused unless usable as is
            checked.append((where, spec, arr))
        # Every argument checked (dtype, shape, symbols bound across arguments, outputs): only
        # now are inputs copied into the layout the code reads, so a call the checks refuse
        # never pays for a copy (a huge zero-stride view would be NumPy's MemoryError).
        arrays = [arr if spec.is_output else _laid_out(where, spec, arr) for where, spec, arr in checked]
        self._check_aliasing(arrays)
        return arrays

    def _check_aliasing(self, arrays: list[np.ndarray]) -> None:
        outs = [i for i, a in enumerate(self.signature.args) if a.is_output]
        for o in outs:
            for i, arr in enumerate(arrays):
                if i != o and arr.size and arrays[o].size and np.may_share_memory(arr, arrays[o]):
                    raise ArgumentError(f"@{self.name}: output argument {o} ({self.signature.args[o].name}) "
                                        f"overlaps argument {i} ({self.signature.args[i].name}) in memory")

    def _packed(self, arrays: list[np.ndarray]) -> tuple[Any, list[object]]:
        offsets = [a.offset or 0 for a in self.signature.args]
        return packed_args(arrays, offsets)

    def call_checked(self, *args: Any) -> None:
        """Run with the arguments checked and converted in Python (the path of every unusual call)."""
        arrays = self._prepare(args)
        if self._direct is not None:
            self._direct(*arrays)
        else:
            self._call_packed(*arrays)
        self._rt._after_call()

    def _call_packed(self, *arrays: np.ndarray) -> None:
        """Run on prepared arrays through the ``_mlir_ciface_`` wrapper (memref descriptors)."""
        packed, keep = self._packed(list(arrays))
        self._fn(packed)
        del keep

    def __call__(self, *args: Any) -> None:
        self.call_checked(*args)

    def __repr__(self) -> str:
        params = ", ".join(f"{a.name}: {_fmt_shape(a)}x{a.elem}" for a in self.signature.args)
        return f"<mlc.CompiledFunction @{self.name}({params})>"


def _laid_out(where: str, spec: Any, arr: np.ndarray) -> np.ndarray:
    """``arr`` in the layout the compiled code accesses (C-contiguous or the declared
    strides, aligned elements): as is, or for an input a copy; an output must already be."""
    try:
        if spec.strides is not None:
            arr = _strided(where, spec, arr)
        elif not arr.flags.c_contiguous:
            if spec.is_output:
                raise ArgumentError(f"{where}: output arrays must be C-contiguous")
            arr = np.ascontiguousarray(arr)
        if not arr.flags.aligned:  # compiled code may use aligned vector accesses
            if spec.is_output:
                raise ArgumentError(f"{where}: output array is not aligned to its {arr.itemsize}-byte elements")
            arr = arr.copy()
    except MemoryError:
        raise ArgumentError(f"{where}: the code reads a contiguous copy of this {arr.dtype} array of shape "
                            f"{arr.shape} ({arr.size * arr.itemsize / 2**30:.3g} GiB), which cannot be "
                            "allocated; pass a C-contiguous array") from None
    if spec.is_output and not arr.flags.writeable:
        raise ArgumentError(f"{where}: output array is read-only")
    return arr


def _strided(where: str, spec: Any, arr: np.ndarray) -> np.ndarray:
    """``arr`` as the memref layout ``spec.strides`` declares: as is, or (inputs) a copy laid out so."""
    def fits(a: np.ndarray) -> bool:
        return all(want is None or n <= 1 or (s % a.itemsize == 0 and s // a.itemsize == want)
                   for want, n, s in zip(spec.strides, a.shape, a.strides))

    if fits(arr):
        return arr
    layout = "strided<[" + ", ".join("?" if s is None else str(s) for s in spec.strides) + "]>"
    got = tuple(s // arr.itemsize for s in arr.strides)
    if spec.is_output or None in spec.strides or any(s < 0 for s in spec.strides):
        raise ArgumentError(f"{where}: the function accesses this argument with layout {layout}, but the "
                            f"array's strides are {got} elements; pass an array with those strides")
    span = 1 + sum((n - 1) * s for n, s in zip(arr.shape, spec.strides)) if arr.size else 0
    buf = np.empty(span, arr.dtype)
    out = np.lib.stride_tricks.as_strided(buf, arr.shape, [s * arr.itemsize for s in spec.strides])
    out[...] = arr
    return out


def _fmt_shape(spec: Any) -> str:
    dims = [s if s is not None else (sym or "?") for s, sym in zip(spec.shape, spec.symbols)]
    return "(" + ", ".join(str(d) for d in dims) + ("," if len(dims) == 1 else "") + ")"


class RuntimeModule:
    """Compiled code that can be called (the course's ``tvm.build`` result): its functions by
    name, each with its signature, found through ``lookup``.

    Args:
        lookup: symbol name -> address of the packed ``_mlir_`` wrapper in the loaded code
            (0 when absent): ``_mlir_ciface_<name>`` for each function, the fast entries'
            address getters.
        signatures: the public functions' signatures.
        target: the target the code was compiled for (text).
        after_call: run after every call of a compiled function.
        keep_alive: what the code needs alive (the loaded code itself, callbacks).
        fast_plans: the functions that have a fast entry, and what it checks.
    """

    def __init__(self, *, lookup: Callable[[str], int], signatures: dict[str, FuncSignature], target: str,
                 after_call: Callable[[], None] | None = None, keep_alive: Sequence[Any] = (),
                 fast_plans: dict[str, FastPlan] | None = None):
        self._lookup = lookup
        self._fast_plans = dict(fast_plans or {})
        self.signatures = signatures
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
        if not isinstance(name, str):
            raise MlcError(f"compiled functions are looked up by name (a str), got {name!r}")
        if name not in self._funcs:
            if name not in self.signatures:
                raise MlcError(f"the built module has no public function {name!r}; it has {self.functions}")
            raw = self._lookup("_mlir_ciface_" + name)
            if not raw:
                raise BuildError(f"compiled code has no symbol for @{name}")
            fn = ctypes.CFUNCTYPE(None, ctypes.c_void_p)(raw)
            func = CompiledFunction(self, self.signatures[name], fn)
            func._direct = self.fast_entry(name, func._call_packed)
            builtin = self.fast_entry(name, func.call_checked, after=self._after)
            if builtin is not None:  # its own class's __call__ is the builtin
                type(func).__call__ = builtin
            self._funcs[name] = func
        return self._funcs[name]

    def fast_entry(self, name: str, fallback: Callable[..., Any], *,
                   after: Callable[[], Any] | None = None) -> Callable[..., None] | None:
        """A builtin running ``name`` with its checks compiled in; calls it declines go to ``fallback``.

        None when the function has no fast entry (a non-identity layout, an unverified
        NumPy layout). ``after`` runs after each call the builtin makes itself.
        """
        plan = self._fast_plans.get(name)
        if plan is None:
            return None
        address = entry_address(self._lookup, plan)
        if not address:
            raise BuildError(f"compiled code has no symbol {plan.entry}")
        return make_builtin(address, name, fallback, (*self._keep_alive, self), after)

    def __contains__(self, name: str) -> bool:
        return name in self.signatures

    def time_evaluator(self, name: str, dev: Any = None, *, number: int = 10, repeat: int = 1,
                       min_repeat_ms: float = 0.0) -> Callable[..., ProfileResult]:
        """A function that runs ``name`` ``number`` times per repeat and reports seconds per call.

        Arguments are checked and marshalled once, outside the timed region.
        """
        check_timing(number, repeat, min_repeat_ms)
        func = self[name]

        def evaluate(*args: Any) -> ProfileResult:
            arrays = func._prepare(args)
            packed, keep = func._packed(arrays)
            func._fn(packed)  # warm-up
            self._after_call()
            result = measure(lambda: func._fn(packed), number=number, repeat=repeat, min_repeat_ms=min_repeat_ms)
            self._after_call()
            del keep
            return result

        return evaluate

    def get_source(self, fmt: str = "llvm") -> str:
        """The module keeps no sources (see the compiler's ``JitModule``)."""
        raise MlcError(f"get_source({fmt!r}): this module keeps no sources, only compiled code")

    def export_library(self, path: str | os.PathLike[str]) -> None:
        """Write the compiled code, its signatures and constants as one shared library (course
        ``export_library``); :func:`mlc_mlir.runtime.load_module` loads it back, without MLIR.

        ``path`` ending in ``.o`` (``.ll``) writes the object code (LLVM IR) alone.

        Raises:
            BuildError: a module that cannot be exported (CUDA, no C compiler, see
                ``mlc_mlir.compiler.export``).
        """
        self._export_library(os.fspath(path), None)

    def _export_library(self, path: str, graph: Any = None) -> None:
        """Write the library; ``graph`` is the ``Executable`` this module runs, if any. Here: the
        module has nothing to export (the compiler's modules and loaded libraries override it)."""
        raise BuildError(f"export_library: this {type(self).__name__} holds no code that can be exported "
                         "(build it with mlc.build or load it with mlc.runtime.load_module)")
