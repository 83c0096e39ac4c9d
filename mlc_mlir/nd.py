"""The course's ``tvm.nd`` names, re-exported from :mod:`mlc_mlir.runtime`::

    import mlc_mlir as tvm

    a_nd = tvm.nd.array(a_np)                     # = mlc.runtime.array
    c_nd = tvm.nd.empty((128, 128), dtype="float32")
    isinstance(c_nd, tvm.nd.NDArray)
"""

from .runtime import NDArray, array, cpu, cuda, empty

__all__ = ["array", "empty", "NDArray", "cpu", "cuda"]
