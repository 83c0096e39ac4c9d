"""export_library / load_module of CUDA builds.

Compile-only everywhere: the library holds the kernels (cubin, or PTX without ptxas) and
their PTX (ptxas-checked when the toolkit is installed), its metadata says cuda, opening it
needs no GPU, and load_module without one raises CudaUnavailable naming what is missing.
The loaded library's whole call path (table of mgpu functions, kernel images, launches,
copies, driver errors) runs against the fake driver of test_cuda_host.py; the kernels
themselves run only where a GPU is (``needs_gpu``).
"""

from __future__ import annotations

import ctypes
import json
import shutil
import subprocess
import sys

import numpy as np
import pytest
from _cuda_util import ptxas, vector_add
from _deploy_models import mlp_module, mlp_params, mlp_reference
from _fake_cuda import FakeDriver, kernel_words

import mlc_mlir as mlc
from mlc_mlir.compiler.cuda import cuda_driver, device_arch
from mlc_mlir.runtime.cuda_device import CudaError, CudaUnavailable, use_driver
from mlc_mlir.runtime.vm import Executable
from mlc_mlir.toolchain import tool_path

needs_gpu = pytest.mark.skipif(cuda_driver() is None or device_arch() is None, reason="needs a CUDA GPU")
no_gpu = pytest.mark.skipif(cuda_driver() is not None and device_arch() is not None,
                            reason="a GPU is here: the library loads (test_loaded_library_runs_on_the_gpu)")
EM_CUDA = 190  # ELF e_machine of a cubin


@pytest.fixture(scope="module")
def vadd(tmp_path_factory):
    rt = mlc.build(vector_add(1024, 128).mod, target="cuda -arch=sm_90")
    path = tmp_path_factory.mktemp("cuda") / "vadd.so"
    rt.export_library(path)
    return rt, path


@pytest.fixture(scope="module")
def mlp(tmp_path_factory):
    p = mlp_params()
    ex = mlc.graph.build(mlp_module(p), "cuda -arch=sm_90")
    path = tmp_path_factory.mktemp("cuda") / "mlp.so"
    ex.export_library(path)
    return p, ex, path


def _copy(path, tmp_path):
    """A copy of the library of its own (each fake driver loads its kernels afresh)."""
    return shutil.copyfile(path, tmp_path / path.name)


def _open(path) -> tuple[ctypes.CDLL, dict]:
    """The library opened by ctypes alone (its constructors run: no GPU needed) and its metadata."""
    lib = ctypes.CDLL(str(path))
    meta = ctypes.string_at(ctypes.cast(lib.mlc_module_metadata, ctypes.c_void_p).value)
    return lib, json.loads(meta)


def _images(lib: ctypes.CDLL) -> list[bytes]:
    out, i = [], 0
    data, size = ctypes.c_void_p(), ctypes.c_uint64()
    while lib.mlc_cuda_image(i, ctypes.byref(data), ctypes.byref(size)) == 0:
        out.append(ctypes.string_at(data, size.value))
        i += 1
    return out


def _vector_add_kernel(drv, params):
    words = kernel_words(params, 15)  # 3 rank-1 memrefs: allocated, aligned, offset, size, stride
    views = []
    for i in range(0, 15, 5):
        _, aligned, offset, size, _ = words[i:i + 5]
        views.append(np.frombuffer(drv.buffers[aligned], np.float32, count=size, offset=offset * 4))
    views[2][:] = views[0] + views[1]


def test_library_holds_the_kernels_and_says_cuda(vadd, tmp_path):
    rt, path = vadd
    lib, meta = _open(path)
    assert meta["target"] == "cuda -arch=sm_90" and meta["kind"] == "module" and meta["version"] == 2
    assert meta["cuda"]["arch"] == "sm_90" and meta["cuda"]["format"] == rt.cuda.format
    assert meta["cuda"]["images"] == 1 and "mgpuLaunchKernel" in meta["cuda"]["entries"]
    (image,) = _images(lib)
    if rt.cuda.format == "bin":  # ptxas was there: a cubin for the GPU
        assert image[:4] == b"\x7fELF" and int.from_bytes(image[18:20], "little") == EM_CUDA
    else:
        assert b".entry main_kernel" in image and image.endswith(b"\0")
    ptx = ctypes.string_at(ctypes.cast(lib.mlc_cuda_ptx, ctypes.c_void_p).value).decode()
    assert ptx == rt.get_source("ptx") and ".target sm_90" in ptx
    # nothing of MLIR's runtime libraries or of the CUDA driver is linked: the loader provides it
    undefined = subprocess.run([tool_path("llvm-nm"), "-D", "--undefined-only", "--format=just-symbols", str(path)],
                               capture_output=True, text=True, check=True).stdout.split()
    assert not [s for s in undefined if s.startswith(("mgpu", "_mlir", "cu"))], undefined


def test_embedded_ptx_passes_ptxas(mlp, tmp_path):
    tool = ptxas()
    if tool is None:
        pytest.skip("ptxas of the nvidia-cuda-nvcc wheel is not installed (pip install -e '.[cuda]')")
    _, ex, path = mlp
    lib, meta = _open(path)
    assert meta["kind"] == "graph" and meta["target"].startswith("cuda")
    images = _images(lib)
    assert len(images) == meta["cuda"]["images"] == 4  # one gpu.binary per kernel
    ptx = ctypes.string_at(ctypes.cast(lib.mlc_cuda_ptx, ctypes.c_void_p).value).decode()
    parts = ptx.split("// gpu.binary")[1:]
    assert len(parts) == 4
    for i, part in enumerate(parts):
        src = tmp_path / f"k{i}.ptx"
        src.write_text(part.split("\n", 1)[1])
        proc = subprocess.run([str(tool), "-arch=sm_90", str(src), "-o", str(tmp_path / f"k{i}.cubin")],
                              capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr
        assert images[i][:4] == b"\x7fELF"  # with ptxas the library holds cubins


def test_calls_without_the_loader_fail_cleanly(vadd):
    """Opened by ctypes alone (no mgpu table): the host code's CUDA calls do nothing, no crash."""
    _, path = vadd
    lib, _ = _open(path)
    assert lib.mlc_cuda_load() == -1
    desc = (ctypes.c_int64 * 5)()
    ptrs = [ctypes.pointer(desc) for _ in range(3)]
    packed = (ctypes.c_void_p * 3)(*[ctypes.cast(ctypes.pointer(p), ctypes.c_void_p) for p in ptrs])
    lib._mlir__mlir_ciface_main(packed)
    lib.mlc_last_error.restype = ctypes.c_char_p
    assert b"not set up" in lib.mlc_last_error()
    assert not lib.mlc_get_function(b"main")
    assert b"CUDA code" in lib.mlc_last_error()


@no_gpu
def test_load_without_a_gpu_is_a_clear_error(vadd):
    _, path = vadd
    with pytest.raises(CudaUnavailable, match=r"holds CUDA kernels \(cuda -arch=sm_90\), which need a CUDA GPU: "):
        mlc.runtime.load_module(path)
    # in a fresh process: the same error, and no MLIR module imported
    code = ("import sys\nimport mlc_mlir.runtime as r\n"
            "try:\n    r.load_module(sys.argv[1])\nexcept r.cuda_device.CudaUnavailable as e:\n    print('error:', e)\n"
            "print('mlir' in sys.modules or any(m.startswith('mlir.') for m in sys.modules))\n")
    proc = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("error: load_module(") and proc.stdout.rstrip().endswith("False"), proc.stdout


def test_load_without_cuda_python_names_it(vadd, monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "cuda.bindings", None)  # import fails
    with pytest.raises(CudaUnavailable, match=r"cuda-python"):
        mlc.runtime.load_module(_copy(vadd[1], tmp_path))


def test_load_for_another_chip_is_a_clear_error(vadd, tmp_path):
    rt, path = vadd
    if rt.cuda.format != "bin":
        pytest.skip("PTX runs on later chips too")
    with use_driver(FakeDriver(arch=(8, 0))):
        with pytest.raises(CudaUnavailable, match=r"compiled for sm_90 \(cubin\) but GPU 0 is sm_80"):
            mlc.runtime.load_module(_copy(path, tmp_path))


def test_loaded_library_runs_against_the_fake_driver(vadd, tmp_path, rng):
    rt, path = vadd
    image = _images(_open(path)[0])[0]
    fake = FakeDriver()
    fake.emulators["main_kernel"] = _vector_add_kernel
    with use_driver(fake):
        loaded = mlc.runtime.load_module(_copy(path, tmp_path))
        assert fake.images == [image]  # the library's kernel binary, loaded through cuda-python
        assert loaded.functions == ["main"] and loaded.target == "cuda -arch=sm_90"
        a, b = rng.random(1024, dtype=np.float32), rng.random(1024, dtype=np.float32)
        c = np.zeros(1024, np.float32)
        loaded["main"](a, b, c)  # host arrays: copied in and out
        np.testing.assert_array_equal(c, a + b)
        A, B = mlc.runtime.array(a, device=mlc.cuda(0)), mlc.runtime.array(b, device=mlc.cuda(0))
        C = mlc.runtime.empty((1024,), "float32", mlc.cuda(0))
        loaded["main"](A, B, C)  # device arrays: in place
        np.testing.assert_array_equal(C.numpy(), a + b)
        assert fake.launches == [("main_kernel", (8, 1, 1, 128, 1, 1), 0)] * 2
        assert loaded.time_evaluator("main", mlc.cuda(0), number=2)(A, B, C).mean > 0
        with pytest.raises(mlc.ArgumentError, match=r"expected shape \(1024,\)"):
            loaded["main"](a[:8], b[:8], c[:8])
        fake.fail["cuLaunchKernel"] = fake.CUresult.CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES
        with pytest.raises(CudaError, match="cuLaunchKernel failed: CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES"):
            loaded["main"](A, B, C)
        del fake.fail["cuLaunchKernel"]
        loaded["main"](A, B, C)  # the error was reported once, the module still works
        assert loaded.get_source("ptx") == loaded.imported_modules[0].get_source() == rt.get_source("ptx")
        again = mlc.runtime.load_module(tmp_path / path.name)  # the same library again: kernels loaded once
        again["main"](A, B, C)
        assert len(fake.images) == 1


def test_ptx_library_without_ptxas(monkeypatch, tmp_path, rng):
    """No toolkit: the library holds PTX, handed to the driver whole (NUL-terminated) when loaded."""
    from mlc_mlir.compiler import gpu_pipeline

    monkeypatch.setattr(gpu_pipeline, "cuda_toolkit", lambda: None)
    rt = mlc.build(vector_add(256, 64).mod, target="cuda -arch=sm_90")
    assert rt.cuda.format == "isa"
    rt.export_library(tmp_path / "ptx.so")
    assert _open(tmp_path / "ptx.so")[1]["cuda"]["format"] == "isa"
    fake = FakeDriver(arch=(10, 0))  # PTX runs on later chips
    fake.emulators["main_kernel"] = _vector_add_kernel
    with use_driver(fake):
        loaded = mlc.runtime.load_module(tmp_path / "ptx.so")
        (image,) = fake.images
        assert image.startswith(b"//") and b".entry main_kernel" in image and image.endswith(b"}\n\0")
        a, b, c = rng.random(256, dtype=np.float32), rng.random(256, dtype=np.float32), np.zeros(256, np.float32)
        loaded["main"](a, b, c)
        np.testing.assert_array_equal(c, a + b)


def test_driver_refusing_the_image_is_a_cuda_error(vadd, tmp_path):
    fake = FakeDriver()
    fake.fail["cuModuleLoadData"] = fake.CUresult.CUDA_ERROR_INVALID_VALUE
    with use_driver(fake), pytest.raises(CudaError, match="cuModuleLoadData failed"):
        mlc.runtime.load_module(_copy(vadd[1], tmp_path))


def test_loaded_graph_runs_in_the_vm_against_the_fake_driver(mlp, tmp_path):
    _, ex, path = mlp
    fake = FakeDriver()
    with use_driver(fake):
        loaded = mlc.runtime.load_module(_copy(path, tmp_path))
        assert isinstance(loaded, Executable) and loaded.functions == ex.functions
        assert len(fake.images) == 4
        vm = mlc.graph.VirtualMachine(loaded, mlc.cuda(0))
        out = vm["main"](np.zeros((3, 784), np.float32))
        assert isinstance(out, mlc.runtime.CudaNDArray) and out.shape == (3, 10)
        assert len(fake.launches) == 4
        with pytest.raises(mlc.GraphError, match="built for"):
            mlc.graph.VirtualMachine(loaded, mlc.cpu())
    assert fake.calls.count("cuMemAllocAsync") == fake.calls.count("cuMemFreeAsync")


@needs_gpu
def test_loaded_library_runs_on_the_gpu(tmp_path, rng):
    arch = device_arch()
    rt = mlc.build(vector_add(1000, 128).mod, target=f"cuda -arch={arch}")
    rt.export_library(tmp_path / "vadd.so")
    p = mlp_params()
    mlc.graph.build(mlp_module(p), f"cuda -arch={arch}").export_library(tmp_path / "mlp.so")
    # in a fresh process, as a deployment would: no MLIR imported
    code = f"""
import sys, numpy as np, mlc_mlir.runtime as r
from mlc_mlir.runtime.vm import VirtualMachine
rng = np.random.default_rng(0)
vadd = r.load_module({str(tmp_path / 'vadd.so')!r})
a, b, c = rng.random(1000, dtype=np.float32), rng.random(1000, dtype=np.float32), np.zeros(1000, np.float32)
vadd["main"](a, b, c)
np.testing.assert_allclose(c, a + b, rtol=1e-6)
A, B, C = (r.array(v, device=r.cuda(0)) for v in (a, b, np.zeros(1000, np.float32)))
vadd["main"](A, B, C)
np.testing.assert_allclose(C.numpy(), a + b, rtol=1e-6)
assert vadd.time_evaluator("main", r.cuda(0), number=5)(A, B, C).mean > 0
vm = VirtualMachine(r.load_module({str(tmp_path / 'mlp.so')!r}), r.cuda(0))
x = rng.random((5, 784), dtype=np.float32)
np.save({str(tmp_path / 'out.npy')!r}, vm["main"](x).numpy()); np.save({str(tmp_path / 'x.npy')!r}, x)
assert not any(m == "mlir" or m.startswith("mlir.") for m in sys.modules)
"""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    x = np.load(tmp_path / "x.npy")
    np.testing.assert_allclose(np.load(tmp_path / "out.npy"), mlp_reference(p, x), rtol=1e-4, atol=1e-4)
