"""Memref descriptors for NumPy arrays, without copies, and views back from descriptors.

``mlir.runtime.get_ranked_memref_descriptor`` builds a new ctypes class on every call
(hundreds of microseconds); here the descriptor class is cached per (rank, dtype).
"""

from __future__ import annotations

import ctypes
import functools

import numpy as np

from ..errors import ArgumentError

__all__ = ["descriptor_class", "descriptor", "packed_args", "view", "MLIR_TO_NUMPY", "numpy_dtype"]

#: element type spelling in MLIR -> NumPy dtype
MLIR_TO_NUMPY: dict[str, np.dtype] = {
    "f16": np.dtype("float16"),
    "f32": np.dtype("float32"),
    "f64": np.dtype("float64"),
    "i1": np.dtype("bool"),
    "i8": np.dtype("int8"),
    "i16": np.dtype("int16"),
    "i32": np.dtype("int32"),
    "i64": np.dtype("int64"),
    "index": np.dtype("int64"),
    "ui8": np.dtype("uint8"),
    "ui16": np.dtype("uint16"),
    "ui32": np.dtype("uint32"),
    "ui64": np.dtype("uint64"),
    "si8": np.dtype("int8"),
    "si16": np.dtype("int16"),
    "si32": np.dtype("int32"),
    "si64": np.dtype("int64"),
    "complex<f32>": np.dtype("complex64"),
    "complex<f64>": np.dtype("complex128"),
}


def numpy_dtype(mlir_elem: str) -> np.dtype:
    """NumPy dtype of an MLIR element type spelling (``f32`` -> float32).

    Raises:
        ArgumentError: a type NumPy has no dtype for (``bf16``, ``f8E4M3FN``, ``i4``...):
            arrays of it cannot be passed from Python.
    """
    try:
        return MLIR_TO_NUMPY[mlir_elem]
    except (KeyError, TypeError):
        raise ArgumentError(f"element type {mlir_elem} has no NumPy dtype, so arrays of it cannot be "
                            f"passed from Python (supported: {', '.join(MLIR_TO_NUMPY)})") from None


@functools.lru_cache(maxsize=None)
def descriptor_class(rank: int, dtype: np.dtype) -> type[ctypes.Structure]:
    """The ctypes class of a rank-``rank`` memref descriptor of ``dtype`` (cached)."""
    # only the pointer fields depend on the element type; a byte array of the element's
    # size keeps the descriptor layout for types ctypes has no scalar for (complex)
    ctype = ctypes.c_bool if dtype == np.dtype("bool") else ctypes.c_byte * dtype.itemsize

    class MemRefDescriptor(ctypes.Structure):
        """MLIR's ``StridedMemRefType<T, rank>``: what an ``_mlir_ciface_`` function takes
        (the layout ``mlir.runtime.make_nd_memref_descriptor`` builds, without the bindings)."""

        _fields_ = [("allocated", ctypes.c_longlong), ("aligned", ctypes.POINTER(ctype)),
                    ("offset", ctypes.c_longlong), ("shape", ctypes.c_longlong * rank),
                    ("strides", ctypes.c_longlong * rank)]

    return MemRefDescriptor


def descriptor(arr: np.ndarray, offset: int = 0) -> ctypes.Structure:
    """A memref descriptor pointing at ``arr``'s data (zero-copy; strides in elements).

    ``offset`` (elements) is stored in the descriptor, its aligned pointer moved back by as
    much, for memrefs whose layout has a static offset.
    """
    desc = descriptor_class(arr.ndim, arr.dtype)()
    ptr = arr.ctypes.data
    desc.allocated = ptr
    desc.aligned = ctypes.cast(ptr - offset * arr.itemsize, desc._fields_[1][1])
    desc.offset = offset
    if arr.ndim:
        desc.shape[:] = arr.shape
        desc.strides[:] = [s // arr.itemsize for s in arr.strides]
    return desc


def packed_args(arrays: list[np.ndarray], offsets: list[int] | None = None) -> tuple[ctypes.Array, list[object]]:
    """The ``void**`` argument array of an ``_mlir_ciface_`` call, plus the objects to keep alive.

    ``offsets``: the static layout offset of each argument (0 for identity layouts).
    """
    keep: list[object] = []
    packed = (ctypes.c_void_p * len(arrays))()
    for i, arr in enumerate(arrays):
        ptr = ctypes.pointer(descriptor(arr, offsets[i] if offsets else 0))
        pptr = ctypes.pointer(ptr)
        keep += [ptr, pptr]
        packed[i] = ctypes.cast(pptr, ctypes.c_void_p)
    return packed, keep


def view(desc_ptr: ctypes._Pointer, dtype: np.dtype, rank: int) -> np.ndarray:
    """A zero-copy NumPy view of the memref a descriptor pointer describes (offset and strides kept)."""
    desc = desc_ptr[0]
    itemsize = dtype.itemsize
    base = ctypes.cast(desc.aligned, ctypes.c_void_p).value or 0
    base += desc.offset * itemsize
    shape = tuple(desc.shape) if rank else ()
    strides = tuple(s * itemsize for s in desc.strides) if rank else ()
    if any(n == 0 for n in shape):
        return np.empty(shape, dtype=dtype)
    span = 1 + sum((n - 1) * s for n, s in zip(shape, desc.strides)) if rank else 1
    buf = (ctypes.c_char * (span * itemsize)).from_address(base)
    return np.ndarray(shape, dtype=dtype, buffer=buf, strides=strides)
