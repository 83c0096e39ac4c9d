"""The CUDA build's host code, run everywhere against a mock of the CUDA runtime wrappers.

The generated host function is JIT-compiled without ``libmlir_cuda_runtime.so``; its
``mgpu*`` symbols are bound to Python callbacks that keep "device" buffers in host memory
and emulate the vector-add kernel from its launch arguments (memref descriptors). This
checks, without a GPU, that the host code loads the kernel binary, allocates and fills
device buffers, launches with the bound grid/block sizes, copies outputs back and frees
everything.
"""

import ctypes

import numpy as np
import pytest
from _cuda_util import vector_add
from mlir import ir

import mlc_mlir as mlc
from mlc_mlir.build.cuda import CudaModule, jit_host
from mlc_mlir.build.pipeline import mlir_lib
from mlc_mlir.context import mlc_context

P = ctypes.c_void_p
I64 = ctypes.c_int64


class MockCuda:
    """``mgpu*`` entry points over host memory; records what the host code asked for."""

    def __init__(self):
        self.buffers: dict[int, ctypes.Array] = {}
        self.filled_from: dict[int, int] = {}  # device address -> host address copied in
        self.copied_back: dict[int, int] = {}  # host address -> device address copied out
        self.launches: list[tuple[str, tuple[int, ...]]] = []
        self.binaries: list[bytes] = []
        self.functions: dict[int, str] = {}
        self.events: list[str] = []
        self.errors: list[str] = []
        self.roles: dict[int, str] = {}  # host address of an argument -> its name
        self.callbacks = self._make_callbacks()

    def _make_callbacks(self) -> dict[str, ctypes._CFuncPtr]:
        return {
            "mgpuModuleLoad": ctypes.CFUNCTYPE(P, P, ctypes.c_uint64)(self.module_load),
            "mgpuModuleLoadJIT": ctypes.CFUNCTYPE(P, P, ctypes.c_int, ctypes.c_uint64)(
                lambda data, opt, size: self.module_load(data, size)),
            "mgpuModuleUnload": ctypes.CFUNCTYPE(None, P)(lambda m: self.events.append("unload")),
            "mgpuModuleGetFunction": ctypes.CFUNCTYPE(P, P, ctypes.c_char_p)(self.get_function),
            "mgpuStreamCreate": ctypes.CFUNCTYPE(P)(lambda: self._event("stream", 0x5000)),
            "mgpuStreamSynchronize": ctypes.CFUNCTYPE(None, P)(lambda s: self._event("sync")),
            "mgpuStreamDestroy": ctypes.CFUNCTYPE(None, P)(lambda s: self._event("destroy")),
            "mgpuMemAlloc": ctypes.CFUNCTYPE(P, ctypes.c_uint64, P, ctypes.c_int8)(self.alloc),
            "mgpuMemFree": ctypes.CFUNCTYPE(None, P, P)(self.free),
            "mgpuMemcpy": ctypes.CFUNCTYPE(None, P, P, ctypes.c_uint64, P)(self.memcpy),
            "mgpuLaunchKernel": ctypes.CFUNCTYPE(None, P, I64, I64, I64, I64, I64, I64, ctypes.c_int32, P,
                                                 ctypes.POINTER(P), P, ctypes.c_uint64)(self.launch),
        }

    def _event(self, name: str, result: int | None = None):
        self.events.append(name)
        return result

    def module_load(self, data, size):
        self.binaries.append(ctypes.string_at(data, size))
        return 0x1000

    def get_function(self, module, name):
        self.functions[0x2000 + len(self.functions)] = name.decode()
        return 0x2000 + len(self.functions) - 1

    def alloc(self, size, stream, shared):
        buf = (ctypes.c_char * max(size, 1))()
        self.buffers[ctypes.addressof(buf)] = buf
        return ctypes.addressof(buf)

    def free(self, ptr, stream):
        if self.buffers.pop(ptr, None) is None:
            self.errors.append(f"free of unknown pointer {ptr:#x}")

    def memcpy(self, dst, src, size, stream):
        if dst in self.buffers:
            self.filled_from[dst] = src
        elif src in self.buffers:
            self.copied_back[dst] = src
        else:
            self.errors.append("memcpy between two host pointers")
        ctypes.memmove(dst, src, size)

    def launch(self, fn, gx, gy, gz, bx, by, bz, smem, stream, params, extra, count):
        try:
            self.launches.append((self.functions[fn], (gx, gy, gz, bx, by, bz), count))
            values = [ctypes.cast(params[i], ctypes.POINTER(ctypes.c_uint64))[0] for i in range(count)]
            self.emulate_vector_add(values)
        except Exception as exc:  # noqa: BLE001 - reported by the test, not swallowed by ctypes
            self.errors.append(repr(exc))

    def emulate_vector_add(self, values: list[int]) -> None:
        """``C = A + B`` on the device buffers the host code filled from the arrays in ``roles``."""
        views = {}
        for i in range(0, len(values), 5):  # rank-1 descriptors: allocated, aligned, offset, size, stride
            _, aligned, offset, size, stride = values[i:i + 5]
            if aligned not in self.buffers or stride != 1:
                raise AssertionError(f"kernel argument {aligned:#x} is not a device buffer")
            role = self.roles[self.filled_from[aligned]]
            views[role] = np.frombuffer(self.buffers[aligned], np.float32, count=size, offset=offset * 4)
        views["C"][:] = views["A"] + views["B"]


@pytest.fixture
def mock_rt():
    rt = mlc.build(vector_add(1024, 128).mod, target="cuda")
    mock = MockCuda()
    with mlc_context():
        lowered = ir.Module.parse(rt.get_source("llvm-dialect"))
    engine = jit_host(lowered, opt_level=2, shared_libs=[mlir_lib("libmlir_c_runner_utils.so")])
    for name, cb in mock.callbacks.items():
        engine.raw_register_runtime(name, ctypes.cast(cb, P))
    engine.initialize()
    mocked = CudaModule(engine=engine, signatures=rt.signatures, lowered=lowered, source=rt.get_source("mlir"),
                        cuda=rt.cuda, snapshots={}, unavailable=None)
    yield mocked, mock, rt
    del mocked, engine  # runs the module destructor while the callbacks are alive


def test_host_code_loads_the_kernel_binary(mock_rt):
    _, mock, rt = mock_rt
    assert len(mock.binaries) == 1
    if rt.cuda.format == "bin":
        assert mock.binaries[0][:4] == b"\x7fELF"  # a cubin
    else:
        assert b".entry" in mock.binaries[0]  # PTX, JIT-compiled by the driver


def test_host_code_copies_launches_and_frees(mock_rt, rng):
    mocked, mock, _ = mock_rt
    a, b = rng.random(1024, dtype=np.float32), rng.random(1024, dtype=np.float32)
    c = np.zeros(1024, np.float32)
    mock.roles = {a.ctypes.data: "A", b.ctypes.data: "B", c.ctypes.data: "C"}
    mocked["main"](a, b, c)
    assert not mock.errors, mock.errors
    assert [(name, dims) for name, dims, _ in mock.launches] == [("main_kernel", (8, 1, 1, 128, 1, 1))]
    assert sorted(mock.filled_from.values()) == sorted(mock.roles)
    assert list(mock.copied_back) == [c.ctypes.data]
    np.testing.assert_array_equal(c, a + b)  # in, "kernel", out
    assert mock.buffers == {}, "device buffers leaked"
    assert mock.events[-2:] == ["sync", "destroy"]


def test_every_call_gets_fresh_buffers(mock_rt, rng):
    mocked, mock, _ = mock_rt
    for _ in range(3):
        a, b = rng.random(1024, dtype=np.float32), rng.random(1024, dtype=np.float32)
        c = np.zeros(1024, np.float32)
        mock.roles = {a.ctypes.data: "A", b.ctypes.data: "B", c.ctypes.data: "C"}
        mocked["main"](a, b, c)
        np.testing.assert_array_equal(c, a + b)
    assert not mock.errors and mock.buffers == {} and len(mock.launches) == 3
