"""Scalar code generation: one expression tree into the body block of a ``linalg.generic``.

Each node becomes ``arith`` / ``math`` ops on the element types; an axis becomes
``linalg.index`` (plus its lower bound) cast to ``i32``; a tensor read is the block
argument of its operand, or for an extract read (see :mod:`.plan`) a ``tensor.extract``
of the captured tensor at its indices, each cast to ``index`` and clamped to
``[0, dim - 1]`` (``arith.maxsi`` / ``arith.minsi``). A read of a bool tensor (one byte
per element) becomes ``i1`` by ``arith.cmpi ne 0``. Shared sub-expressions are emitted once.
"""

from __future__ import annotations

from mlir import ir
from mlir.dialects import arith, linalg, math, tensor

from ..tensor_types import BOOL, element_type, int_range, is_float
from .expr import BinaryOp, Call, Cast, Compare, Const, Expr, IterVar, Select, TensorRead, Var, walk

__all__ = ["ScalarEmitter", "constant", "combine"]

_FLOAT_BINARY = {"add": arith.addf, "sub": arith.subf, "mul": arith.mulf, "div": arith.divf,
                 "max": arith.maximumf, "min": arith.minimumf}
_INT_BINARY = {"add": arith.addi, "sub": arith.subi, "mul": arith.muli,
               "floordiv": arith.floordivsi, "max": arith.maxsi, "min": arith.minsi}
_FLOAT_PREDICATES = {"lt": "OLT", "le": "OLE", "gt": "OGT", "ge": "OGE", "eq": "OEQ", "ne": "UNE"}
_INT_PREDICATES = {"lt": "slt", "le": "sle", "gt": "sgt", "ge": "sge", "eq": "eq", "ne": "ne"}
_FLOAT_UNARY = {"exp": math.exp, "log": math.log, "sqrt": math.sqrt, "rsqrt": math.rsqrt,
                "tanh": math.tanh, "floor": math.floor, "ceil": math.ceil, "round": math.round,
                "sin": math.sin, "cos": math.cos, "abs": math.absf, "neg": arith.negf}
_COMBINERS = {"sum": "add", "max": "max", "min": "min"}


def constant(value: int | float | bool, dtype: str) -> ir.Value:
    """An ``arith.constant`` of type ``dtype``."""
    ty = element_type(dtype)
    attr = ir.FloatAttr.get(ty, float(value)) if is_float(dtype) else ir.IntegerAttr.get(ty, int(value))
    return arith.constant(ty, attr)


def combine(combiner: str, acc: ir.Value, value: ir.Value, dtype: str) -> ir.Value:
    """The update ``acc <- acc (+|max|min) value`` of a reduction."""
    return _binary(_COMBINERS[combiner], acc, value, dtype)


def _binary(op: str, a: ir.Value, b: ir.Value, dtype: str) -> ir.Value:
    if is_float(dtype):
        if op == "floordiv":
            return math.floor(arith.divf(a, b))
        if op == "floormod":
            return arith.subf(a, arith.mulf(math.floor(arith.divf(a, b)), b))
        if op == "pow":
            return _pow(a, b, dtype)
        return _FLOAT_BINARY[op](a, b)
    if op in ("floordiv", "floormod"):
        return _int_floor_divmod(op, a, b, dtype)
    return _INT_BINARY[op](a, b)


def _pow(a: ir.Value, b: ir.Value, dtype: str) -> ir.Value:
    """``a ** b`` with C's ``pow`` results where the build's expansion of ``math.powf``
    (``exp(b * log(a))``) has none: a negative base with an integral exponent (sign from
    its parity; NaN for a fractional one) and ``b == 0`` (1, also for a zero or NaN base)."""
    zero, one, two = constant(0.0, dtype), constant(1.0, dtype), constant(2.0, dtype)
    mag = math.powf(math.absf(a), b)
    integral = arith.cmpf(arith.CmpFPredicate.OEQ, math.floor(b), b)
    half = arith.divf(b, two)
    odd = arith.cmpf(arith.CmpFPredicate.ONE, math.floor(half), half)
    signed = arith.select(arith.andi(integral, odd), arith.negf(mag), mag)
    nan = constant(float("nan"), dtype)
    negative = arith.select(integral, signed, nan)
    out = arith.select(arith.cmpf(arith.CmpFPredicate.OLT, a, zero), negative, mag)
    return arith.select(arith.cmpf(arith.CmpFPredicate.OEQ, b, zero), one, out)


def _int_floor_divmod(op: str, a: ir.Value, b: ir.Value, dtype: str) -> ir.Value:
    """Integer ``a // b`` / ``a % b`` with NumPy's results on every input (no trap, no UB).

    Floor semantics: ``//`` rounds toward minus infinity and ``%`` has the sign of ``b``
    (Python's). Where NumPy warns, the result is NumPy's, without the warning: ``x // 0``
    and ``x % 0`` are 0; ``INT_MIN // -1`` wraps to ``INT_MIN`` and ``INT_MIN % -1`` is 0.
    The hardware divides by a safe divisor (1 in those cases), so it never traps.
    """
    divisor = _constant_int(b)
    if divisor is not None and divisor not in (0, -1):  # nothing to guard
        quot = arith.floordivsi(a, b)
        return quot if op == "floordiv" else arith.subi(a, arith.muli(quot, b))
    lo, _ = int_range(dtype)
    zero, one = constant(0, dtype), constant(1, dtype)
    b_zero = arith.cmpi(arith.CmpIPredicate.eq, b, zero)
    overflow = arith.andi(arith.cmpi(arith.CmpIPredicate.eq, a, constant(lo, dtype)),
                          arith.cmpi(arith.CmpIPredicate.eq, b, constant(-1, dtype)))
    safe_b = arith.select(arith.ori(b_zero, overflow), one, b)
    quot = arith.floordivsi(a, safe_b)
    # floormod(a, b) = a - floordiv(a, b) * b: its sign is b's, as Python's %.
    res = quot if op == "floordiv" else arith.subi(a, arith.muli(quot, safe_b))
    return arith.select(b_zero, zero, res)


def _constant_int(v: ir.Value) -> int | None:
    owner = v.owner
    if isinstance(owner, ir.OpView):
        owner = owner.operation
    if not isinstance(owner, ir.Operation) or owner.name != "arith.constant":
        return None
    attr = owner.attributes["value"]
    return ir.IntegerAttr(attr).value if isinstance(attr, ir.IntegerAttr) else None


def _cast(v: ir.Value, src: str, dst: str) -> ir.Value:
    ty = element_type(dst)
    if dst == BOOL:
        zero = constant(0, src)
        return (arith.cmpf(arith.CmpFPredicate.UNE, v, zero) if is_float(src)
                else arith.cmpi(arith.CmpIPredicate.ne, v, zero))
    if src == BOOL:
        return arith.uitofp(ty, v) if is_float(dst) else arith.extui(ty, v)
    if is_float(src) and is_float(dst):
        return arith.extf(ty, v) if element_type(dst).width > element_type(src).width else arith.truncf(ty, v)
    if is_float(src):
        return arith.fptosi(ty, v)
    if is_float(dst):
        return arith.sitofp(ty, v)
    wider = ir.IntegerType(ty).width > ir.IntegerType(element_type(src)).width
    return arith.extsi(ty, v) if wider else arith.trunci(ty, v)


class ScalarEmitter:
    """Emits expressions at the current insertion point (the generic's body block).

    Args:
        reads: id of each :class:`TensorRead` node -> the block argument holding its element.
        positions: id of each axis -> its loop dimension.
        symbols: name of each symbolic size used in the body -> its ``index`` value.
        extracts: id of each extract read -> (the tensor value it reads, the ``index``
            value of each of its dimensions, None for an index that needs no clamp), all
            defined outside the body.
    """

    def __init__(self, reads: dict[int, ir.Value], positions: dict[int, int],
                 symbols: dict[str, ir.Value],
                 extracts: dict[int, tuple[ir.Value, list[ir.Value | None]]] | None = None):
        self._reads, self._positions, self._symbols = reads, positions, symbols
        self._extracts = extracts or {}
        self._values: dict[int, ir.Value] = {}
        self._constants: dict[tuple, ir.Value] = {}

    def emit(self, e: Expr) -> ir.Value:
        """The value of ``e``."""
        for node in walk(e, into_reads=False):
            if id(node) not in self._values:
                self._values[id(node)] = self._node(node)
        return self._values[id(e)]

    def _node(self, e: Expr) -> ir.Value:
        get = lambda x: self._values[id(x)]  # noqa: E731
        if isinstance(e, TensorRead):
            value = self._extract(e) if id(e) in self._extracts else self._reads[id(e)]
            if e.dtype == BOOL:
                return arith.cmpi(arith.CmpIPredicate.ne, value, arith.constant(value.type, 0))
            return value
        if isinstance(e, Const):
            key = (e.value, e.dtype)
            if key not in self._constants:
                self._constants[key] = constant(e.value, e.dtype)
            return self._constants[key]
        if isinstance(e, IterVar):
            index = linalg.IndexOp(self._positions[id(e)]).result
            if e.lo:
                index = arith.addi(index, arith.constant(ir.IndexType.get(), e.lo))
            return arith.index_cast(element_type(e.dtype), index)
        if isinstance(e, Var):
            return arith.index_cast(element_type(e.dtype), self._symbols[e.name])
        if isinstance(e, Cast):
            return _cast(get(e.value), e.value.dtype, e.dtype)
        if isinstance(e, BinaryOp):
            return _binary(e.op, get(e.a), get(e.b), e.dtype)
        if isinstance(e, Compare):
            return self._compare(e, get(e.a), get(e.b))
        if isinstance(e, Select):
            return arith.select(get(e.cond), get(e.true_value), get(e.false_value))
        assert isinstance(e, Call), f"unexpected node {type(e).__name__} in a compute body"
        return self._call(e.fn, get(e.arg), e.dtype)

    def _extract(self, e: TensorRead) -> ir.Value:
        """``tensor.extract`` of the read's tensor, each index clamped to ``[0, dim - 1]``."""
        source, dims = self._extracts[id(e)]
        index = ir.IndexType.get()
        indices = []
        for ix, dim in zip(e.indices, dims):
            if isinstance(ix, IterVar) and not ix.lo:
                v = linalg.IndexOp(self._positions[id(ix)]).result
            else:
                v = arith.index_cast(index, self.emit(ix))
            if dim is not None:
                zero, one = arith.constant(index, 0), arith.constant(index, 1)
                v = arith.minsi(arith.maxsi(v, zero), arith.subi(dim, one))
            indices.append(v)
        return tensor.extract(source, indices)

    @staticmethod
    def _compare(e: Compare, a: ir.Value, b: ir.Value) -> ir.Value:
        if e.op in ("and", "or"):
            return (arith.andi if e.op == "and" else arith.ori)(a, b)
        if is_float(e.a.dtype):
            return arith.cmpf(getattr(arith.CmpFPredicate, _FLOAT_PREDICATES[e.op]), a, b)
        return arith.cmpi(getattr(arith.CmpIPredicate, _INT_PREDICATES[e.op]), a, b)

    @staticmethod
    def _call(fn: str, x: ir.Value, dtype: str) -> ir.Value:
        if fn == "not":
            return arith.xori(x, constant(1, BOOL))
        if not is_float(dtype):
            return math.absi(x) if fn == "abs" else arith.subi(constant(0, dtype), x)
        if fn == "sigmoid":
            one = constant(1.0, dtype)
            return arith.divf(one, arith.addf(one, math.exp(arith.negf(x))))
        return _FLOAT_UNARY[fn](x)
