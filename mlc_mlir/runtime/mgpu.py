"""The ``mgpu*`` entry points that MLIR's ``gpu-to-llvm`` host code calls, implemented over
the CUDA driver binding of :mod:`.cuda` (instead of ``libmlir_cuda_runtime.so``).

Why not MLIR's own wrappers: they print driver errors and carry on (a failed launch
returns garbage), create a stream per call (no ordering with PyTorch or with timing
events) and cannot be loaded at all without ``libcuda``. Here every driver error is
captured inside the callback (exceptions cannot cross compiled code), the remaining
CUDA calls of that invocation are skipped, and :meth:`KernelRuntime.check` raises it
after the compiled function returns. All work goes to :func:`.cuda.current_stream`;
in ``asynchronous`` mode (timing) the stream is not synchronized at the end of a call.

Host code shape (``gpu-to-llvm``, after ``gpu-async-region``)::

    %s = llvm.call @mgpuStreamCreate()
    llvm.call @mgpuLaunchKernel(%f, %gx, %gy, %gz, %bx, %by, %bz, %smem, %s, %params, %extra, %n)
    llvm.call @mgpuStreamSynchronize(%s)
    llvm.call @mgpuStreamDestroy(%s)
"""

from __future__ import annotations

import ctypes
from typing import Any

from . import cuda_device as cu

__all__ = ["KernelRuntime", "ENTRY_POINTS"]

P, I64, U64 = ctypes.c_void_p, ctypes.c_int64, ctypes.c_uint64

#: entry point -> ctypes signature (result first), as in MLIR's CudaRuntimeWrappers.cpp
ENTRY_POINTS: dict[str, tuple[Any, ...]] = {
    "mgpuModuleLoad": (P, P, U64),
    "mgpuModuleLoadJIT": (P, P, ctypes.c_int),  # (PTX, opt level): LLVM 22's host code passes no size
    "mgpuModuleUnload": (None, P),
    "mgpuModuleGetFunction": (P, P, ctypes.c_char_p),
    "mgpuLaunchKernel": (None, P, I64, I64, I64, I64, I64, I64, ctypes.c_int32, P, P, P, U64),
    "mgpuStreamCreate": (P,),
    "mgpuStreamDestroy": (None, P),
    "mgpuStreamSynchronize": (None, P),
    "mgpuStreamWaitEvent": (None, P, P),
    "mgpuEventCreate": (P,),
    "mgpuEventDestroy": (None, P),
    "mgpuEventSynchronize": (None, P),
    "mgpuEventRecord": (None, P, P),
    "mgpuMemAlloc": (P, U64, P, ctypes.c_int8),
    "mgpuMemFree": (None, P, P),
    "mgpuMemcpy": (None, P, P, U64, P),
    "mgpuMemset32": (None, P, ctypes.c_uint32, U64, P),
    "mgpuMemset16": (None, P, ctypes.c_uint16, U64, P),
    "mgpuSetDefaultDevice": (None, ctypes.c_int32),
}


class KernelRuntime:
    """The ``mgpu*`` callbacks of one compiled module (device ``device_index``)."""

    def __init__(self, device_index: int = 0):
        self.device_index = device_index
        self.asynchronous = False
        self.pending: BaseException | None = None
        self.launches = 0
        self._objects: dict[int, Any] = {}  # handle -> driver object (modules, functions, events)
        self.callbacks = {name: ctypes.CFUNCTYPE(*sig)(self._guard(name, getattr(self, "_" + name[4:])))
                          for name, sig in ENTRY_POINTS.items()}

    # -- error handling -------------------------------------------------------------
    def _guard(self, name: str, fn: Any) -> Any:
        def wrapped(*args: Any) -> Any:
            if self.pending is not None and name not in ("mgpuModuleUnload", "mgpuStreamDestroy",
                                                         "mgpuEventDestroy"):
                return None  # an earlier call failed: do nothing more on the device
            try:
                return fn(*args)
            except BaseException as exc:  # noqa: BLE001 - re-raised by check()
                # KeyboardInterrupt / SystemExit are kept as they are and re-raised by check()
                self.pending = exc if isinstance(exc, cu.CudaError) or not isinstance(exc, Exception) \
                    else cu.CudaError(f"{name}: {exc!r}")
                return None
        return wrapped

    def check(self) -> None:
        """Raise the first error captured since the last check (then forget it)."""
        if self.pending is not None:
            exc, self.pending = self.pending, None
            raise exc

    def _keep(self, obj: Any) -> int:
        handle = int(obj)
        self._objects[handle] = obj
        return handle

    def _drv(self) -> Any:
        return cu.driver()

    # -- modules and launches ---------------------------------------------------------
    def _ModuleLoad(self, data: int, size: int) -> int:
        cu.activate(self.device_index)
        image = ctypes.string_at(data, size)
        return self._keep(cu.call("cuModuleLoadData", image))

    def _ModuleLoadJIT(self, data: int, opt_level: int) -> int:
        cu.activate(self.device_index)
        text = ctypes.string_at(data)  # PTX, NUL-terminated, compiled by the driver
        return self._keep(cu.call("cuModuleLoadData", text + b"\0"))

    def _ModuleUnload(self, module: int) -> None:
        obj = self._objects.pop(module, None)
        if obj is not None:
            self._drv().cuModuleUnload(obj)

    def _ModuleGetFunction(self, module: int, name: bytes) -> int:
        return self._keep(cu.call("cuModuleGetFunction", self._objects[module], name))

    def _LaunchKernel(self, fn: int, gx: int, gy: int, gz: int, bx: int, by: int, bz: int, smem: int,
                      stream: int, params: int, extra: int, count: int) -> None:
        drv = self._drv()
        cu.call("cuLaunchKernel", self._objects[fn], gx, gy, gz, bx, by, bz, smem, drv.CUstream(stream or 0),
                params, 0)
        self.launches += 1

    # -- streams and events -----------------------------------------------------------
    def _StreamCreate(self) -> int:
        cu.activate(self.device_index)
        return cu.current_stream()

    def _StreamDestroy(self, stream: int) -> None:
        return None  # the stream is the runtime's (current_stream), not the call's

    def _StreamSynchronize(self, stream: int) -> None:
        if not self.asynchronous:
            cu.call("cuStreamSynchronize", self._drv().CUstream(stream or 0))

    def _StreamWaitEvent(self, stream: int, event: int) -> None:
        cu.call("cuStreamWaitEvent", self._drv().CUstream(stream or 0), self._objects[event], 0)

    def _EventCreate(self) -> int:
        return self._keep(cu.call("cuEventCreate", 0))

    def _EventDestroy(self, event: int) -> None:
        obj = self._objects.pop(event, None)
        if obj is not None:
            self._drv().cuEventDestroy(obj)

    def _EventSynchronize(self, event: int) -> None:
        cu.call("cuEventSynchronize", self._objects[event])

    def _EventRecord(self, event: int, stream: int) -> None:
        cu.call("cuEventRecord", self._objects[event], self._drv().CUstream(stream or 0))

    # -- memory -------------------------------------------------------------------------
    def _MemAlloc(self, size: int, stream: int, host_shared: int) -> int:
        if host_shared:
            raise cu.CudaError("gpu.alloc host_shared (managed memory) is not supported")
        return int(cu.call("cuMemAllocAsync", max(size, 1), self._drv().CUstream(stream or 0)))

    def _MemFree(self, ptr: int, stream: int) -> None:
        if ptr:
            cu.call("cuMemFreeAsync", ptr, self._drv().CUstream(stream or 0))

    def _Memcpy(self, dst: int, src: int, size: int, stream: int) -> None:
        if size:
            cu.call("cuMemcpyAsync", dst, src, size, self._drv().CUstream(stream or 0))

    def _Memset32(self, dst: int, value: int, count: int, stream: int) -> None:
        cu.call("cuMemsetD32Async", dst, value, count, self._drv().CUstream(stream or 0))

    def _Memset16(self, dst: int, value: int, count: int, stream: int) -> None:
        cu.call("cuMemsetD16Async", dst, value, count, self._drv().CUstream(stream or 0))

    def _SetDefaultDevice(self, index: int) -> None:
        self.device_index = int(index)
