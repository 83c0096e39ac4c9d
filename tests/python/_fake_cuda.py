"""A fake of NVIDIA's ``cuda.bindings.driver`` over host memory, for tests without a GPU.

Same call shapes as cuda-python (``(CUresult, value...)`` tuples, handle classes with
``int()``). Device memory is host memory; ``cuLaunchKernel`` records the launch and, when
the test registered an emulator for the kernel name, runs it on the kernel's arguments
(the 64-bit words of the flattened memref descriptors). ``fail`` makes one call fail.
"""

from __future__ import annotations

import ctypes
import enum
import itertools


class CUresult(enum.IntEnum):
    CUDA_SUCCESS = 0
    CUDA_ERROR_INVALID_VALUE = 1
    CUDA_ERROR_OUT_OF_MEMORY = 2
    CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES = 701


class CUdevice_attribute(enum.IntEnum):
    CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75
    CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76


class _Handle:
    def __init__(self, value: int = 0):
        self.value = int(value)

    def __int__(self) -> int:
        return self.value


class CUstream(_Handle):
    pass


class CUmodule(_Handle):
    pass


class CUfunction(_Handle):
    pass


class CUevent(_Handle):
    pass


OK = CUresult.CUDA_SUCCESS


class FakeDriver:
    """Records what the runtime asked for; ``emulators[name](words)`` plays a kernel."""

    CUresult = CUresult
    CUdevice_attribute = CUdevice_attribute
    CUstream = CUstream

    def __init__(self, arch: tuple[int, int] = (9, 0)):
        self.arch = arch
        self.buffers: dict[int, ctypes.Array] = {}
        self.images: list[bytes] = []
        self.functions: dict[int, str] = {}
        self.launches: list[tuple[str, tuple[int, ...], int]] = []
        self.calls: list[str] = []
        self.emulators: dict[str, object] = {}
        self.fail: dict[str, CUresult] = {}
        self.time = itertools.count(1)
        self.events: dict[int, float] = {}

    def _ret(self, name: str, *values):
        self.calls.append(name)
        if name in self.fail:
            return (self.fail[name],) + tuple(None for _ in values)
        return (OK, *values)

    def cuInit(self, flags):
        return self._ret("cuInit")

    def cuGetErrorName(self, err):
        return (OK, CUresult(int(err)).name.encode())

    def cuDeviceGetCount(self):
        return self._ret("cuDeviceGetCount", 1)

    def cuDeviceGet(self, index):
        return self._ret("cuDeviceGet", index)

    def cuDeviceGetAttribute(self, attr, dev):
        major = attr == CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR
        return self._ret("cuDeviceGetAttribute", self.arch[0] if major else self.arch[1])

    def cuDevicePrimaryCtxRetain(self, dev):
        return self._ret("cuDevicePrimaryCtxRetain", _Handle(0xC0))

    def cuCtxSetCurrent(self, ctx):
        return self._ret("cuCtxSetCurrent")

    def cuCtxSynchronize(self):
        return self._ret("cuCtxSynchronize")

    def cuStreamSynchronize(self, stream):
        return self._ret("cuStreamSynchronize")

    # memory
    def _alloc(self, size):
        buf = (ctypes.c_char * max(int(size), 1))()
        self.buffers[ctypes.addressof(buf)] = buf
        return ctypes.addressof(buf)

    def cuMemAlloc(self, size):
        return self._ret("cuMemAlloc", self._alloc(size))

    def cuMemAllocAsync(self, size, stream):
        return self._ret("cuMemAllocAsync", self._alloc(size))

    def cuMemFree(self, ptr):
        self.buffers.pop(int(ptr), None)
        return self._ret("cuMemFree")

    def cuMemFreeAsync(self, ptr, stream):
        if self.buffers.pop(int(ptr), None) is None:
            raise AssertionError(f"free of unknown device pointer {int(ptr):#x}")
        return self._ret("cuMemFreeAsync")

    def _copy(self, name, dst, src, size):
        ctypes.memmove(int(dst), int(src), int(size))
        return self._ret(name)

    def cuMemcpyHtoDAsync(self, dst, src, size, stream):
        return self._copy("cuMemcpyHtoDAsync", dst, src, size)

    def cuMemcpyDtoHAsync(self, dst, src, size, stream):
        return self._copy("cuMemcpyDtoHAsync", dst, src, size)

    def cuMemcpyDtoDAsync(self, dst, src, size, stream):
        return self._copy("cuMemcpyDtoDAsync", dst, src, size)

    def cuMemcpyAsync(self, dst, src, size, stream):
        return self._copy("cuMemcpyAsync", dst, src, size)

    # modules and kernels
    def cuModuleLoadData(self, image):
        self.images.append(bytes(image))
        return self._ret("cuModuleLoadData", CUmodule(0x1000 + len(self.images)))

    def cuModuleUnload(self, module):
        return self._ret("cuModuleUnload")

    def cuModuleGetFunction(self, module, name):
        handle = 0x2000 + len(self.functions)
        self.functions[handle] = name.decode() if isinstance(name, bytes) else name
        return self._ret("cuModuleGetFunction", CUfunction(handle))

    def cuLaunchKernel(self, fn, gx, gy, gz, bx, by, bz, smem, stream, params, extra):
        name = self.functions[int(fn)]
        self.launches.append((name, (gx, gy, gz, bx, by, bz), smem))
        result = self._ret("cuLaunchKernel")
        if result[0] == OK and name in self.emulators:
            self.emulators[name](self, params)
        return result

    # events
    def cuEventCreate(self, flags):
        handle = 0x3000 + next(self.time)
        self.events[handle] = 0.0
        return self._ret("cuEventCreate", CUevent(handle))

    def cuEventRecord(self, event, stream):
        self.events[int(event)] = float(next(self.time))
        return self._ret("cuEventRecord")

    def cuEventSynchronize(self, event):
        return self._ret("cuEventSynchronize")

    def cuEventElapsedTime(self, start, end):
        return self._ret("cuEventElapsedTime", self.events[int(end)] - self.events[int(start)])

    def cuEventDestroy(self, event):
        return self._ret("cuEventDestroy")


def kernel_words(params: int, count: int) -> list[int]:
    """The kernel's arguments as 64-bit words (each parameter pointer dereferenced)."""
    array = ctypes.cast(params, ctypes.POINTER(ctypes.c_void_p))
    return [ctypes.cast(array[i], ctypes.POINTER(ctypes.c_uint64))[0] for i in range(count)]
