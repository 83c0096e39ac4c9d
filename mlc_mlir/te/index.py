"""Affine indices: the index expressions a tensor read may use.

An index is affine in the axes: axes times integer constants, sums, constants, and floor
division / modulo by a positive constant (``i * 2 + 1``, ``i + k``, ``127 - i``, ``i // 4``).
Such an index becomes one result of the operand's indexing map in the ``linalg.generic``.
Indices computed from tensor elements (``A[B[i]]``), products of axes, and symbolic sizes
(``A[n - 1 - i]``) are not affine maps linalg accepts (:func:`try_affine` gives None): the
plan reads them with a clamped ``tensor.extract`` instead (:mod:`.plan`).

An axis ``k`` of ``te.reduce_axis((lo, hi))`` is loop dimension ``d`` shifted by ``lo``:
its value is ``d + lo`` (linalg loops start at 0).
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir

from ..errors import TEError
from ..tensor_types import is_int
from .expr import BinaryOp, Call, Cast, Const, Expr, IterVar, TensorRead, Var

__all__ = ["Affine", "ADim", "AConst", "AAdd", "AMul", "ADiv", "AMod", "to_affine", "pure_axis",
           "interval", "affine_key", "to_affine_expr", "try_affine"]


class Affine:
    """Base of the affine index nodes."""


@dataclass(frozen=True, eq=False)
class ADim(Affine):
    """The value of an axis (its loop dimension plus its lower bound)."""

    axis: IterVar


@dataclass(frozen=True, eq=False)
class AConst(Affine):
    """An integer constant."""

    value: int


@dataclass(frozen=True, eq=False)
class AAdd(Affine):
    """``lhs + rhs``."""

    lhs: Affine
    rhs: Affine


@dataclass(frozen=True, eq=False)
class AMul(Affine):
    """``lhs * factor``."""

    lhs: Affine
    factor: int


@dataclass(frozen=True, eq=False)
class ADiv(Affine):
    """``lhs floordiv divisor`` (divisor > 0)."""

    lhs: Affine
    divisor: int


@dataclass(frozen=True, eq=False)
class AMod(Affine):
    """``lhs mod divisor`` (divisor > 0)."""

    lhs: Affine
    divisor: int


class _NotAffine(Exception):
    pass


def to_affine(e: Expr, *, where: str) -> Affine:
    """The affine form of index ``e``; ``where`` names the index in error messages.

    Raises:
        TEError: the index is not affine ("not supported"), naming ``where`` and the index.
    """
    try:
        return _convert(e)
    except _NotAffine as exc:
        raise TEError(f"{where} is {e}: {exc}") from None


def try_affine(e: Expr) -> Affine | None:
    """The affine form of index ``e``, or None when it is not affine (see the module doc)."""
    try:
        return _convert(e)
    except _NotAffine:
        return None


def _convert(e: Expr) -> Affine:
    if isinstance(e, Const):
        return AConst(int(e.value))
    if isinstance(e, IterVar):
        return ADim(e)
    if isinstance(e, Cast) and is_int(e.dtype) and is_int(e.value.dtype):
        return _convert(e.value)
    if isinstance(e, Call) and e.fn == "neg":
        return AMul(_convert(e.arg), -1)
    if isinstance(e, BinaryOp) and e.op in ("add", "sub", "mul", "floordiv", "floormod"):
        return _convert_binary(e)
    if isinstance(e, TensorRead):
        raise _NotAffine(f"data-dependent indices (an index read from tensor {e.tensor.name}) "
                         "are not supported")
    if isinstance(e, Var):
        raise _NotAffine(f"the symbolic size {e.name!r} in an index is not supported "
                         "(indices must be affine in the axes with constant coefficients)")
    raise _NotAffine("non-affine indices are not supported (use sums of axes times constants, "
                     "// and % by constants)")


def _convert_binary(e: BinaryOp) -> Affine:
    a, b = _convert(e.a), _convert(e.b)
    if e.op == "add":
        return AAdd(a, b)
    if e.op == "sub":
        return AAdd(a, AMul(b, -1))
    ca, cb = _constant(a), _constant(b)
    if e.op == "mul":
        if cb is not None:
            return AMul(a, cb)
        if ca is not None:
            return AMul(b, ca)
        raise _NotAffine("a product of two axes is not affine: not supported")
    if cb is None or cb <= 0:
        raise _NotAffine(f"'{'//' if e.op == 'floordiv' else '%'}' in an index needs a positive "
                         "constant divisor: not supported")
    return _div_mod(a, cb, e.op)


def _div_mod(a: Affine, divisor: int, op: str) -> Affine:
    """``a // divisor`` or ``a % divisor``, simplified as MLIR's affine maps are: when every
    coefficient and the constant of ``a`` are multiples of ``divisor`` (``d % 1``, ``(4 * d)
    // 2``), the division is exact. (The simplified form decides which operand dimensions
    a loop indexes alone, from which linalg infers the loop's range: ``p % 1 * 2 + kx``
    is ``kx`` to MLIR, and must be to the plan too.)"""
    lin = _linear(a)
    if lin is not None and lin[1] % divisor == 0 and all(c % divisor == 0 for _, c in lin[0].values()):
        if op == "floormod":
            return AConst(0)
        out: Affine = AConst(lin[1] // divisor)
        for ax, c in lin[0].values():
            term: Affine = ADim(ax)
            if ax.lo:  # ADim is the axis value (loop dim + lo): take the lo back out
                term = AAdd(term, AConst(-ax.lo))
            out = AAdd(out, AMul(term, c // divisor))
        return out
    return ADiv(a, divisor) if op == "floordiv" else AMod(a, divisor)


def _constant(a: Affine) -> int | None:
    """The value of ``a`` when it uses no axis."""
    return None if _has_axis(a) else _bounds(a, None)[0]


def _has_axis(a: Affine) -> bool:
    if isinstance(a, ADim):
        return True
    if isinstance(a, AConst):
        return False
    if isinstance(a, AAdd):
        return _has_axis(a.lhs) or _has_axis(a.rhs)
    return _has_axis(a.lhs)


def _linear(a: Affine) -> tuple[dict[int, list], int] | None:
    """``a`` as ({id(axis): [axis, coefficient]}, constant) over loop dims, or None (div/mod)."""
    if isinstance(a, AConst):
        return {}, a.value
    if isinstance(a, ADim):
        return {id(a.axis): [a.axis, 1]}, a.axis.lo
    if isinstance(a, AAdd):
        lhs, rhs = _linear(a.lhs), _linear(a.rhs)
        if lhs is None or rhs is None:
            return None
        terms = {k: list(v) for k, v in lhs[0].items()}
        for k, (ax, c) in rhs[0].items():
            terms.setdefault(k, [ax, 0])[1] += c
        return {k: v for k, v in terms.items() if v[1] != 0}, lhs[1] + rhs[1]
    if isinstance(a, AMul):
        inner = _linear(a.lhs)
        if inner is None:
            return None
        return ({k: [ax, c * a.factor] for k, (ax, c) in inner[0].items() if c * a.factor},
                inner[1] * a.factor)
    const = _constant(a)
    return ({}, const) if const is not None else None


def pure_axis(a: Affine) -> IterVar | None:
    """The axis whose loop dimension ``a`` is exactly (``d``), else None."""
    lin = _linear(a)
    if lin is None or lin[1] != 0 or len(lin[0]) != 1:
        return None
    ((axis, coeff),) = lin[0].values()
    return axis if coeff == 1 else None


def interval(a: Affine) -> tuple[int | None, int | None]:
    """Smallest and largest value of ``a`` over the axes' ranges (None where unknown)."""
    def axis_range(ax: IterVar) -> tuple[int | None, int | None]:
        return ax.lo, (ax.lo + ax.extent - 1 if isinstance(ax.extent, int) else None)
    return _bounds(a, axis_range)


def _bounds(a: Affine, axis_range) -> tuple[int | None, int | None]:
    if isinstance(a, AConst):
        return a.value, a.value
    if isinstance(a, ADim):
        return axis_range(a.axis)
    if isinstance(a, AAdd):
        (l1, h1), (l2, h2) = _bounds(a.lhs, axis_range), _bounds(a.rhs, axis_range)
        return (None if None in (l1, l2) else l1 + l2), (None if None in (h1, h2) else h1 + h2)
    lo, hi = _bounds(a.lhs, axis_range)
    if isinstance(a, AMul):
        lo, hi = (None if lo is None else lo * a.factor), (None if hi is None else hi * a.factor)
        return (lo, hi) if a.factor >= 0 else (hi, lo)
    if isinstance(a, ADiv):
        return (None if lo is None else lo // a.divisor), (None if hi is None else hi // a.divisor)
    if lo is not None and hi is not None and lo // a.divisor == hi // a.divisor:
        return lo % a.divisor, hi % a.divisor
    return 0, a.divisor - 1


def affine_key(a: Affine) -> tuple:
    """A hashable structural key of ``a`` (axes by identity)."""
    if isinstance(a, AConst):
        return ("c", a.value)
    if isinstance(a, ADim):
        return ("d", id(a.axis))
    if isinstance(a, AAdd):
        return ("+", affine_key(a.lhs), affine_key(a.rhs))
    if isinstance(a, AMul):
        return ("*", affine_key(a.lhs), a.factor)
    return ("//" if isinstance(a, ADiv) else "%", affine_key(a.lhs), a.divisor)


def to_affine_expr(a: Affine, positions: dict[int, int]) -> ir.AffineExpr:
    """``a`` as an MLIR affine expression; ``positions`` maps id(axis) to its loop dim."""
    if isinstance(a, AConst):
        return ir.AffineConstantExpr.get(a.value)
    if isinstance(a, ADim):
        d = ir.AffineDimExpr.get(positions[id(a.axis)])
        return ir.AffineAddExpr.get(d, ir.AffineConstantExpr.get(a.axis.lo)) if a.axis.lo else d
    lhs = to_affine_expr(a.lhs, positions)
    if isinstance(a, AAdd):
        return ir.AffineAddExpr.get(lhs, to_affine_expr(a.rhs, positions))
    if isinstance(a, AMul):
        return ir.AffineMulExpr.get(lhs, ir.AffineConstantExpr.get(a.factor))
    if isinstance(a, ADiv):
        return ir.AffineFloorDivExpr.get(lhs, ir.AffineConstantExpr.get(a.divisor))
    return ir.AffineModExpr.get(lhs, ir.AffineConstantExpr.get(a.divisor))
