"""mlc.build / runtime: course ch.2 mm_relu from MLIR text, symbolic shapes, errors, timing."""

import numpy as np
import pytest

import mlc_mlir as mlc

SYMBOLIC = """
func.func @linear0(%X: tensor<1x?xf32> {mlc.name = "X", mlc.shape = [1, "m"]},
                   %W: tensor<?x?xf32> {mlc.name = "W", mlc.shape = ["n", "m"]},
                   %Z: tensor<1x?xf32> {mlc.name = "Z", mlc.shape = [1, "n"]}) -> tensor<1x?xf32> attributes {mlc.prim_func} {
  %zero = arith.constant 0.0 : f32
  %z0 = linalg.fill {mlc.block_init = "Z"} ins(%zero : f32) outs(%Z : tensor<1x?xf32>) -> tensor<1x?xf32>
  %z = linalg.generic {indexing_maps = [affine_map<(i, j, k) -> (i, k)>, affine_map<(i, j, k) -> (j, k)>,
                                         affine_map<(i, j, k) -> (i, j)>],
                       iterator_types = ["parallel", "parallel", "reduction"]}
       ins(%X, %W : tensor<1x?xf32>, tensor<?x?xf32>) outs(%z0 : tensor<1x?xf32>) attrs = {mlc.block = "Z"} {
  ^bb0(%x: f32, %w: f32, %acc: f32):
    %p = arith.mulf %x, %w : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<1x?xf32>
  return %z : tensor<1x?xf32>
}
"""

MEMREF_FORM = """
func.func @scale(%a: memref<16xf32>, %b: memref<16xf32>) {
  %two = arith.constant 2.0 : f32
  linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]}
      ins(%a : memref<16xf32>) outs(%b : memref<16xf32>) {
  ^bb0(%x: f32, %o: f32):
    %r = arith.mulf %x, %two : f32
    linalg.yield %r : f32
  }
  return
}
"""


@pytest.fixture(scope="module")
def mm_relu_rt():
    from conftest import MM_RELU
    return mlc.build(mlc.Module.parse(MM_RELU), target="llvm")


def test_mm_relu_from_text_matches_numpy(mm_relu_rt, rng):
    a = rng.random((128, 128), dtype=np.float32)
    b = rng.random((128, 128), dtype=np.float32)
    c = np.zeros((128, 128), np.float32)
    mm_relu_rt["mm_relu"](a, b, c)
    np.testing.assert_allclose(c, np.maximum(a @ b, 0), rtol=1e-5)


def test_mm_relu_with_runtime_arrays(mm_relu_rt, rng):
    a_np = rng.standard_normal((128, 128), dtype=np.float32)
    b_np = rng.standard_normal((128, 128), dtype=np.float32)
    a, b = mlc.runtime.array(a_np), mlc.runtime.array(b_np)
    c = mlc.runtime.empty((128, 128), "float32", mlc.cpu())
    view = np.from_dlpack(c)  # taken before the call
    view[...] = -1.0
    mm_relu_rt["mm_relu"](a, b, c)
    np.testing.assert_allclose(c.numpy(), np.maximum(a_np @ b_np, 0), rtol=1e-4, atol=1e-4)
    # the output is written in place, zero-copy: the view taken before the call sees it
    np.testing.assert_array_equal(view, c.numpy())


def test_symbolic_function_runs_two_sizes_with_one_compile(rng):
    rt = mlc.build(mlc.Module.parse(SYMBOLIC))
    f = rt["linear0"]
    for m, n in [(784, 128), (64, 10)]:
        x = rng.standard_normal((1, m), dtype=np.float32)
        w = rng.standard_normal((n, m), dtype=np.float32)
        z = np.zeros((1, n), np.float32)
        f(x, w, z)
        np.testing.assert_allclose(z, x @ w.T, rtol=1e-4, atol=1e-4)
    with pytest.raises(mlc.ArgumentError, match="symbol 'm' was bound to 8 by X"):
        f(np.zeros((1, 8), np.float32), np.zeros((4, 9), np.float32), np.zeros((1, 4), np.float32))
    with pytest.raises(mlc.ArgumentError, match="symbol 'n'"):
        f(np.zeros((1, 8), np.float32), np.zeros((4, 8), np.float32), np.zeros((1, 5), np.float32))


def test_memref_form_function(rng):
    rt = mlc.build(mlc.Module.parse(MEMREF_FORM))
    a = rng.random(16, dtype=np.float32)
    b = np.zeros(16, np.float32)
    rt["scale"](a, b)
    np.testing.assert_allclose(b, 2 * a)


def test_non_contiguous_input_is_copied_output_rejected(mm_relu_rt, rng):
    a = rng.random((128, 256), dtype=np.float32)[:, ::2]
    b = rng.random((128, 128), dtype=np.float32)
    c = np.zeros((128, 128), np.float32)
    mm_relu_rt["mm_relu"](a, b, c)
    np.testing.assert_allclose(c, np.maximum(a @ b, 0), rtol=1e-5)
    with pytest.raises(mlc.ArgumentError, match="C-contiguous"):
        mm_relu_rt["mm_relu"](a, b, np.zeros((128, 256), np.float32)[:, ::2])


def test_huge_zero_stride_input_is_checked_before_any_copy():
    # A broadcast view of 2**40 rows costs no memory; its contiguous copy would be 32 TiB.
    # The checks of every argument run before an input is copied: ArgumentError, not
    # NumPy's MemoryError (nor, with overcommit, a copy that runs the machine out of memory).
    f = mlc.build(mlc.Module.parse(SYMBOLIC))["linear0"]
    huge_w = np.broadcast_to(np.zeros(1, np.float32), (2**40, 8))
    with pytest.raises(mlc.ArgumentError, match="dimension 1 is 4 but symbol 'n' was bound to 1099511627776 by W"):
        f(np.zeros((1, 8), np.float32), huge_w, np.zeros((1, 4), np.float32))
    with pytest.raises(mlc.ArgumentError, match=r"argument 1 \(W\): expected dtype float32, got float64"):
        f(np.zeros((1, 8), np.float32), np.broadcast_to(np.zeros(1), (2**40, 8)), np.zeros((1, 4), np.float32))
    # A call the checks accept whose copy is beyond any address space (256 TiB): the
    # argument is named, and nothing is left half done.
    huge_x = np.broadcast_to(np.zeros(1, np.float32), (1, 2**46))
    with pytest.raises(mlc.ArgumentError, match=r"argument 0 \(X\): the code reads a contiguous copy .* "
                                                r"cannot be allocated; pass a C-contiguous array"):
        f(huge_x, np.broadcast_to(np.zeros(1, np.float32), (4, 2**46)), np.zeros((1, 4), np.float32))


@pytest.mark.parametrize("args, msg", [
    (lambda a, b, c: (a, b), "takes 3 arguments"),
    (lambda a, b, c: (a, b, c, c), "takes 3 arguments"),
    (lambda a, b, c: (a.astype(np.float64), b, c), "argument 0.*expected dtype float32, got float64"),
    (lambda a, b, c: (a, b[:64], c), r"argument 1.*expected shape \(128, 128\), got \(64, 128\)"),
    (lambda a, b, c: (a, b, c.reshape(-1)), "argument 2.*expected rank 2"),
    (lambda a, b, c: (a, b, a), "overlaps argument 0"),
    (lambda a, b, c: (a, b, "hello"), "argument 2.*dtype"),
])
def test_bad_arguments_raise(mm_relu_rt, args, msg):
    a, b, c = (np.zeros((128, 128), np.float32) for _ in range(3))
    with pytest.raises(mlc.ArgumentError, match=msg):
        mm_relu_rt["mm_relu"](*args(a, b, c))


def test_unknown_function_and_target(mm_relu_rt):
    with pytest.raises(mlc.MlcError, match="no public function 'relu'.*mm_relu"):
        mm_relu_rt["relu"]
    mod = mlc.Module.parse(MEMREF_FORM)
    with pytest.raises(mlc.BuildError, match="unknown target 'metal'"):
        mlc.build(mod, target="metal")
    with pytest.raises(mlc.BuildError, match="every loop nest must be bound"):
        mlc.build(mod, target="cuda")
    with pytest.raises(mlc.BuildError, match="expects an mlc.Module"):
        mlc.build("func.func @f() { return }")


def test_not_destination_passing_is_rejected():
    mod = mlc.Module.parse("""
    func.func @f(%a: tensor<4xf32>) -> tensor<8xf32> {
      %e = tensor.empty() : tensor<8xf32>
      return %e : tensor<8xf32>
    }""")
    with pytest.raises(mlc.BuildError, match="destination-passing"):
        mlc.build(mod)


def test_time_evaluator_and_sources(mm_relu_rt, rng):
    a, b = rng.random((128, 128), dtype=np.float32), rng.random((128, 128), dtype=np.float32)
    c = np.zeros((128, 128), np.float32)
    res = mm_relu_rt.time_evaluator("mm_relu", mlc.cpu(), number=3, repeat=2)(a, b, c)
    assert len(res.results) == 2 and res.mean > 0 and res.min <= res.median <= res.max
    np.testing.assert_allclose(c, np.maximum(a @ b, 0), rtol=1e-5)
    llvm_ir = mm_relu_rt.get_source("llvm")
    assert "define void @_mlir_ciface_mm_relu" in llvm_ir
    assert "linalg.matmul" in mm_relu_rt.get_source("mlir")
    with pytest.raises(mlc.MlcError, match="unknown format"):
        mm_relu_rt.get_source("ptx")


def test_runtime_arrays_and_devices():
    arr = mlc.runtime.array(np.arange(6, dtype=np.float32).reshape(2, 3))
    assert arr.shape == (2, 3) and arr.dtype == "float32" and str(arr.device) == "cpu(0)"
    np.testing.assert_array_equal(np.from_dlpack(arr), arr.numpy())
    if mlc.runtime.cuda_device.device_count() == 0:  # CUDA arrays need a GPU (tests/python/test_cuda_host.py)
        with pytest.raises(mlc.MlcError, match="CUDA"):
            mlc.runtime.empty((2,), "float32", mlc.cuda(0))
    with pytest.raises(mlc.MlcError, match="unknown dtype"):
        mlc.runtime.empty((2,), "floaty")
    with pytest.raises(mlc.MlcError, match="non-negative ints"):
        mlc.runtime.empty((2, -1))


def test_function_calling_public_and_private_functions(rng):
    mod = mlc.Module.parse("""
    func.func @double(%a: tensor<4xf32>, %e: tensor<4xf32>) -> tensor<4xf32> {
      %r = linalg.add ins(%a, %a : tensor<4xf32>, tensor<4xf32>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
      return %r : tensor<4xf32>
    }
    func.func private @square(%a: tensor<4xf32>) -> tensor<4xf32> {
      %e = tensor.empty() : tensor<4xf32>
      %r = linalg.mul ins(%a, %a : tensor<4xf32>, tensor<4xf32>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
      return %r : tensor<4xf32>
    }
    func.func @f(%a: tensor<4xf32>, %o: tensor<4xf32>) -> tensor<4xf32> {
      %e0 = tensor.empty() : tensor<4xf32>
      %d = func.call @double(%a, %e0) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
      %s = func.call @square(%a) : (tensor<4xf32>) -> tensor<4xf32>
      %r = linalg.add ins(%d, %s : tensor<4xf32>, tensor<4xf32>) outs(%o : tensor<4xf32>) -> tensor<4xf32>
      return %r : tensor<4xf32>
    }""")
    rt = mlc.build(mod)
    assert rt.functions == ["double", "f"]
    a = rng.standard_normal(4, dtype=np.float32)
    out = np.zeros(4, np.float32)
    rt["f"](a, out)
    np.testing.assert_allclose(out, 2 * a + a * a, rtol=1e-6)
    rt["double"](a, out)
    np.testing.assert_allclose(out, 2 * a, rtol=1e-6)
