"""Tensor expressions (the course's ``tvm.te``): describe computations, get tensor programs.

    from mlc_mlir import te
    A = te.placeholder((128, 128), "float32", name="A")
    B = te.placeholder((128, 128), "float32", name="B")
    k = te.reduce_axis((0, 128), "k")
    Y = te.compute((128, 128), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="Y")
    C = te.compute((128, 128), lambda i, j: te.max(Y[i, j], 0), name="C")
    mod = te.create_prim_func([A, B, C], name="mm_relu")

Each ``te.compute`` becomes one ``linalg.generic`` whose ``mlc.block`` attribute is the
compute's name; see :func:`create_prim_func` and docs/conventions.md.
"""

from .compute import (abs, all, any, ceil, compute, cos, exp, floor, if_then_else, log, max, min,
                      placeholder, power, reduce_axis, round, rsqrt, sigmoid, sin, sqrt, sum,
                      tanh, var)
from .expr import Expr, IterVar, Var, const
from .lower import create_prim_func
from .tensor import Tensor
from ..tensor_types import TENSOR_DTYPES

__all__ = ["placeholder", "var", "reduce_axis", "compute", "create_prim_func", "sum", "max",
           "min", "const", "if_then_else", "all", "any", "exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid",
           "abs", "floor", "ceil", "round", "sin", "cos", "power", "Tensor", "Expr", "Var",
           "IterVar", "TENSOR_DTYPES"]
