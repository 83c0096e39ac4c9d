"""The virtual machine's run-time half: call the graph functions of a built
:class:`Executable` (course ``relax.VirtualMachine``). Needs no MLIR.

    vm = mlc.graph.VirtualMachine(ex, mlc.cpu())
    out = vm["main"](x, w0, b0, w1, b1)          # an mlc NDArray; out.numpy()

The virtual machine checks the inputs, binds symbolic dimensions, checks them against
the static sizes of the tensor programs ``call_tir`` calls (a kernel compiled for
``(2, 3)`` called with ``x: (n, 3)`` needs ``n == 2``), allocates fresh outputs for every
call and returns them as ``mlc.runtime.NDArray``. A call with exact C-contiguous NumPy
inputs runs through generated code: output allocation from the input shapes, then the
compiled function's builtin entry (:mod:`.fastcall`), which makes every check in native
code; any call it declines takes :meth:`GraphFunction.call_checked`. Environment
functions (Python) are called back from the compiled code through :func:`make_callback`.
The compiler side (``mlc.graph.build``) makes the :class:`Executable`.
"""

from __future__ import annotations

import ctypes
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import ArgumentError, BuildError, GraphError, RuntimeError_
from . import cuda_device as cu
from .checks import check_arity, check_array
from .memref import descriptor_class, view
from .module import ProfileResult, RuntimeModule, check_timing, measure
from .ndarray import Device, NDArray, as_numpy, cpu
from .registry import get_func

__all__ = ["TensorSpec", "GraphSignature", "MemoryPlan", "EnvCall", "CallbackErrors", "make_callback", "Executable",
           "VirtualMachine", "GraphFunction", "CudaGraphFunction", "ExtentCheck"]

#: a symbol a called tensor program fixes: (symbol, static size, "@callee argument k dimension d")
ExtentCheck = tuple[str, int, str]
#: a symbolic shape: static sizes and symbol names
Shape = tuple[int | str, ...]


def format_shape(shape: Shape) -> str:
    """A shape as text: ``(1, m)``, ``(4,)``."""
    return "(" + ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "") + ")"


@dataclass(frozen=True)
class TensorSpec:
    """Name, symbolic shape and dtype of a graph function input or output."""

    name: str
    shape: Shape
    dtype: str


@dataclass(frozen=True)
class GraphSignature:
    """A lowered graph function: its inputs and the outputs the executor allocates."""

    name: str
    inputs: tuple[TensorSpec, ...]
    outputs: tuple[TensorSpec, ...]


@dataclass(frozen=True)
class MemoryPlan:
    """How a graph function's intermediates are held (``ex.memory_plan["main"]``; the
    build's ``memory-plan`` stage, TVM's static memory planning): bytes, 64-aligned.

    ``intermediates`` tensors between kernels in ``buffers`` allocations: one arena for
    the planned ones, and ``dynamic`` allocated on their own and not counted in the byte
    figures (a size known at call time only, as with a symbolic batch, or a buffer the
    plan cannot take); ``planned_bytes``: the most the buffers hold at once; ``live_bytes``: the
    most the tensors themselves hold at once (a lower bound for any plan); ``total_bytes``:
    all tensors, one allocation each; ``scratch_bytes``: the most a called kernel allocates
    for itself (its static buffers, inside a parallel loop once per core); ``peak_bytes``:
    the most held at once during a call, the buffers and the running kernel's scratch
    (besides the inputs, outputs and weights).
    """

    intermediates: int
    buffers: int
    dynamic: int
    planned_bytes: int
    live_bytes: int
    total_bytes: int
    scratch_bytes: int
    peak_bytes: int

    def to_json(self) -> dict[str, int]:
        return dict(self.__dict__)

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> MemoryPlan:
        return cls(**{k: int(obj[k]) for k in cls.__dataclass_fields__})

    def __str__(self) -> str:
        mb = lambda n: f"{n / 2**20:.1f} MB"  # noqa: E731
        dyn = f" ({self.dynamic} of dynamic size)" if self.dynamic else ""
        return (f"{self.intermediates} intermediates in {self.buffers} buffers{dyn}: peak {mb(self.peak_bytes)} "
                f"(buffers {mb(self.planned_bytes)}, kernel scratch up to {mb(self.scratch_bytes)}); "
                f"the tensors alone {mb(self.live_bytes)} live at once, {mb(self.total_bytes)} in all")


@dataclass(frozen=True)
class EnvCall:
    """An external function of the lowered module that calls environment function ``name``.

    ``args`` lists (rank, dtype) of each memref argument (inputs..., output).
    """

    symbol: str
    name: str
    args: tuple[tuple[int, str], ...]


class CallbackErrors:
    """Exceptions raised inside environment functions during one compiled call (per thread)."""

    def __init__(self) -> None:
        self._local = threading.local()

    @property
    def errors(self) -> list[tuple[str, BaseException]]:
        if not hasattr(self._local, "errors"):
            self._local.errors = []
        return self._local.errors

    def reraise(self) -> None:
        if self.errors:
            name, exc = self.errors[0]
            self.errors.clear()
            if not isinstance(exc, Exception):  # KeyboardInterrupt, SystemExit: not an error of the call
                raise exc
            raise RuntimeError_(f"environment function {name!r} raised {type(exc).__name__}: {exc}") from exc


def make_callback(call: EnvCall, errors: CallbackErrors) -> Any:
    """A ctypes function ``void(desc*...)`` that calls the Python function registered as ``call.name``."""
    dtypes = [np.dtype(d) for _, d in call.args]
    ranks = [r for r, _ in call.args]
    proto = ctypes.CFUNCTYPE(None, *[ctypes.POINTER(descriptor_class(r, dt)) for r, dt in zip(ranks, dtypes)])
    name = call.name

    def callback(*ptrs: Any) -> None:
        if errors.errors:  # an earlier callback of this call failed: skip the rest
            return
        try:
            arrays = [view(p, dt, r) for p, dt, r in zip(ptrs, dtypes, ranks)]
            get_func(name)(*arrays)
        except BaseException as exc:  # noqa: BLE001 - must not unwind through compiled code
            errors.errors.append((name, exc))

    return proto(callback)


class Executable:
    """A built graph module (course ``relax.Executable``): compiled code plus signatures."""

    def __init__(self, rt: RuntimeModule, signatures: dict[str, GraphSignature], env_calls: list[EnvCall],
                 errors: CallbackErrors, source: Any, optimized: Any = None,
                 extent_checks: dict[str, tuple[ExtentCheck, ...]] | None = None,
                 memory_plan: dict[str, MemoryPlan] | None = None):
        self.rt = rt
        #: per graph function: how its intermediates are held (:class:`MemoryPlan`)
        self.memory_plan = dict(memory_plan or {})
        #: per graph function: symbols that a called tensor program fixes to a static size
        self.extent_checks = dict(extent_checks or {})
        #: the module after graph optimization and legalization (before lowering)
        self.optimized = optimized
        self.signatures = signatures
        self.env_calls = env_calls
        self._errors = errors
        self.source = source

    @property
    def functions(self) -> list[str]:
        """Names of the graph functions that can be called."""
        return list(self.signatures)

    def get_source(self, fmt: str = "llvm") -> str:
        """The compiled code (``"mlir"``: lowered input, ``"llvm"``, ``"asm"``...; see ``mlc.build``)."""
        return self.rt.get_source(fmt)

    def export_library(self, path: str | os.PathLike[str]) -> None:
        """Write the compiled graph (code, weights, signatures) as one shared library;
        ``mlc.runtime.load_module(path)`` gives back an Executable, without MLIR.

        Raises:
            BuildError: the graph calls environment functions (Python), or its module
                cannot be exported (see :meth:`RuntimeModule.export_library`).
        """
        if self.env_calls:
            names = sorted({c.name for c in self.env_calls})
            raise BuildError(f"export_library: the graph calls Python environment functions {names} "
                             "(call_dps_packed), which a library cannot carry; write them as tensor programs "
                             "(call_tir, emit_te) or graph ops to export the graph")
        self.rt._export_library(os.fspath(path), self)

    def __repr__(self) -> str:
        return f"<mlc.graph.Executable functions={self.functions}>"


class GraphFunction:
    """A callable graph function of a :class:`VirtualMachine`: ``f(*inputs) -> output(s)``."""

    def __new__(cls, *args: Any, **kwargs: Any) -> GraphFunction:
        # each function a class of its own, so that its __call__ can be generated code
        return object.__new__(type(cls.__name__, (cls,), {"__module__": cls.__module__}))

    def __init__(self, ex: Executable, sig: GraphSignature, device: Device):
        self.signature = sig
        self._compiled = ex.rt[sig.name]
        self._device = device
        self._checks = ex.extent_checks.get(sig.name, ())
        fast = ex.rt.fast_entry(sig.name, self._declined, after=ex.rt._after_call if ex.env_calls else None)
        if fast is not None:  # this instance's own class: its __call__ is generated code
            type(self).__call__ = _fast_call(self, fast)

    def _bind(self, arrays: list[np.ndarray]) -> dict[str, int]:
        sig = self.signature
        symbols: dict[str, int] = {}
        for i, (spec, arr) in enumerate(zip(sig.inputs, arrays)):
            where = f"@{sig.name} input {i} ({spec.name})"
            if arr.ndim != len(spec.shape):
                raise ArgumentError(f"{where}: expected shape {format_shape(spec.shape)}, got {arr.shape}")
            static = [w if isinstance(w, int) else None for w in spec.shape]
            check_array(where, arr, spec.dtype, static, format_shape(spec.shape))
            for d, (want, got) in enumerate(zip(spec.shape, arr.shape)):
                if not isinstance(want, int) and symbols.setdefault(want, got) != got:
                    raise ArgumentError(f"{where}: dimension {d} is {got} but {want} = {symbols[want]} "
                                        "from an earlier input")
        for sym, size, what in self._checks:
            if symbols.get(sym, size) != size:
                i, d = next((i, d) for i, s in enumerate(sig.inputs) for d, w in enumerate(s.shape) if w == sym)
                raise ArgumentError(f"@{sig.name} input {i} ({sig.inputs[i].name}): dimension {d} is "
                                    f"{symbols[sym]}, but {sym} must be {size}: {what} is compiled for "
                                    f"size {size}")
        return symbols

    def _inputs(self, args: tuple) -> list[np.ndarray]:
        sig = self.signature
        check_arity(sig.name, [s.name for s in sig.inputs], args, "input(s)")
        arrays = []
        for i, a in enumerate(args):
            try:
                arrays.append(as_numpy(a))
            except Exception as exc:  # noqa: BLE001 - any failure to view the argument
                raise ArgumentError(f"@{sig.name} input {i} ({sig.inputs[i].name}): {exc}") from None
        return arrays

    def _declined(self, *args: Any) -> None:
        """The builtin's fallback (inputs and outputs): the VM's checks, then the compiled function's."""
        self._bind(self._inputs(args[:len(self.signature.inputs)]))
        self._compiled.call_checked(*args)

    def call_checked(self, *args: Any) -> NDArray | tuple[NDArray, ...]:
        """Run with every check and conversion in Python (the path of every call the fast path declines)."""
        sig = self.signature
        arrays = self._inputs(args)
        symbols = self._bind(arrays)
        outs = []
        for k, spec in enumerate(sig.outputs):
            shape = tuple(d if isinstance(d, int) else symbols[d] for d in spec.shape)
            try:
                outs.append(np.empty(shape, dtype=np.dtype(spec.dtype)))
            except (MemoryError, ValueError) as exc:
                raise RuntimeError_(f"@{sig.name}: cannot allocate output {k} of shape {shape} "
                                    f"{spec.dtype}: {type(exc).__name__}: {exc}") from None
        self._compiled.call_checked(*arrays, *outs)
        results = tuple(NDArray._wrap(o, self._device) for o in outs)
        return results[0] if len(results) == 1 else results

    def __call__(self, *args: Any) -> NDArray | tuple[NDArray, ...]:
        return self.call_checked(*args)

    def __repr__(self) -> str:
        ins = ", ".join(f"{s.name}: {format_shape(s.shape)} {s.dtype}" for s in self.signature.inputs)
        return f"<mlc.graph function @{self.signature.name}({ins})>"


def _fast_call(gf: GraphFunction, fast: Callable[..., None]) -> Callable[..., Any]:
    """``__call__`` of ``gf`` as generated code: allocate outputs from input shapes, call ``fast``.

    Anything unexpected (wrong arity, an input without a usable ``shape``, a fixed extent
    that differs, an allocation that fails) goes to :meth:`GraphFunction.call_checked`,
    which raises the precise error; the builtin checks everything else.
    """
    sig = gf.signature
    n = len(sig.inputs)
    where = {}
    for i, spec in enumerate(sig.inputs):
        for d, dim in enumerate(spec.shape):
            if isinstance(dim, str):
                where.setdefault(dim, f"a{i}.shape[{d}]")
    env = {"_fast": fast, "_empty": np.empty, "_new": object.__new__, "_NDArray": NDArray, "_dev": gf._device}
    names = [f"a{i}" for i in range(n)]
    lines = ["def __call__(self, *args):", f"    if len(args) != {n}:", "        return self.call_checked(*args)",
             "    try:", f"        {''.join(x + ', ' for x in names)}= args"]
    for sym, size, _ in gf._checks:
        lines += [f"        if {where[sym]} != {size}:", "            return self.call_checked(*args)"]
    outs = []
    for k, spec in enumerate(sig.outputs):
        env[f"_dt{k}"] = np.dtype(spec.dtype)
        dims = ", ".join(str(d) if isinstance(d, int) else where[d] for d in spec.shape)
        lines.append(f"        o{k} = _empty(({dims}{',' if len(spec.shape) == 1 else ''}), _dt{k})")
        outs.append(f"o{k}")
    lines += ["    except Exception:", "        return self.call_checked(*args)",
              f"    _fast({', '.join(names + outs)})"]
    for o in outs:  # NDArray._wrap, inlined
        lines += [f"    r{o} = _new(_NDArray)", f"    r{o}.device = _dev", f"    r{o}._data = {o}"]
    lines.append(f"    return {'r' + outs[0] if len(outs) == 1 else '(' + ', '.join('r' + o for o in outs) + ',)'}")
    exec("\n".join(lines) + "\n", env)  # noqa: S102 - code generated from the signature only
    return env["__call__"]


class VirtualMachine:
    """Runs the graph functions of an :class:`Executable` (course ``relax.VirtualMachine``).

    Args:
        ex: the result of :func:`build`, or of ``mlc.runtime.load_module`` on a library it exported.
        device: ``mlc.cpu()`` (the only device graphs run on here).
    """

    def __init__(self, ex: Executable | RuntimeModule, device: Device | None = None):
        if isinstance(ex, RuntimeModule):  # (typed as TVM's: load_module's result may be either)
            raise GraphError(f"VirtualMachine runs graphs (mlc.graph.build, or a library their export_library "
                             f"wrote); this module has tensor programs only: call them as module[name](...) "
                             f"({', '.join(ex.functions)})")
        if not isinstance(ex, Executable):
            raise GraphError(f"VirtualMachine expects the Executable of mlc.graph.build, got {type(ex).__name__}")
        device = device or cpu()
        if not isinstance(device, Device) or device.kind not in ("cpu", "cuda"):
            raise GraphError(f"VirtualMachine: graphs run on mlc.cpu() or mlc.cuda(i), got {device!r}")
        if (device.kind == "cuda") != str(ex.rt.target).startswith("cuda"):
            raise GraphError(f"VirtualMachine: the executable was built for {ex.rt.target!r}, not for {device}")
        self.executable = ex
        self.device = device
        self._funcs: dict[str, GraphFunction] = {}

    @property
    def module(self) -> VirtualMachine:
        """The course's ``vm.module`` (TVM's runtime module of the VM): here the VM itself, so
        ``vm.module.time_evaluator("main", dev)(x)`` and ``vm.module["main"]`` work."""
        return self

    def time_evaluator(self, name: str, dev: Device | None = None, *, number: int = 10, repeat: int = 1,
                       min_repeat_ms: float = 0.0) -> Callable[..., ProfileResult]:
        """A function of the inputs that times ``vm[name](*inputs)`` (checks, output allocation and
        the compiled call), as the course's ``vm.module.time_evaluator("main", tvm.cpu())(x)``.

        ``mlc.runtime`` arrays are viewed as NumPy arrays once, before timing; ``dev`` is
        accepted for the course's spelling (the VM's own device runs the code).
        """
        check_timing(number, repeat, min_repeat_ms)
        func = self[name]

        def evaluate(*args: Any) -> ProfileResult:
            inputs = [a._data if type(a) is NDArray else a for a in args]
            func(*inputs)  # warm-up, and the checks: an argument error is raised here
            return measure(lambda: func(*inputs), number=number, repeat=repeat, min_repeat_ms=min_repeat_ms)

        return evaluate

    def __getitem__(self, name: str) -> Callable[..., Any]:
        if name not in self._funcs:
            if name not in self.executable.signatures:
                raise GraphError(f"the executable has no graph function {name!r}; it has "
                                 f"{self.executable.functions}")

            kind = CudaGraphFunction if self.device.kind == "cuda" else GraphFunction
            self._funcs[name] = kind(self.executable, self.executable.signatures[name], self.device)
        return self._funcs[name]


class CudaGraphFunction:
    """A graph function on a CUDA device: ``f(*inputs) -> CudaNDArray(s)``."""

    def __init__(self, ex: Any, sig: Any, device: Device):
        self.signature = sig
        self._compiled = ex.rt[sig.name]
        self._device = device

    def __call__(self, *args: Any) -> Any:
        sig = self.signature
        if len(args) != len(sig.inputs):
            names = ", ".join(s.name for s in sig.inputs)
            raise ArgumentError(f"@{sig.name} takes {len(sig.inputs)} input(s) ({names}), got {len(args)}")

        views = [(a if isinstance(a, cu.CudaNDArray) else cu.from_dlpack(a)) if cu.is_cuda_array(a)
                 else as_numpy(a) for a in args]
        # dtypes and shapes checked before a host array is copied: a wrong call never pays
        # for the copy (a huge zero-stride view would be NumPy's MemoryError)
        self._compiled._check([v.shape for v in views], [v.dtype for v in views])
        arrays = [v if isinstance(v, cu.CudaNDArray) else self._to_device(i, v) for i, v in enumerate(views)]
        symbols: dict[str, int] = {}
        for spec, arr in zip(sig.inputs, arrays):
            for want, got in zip(spec.shape, arr.shape):
                if not isinstance(want, int):
                    symbols.setdefault(want, got)
        outs = [cu.cuda_empty(tuple(d if isinstance(d, int) else symbols.get(d, -1) for d in spec.shape),
                              np.dtype(spec.dtype), self._device) for spec in sig.outputs]
        self._compiled(*arrays, *outs)  # checks shapes and dtypes against the signature
        return outs[0] if len(outs) == 1 else tuple(outs)

    def _to_device(self, i: int, host: np.ndarray) -> cu.CudaNDArray:
        try:
            return cu.cuda_array(np.ascontiguousarray(host), self._device)
        except MemoryError:
            raise ArgumentError(f"@{self.signature.name} input {i} ({self.signature.inputs[i].name}): a "
                                f"contiguous copy of this {host.dtype} array of shape {host.shape} cannot be "
                                "allocated; pass a C-contiguous array") from None
