"""``mlc.runtime.array`` / ``empty`` allocate CPU arrays on a 64-byte boundary (as TVM's
NDArray): a kernel's vector loads then do not straddle cache lines (timing:
benchmarks/bench_matmul.py). Values, dtypes and shapes are those of the source."""

import numpy as np
import pytest

import mlc_mlir as mlc
from mlc_mlir.runtime.ndarray import ALIGNMENT, aligned_empty
from mlc_mlir.testing.programs import inputs, mm_relu


def address(arr) -> int:
    return np.from_dlpack(arr).ctypes.data


@pytest.mark.parametrize("dtype", ["float32", "float64", "int8", "int64", "bool", "float16"])
@pytest.mark.parametrize("shape", [(3, 5), (1,), (0, 4), (7, 9, 11)])
def test_array_and_empty_are_aligned(rng, dtype, shape):
    src = (rng.standard_normal(shape) * 10).astype(dtype)
    arr = mlc.runtime.array(src)
    assert src.size == 0 or address(arr) % ALIGNMENT == 0  # (an empty array has no data)
    np.testing.assert_array_equal(arr.numpy(), src)
    assert arr.shape == src.shape and arr.dtype == src.dtype
    empty = mlc.runtime.empty(shape, dtype)
    assert (src.size == 0 or address(empty) % ALIGNMENT == 0) and empty.shape == shape


def test_array_of_a_strided_view_is_a_contiguous_aligned_copy():
    base = np.arange(48, dtype=np.float32).reshape(6, 8)
    view = base[1::2, ::3]
    arr = mlc.runtime.array(view)
    out = np.from_dlpack(arr)
    assert out.flags["C_CONTIGUOUS"] and out.ctypes.data % ALIGNMENT == 0
    np.testing.assert_array_equal(out, view)
    base[...] = -1  # a copy: the source can change
    np.testing.assert_array_equal(out, np.arange(48, dtype=np.float32).reshape(6, 8)[1::2, ::3])


def test_aligned_empty_is_writable_and_keeps_its_buffer():
    arr = aligned_empty((33, 17), np.float32)
    assert arr.ctypes.data % ALIGNMENT == 0 and arr.flags["WRITEABLE"] and arr.flags["C_CONTIGUOUS"]
    arr[...] = 2.5
    assert arr.base is not None  # the byte buffer, kept alive by the view
    assert float(arr.sum()) == 2.5 * 33 * 17


def test_kernel_on_aligned_arrays_equals_numpy():
    a, b = inputs(128)
    sch = mlc.Schedule(mm_relu(128))
    mlc.schedule.rules.apply_rules(sch, "llvm -num-cores=1")
    rt = mlc.build(sch.mod)
    A, B, C = mlc.runtime.array(a), mlc.runtime.array(b), mlc.runtime.empty((128, 128), "float32")
    rt["mm_relu"](A, B, C)
    np.testing.assert_allclose(C.numpy(), np.maximum(a @ b, 0), rtol=1e-4, atol=1e-4)
