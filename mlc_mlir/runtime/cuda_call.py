"""Calling CUDA functions: device arrays straight in, host arrays through device copies,
timing with CUDA events.

``rt["f"](*args)`` with every argument on the GPU (``mlc.runtime`` CUDA arrays, or any
kDLCUDA DLPack object such as a ``torch.cuda`` tensor, imported without a copy) launches
the kernels on :func:`~mlc_mlir.runtime.cuda_device.current_stream` and synchronizes. With every
argument in host memory (NumPy) the arguments are copied to the device, the function runs
and the outputs are copied back. A mix of both raises :class:`ArgumentError`.
"""

from __future__ import annotations

import ctypes
import statistics
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..errors import ArgumentError, MlcError, RuntimeError_
from . import cuda_device as cu
from .memref import descriptor_class, numpy_dtype
from .module import ProfileResult
from .ndarray import as_numpy
from .ndarray import cuda as cuda_dev
from .signature import FuncSignature

__all__ = ["CudaFunction", "cuda_time_evaluator"]


def _fmt(spec: Any) -> str:
    dims = [s if s is not None else (sym or "?") for s, sym in zip(spec.shape, spec.symbols)]
    return "(" + ", ".join(map(str, dims)) + ("," if len(dims) == 1 else "") + ")"


class CudaFunction:
    """One compiled CUDA host function (``_mlir_ciface_<name>``) of a :class:`CudaModule`."""

    def __init__(self, rt: Any, sig: FuncSignature, fn: Callable[[Any], None] | None, unavailable: str | None):
        self._rt = rt
        self.signature = sig
        self._fn = fn
        self._unavailable = unavailable
        self._dtypes = [numpy_dtype(a.elem) for a in sig.args]

    @property
    def name(self) -> str:
        return self.signature.name

    def _check(self, shapes: Sequence[tuple[int, ...]], dtypes: Sequence[np.dtype]) -> None:
        sig = self.signature
        bound: dict[str, tuple[int, str]] = {}
        for i, (spec, want_dtype, shape, dtype) in enumerate(zip(sig.args, self._dtypes, shapes, dtypes)):
            where = f"@{sig.name} argument {i} ({spec.name})"
            if np.dtype(dtype) != want_dtype:
                raise ArgumentError(f"{where}: expected dtype {want_dtype}, got {dtype}")
            if len(shape) != len(spec.shape):
                raise ArgumentError(f"{where}: expected rank {len(spec.shape)} (shape {_fmt(spec)}), got shape {shape}")
            for d, (want, sym, got) in enumerate(zip(spec.shape, spec.symbols, shape)):
                if want is not None and want != got:
                    raise ArgumentError(f"{where}: expected shape {_fmt(spec)}, got {shape} (dimension {d})")
                if sym is not None:
                    if sym in bound and bound[sym][0] != got:
                        raise ArgumentError(f"{where}: dimension {d} is {got} but symbol {sym!r} was bound to "
                                            f"{bound[sym][0]} by {bound[sym][1]}")
                    bound.setdefault(sym, (got, spec.name))

    def device_arrays(self, args: Sequence[Any]) -> list[cu.CudaNDArray]:
        """The arguments as CUDA arrays (DLPack imports without copies), checked."""
        sig = self.signature
        if len(args) != len(sig.args):
            raise ArgumentError(f"@{sig.name} takes {len(sig.args)} arguments "
                                f"({', '.join(a.name for a in sig.args)}), got {len(args)}")
        on_device = [cu.is_cuda_array(a) for a in args]
        if any(on_device) and not all(on_device):
            dev, host = on_device.index(True), on_device.index(False)
            raise ArgumentError(
                f"@{sig.name}: argument {host} ({sig.args[host].name}) is host memory "
                f"({type(args[host]).__name__}) but argument {dev} ({sig.args[dev].name}) is on a CUDA device: "
                "pass all arguments on the GPU (mlc.runtime.array(x, device=mlc.cuda(0))) or all on the host")
        arrays = [a if isinstance(a, cu.CudaNDArray) else cu.from_dlpack(a) for a in args]
        index = self._rt.runtime.device_index
        for i, arr in enumerate(arrays):
            if arr.device.index != index:
                raise ArgumentError(f"@{sig.name} argument {i} ({sig.args[i].name}) is on {arr.device}; the "
                                    f"module runs on cuda({index})")
        self._check([a.shape for a in arrays], [np.dtype(a.dtype) for a in arrays])
        outs = [i for i, s in enumerate(sig.args) if s.is_output]
        for o in outs:
            for i, arr in enumerate(arrays):
                if i != o and arr.nbytes and _overlap(arr, arrays[o]):
                    raise ArgumentError(f"@{sig.name}: output argument {o} ({sig.args[o].name}) overlaps "
                                        f"argument {i} ({sig.args[i].name}) in device memory")
        return arrays

    def packed(self, arrays: Sequence[cu.CudaNDArray]) -> tuple[ctypes.Array, list[object]]:
        """The ``void**`` argument array of the ``_mlir_ciface_`` call (device pointers)."""
        keep: list[object] = []
        packed = (ctypes.c_void_p * len(arrays))()
        for i, arr in enumerate(arrays):
            desc = descriptor_class(arr.ndim, np.dtype(arr.dtype))()
            desc.allocated = arr.data_ptr
            desc.aligned = ctypes.cast(ctypes.c_void_p(arr.data_ptr), desc._fields_[1][1])
            desc.offset = 0
            if arr.ndim:
                desc.shape[:] = arr.shape
                strides, acc = [], 1
                for n in reversed(arr.shape):
                    strides.insert(0, acc)
                    acc *= n
                desc.strides[:] = strides
            ptr = ctypes.pointer(desc)
            pptr = ctypes.pointer(ptr)
            keep += [desc, ptr, pptr]
            packed[i] = ctypes.cast(pptr, ctypes.c_void_p)
        return packed, keep

    def ready(self) -> Callable[[Any], None]:
        """The raw function; :class:`RuntimeError_` when this module cannot run here."""
        if self._unavailable is not None or self._fn is None:
            raise cu.CudaUnavailable(self._unavailable or "the CUDA module was not initialized")
        return self._fn

    def launch(self, packed: ctypes.Array) -> None:
        """Run the host function once and raise a captured CUDA error."""
        self.ready()(packed)
        self._rt.runtime.check()

    def __call__(self, *args: Any) -> None:
        host = [a for a in args if not cu.is_cuda_array(a)]
        if len(host) == len(args) and args:
            return self._call_host(args)
        arrays = self.device_arrays(args)
        self.ready()
        cu.activate(self._rt.runtime.device_index)
        packed, keep = self.packed(arrays)
        self.launch(packed)
        del keep
        return None

    def _call_host(self, args: Sequence[Any]) -> None:
        """Host arrays: copy in, run, copy the outputs back."""
        try:
            host = [as_numpy(a) for a in args]
        except MlcError as exc:
            raise ArgumentError(f"@{self.name}: {exc}") from None
        sig = self.signature
        if len(host) != len(sig.args):
            raise ArgumentError(f"@{sig.name} takes {len(sig.args)} arguments "
                                f"({', '.join(a.name for a in sig.args)}), got {len(host)}")
        self._check([h.shape for h in host], [h.dtype for h in host])
        outs = [s.is_output for s in sig.args]
        if not any(outs):
            outs = [True] * len(outs)
        for i, (h, out) in enumerate(zip(host, outs)):
            if out and not h.flags.writeable:
                raise ArgumentError(f"@{sig.name} argument {i} ({sig.args[i].name}): output array is read-only")
        self.ready()
        device = cuda_dev(self._rt.runtime.device_index)
        arrays = [cu.cuda_array(np.ascontiguousarray(h), device) for h in host]
        packed, keep = self.packed(arrays)
        self.launch(packed)
        del keep
        for h, arr, out in zip(host, arrays, outs):
            if out:
                h[...] = arr.numpy()

    def __repr__(self) -> str:
        params = ", ".join(f"{a.name}: {_fmt(a)}x{a.elem}" for a in self.signature.args)
        return f"<mlc.CudaFunction @{self.name}({params})>"


def _overlap(a: cu.CudaNDArray, b: cu.CudaNDArray) -> bool:
    return a.data_ptr < b.data_ptr + b.nbytes and b.data_ptr < a.data_ptr + a.nbytes


def cuda_time_evaluator(func: CudaFunction, *, number: int, repeat: int,
                        min_repeat_ms: float) -> Callable[..., ProfileResult]:
    """Time ``func`` with CUDA events: ``number`` back-to-back launches per repeat, no host
    synchronization between them; seconds per call."""
    if number < 1 or repeat < 1:
        raise MlcError(f"time_evaluator: number and repeat must be >= 1, got {number}, {repeat}")

    def evaluate(*args: Any) -> ProfileResult:
        func.ready()
        runtime = func._rt.runtime
        device = cuda_dev(runtime.device_index)
        if not any(cu.is_cuda_array(a) for a in args):  # host arrays: copied once, outside timing
            args = tuple(cu.cuda_array(np.ascontiguousarray(as_numpy(a)), device) for a in args)
        arrays = func.device_arrays(args)
        cu.activate(runtime.device_index)
        packed, keep = func.packed(arrays)
        func.launch(packed)  # warm-up
        stream = cu.driver().CUstream(cu.current_stream())
        start, end = cu.call("cuEventCreate", 0), cu.call("cuEventCreate", 0)
        results = []
        try:
            for _ in range(repeat):
                n = number
                while True:
                    ms = _timed(func, packed, n, start, end, stream)
                    if ms >= min_repeat_ms or n > 1 << 20:
                        break
                    n *= 2
                results.append(ms / 1e3 / n)
        finally:
            runtime.asynchronous = False
            cu.driver().cuEventDestroy(start)
            cu.driver().cuEventDestroy(end)
        del keep
        return ProfileResult(statistics.fmean(results), statistics.median(results), min(results), max(results),
                             statistics.pstdev(results), tuple(results))

    return evaluate


def _timed(func: CudaFunction, packed: ctypes.Array, n: int, start: Any, end: Any, stream: Any) -> float:
    runtime = func._rt.runtime
    cu.call("cuEventRecord", start, stream)
    runtime.asynchronous = True
    try:
        for _ in range(n):
            func.launch(packed)
    finally:
        runtime.asynchronous = False
    cu.call("cuEventRecord", end, stream)
    cu.call("cuEventSynchronize", end)
    ms = cu.call("cuEventElapsedTime", start, end)
    if ms is None:
        raise RuntimeError_("cuEventElapsedTime returned no time")
    return float(ms)
