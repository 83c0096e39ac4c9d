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
Modules: :mod:`.elementwise` (broadcasting arithmetic, comparisons, logical ops, ``where``,
unary math, ``clip``, ``cast``, fills), :mod:`.reduction` (``sum``... over axes, ``cumsum``),
:mod:`.transform` (layout), :mod:`.nn`.
"""

from . import nn
from .elementwise import (abs, add, bitwise_and, bitwise_or, cast, ceil, clip, cos, divide, equal, erf,
                          ewise_fma, exp, floor, full_like, greater, greater_equal, less, less_equal, log,
                          logical_and, logical_not, logical_or, maximum, minimum, multiply, negative,
                          not_equal, ones_like, power, rsqrt, sigmoid, sin, sqrt, subtract, tanh, where,
                          zeros_like)
from .reduction import all, any, cumsum, max, mean, min, prod, sum
from .transform import (broadcast_to, concatenate, expand_dims, flatten, permute_dims, reshape, squeeze,
                        strided_slice, take, transpose, tril, triu, trilu)

__all__ = ["nn", "add", "subtract", "multiply", "divide", "ewise_fma", "exp", "sqrt", "tanh",
           "sigmoid", "transpose", "permute_dims", "reshape", "flatten",
           # comparisons and masks
           "equal", "not_equal", "less", "less_equal", "greater", "greater_equal", "logical_and",
           "logical_or", "logical_not", "bitwise_and", "bitwise_or", "where",
           # elementwise math, casts, fills
           "power", "maximum", "minimum", "log", "rsqrt", "erf", "negative", "abs", "floor", "ceil",
           "sin", "cos", "clip", "cast", "full_like", "zeros_like", "ones_like",
           # reductions
           "sum", "mean", "max", "min", "prod", "any", "all", "cumsum",
           # layout and indexing
           "broadcast_to", "expand_dims", "squeeze", "strided_slice", "concatenate", "take", "trilu",
           "tril", "triu"]
