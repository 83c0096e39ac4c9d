"""Runtime: devices, arrays, memref descriptors and the environment-function registry."""

from .ndarray import Device, NDArray, array, as_numpy, cpu, cuda, empty
from .cuda_device import CudaNDArray, from_dlpack
from .registry import get_func, list_funcs, register_func
from .loader import load_module

__all__ = ["CudaNDArray", "Device", "NDArray", "from_dlpack", "array", "as_numpy", "cpu", "cuda", "empty",
           "get_func", "list_funcs", "load_module", "register_func"]
