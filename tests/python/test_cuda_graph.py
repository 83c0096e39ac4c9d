"""Graphs on the GPU: ``mlc.graph.build(mod, target="cuda")`` with the default GPU rules,
``VirtualMachine(ex, mlc.cuda(0))``. Compile-only checks run everywhere (PTX); the
digits MLP run test needs a GPU; the VM's plumbing runs against the fake driver."""

import importlib.util
from pathlib import Path

import numpy as np
import pytest
from _cuda_util import ptxas
from _fake_cuda import FakeDriver

import mlc_mlir as mlc
from mlc_mlir.compiler.cuda import cuda_driver, device_arch
from mlc_mlir.runtime.cuda_device import use_driver

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "mlp_digits.py"
needs_gpu = pytest.mark.skipif(cuda_driver() is None or device_arch() is None, reason="needs a CUDA GPU")


@pytest.fixture(scope="module")
def digits():
    spec = importlib.util.spec_from_file_location("mlp_digits", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def mlp_cuda(digits):
    return mlc.graph.build(digits.build_mlp_ops(), target="cuda")


def test_mlp_builds_for_cuda(mlp_cuda, tmp_path):
    ptx = mlp_cuda.get_source("ptx")
    # fused kernels: dense+add+relu, dense+add -> one kernel per block (matmul, bias+relu, matmul, bias)
    assert ptx.count(".visible .entry") == 4
    import re

    assert sorted(re.findall(r"\.maxntid (\d+), 1, 1", ptx)) == ["10", "10", "128", "128"]
    assert "fma.rn.f32" in ptx and "add.f32" in ptx  # dense: contracted mulf+addf; bias
    tool = ptxas()
    if tool is not None:
        import subprocess

        for i, part in enumerate(ptx.split("// gpu.binary")[1:]):
            path = tmp_path / f"k{i}.ptx"
            path.write_text(part.split("\n", 1)[1])
            proc = subprocess.run([str(tool), "-arch=sm_90", str(path), "-o", str(tmp_path / f"k{i}.cubin")],
                                  capture_output=True, text=True)
            assert proc.returncode == 0, proc.stderr


def test_vm_on_cuda_plumbing(digits):
    """Inputs copied to the device, outputs returned as CUDA arrays (kernels emulated away)."""
    fake = FakeDriver()
    with use_driver(fake):
        ex = mlc.graph.build(digits.build_mlp_ops(), target="cuda")
        vm = mlc.graph.VirtualMachine(ex, mlc.cuda(0))
        x = np.zeros((7, 64), np.float32)
        weights = [np.zeros(s, np.float32) for s in ((128, 64), (128,), (10, 128), (10,))]
        out = vm["main"](x, *weights)
        assert isinstance(out, mlc.runtime.CudaNDArray) and out.shape == (7, 10)
        assert len(fake.launches) == 4
        with pytest.raises(mlc.GraphError, match="built for"):
            mlc.graph.VirtualMachine(ex, mlc.cpu())
        # host inputs are checked before they are copied: a 2**40-row zero-stride view of
        # the wrong dtype or width is an ArgumentError, not NumPy's MemoryError
        for huge, msg in ((np.broadcast_to(np.zeros(1), (2**40, 64)), "expected dtype float32, got float64"),
                          (np.broadcast_to(np.zeros(1, np.float32), (2**40, 63)), r"argument 0 \(x\): expected shape \(n, 64\)")):
            with pytest.raises(mlc.ArgumentError, match=msg):
                vm["main"](huge, *weights)
        assert fake.calls.count("cuMemAllocAsync") == fake.calls.count("cuMemFreeAsync")


def test_env_functions_are_refused_for_cuda(digits):
    mod = digits.build_mlp(("env", "env", "env"), None)
    with pytest.raises(mlc.GraphError, match="environment functions"):
        mlc.graph.build(mod, target="cuda")


@needs_gpu
def test_mlp_runs_on_the_gpu(digits, mlp_cuda):
    x_train, y_train, x_test, y_test = digits.load_data()
    params = digits.train_mlp(x_train, y_train)
    weights = [params[k] for k in ("w0", "b0", "w1", "b1")]
    ref = digits.numpy_mlp(x_test, *weights)
    vm = mlc.graph.VirtualMachine(mlp_cuda, mlc.cuda(0))
    args = [mlc.runtime.array(a, device=mlc.cuda(0)) for a in (x_test, *weights)]
    logits = vm["main"](*args).numpy()
    np.testing.assert_allclose(logits, ref, rtol=1e-4, atol=1e-4)
    assert (logits.argmax(1) == y_test).mean() > 0.93


def test_bound_weights_are_copied_to_the_device(digits, rng):
    """BindParams constants are host globals: each call copies them into device buffers."""
    params = {"w0": rng.random((128, 64), dtype=np.float32), "b0": rng.random(128, dtype=np.float32),
              "w1": rng.random((10, 128), dtype=np.float32), "b1": rng.random(10, dtype=np.float32)}
    mod = mlc.graph.transform.BindParams("main", params)(digits.build_mlp_ops())
    fake = FakeDriver()
    with use_driver(fake):
        ex = mlc.graph.build(mod, target="cuda")
        out = mlc.graph.VirtualMachine(ex, mlc.cuda(0))["main"](np.zeros((5, 64), np.float32))
        assert out.shape == (5, 10) and len(fake.launches) == 4
        assert fake.calls.count("cuMemcpyAsync") == 4  # w0, b0, w1, b1
        assert fake.calls.count("cuMemAllocAsync") == fake.calls.count("cuMemFreeAsync")
