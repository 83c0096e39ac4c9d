"""The ``exp-approx`` build stage: ``math.exp`` on f32 vectors as a polynomial (Cephes' expf).

LLVM lowers ``llvm.exp`` on a vector to one ``expf`` call per lane: softmax over GPT-2's
12 x 128 x 128 attention scores took 0.73 ms, its GELU (tanh, expanded to ``exp`` by
``math-expand-ops``) 0.71 ms on 2 cores. Upstream's polynomial approximation patterns
have no pass or transform op in this build, so this stage writes the same algorithm with
``arith`` ops on the vector (range reduction ``x = n ln2 + r``, a degree-6 polynomial in
``r``, ``2^n`` built from its exponent bits); scalar ``math.exp`` stays a libm call.

Accuracy: within 2 ulp of libm's ``expf`` on ``[-87.3, 88.7]`` (tested against NumPy);
below that 0 (the true result is under ``FLT_MIN``), above it ``+inf``, NaN kept.
"""

from __future__ import annotations

from mlir import ir
from mlir.dialects import arith, math

from ..irutil import walk_ops

__all__ = ["approximate_exp"]

_LOG2E = 1.44269504088896341
_C1, _C2 = 0.693359375, -2.12194440e-4  # ln 2 = C1 + C2 (C1 exact in a few bits)
_POLY = (1.9875691500e-4, 1.3981999507e-3, 8.3334519073e-3, 4.1665795894e-2, 1.6666665459e-1, 5.0000001201e-1)
_LO, _HI = -87.33654, 88.72283  # exp(LO) ~ FLT_MIN, exp(HI) ~ FLT_MAX


def approximate_exp(module: ir.Module) -> int:
    """Replace each ``math.exp`` on a vector of f32 in ``module`` by the polynomial; returns
    how many. Must be called inside the shared context."""
    count = 0
    for op in walk_ops(module.operation, ("math.exp",)):
        t = op.results[0].type
        if not isinstance(t, ir.VectorType) or str(t.element_type) != "f32" or t.scalable:
            continue
        with ir.InsertionPoint(op), op.location:
            value = _exp(op.operands[0], t)
        op.results[0].replace_all_uses_with(value)
        op.erase()
        count += 1
    return count


def _exp(x: ir.Value, vt: ir.VectorType) -> ir.Value:
    i32 = ir.VectorType.get(vt.shape, ir.IntegerType.get_signless(32))

    def f(c: float) -> ir.Value:
        return arith.constant(vt, ir.DenseElementsAttr.get_splat(vt, ir.FloatAttr.get_f32(c)))

    def i(c: int) -> ir.Value:
        return arith.constant(i32, ir.DenseElementsAttr.get_splat(i32, ir.IntegerAttr.get(i32.element_type, c)))

    xc = arith.minimumf(arith.maximumf(x, f(_LO)), f(_HI))
    n = math.floor(arith.addf(arith.mulf(xc, f(_LOG2E)), f(0.5)))
    r = arith.subf(arith.subf(xc, arith.mulf(n, f(_C1))), arith.mulf(n, f(_C2)))
    p = f(_POLY[0])
    for c in _POLY[1:]:
        p = math.fma(p, r, f(c))
    y = arith.addf(math.fma(arith.mulf(p, r), r, r), f(1.0))
    # 2^n as 2^(n >> 1) * 2^(n - (n >> 1)): n runs from -126 to 128, beyond one exponent field
    ni = arith.fptosi(i32, n)
    half = arith.shrsi(ni, i(1))

    def pow2(e: ir.Value) -> ir.Value:
        return arith.bitcast(vt, arith.shli(arith.addi(e, i(127)), i(23)))

    result = arith.mulf(arith.mulf(y, pow2(half)), pow2(arith.subi(ni, half)))
    result = arith.select(arith.cmpf(arith.CmpFPredicate.OLT, x, f(_LO)), f(0.0), result)
    result = arith.select(arith.cmpf(arith.CmpFPredicate.OGT, x, f(_HI)), f(float("inf")), result)
    return arith.select(arith.cmpf(arith.CmpFPredicate.UNO, x, x), x, result)
