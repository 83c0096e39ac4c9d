"""``mlc.topi``: the tensor-expression operator library (the course's ``tvm.topi``).

Each function takes ``te`` tensors (placeholders or computes) and returns a new ``te``
tensor, so it composes with ``te.compute`` and with ``bb.emit_te`` / ``bb.call_te``:

    from mlc_mlir import te, topi
    A = te.placeholder((1, 784), name="A")
    W = te.placeholder((784, 128), name="W")
    Y = topi.nn.relu(topi.nn.matmul(A, W))
    mod = te.create_prim_func([A, W, Y])

    lv0 = bb.emit_te(topi.nn.dense, x, w0)         # in a graph (course ch.5 / ch.7)

These are the functions ``LegalizeOps`` uses for the graph ops (``mlc.graph.legalize``).
Elementwise and layout operators live here, neural-network ones in :mod:`mlc_mlir.topi.nn`.
"""

from . import nn
from .elementwise import (add, divide, ewise_fma, exp, multiply, sigmoid, sqrt, subtract, tanh)
from .transform import flatten, permute_dims, reshape, transpose

__all__ = ["nn", "add", "subtract", "multiply", "divide", "ewise_fma", "exp", "sqrt", "tanh",
           "sigmoid", "transpose", "permute_dims", "reshape", "flatten"]
