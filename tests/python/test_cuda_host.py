"""The CUDA runtime path, run everywhere against a fake of NVIDIA's driver binding.

The generated host code is JIT-compiled and its ``mgpu*`` calls go through
:class:`mlc_mlir.runtime.mgpu.KernelRuntime` to :class:`_fake_cuda.FakeDriver`, whose
"device" memory is host memory and which plays the vector-add kernel from its launch
arguments (the flattened memref descriptors). This checks, without a GPU, that device
arrays are passed without copies, host arrays are copied in and out, launches use the
bound grid/block sizes, intermediates are freed, driver errors raise, and host/device
mixups are refused. No kernel code runs here: that needs a GPU (test_cuda_run.py).
"""

import numpy as np
import pytest
from _cuda_util import vector_add
from _fake_cuda import FakeDriver, kernel_words

import mlc_mlir as mlc
from mlc_mlir import te
from mlc_mlir.runtime.cuda_device import CudaError, use_driver


def _vector_add_kernel(drv, params):
    words = kernel_words(params, 15)  # 3 rank-1 memrefs: allocated, aligned, offset, size, stride
    views = []
    for i in range(0, 15, 5):
        _, aligned, offset, size, stride = words[i:i + 5]
        assert aligned in drv.buffers and stride == 1, "kernel argument is not device memory"
        views.append(np.frombuffer(drv.buffers[aligned], np.float32, count=size, offset=offset * 4))
    views[2][:] = views[0] + views[1]


@pytest.fixture
def fake():
    drv = FakeDriver()
    drv.emulators["main_kernel"] = _vector_add_kernel
    with use_driver(drv):
        yield drv


@pytest.fixture
def vadd(fake):
    return mlc.build(vector_add(1024, 128).mod, target="cuda")


def test_module_load_gets_the_kernel_binary(vadd, fake):
    assert len(fake.images) == 1
    if vadd.cuda.format == "bin":
        assert fake.images[0][:4] == b"\x7fELF"  # a cubin
    else:
        assert b".entry" in fake.images[0]  # PTX, compiled by the driver


def test_device_arrays_run_in_place(vadd, fake, rng):
    a, b = rng.random(1024, dtype=np.float32), rng.random(1024, dtype=np.float32)
    A, B = mlc.runtime.array(a, device=mlc.cuda(0)), mlc.runtime.array(b, device=mlc.cuda(0))
    C = mlc.runtime.empty((1024,), "float32", mlc.cuda(0))
    assert isinstance(C, mlc.runtime.cuda_device.CudaNDArray) and C.device == mlc.cuda(0)
    before = fake.calls.count("cuMemAllocAsync") + fake.calls.count("cuMemcpyAsync")
    vadd["main"](A, B, C)
    assert fake.launches == [("main_kernel", (8, 1, 1, 128, 1, 1), 0)]
    assert fake.calls.count("cuMemAllocAsync") + fake.calls.count("cuMemcpyAsync") == before  # no copies
    np.testing.assert_array_equal(C.numpy(), a + b)
    assert fake.calls[-1] == "cuStreamSynchronize"


def test_host_arrays_are_copied_in_and_out(vadd, fake, rng):
    a, b = rng.random(1024, dtype=np.float32), rng.random(1024, dtype=np.float32)
    c = np.zeros(1024, np.float32)
    vadd["main"](a, b, c)
    np.testing.assert_array_equal(c, a + b)
    assert fake.calls.count("cuMemcpyHtoDAsync") == 3 and fake.calls.count("cuMemcpyDtoHAsync") == 1


def test_copyfrom_and_numpy(fake, rng):
    x = rng.random((4, 5), dtype=np.float32)
    arr = mlc.runtime.empty((4, 5), "float32", mlc.cuda(0))
    arr.copyfrom(x)
    np.testing.assert_array_equal(arr.numpy(), x)
    other = mlc.runtime.empty((4, 5), "float32", mlc.cuda(0)).copyfrom(arr)  # device to device
    np.testing.assert_array_equal(other.numpy(), x)
    with pytest.raises(mlc.RuntimeError_, match="shape"):
        arr.copyfrom(np.zeros(3, np.float32))
    with pytest.raises(mlc.RuntimeError_, match=r"\.numpy\(\)"):
        np.asarray(arr)
    clone = mlc.runtime.array(_Producer(arr), device=mlc.cuda(0))  # a CUDA source: device to device
    assert clone.data_ptr != arr.data_ptr
    np.testing.assert_array_equal(clone.numpy(), x)


def test_device_arrays_are_freed(fake, rng):
    arr = mlc.runtime.array(rng.random(16, dtype=np.float32), device=mlc.cuda(0))
    ptr = arr.data_ptr
    assert ptr in fake.buffers
    del arr
    assert ptr not in fake.buffers


def test_dlpack_round_trip_shares_memory(fake, rng):
    x = rng.random((3, 4), dtype=np.float32)
    arr = mlc.runtime.array(x, device=mlc.cuda(0))
    assert arr.__dlpack_device__() == (2, 0)
    view = mlc.runtime.cuda_device.from_dlpack(_Producer(arr))
    assert view.data_ptr == arr.data_ptr and view.shape == (3, 4) and view.dtype == "float32"
    np.testing.assert_array_equal(view.numpy(), x)


class _Producer:
    """A kDLCUDA DLPack producer (what a torch.cuda tensor looks like to the runtime)."""

    def __init__(self, arr):
        self._arr = arr

    def __dlpack__(self, stream=None):
        return self._arr.__dlpack__(stream=stream)

    def __dlpack_device__(self):
        return self._arr.__dlpack_device__()


def test_host_device_mixup_is_refused(vadd, fake):
    A = mlc.runtime.array(np.zeros(1024, np.float32), device=mlc.cuda(0))
    with pytest.raises(mlc.ArgumentError, match=r"argument 1 \(B\) is host memory"):
        vadd["main"](A, np.zeros(1024, np.float32), A)
    with pytest.raises(mlc.ArgumentError, match="expected shape"):
        vadd["main"](A, A, mlc.runtime.empty((5,), "float32", mlc.cuda(0)))
    with pytest.raises(mlc.ArgumentError, match="overlaps"):
        vadd["main"](A, mlc.runtime.empty((1024,), "float32", mlc.cuda(0)), A)
    cpu_rt = mlc.build(vector_add(1024, 128).mod, target="llvm")
    with pytest.raises(mlc.MlcError, match="CUDA device"):
        cpu_rt["main"](A, A, A)


def test_driver_errors_raise(vadd, fake):
    A = mlc.runtime.array(np.zeros(1024, np.float32), device=mlc.cuda(0))
    B, C = mlc.runtime.empty((1024,), "float32", mlc.cuda(0)), mlc.runtime.empty((1024,), "float32", mlc.cuda(0))
    fake.fail["cuLaunchKernel"] = fake.CUresult.CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES
    with pytest.raises(CudaError, match="cuLaunchKernel failed: CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES"):
        vadd["main"](A, B, C)
    del fake.fail["cuLaunchKernel"]
    vadd["main"](A, B, C)  # the runtime recovers
    fake.fail["cuMemAlloc"] = fake.CUresult.CUDA_ERROR_OUT_OF_MEMORY
    with pytest.raises(CudaError, match="OUT_OF_MEMORY"):
        mlc.runtime.empty((8,), "float32", mlc.cuda(0))


def test_intermediate_buffers_live_on_the_device(fake, rng):
    A = te.placeholder((1024,), "float32", name="A")
    B = te.compute((1024,), lambda i: A[i] * 2.0, name="B")
    C = te.compute((1024,), lambda i: B[i] + 1.0, name="C")
    sch = mlc.Schedule(te.create_prim_func([A, C], name="two"))
    for block in ("B", "C"):
        (i,) = sch.get_loops(sch.get_block(block))
        i0, i1 = sch.split(i, factors=[None, 256])
        sch.bind(i0, "blockIdx.x")
        sch.bind(i1, "threadIdx.x")
    rt = mlc.build(sch.mod, target="cuda")
    A_dev = mlc.runtime.array(rng.random(1024, dtype=np.float32), device=mlc.cuda(0))
    C_dev = mlc.runtime.empty((1024,), "float32", mlc.cuda(0))
    live = set(fake.buffers)
    rt["two"](A_dev, C_dev)
    assert [name for name, _, _ in fake.launches] == ["two_kernel"] * 2
    assert fake.calls.count("cuMemAllocAsync") == 1 and fake.calls.count("cuMemFreeAsync") == 1
    assert set(fake.buffers) == live, "the intermediate B leaked"


def test_time_evaluator_uses_events(vadd, fake):
    A = mlc.runtime.array(np.zeros(1024, np.float32), device=mlc.cuda(0))
    B, C = mlc.runtime.empty((1024,), "float32", mlc.cuda(0)), mlc.runtime.empty((1024,), "float32", mlc.cuda(0))
    n0 = len(fake.launches)
    result = vadd.time_evaluator("main", mlc.cuda(0), number=4, repeat=2)(A, B, C)
    assert len(fake.launches) - n0 == 1 + 8  # warm-up + number * repeat
    assert fake.calls.count("cuEventRecord") == 4 and fake.calls.count("cuEventElapsedTime") == 2
    assert result.mean > 0 and len(result.results) == 2
    # no synchronization between the timed launches
    timed = fake.calls[fake.calls.index("cuEventRecord"):]
    assert "cuStreamSynchronize" not in timed


def test_no_driver_message(monkeypatch):
    class Broken:
        def cuInit(self, flags):
            raise OSError("libcuda.so.1: cannot open shared object file")

    with use_driver(Broken()):
        with pytest.raises(mlc.runtime.cuda_device.CudaUnavailable, match="no CUDA driver"):
            mlc.runtime.array(np.zeros(3, np.float32), device=mlc.cuda(0))
