"""Index maps simplified with the loops' ranges, before the default rules run.

A fused chain of reshapes reads its operands through linearized indices: FuseTIR composes
``reshape -> relu -> reshape`` into one block reading ``x[(d0 floordiv 128) * 128 + d0 mod
128, d1]``, which is ``x[d0, d1]``, but MLIR's affine simplifier does not know that ``d0 <
1024``. A block whose maps are not plain dims gets no rule (:func:`.rule_common.is_plain`):
it ran as scalar loops on one core (BERT's encoder layer at batch 8: ten such blocks, 1.5
of its 9.2 ms, the other core idle meanwhile).

:func:`simplify_index_maps` rewrites each ``linalg.generic``'s maps knowing each loop's
extent (as TVM's arithmetic analyzer does with its iteration ranges):
``(q * c + r) floordiv c -> q`` and ``(q * c + r) mod c -> r`` where ``0 <= r < c`` (and
the same with a factor of ``c``), ``(e floordiv c) * c + e mod c -> e``, ``e floordiv c ->
0`` and ``e mod c -> e`` where ``0 <= e < c``. Then an input read through a linear index
in mixed radix (``x[d0 * 4 + d1, ...]`` with ``d1 < 4``, an expand reshape) is read
through a ``tensor.expand_shape`` view with those dims as its indices. A block still not
plain afterwards is a gather (a transpose through a reshape): :mod:`.rule_elementwise`
runs its outer loop in parallel.
"""

from __future__ import annotations

import math
from functools import lru_cache

from mlir import ir
from mlir.dialects import arith, linalg, tensor

from ..ir import Module
from .rewrite_named import rewrite_generics, static_shape

__all__ = ["simplify_index_maps", "linear_reads_as_extracts"]

# A linear form: ((atom, coefficient), ...) sorted, and a constant. An atom is ("d", dim),
# ("fd", form, c) (floordiv) or ("mod", form, c).
_Form = tuple[tuple[tuple, int], ...]
_Lin = tuple[_Form, int]


class _NotLinear(Exception):
    pass


@lru_cache(maxsize=256)
def _divisors_down(c: int) -> tuple[int, ...]:
    """The divisors of ``c`` above 1, largest first."""
    small = [g for g in range(1, int(c ** 0.5) + 1) if c % g == 0]
    return tuple(sorted(set(small + [c // g for g in small]) - {1}, reverse=True))


def _make(terms: dict, const: int) -> _Lin:
    return tuple(sorted(((a, c) for a, c in terms.items() if c), key=repr)), const


def _scale(lin: _Lin, k: int) -> _Lin:
    return tuple((a, c * k) for a, c in lin[0]), lin[1] * k


class _Ranges:
    """Linear forms with bounds from the loops' extents (None: unknown); ``fold=False``
    keeps ``(e floordiv c) * c + e mod c`` as it is (the form of a map as written)."""

    def __init__(self, extents: list[int | None], fold: bool = True):
        self.extents = extents
        self.fold = fold

    def bounds(self, lin: _Lin) -> tuple[int, int] | None:
        lo = hi = lin[1]
        for atom, coef in lin[0]:
            b = self._atom_bounds(atom)
            if b is None:
                return None
            lo += min(coef * b[0], coef * b[1])
            hi += max(coef * b[0], coef * b[1])
        return lo, hi

    def _atom_bounds(self, atom: tuple) -> tuple[int, int] | None:
        if atom[0] == "d":
            ext = self.extents[atom[1]]
            return None if ext is None else (0, ext - 1)
        if atom[0] == "mod":
            return 0, atom[2] - 1
        inner = self.bounds(atom[1])
        return None if inner is None else (inner[0] // atom[2], inner[1] // atom[2])

    def within(self, lin: _Lin, c: int) -> bool:
        b = self.bounds(lin)
        return b is not None and 0 <= b[0] and b[1] < c

    # -- expressions -> forms
    def form(self, e: ir.AffineExpr) -> _Lin:
        if isinstance(e, ir.AffineDimExpr):
            return _make({("d", e.position): 1}, 0)
        if isinstance(e, ir.AffineConstantExpr):
            return (), e.value
        if isinstance(e, ir.AffineAddExpr):
            return self.add(self.form(e.lhs), self.form(e.rhs))
        if isinstance(e, ir.AffineMulExpr):
            lhs, rhs = self.form(e.lhs), self.form(e.rhs)
            if not rhs[0]:
                return _scale(lhs, rhs[1])
            if not lhs[0]:
                return _scale(rhs, lhs[1])
            raise _NotLinear
        if isinstance(e, (ir.AffineFloorDivExpr, ir.AffineModExpr)):
            rhs = self.form(e.rhs)
            if rhs[0] or rhs[1] <= 0:
                raise _NotLinear
            lhs = self.form(e.lhs)
            return self.floordiv(lhs, rhs[1]) if isinstance(e, ir.AffineFloorDivExpr) else self.mod(lhs, rhs[1])
        raise _NotLinear  # ceildiv, symbols

    def add(self, a: _Lin, b: _Lin) -> _Lin:
        terms: dict = {}
        for atom, coef in a[0] + b[0]:
            terms[atom] = terms.get(atom, 0) + coef
        return self._recombine(terms, a[1] + b[1])

    def _recombine(self, terms: dict, const: int) -> _Lin:
        """``(e floordiv c) * (m * c) + (e mod c) * m -> e * m``, until none is left."""
        changed = self.fold
        while changed:
            changed = False
            for atom, coef in list(terms.items()):
                if atom[0] != "fd" or not coef:
                    continue
                twin = ("mod", atom[1], atom[2])
                m = terms.get(twin, 0)
                if m and coef == m * atom[2]:
                    del terms[atom], terms[twin]
                    inner = _scale(atom[1], m)
                    for a2, c2 in inner[0]:
                        terms[a2] = terms.get(a2, 0) + c2
                    const += inner[1]
                    changed = True
                    break
        return _make(terms, const)

    def _split(self, lin: _Lin, g: int) -> tuple[_Lin, _Lin]:
        """(high / g, low): the terms whose coefficients g divides (and the constant's
        multiple of g) divided by g, and the rest."""
        high = {a: c // g for a, c in lin[0] if c % g == 0}
        low = {a: c for a, c in lin[0] if c % g}
        return _make(high, lin[1] // g), _make(low, lin[1] % g)

    def floordiv(self, lin: _Lin, c: int) -> _Lin:
        if c == 1:
            return lin
        for g in _divisors_down(c):
            high, low = self._split(lin, g)
            if self.within(low, g):  # (g * high + low) floordiv c == high floordiv (c / g)
                return high if g == c else self.floordiv(high, c // g)
        return _make({("fd", lin, c): 1}, 0)

    def mod(self, lin: _Lin, c: int) -> _Lin:
        if c == 1:
            return (), 0
        for g in _divisors_down(c):
            high, low = self._split(lin, g)
            if self.within(low, g):  # (g * high + low) mod c == (high mod (c / g)) * g + low
                return low if g == c else self.add(_scale(self.mod(high, c // g), g), low)
        return _make({("mod", lin, c): 1}, 0)


def _partial_dim(forms: list[_Lin], shape: list[int | None], extents: list[int | None]) -> bool:
    """Whether a folded map would read some dim of the operand plainly at a loop dim of a
    smaller extent (``y[o, t, (i * 16 + j) mod 16]`` with ``j < 14`` folded to ``y[o, i, j]``
    of a dim of 16): linalg infers the loop's range from every plain read, so the generic
    would not verify (and its whole function would keep its maps unfolded)."""
    for f, size in zip(forms, shape):
        terms, const = f
        if len(terms) == 1 and not const and terms[0][1] == 1 and terms[0][0][0] == "d":
            ext = extents[terms[0][0][1]]
            if ext is not None and size is not None and ext != size:
                return True
    return False


def _expr(lin: _Lin) -> ir.AffineExpr:
    out = ir.AffineConstantExpr.get(lin[1]) if lin[1] or not lin[0] else None
    for atom, coef in lin[0]:
        if atom[0] == "d":
            e = ir.AffineDimExpr.get(atom[1])
        else:
            kind = ir.AffineFloorDivExpr if atom[0] == "fd" else ir.AffineModExpr
            e = kind.get(_expr(atom[1]), ir.AffineConstantExpr.get(atom[2]))
        if coef != 1:
            e = ir.AffineMulExpr.get(e, ir.AffineConstantExpr.get(coef))
        out = e if out is None else ir.AffineAddExpr.get(out, e)
    return out


def _extents(maps: list[ir.AffineMap], shapes: list[list[int | None]], ndims: int) -> list[int | None]:
    ext: list[int | None] = [None] * ndims
    for m, shape in zip(maps, shapes):
        for r, e in enumerate(m.results):
            if isinstance(e, ir.AffineDimExpr) and shape[r] is not None:
                ext[e.position] = shape[r]
    return ext


def _radix(lin: _Lin, extents: list[int | None], size: int | None) -> list[int] | None:
    """The dims of an index ``sum(d_i * s_i)`` in mixed radix covering a dim of ``size``
    (``d0 * 4 + d1`` with ``d1 < 4``, size 4 * ext(d0)), outermost first; else None."""
    if lin[1] or len(lin[0]) < 2 or size is None or any(a[0] != "d" for a, _ in lin[0]):
        return None
    dims = sorted(((c, a[1]) for a, c in lin[0]), reverse=True)
    stride = 1
    for coef, d in reversed(dims):
        if coef != stride or extents[d] is None:
            return None
        stride *= extents[d]
    return [d for _, d in dims] if stride == size else None


def _simplify(op: ir.Operation) -> bool:
    """Rewrite one generic's maps (and view the inputs read in mixed radix); True if changed."""
    maps = [ir.AffineMapAttr(a).value for a in ir.ArrayAttr(op.attributes["indexing_maps"])]
    operands = list(op.operands)
    if len(maps) != len(operands) or not all(isinstance(v.type, ir.RankedTensorType) for v in operands):
        return False
    ndims = maps[0].n_dims
    shapes = [static_shape(v.type) for v in operands]
    ranges, unknown = _Ranges(_extents(maps, shapes, ndims)), _Ranges([None] * ndims, fold=False)
    changed = False
    new_maps = []
    for m, shape in zip(maps, shapes):
        try:
            forms = [ranges.form(e) for e in m.results]
        except _NotLinear:
            new_maps.append(m)
            continue
        if forms == [unknown.form(e) for e in m.results] or _partial_dim(forms, shape, ranges.extents):
            new_maps.append(m)  # the ranges fold nothing (or nothing linalg accepts): the map as it was
            continue
        changed = True
        new_maps.append(ir.AffineMap.get(ndims, 0, [_expr(f) for f in forms]))
    n_inputs = len(operands) - len(op.results)
    for i in range(n_inputs):
        try:
            forms = [ranges.form(e) for e in new_maps[i].results]
        except _NotLinear:
            continue
        groups, results, sizes = [], [], []
        for f, size in zip(forms, shapes[i]):
            dims = _radix(f, ranges.extents, size)
            group = dims if dims is not None else [None]
            groups.append(list(range(len(results), len(results) + len(group))))
            if dims is None:
                results.append(_expr(f))
                sizes.append(size)
            else:
                results.extend(ir.AffineDimExpr.get(d) for d in dims)
                sizes.extend(ranges.extents[d] for d in dims)
        if len(results) == len(forms) or None in sizes:
            continue
        src = operands[i]
        view_type = ir.RankedTensorType.get(sizes, ir.RankedTensorType(src.type).element_type)
        with ir.InsertionPoint(op), op.location:
            view = tensor.ExpandShapeOp(view_type, src, groups, [], sizes).result
        op.operands[i] = view
        new_maps[i] = ir.AffineMap.get(ndims, 0, results)
        changed = True
    for i in range(n_inputs):
        changed |= _collapse_digits(op, i, new_maps, ranges)
        changed |= _shift_to_slice(op, i, new_maps, ranges)
        changed |= _unit_index_as_dim(i, new_maps, shapes, ranges)
    if changed:
        op.attributes["indexing_maps"] = ir.ArrayAttr.get([ir.AffineMapAttr.get(m) for m in new_maps])
    return changed


def _digits(ranges: _Ranges, lin: _Lin, sizes: list[int]) -> list[_Lin]:
    """The forms of the digits of ``lin`` (a dim's form, or any linear form) in mixed radix
    ``sizes`` (outermost first)."""
    out, stride = [], 1
    for size in reversed(sizes):
        out.append(ranges.mod(ranges.floordiv(lin, stride), size))
        stride *= size
    return out[::-1]


def _linear_index(ranges: _Ranges, forms: list[_Lin], sizes: list[int | None], inner: int | None) -> _Lin | None:
    """The linear index ``e`` whose digits in mixed radix ``sizes`` ``forms`` are, with
    ``0 <= e < prod(sizes)`` and the innermost loop's dim ``inner`` a term of it at unit
    stride (a convolution's tiled im2col reading the padded input at ``[c, e floordiv WP, e
    mod WP]``, ``e = ky * WP + kx + 16 * tile + lane``: the input viewed flat, read at ``e``,
    consecutive along the lanes); else None. A single dim is :func:`_collapse_digits`' first
    case; here ``e`` is the operand of the last digit's ``mod``. (A linear index of outer
    dims only, BERT's keys transposed per head through a reshape, stays a gather for the
    rules' transposing tiles.)"""
    if None in sizes or len(forms[-1][0]) != 1 or forms[-1][1] or forms[-1][0][0][1] != 1:
        return None
    atom = forms[-1][0][0][0]
    if atom[0] != "mod" or atom[2] != sizes[-1] or inner is None or (("d", inner), 1) not in atom[1][0]:
        return None
    lin = atom[1]
    if not ranges.within(lin, math.prod(sizes)) or _digits(ranges, lin, sizes) != forms:
        return None
    return lin


def _input_forms(op: ir.Operation, i: int, maps: list[ir.AffineMap],
                 ranges: _Ranges) -> tuple[ir.Value, list[int | None], list[_Lin] | None]:
    """Input ``i``, its static shape and its index map's results as linear forms (None
    where one is not linear)."""
    src = op.operands[i]
    try:
        forms = [ranges.form(e) for e in maps[i].results]
    except _NotLinear:
        forms = None
    return src, static_shape(src.type), forms


def _reduces(op: ir.Operation | ir.Block) -> bool:
    """Whether ``op`` is a generic with a reduction (a contraction). Its operands are not
    viewed at a linear index (the rules tile only plain reads), nor is its result (a view of
    its buffer stops the hoisting of its register tile's accumulators,
    :mod:`mlc_mlir.compiler.vector_opt`: its reader stays a gather)."""
    if isinstance(op, ir.Block):
        return False
    op = op.operation
    return op.name == "linalg.generic" and any("reduction" in str(a)
                                               for a in ir.ArrayAttr(op.attributes["iterator_types"]))


def _collapse_digits(op: ir.Operation, i: int, maps: list[ir.AffineMap], ranges: _Ranges) -> bool:
    """Input ``i`` read at the digits of one dim in consecutive dims (``col[r, p floordiv
    28, p mod 28]``: a collapse reshape) read through a ``tensor.collapse_shape`` view at
    that dim, or at the digits of a linear index (:func:`_linear_index`; by a block without
    reductions: a contraction's operands stay plain) read through the view at that index;
    True if viewed."""
    src, shape, forms = _input_forms(op, i, maps, ranges)
    if forms is None:
        return False
    last = maps[-1].results[-1] if maps[-1].results else None
    inner = last.position if isinstance(last, ir.AffineDimExpr) else None
    linear = not _reduces(op) and not _reduces(src.owner)  # (:func:`_reduces`)
    groups: list[list[int]] = []
    results: list[ir.AffineExpr] = []
    k = 0
    while k < len(forms):
        dims = {a[1] for a, _ in forms[k][0] if a[0] == "d"} | {
            a2[1] for a, _ in forms[k][0] if a[0] != "d" for a2, _ in a[1][0] if a2[0] == "d"}
        for m in range(len(forms) - k, 1, -1):
            sizes = shape[k:k + m]
            d = next(iter(dims)) if len(dims) == 1 else None
            if (d is not None and None not in sizes and ranges.extents[d] == math.prod(sizes)
                    and _digits(ranges, _make({("d", d): 1}, 0), sizes) == forms[k:k + m]):
                groups.append(list(range(k, k + m)))
                results.append(ir.AffineDimExpr.get(d))
                k += m
                break
            lin = _linear_index(ranges, forms[k:k + m], sizes, inner) if linear else None
            if lin is not None:
                groups.append(list(range(k, k + m)))
                results.append(_expr(lin))
                k += m
                break
        else:
            groups.append([k])
            results.append(maps[i].results[k])
            k += 1
    if len(groups) == len(forms):
        return False
    collapsed = [ir.ShapedType.get_dynamic_size() if shape[g[0]] is None else math.prod([shape[r] for r in g])
                 for g in groups]  # (a dynamic dim is a group of its own)
    view_type = ir.RankedTensorType.get(collapsed, ir.RankedTensorType(src.type).element_type)
    with ir.InsertionPoint(op), op.location:
        op.operands[i] = tensor.CollapseShapeOp(view_type, src, groups).result
    maps[i] = ir.AffineMap.get(maps[i].n_dims, 0, results)
    return True


def _shift_to_slice(op: ir.Operation, i: int, maps: list[ir.AffineMap], ranges: _Ranges) -> bool:
    """Input ``i`` read at dims shifted by constants (a window's tap ``xp[n, c, y + 1, x + 2]``)
    read instead through a ``tensor.extract_slice`` at those offsets with plain dims: the
    block is then elementwise and the rules vectorize it along the row (MobileNet-v2's
    depthwise 3x3 at 384 channels, 14 x 14, with its bias and ReLU6: LLVM vectorized the
    taps of one pixel instead, 0.16-0.25 ms against 0.05 without the epilogue; 0.08 ms
    this way). Only unit-stride shifts (a stride-2 tap through a strided slice became
    scalar loads: MobileNet-v2's 96-channel stride-2 depthwise 0.83 -> 12.4 ms), inside the
    input's static shape; ``maps[i]`` updated. True if rewritten."""
    src, shape, forms = _input_forms(op, i, maps, ranges)
    if forms is None:
        return False
    offsets, sizes, dims = [], [], []
    for f, size in zip(forms, shape):
        terms, const = f
        if len(terms) != 1 or terms[0][0][0] != "d" or terms[0][1] != 1:
            return False
        d = terms[0][0][1]
        ext = ranges.extents[d]
        if ext is None and (size is not None or const):  # a dynamic dim only read whole (the batch)
            return False
        if ext is not None and (size is None or const < 0 or const + ext > size):
            return False
        offsets.append(const)
        sizes.append(ext)
        dims.append(d)
    if not any(offsets) or len(set(dims)) != len(dims):
        return False
    elem = ir.RankedTensorType(src.type).element_type
    dynamic = ir.ShapedType.get_dynamic_size()
    with ir.InsertionPoint(op), op.location:
        whole = [tensor.DimOp(src, arith.ConstantOp(ir.IndexType.get(), r).result).result
                 for r, e in enumerate(sizes) if e is None]
        static = [dynamic if e is None else e for e in sizes]
        op.operands[i] = tensor.ExtractSliceOp(ir.RankedTensorType.get(static, elem), src, [], whole, [], offsets,
                                               static, [1] * len(sizes)).result
    maps[i] = ir.AffineMap.get(maps[i].n_dims, 0, [ir.AffineDimExpr.get(d) for d in dims])
    return True


def _unit_index_as_dim(i: int, maps: list[ir.AffineMap], shapes: list[list[int | None]], ranges: _Ranges) -> bool:
    """Input ``i`` read at index 0 of a size-1 dim where the output is indexed by a loop of
    one iteration (a batch of one: ``y[0, c, h, w]`` written at ``[d0, c, h, w]``, d0 in
    {0}) read at that loop's dim instead: the same element, and the read is then plain, so
    the block can be computed on its producer's tile (``reverse_compute_at``: a depthwise
    convolution's bias and ReLU6 on its taps' rows at batch 1). ``maps[i]`` updated; True
    if rewritten."""
    out, read = maps[-1].results, list(maps[i].results)
    if len(out) != len(read) or len(shapes[i]) != len(read):
        return False
    used = {e.position for e in read if isinstance(e, ir.AffineDimExpr)}
    changed = False
    for r, (o, e) in enumerate(zip(out, read)):
        if (isinstance(e, ir.AffineConstantExpr) and e.value == 0 and shapes[i][r] == 1
                and isinstance(o, ir.AffineDimExpr) and ranges.extents[o.position] == 1 and o.position not in used):
            read[r] = ir.AffineDimExpr.get(o.position)
            used.add(o.position)
            changed = True
    if changed:
        maps[i] = ir.AffineMap.get(maps[i].n_dims, 0, read)
    return changed


def simplify_index_maps(mod: Module) -> Module:
    """``mod`` with every ``linalg.generic``'s index maps simplified with its loops' ranges
    and inputs read in mixed radix viewed in their factors (a copy; ``mod`` itself when no
    map changes)."""
    return rewrite_generics(mod, lambda g: _nonplain(g) or _unit_constant(g), _simplify)


def _nonplain(op: ir.Operation) -> bool:
    """Whether a generic reads or writes at an index other than a dim or a constant."""
    return any(not isinstance(e, (ir.AffineDimExpr, ir.AffineConstantExpr))
               for a in ir.ArrayAttr(op.attributes["indexing_maps"]) for e in ir.AffineMapAttr(a).value.results)


def _unit_constant(op: ir.Operation) -> bool:
    """Whether a generic reads an input at a constant index (``y[0, c, h, w]``: a batch of
    one), other than a value per row of the same function: a reduction's result with a kept
    dim of 1 or a block computed from one (softmax's row maxima and ``1 / sum``, ``(n, h, s,
    1)`` read at ``[n, h, s, 0]``) stays as it is: the rules compute it at its reader's row
    loop (:mod:`.rule_rows`; through a view with a batch of one the fusion found no
    producer), and a view of a reduction would keep its accumulators out of registers
    (:func:`_reduces`)."""
    maps = [ir.AffineMapAttr(a).value for a in ir.ArrayAttr(op.attributes["indexing_maps"])]
    for m, operand in zip(maps[:-1], op.operands):
        owner = operand.owner
        per_row = not isinstance(owner, ir.Block) and owner.operation.name == "linalg.generic"
        for r, e in enumerate(m.results):
            if isinstance(e, ir.AffineConstantExpr) and not _reduces(owner) \
                    and not (per_row and r == len(m.results) - 1):
                return True
    return False


#: :func:`linear_reads_as_extracts` takes blocks whose rows (the innermost dim) are a
#: multiple of this many elements (whole 8-lane vectors)
EXTRACT_ROW_MULTIPLE = 8


def linear_reads_as_extracts(mod: Module) -> Module:
    """``mod`` with each input of a block without reductions that a reduction produced and
    that the block reads at the digits of a linear index (``y[o, q floordiv 16, q mod 16]``,
    ``q = i * 58 + j``: a convolution's packed tiles written back to NCHW) read instead by a
    ``tensor.extract`` in the body (a copy; ``mod`` itself when there is none).

    The view :func:`_collapse_digits` reads such inputs through is refused for a
    reduction's result (a view of its buffer stops the hoisting of its register tile's
    accumulators), and a map with ``floordiv`` / ``mod`` is no plain read: the block ran as
    scalar loops (ResNet-18's 3x3 convolutions at 56 x 56, one image: the copy of 200 K
    elements). As an extract it is plain: the rules vectorize it (and compute its epilogue
    on its rows), linalg's vectorizer makes the read a gather whose offsets
    (``(o * T + q div 16) * 16 + q - (q div 16) * 16``) :mod:`mlc_mlir.compiler.gathers`
    follows to ``o * T * 16 + q``: consecutive lanes, a vector load. Only rows of a multiple
    of :data:`EXTRACT_ROW_MULTIPLE` elements are taken: rows of 28 and 14 pixels (4- and
    2-lane vectors) measured 2-5% slower than the scalar copy with the epilogue run over the
    collapsed image. (56 x 56, one image, one thread: 4.41-4.80 -> 4.23-4.39 ms.)"""
    return rewrite_generics(mod, _linear_read_input, _linear_reads_to_extracts)


def _flat_offset(ranges: _Ranges, forms: list[_Lin], shape: list[int | None]) -> _Lin | None:
    """The row-major element offset of a read at ``forms`` of a static ``shape``."""
    if None in shape:
        return None
    off: _Lin = ((), 0)
    stride = 1
    for f, size in zip(reversed(forms), reversed(shape)):
        off = ranges.add(off, _scale(f, stride))
        stride *= size
    return off


def _linear_read(op: ir.Operation, i: int, maps: list[ir.AffineMap], ranges: _Ranges) -> bool:
    """Whether input ``i`` of ``op`` is read as :func:`linear_reads_as_extracts` takes."""
    if _reduces(op) or not _reduces(op.operands[i].owner) or _plain_map(maps[i]):
        return False
    _, shape, forms = _input_forms(op, i, maps, ranges)
    if forms is None:
        return False
    off = _flat_offset(ranges, forms, shape)
    last = maps[-1].results[-1] if maps[-1].results else None
    if off is None or not isinstance(last, ir.AffineDimExpr) or any(a[0] != "d" for a, _ in off[0]):
        return False
    row = ranges.extents[last.position]
    if row is None or row % EXTRACT_ROW_MULTIPLE:
        return False
    return dict(off[0]).get(("d", last.position)) == 1  # (consecutive along the vectorized dim)


def _plain_map(m: ir.AffineMap) -> bool:
    return all(isinstance(e, (ir.AffineDimExpr, ir.AffineConstantExpr)) for e in m.results)


def _maps_and_ranges(op: ir.Operation) -> tuple[list[ir.AffineMap], _Ranges] | None:
    maps = [ir.AffineMapAttr(a).value for a in ir.ArrayAttr(op.attributes["indexing_maps"])]
    operands = list(op.operands)
    if len(maps) != len(operands) or not all(isinstance(v.type, ir.RankedTensorType) for v in operands):
        return None
    shapes = [static_shape(v.type) for v in operands]
    return maps, _Ranges(_extents(maps, shapes, maps[0].n_dims))


def _linear_inputs(op: ir.Operation) -> tuple[list[ir.AffineMap], list[int]]:
    """The generic's maps and the inputs :func:`linear_reads_as_extracts` takes."""
    got = _maps_and_ranges(op)
    if got is None:
        return [], []
    maps, ranges = got
    n_inputs = len(op.operands) - len(op.results)
    return maps, [i for i in range(n_inputs) if _linear_read(op, i, maps, ranges)]


def _linear_read_input(op: ir.Operation) -> bool:
    return bool(_linear_inputs(op)[1])


def _linear_reads_to_extracts(op: ir.Operation) -> bool:
    maps, taken = _linear_inputs(op)
    if not taken:
        return False
    n_inputs = len(op.operands) - len(op.results)
    keep = [i for i in range(len(op.operands)) if i not in taken]
    inputs = [op.operands[i] for i in keep if i < n_inputs]
    outputs = list(op.operands[n_inputs:])
    old = op.regions[0].blocks[0]
    with ir.InsertionPoint(op), op.location:
        new = linalg.GenericOp([r.type for r in op.results], inputs, outputs,
                               ir.ArrayAttr.get([ir.AffineMapAttr.get(maps[i]) for i in keep]),
                               op.attributes["iterator_types"])
        for k in range(len(op.attributes)):
            named = op.attributes[k]
            if named.name not in ("indexing_maps", "iterator_types", "operandSegmentSizes"):
                new.attributes[named.name] = named.attr
        block = new.regions[0].blocks.append(*[old.arguments[i].type for i in keep])
        with ir.InsertionPoint(block):
            index_of: dict = {}
            for i in taken:
                src = op.operands[i]
                idx = [_index_value(e, index_of) for e in maps[i].results]
                old.arguments[i].replace_all_uses_with(tensor.ExtractOp(src, idx).result)
            for k, i in enumerate(keep):
                old.arguments[i].replace_all_uses_with(block.arguments[k])
            for inner in list(old.operations):
                inner.detach_from_parent()
                ir.InsertionPoint(block).insert(inner)
    for r_old, r_new in zip(op.results, new.results):
        r_old.replace_all_uses_with(r_new)
    op.erase()
    return True


def _index_value(e: ir.AffineExpr, memo: dict) -> ir.Value:
    """``e`` of the generic's loop indices as arith ops on ``index`` (at the current
    insertion point); ``floordiv`` by a positive constant as ``divsi`` and ``mod`` as
    ``e - (e divsi c) * c`` (the operands are not negative: the map read in bounds), the
    same quotient value for both, which :mod:`mlc_mlir.compiler.gathers` cancels."""
    key = str(e)
    if key in memo:
        return memo[key]
    index = ir.IndexType.get()
    if isinstance(e, ir.AffineDimExpr):
        v = linalg.IndexOp(e.position).result
    elif isinstance(e, ir.AffineConstantExpr):
        v = arith.ConstantOp(index, e.value).result
    elif isinstance(e, ir.AffineAddExpr):
        v = arith.addi(_index_value(e.lhs, memo), _index_value(e.rhs, memo))
    elif isinstance(e, ir.AffineMulExpr):
        v = arith.muli(_index_value(e.lhs, memo), _index_value(e.rhs, memo))
    elif isinstance(e, (ir.AffineFloorDivExpr, ir.AffineModExpr)):
        q = _index_value(ir.AffineFloorDivExpr.get(e.lhs, e.rhs), memo) if isinstance(e, ir.AffineModExpr) else None
        if q is None:
            v = arith.divsi(_index_value(e.lhs, memo), _index_value(e.rhs, memo))
        else:
            v = arith.subi(_index_value(e.lhs, memo), arith.muli(q, _index_value(e.rhs, memo)))
    else:  # pragma: no cover - _linear_read takes linear forms only (no ceildiv, no symbols)
        raise ValueError(f"not an index expression: {e}")
    memo[key] = v
    return v
