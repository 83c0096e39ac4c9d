"""The tensor-expression API: placeholders, axes, computes, reductions and math functions."""

from __future__ import annotations

import builtins
import inspect
from collections.abc import Callable, Sequence

import numpy as np

from ..errors import TEError
from ..tensor_types import BOOL, is_int, normalize_dtype
from .expr import Const, Expr, IterVar, Reduce, Var, as_expr, binary, call, const, logical, select
from .plan import plan_compute
from .tensor import ComputeOp, Tensor, normalize_shape

__all__ = ["placeholder", "var", "reduce_axis", "compute", "sum", "max", "min", "const",
           "if_then_else", "all", "any", "exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "abs", "floor",
           "ceil", "round", "sin", "cos", "power"]


def _check_name(name: object, what: str) -> str:
    if not isinstance(name, str) or not name:
        raise TEError(f"the name of {what} must be a non-empty string, got {name!r}")
    return name


def placeholder(shape: Sequence[int | str | Var], dtype: str = "float32", name: str = "placeholder") -> Tensor:
    """An input tensor of the tensor program.

    Args:
        shape: dimensions: ints, or strings / ``te.var`` for symbolic sizes (``(1, "m")``).
        dtype: element type (``float32``, ``float64``, ``float16``, ``int8``..``int64``,
            ``bool``: one byte per element in the tensor, ``i1`` when read).
        name: the argument's name (``mlc.name`` in the generated function).

    Returns:
        A :class:`Tensor` to index inside compute functions and to list in
        :func:`create_prim_func`.

    Raises:
        TEError: a bad shape, dtype or name.
    """
    name = _check_name(name, "a placeholder")
    return Tensor(normalize_shape(shape, what=f"placeholder {name!r}"),
                  normalize_dtype(dtype, what=f"dtype of placeholder {name!r}", allow_bool=True,
                                  error=TEError), name)


def var(name: str = "v", dtype: str = "int32") -> Var:
    """A symbolic size, usable in shapes and in expressions.

    A string in a shape means the same: ``te.var("n")`` and ``"n"`` are one symbol.
    """
    if not isinstance(name, str) or not name.isidentifier():
        raise TEError(f"te.var expects an identifier such as 'n', got {name!r}")
    if normalize_dtype(dtype, what="dtype of te.var", error=TEError) not in ("int32", "int64"):
        raise TEError(f"te.var {name!r}: dtype must be int32 or int64, got {dtype!r}")
    return Var(name, dtype)


def reduce_axis(dom: Sequence[int | str | Var], name: str = "rv") -> IterVar:
    """A reduction axis over ``range(lo, hi)`` for :func:`sum`, :func:`max`, :func:`min`.

    Args:
        dom: ``(lo, hi)``; ``hi`` may be a symbolic size (then ``lo`` must be 0).
        name: the axis's name.

    Raises:
        TEError: ``dom`` is not a pair of ints / a symbolic size, or is empty.
    """
    name = _check_name(name, "a reduce axis")
    if not isinstance(dom, (tuple, list)) or len(dom) != 2:
        raise TEError(f"reduce_axis {name!r}: expected (lo, hi), got {dom!r}")
    lo, hi = dom
    if isinstance(lo, Const) and is_int(lo.dtype):
        lo = lo.value
    if isinstance(lo, np.integer):
        lo = int(lo)
    if not isinstance(lo, int) or isinstance(lo, bool) or lo < 0:
        raise TEError(f"reduce_axis {name!r}: lower bound must be a non-negative int, got {lo!r}")
    (hi,) = normalize_shape((hi,), what=f"reduce_axis {name!r} (upper bound)")
    if isinstance(hi, Var):
        if lo != 0:
            raise TEError(f"reduce_axis {name!r}: with the symbolic upper bound {hi.name!r} the "
                          f"lower bound must be 0, got {lo}")
        return IterVar(name, hi, 0, "reduce")
    if hi <= lo:
        raise TEError(f"reduce_axis {name!r}: empty range ({lo}, {hi})")
    return IterVar(name, hi - lo, lo, "reduce")


def compute(shape: Sequence[int | str | Var], fcompute: Callable[..., object], name: str = "compute") -> Tensor:
    """A tensor whose element at ``(i, j, ...)`` is ``fcompute(i, j, ...)``.

    Example::

        k = te.reduce_axis((0, 128), "k")
        Y = te.compute((128, 128), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="Y")

    Args:
        shape: the output shape (ints and symbolic sizes).
        fcompute: called once with one axis per dimension; returns an expression (or a
            number). A reduction (``te.sum``...) must be the whole returned expression.
        name: the tensor's name, which is the block name (``mlc.block``) of its linalg op.

    Raises:
        TEError: a bad shape, an ``fcompute`` taking another number of axes, a bad body
            (see :func:`mlc_mlir.te.plan.check_body`), an affine index that may leave its
            tensor outside a branch of :func:`if_then_else`.
    """
    name = _check_name(name, "a compute")
    dims = normalize_shape(shape, what=f"compute {name!r}")
    if not callable(fcompute):
        raise TEError(f"compute {name!r}: fcompute must be callable, got {type(fcompute).__name__}")
    names = _axis_names(fcompute, len(dims), name)
    axes = tuple(IterVar(n, d, 0, "spatial") for n, d in zip(names, dims))
    body = fcompute(*axes)
    if isinstance(body, (tuple, list)):
        raise TEError(f"compute {name!r}: fcompute returned {len(body)} values; computes with "
                      "several outputs are not supported")
    body = as_expr(body)
    t = Tensor(dims, body.dtype, name, ComputeOp(axes, body))
    plan_compute(t)  # validates the body now, where the user wrote it
    return t


def _axis_names(fcompute: Callable[..., object], rank: int, name: str) -> list[str]:
    try:
        params = list(inspect.signature(fcompute).parameters.values())
    except (TypeError, ValueError):
        return [f"i{k}" for k in range(rank)]
    if builtins.any(p.kind is p.VAR_POSITIONAL for p in params):
        star = next(p for p in params if p.kind is p.VAR_POSITIONAL).name
        return [f"{star}{k}" for k in range(rank)]
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
                  and p.default is p.empty]
    if len(positional) != rank:
        raise TEError(f"compute {name!r}: the shape has {rank} dimensions but fcompute takes "
                      f"{len(positional)} axes ({', '.join(p.name for p in positional) or 'none'})")
    return [p.name for p in positional]


def _reduce(combiner: str, expr: object, axis: object) -> Reduce:
    axes = tuple(axis) if isinstance(axis, (tuple, list)) else (axis,)
    if axis is None or not axes:
        raise TEError(f"te.{combiner} needs axis= (a reduce axis or a list of them)")
    for ax in axes:
        if not isinstance(ax, IterVar) or ax.kind != "reduce":
            raise TEError(f"te.{combiner}: axis {ax!r} is not a reduce axis (make one with "
                          "te.reduce_axis((lo, hi), name))")
    if len({id(a) for a in axes}) != len(axes):
        raise TEError(f"te.{combiner}: axis lists a reduce axis twice: {[a.name for a in axes]}")
    return Reduce(combiner, as_expr(expr), axes)


def sum(expr: object, axis: IterVar | Sequence[IterVar] | None = None) -> Reduce:  # noqa: A001
    """The sum of ``expr`` over the reduce axes ``axis`` (the whole body of a compute)."""
    return _reduce("sum", expr, axis)


def max(a: object, b: object = None, *, axis: IterVar | Sequence[IterVar] | None = None) -> Expr:  # noqa: A001
    """``te.max(expr, axis=k)``: a max-reduction; ``te.max(a, b)``: the elementwise maximum."""
    return _min_max("max", a, b, axis)


def min(a: object, b: object = None, *, axis: IterVar | Sequence[IterVar] | None = None) -> Expr:  # noqa: A001
    """``te.min(expr, axis=k)``: a min-reduction; ``te.min(a, b)``: the elementwise minimum."""
    return _min_max("min", a, b, axis)


def _min_max(fn: str, a: object, b: object, axis: object) -> Expr:
    if axis is not None:
        if b is not None:
            raise TEError(f"te.{fn}: give either two operands or one expression and axis=")
        return _reduce(fn, a, axis)
    if b is None:
        raise TEError(f"te.{fn} needs two operands (te.{fn}(a, b)) or axis= for a reduction")
    return binary(fn, a, b)


def if_then_else(cond: object, true_value: object, false_value: object) -> Expr:
    """``true_value`` where the bool ``cond`` holds, else ``false_value`` (``arith.select``).

    Both branches are evaluated. A read in a branch whose affine index may leave its tensor
    (the padding idiom ``te.if_then_else(te.all(i >= 1, i <= n), A[i - 1], 0.0)``) is a
    ``tensor.extract`` with each index clamped into the tensor, so the untaken branch reads
    an element in bounds and the select drops it; the same read outside a branch raises.
    """
    return select(cond, true_value, false_value)


def all(*conds: object) -> Expr:  # noqa: A001
    """The conjunction ``c0 & c1 & ...`` of bool expressions (TVM's ``te.all``).

    Raises:
        TEError: no condition, or a condition that is not bool.
    """
    return _fold("all", "and", conds)


def any(*conds: object) -> Expr:  # noqa: A001
    """The disjunction ``c0 | c1 | ...`` of bool expressions (TVM's ``te.any``).

    Raises:
        TEError: no condition, or a condition that is not bool.
    """
    return _fold("any", "or", conds)


def _fold(fn: str, op: str, conds: tuple[object, ...]) -> Expr:
    if len(conds) == 1 and isinstance(conds[0], (list, tuple)):
        conds = tuple(conds[0])
    if not conds:
        raise TEError(f"te.{fn} needs at least one condition")
    out = as_expr(conds[0])
    if out.dtype != BOOL:
        raise TEError(f"te.{fn} expects bool conditions (comparisons), got {out} of type {out.dtype}")
    for c in conds[1:]:
        out = logical(op, out, c)
    return out


def power(a: object, b: object) -> Expr:
    """``a ** b`` on float expressions."""
    return binary("pow", a, b)


def _unary(fn: str, doc: str) -> Callable[[object], Expr]:
    def apply(x: object) -> Expr:
        return call(fn, x)
    apply.__name__ = apply.__qualname__ = fn
    apply.__doc__ = doc
    return apply


exp = _unary("exp", "``e ** x`` (float).")
log = _unary("log", "Natural logarithm (float).")
sqrt = _unary("sqrt", "Square root (float).")
rsqrt = _unary("rsqrt", "``1 / sqrt(x)`` (float).")
tanh = _unary("tanh", "Hyperbolic tangent (float).")
sigmoid = _unary("sigmoid", "``1 / (1 + exp(-x))`` (float).")
floor = _unary("floor", "Largest integral value not above ``x`` (float).")
ceil = _unary("ceil", "Smallest integral value not below ``x`` (float).")
round = _unary("round", "``x`` rounded to the nearest integer, halves away from zero (float).")  # noqa: A001
sin = _unary("sin", "Sine (float).")
cos = _unary("cos", "Cosine (float).")
abs = _unary("abs", "Absolute value (float or int).")  # noqa: A001
