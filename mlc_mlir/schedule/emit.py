"""Turn a schedule's loop-nest state into one ``transform.named_sequence``.

This is the one place where schedules meet MLIR. For each function, blocks are visited
consumers first (reverse program order); each block

1. is fused (``transform.structured.fuse_into_containing_op``) into the innermost loop
   already made by a block it shares loops with (compute_at / reverse_compute_at); when
   its result is read through a reshape (a convolution's im2col), the slices in that loop
   are first moved above the reshape (``bubble_up_extract_slice``), and the blocks attached
   at that loop are fused before its own inner loops are tiled,
2. gets its init fill placed: fused next to it, or moved under its first loops by
   ``transform.structured.fuse`` (which fuses the fill through the loop's destination),
3. gets its remaining loops, outermost first, each by one single-dim
   ``transform.structured.tile_using_for`` (``tile_using_forall`` for parallel and bound
   loops) whose tile size is the product of that dim's inner extents, so split and
   reorder give the exact nest and partial tiles are guarded by ``affine.min``; right
   after each loop is made, the blocks computed at that loop are emitted (step 1 for
   them), so that they run once per iteration of it, not of the loops tiled inside.

Innermost loops that already iterate in the op's dim order stay inside the linalg op.
Then loops are named (``transform.annotate`` with ``mlc.loop``), vectorized ops are
vectorized (with their small init fills, then the cleanup patterns of
``vectorize_children_and_apply_patterns``: reductions become ``vector.contract``),
unrolled loops unrolled, tensorized ops replaced, and every function is canonicalized.
Peeled loops (``transform.loop.peel``, nested ones in each copy of the outer) are split
before the blocks below them are vectorized, so that their main loops' tiles are static.
Sampling decisions appear as ``transform.tune.knob`` ops with their ``selected`` value.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from mlir import ir
from mlir.dialects import transform
from mlir.dialects.transform import loop as tloop
from mlir.dialects.transform.extras import constant_param
from mlir.dialects.transform import structured, tensor as ttensor, tune, vector as tvector

from ..errors import ScheduleError
from ..irutil import to_attr
from .state import MAX_VECTOR_ELEMENTS, BlockState, FuncState

__all__ = ["Knob", "build_script"]

MLC_LOOP = "mlc.loop"
GPU_MAPPING = {"blockIdx": "#gpu.block<{}>", "threadIdx": "#gpu.thread<{}>"}
_AXES_BELOW = {"x": "xyz", "y": "yz", "z": "z"}


def gpu_mapping(thread: str, ndims: int) -> ir.ArrayAttr:
    """The mapping of a loop bound to ``thread`` that iterates ``ndims`` dims (after
    ``fuse``): the innermost dim on ``thread``'s axis, outer ones on the next axes, so the
    linear thread (block) index is TVM's fused index: ``fuse(i1, j1)`` bound to
    ``threadIdx.x`` (8x8) maps ``j1`` to x and ``i1`` to y (``tid = i1 * 8 + j1``)."""
    kind, dim = thread.split(".")
    axes = _AXES_BELOW[dim]
    if ndims > len(axes):
        raise ScheduleError(f"bind: a loop fused from {ndims} dims cannot be bound to {thread} (only "
                            f"{len(axes)} GPU axes from {dim} up)")
    names = list(reversed(axes[:ndims]))
    return ir.ArrayAttr.get([ir.Attribute.parse(GPU_MAPPING[kind].format(a)) for a in names])


@dataclass(frozen=True)
class Knob:
    """A sampling decision as a ``transform.tune.knob``."""

    name: str
    options: tuple
    selected: object


_attr = to_attr  # Python values -> attributes (mlc_mlir.irutil)


def build_script(funcs: list[FuncState], knobs: list[Knob]) -> ir.Module:
    """The transform module (``@__transform_main``) for ``funcs``; call inside the context."""
    tmod = ir.Module.create()
    tmod.operation.attributes["transform.with_named_sequence"] = ir.UnitAttr.get()
    any_op = transform.AnyOpType.get()
    with ir.InsertionPoint(tmod.body):
        seq = transform.NamedSequenceOp("__transform_main", [any_op], [],
                                        arg_attrs=[{"transform.readonly": ir.UnitAttr.get()}])
        with ir.InsertionPoint(seq.body):
            root = seq.bodyTarget
            for knob in knobs:
                tune.KnobOp(transform.AnyParamType.get(), knob.name, _attr(list(knob.options)),
                            selected=_attr(knob.selected))
            for fstate in funcs:
                _FuncEmitter(root, fstate).emit()
            transform.YieldOp([])
    return tmod


class _FuncEmitter:
    """Emits the transform ops for one function's blocks."""

    def __init__(self, root: ir.Value, state: FuncState):
        self.root = root
        self.state = state
        self.any = transform.AnyOpType.get()
        self.loop_h: dict[int, ir.Value] = {}
        self.loop_names: dict[int, str] = {}
        self.block_h: dict[str, ir.Value] = {}
        self.emitted: set[str] = set()
        self.view_loops: set[int] = set()

    # -- helpers ---------------------------------------------------------------------
    def _match(self, target: ir.Value, attr: str, value: str, ops: list[str] | None = None) -> ir.Value:
        # transform.extras matches op names and interfaces only; attribute matches stay MatchOp
        names = ir.ArrayAttr.get([ir.StringAttr.get(o) for o in ops]) if ops else None
        return structured.MatchOp(self.any, target, ops=names, op_attrs=ir.DictAttr.get({attr: to_attr(value)})).result

    def _merge_slices(self) -> None:
        with ir.InsertionPoint(transform.ApplyPatternsOp(self.func_h).patterns):
            ttensor.ApplyMergeConsecutiveInsertExtractSlicePatternsOp()

    def _through_views(self, uid: int) -> None:
        """In loop ``uid``: move the slices a tile takes of a reshaped block result above
        the reshape (``extract_slice(collapse_shape(x))`` -> ``collapse_shape(extract_slice(x))``),
        so that the block can be fused into the loop, and make a slice of an empty
        destination an empty tile (no allocation of the whole tensor outside the loop for
        what is fused in). Only in that loop: elsewhere a slice of a reshaped buffer would
        stay a view of a strided one (an epilogue's NCHW view of a convolution's result),
        which the build's ``fold_memref_alias_ops`` never returns from."""
        self.view_loops.add(uid)
        with ir.InsertionPoint(transform.ApplyPatternsOp(self.loop_h[uid]).patterns):
            ttensor.ApplyMergeConsecutiveInsertExtractSlicePatternsOp()
            ttensor.ApplyBubbleUpExtractSlicePatternsOp()
            ttensor.ApplyFoldTensorEmptyPatternsOp()

    def _read_through_view(self, name: str) -> bool:
        return any(s.kind == "view" and s.name == name
                   for b in self.state.blocks.values() for s in b.info.sources[:b.info.n_inputs])

    def _sizes(self, block: BlockState, index: int) -> list[int]:
        sizes = [0] * block.info.ndims
        for d, _ in self.state.loops[block.path[index]].parts[block.name]:
            sizes[d] = self.state.step(block, index, d)
        return sizes

    def _interchange(self, block: BlockState, index: int) -> list[int] | None:
        dims = [d for d, _ in self.state.loops[block.path[index]].parts[block.name]]
        if dims == sorted(dims):
            return None
        order = dims + [d for d in range(block.info.ndims) if d not in dims]
        return order

    # -- emission --------------------------------------------------------------------
    def emit(self) -> None:
        st = self.state
        self.func_h = self._match(self.root, "sym_name", st.func, ["func.func"])
        order = sorted(st.blocks.values(), key=lambda b: b.info.order, reverse=True)
        for name, rf, lanes, axis, ndims in st.rfactors:
            self._emit_rfactor(name, rf, lanes, axis, ndims)
        for block in order:
            if block.cache_scope is not None:
                continue
            self.block_h[block.name] = self._match(self.func_h, "mlc.block", block.name)
            if block.info.has_init:
                self.block_h[block.name + "@init"] = self._match(self.func_h, "mlc.block_init", block.name)
        for cache in st.caches:
            self._emit_cache(*cache)
        self.order = order
        for block in order:
            if block.name not in self.emitted:
                self._emit_block(block)
        self._finish(order)

    def _annotate(self, handle: ir.Value, name: str, value: str) -> None:
        transform.AnnotateOp(handle, name, param=constant_param(ir.StringAttr.get(value)))

    def _emit_rfactor(self, name: str, rf: str, lanes: int, axis: int, ndims: int) -> None:
        """``split_reduction`` of block ``name`` into the partial sums ``rf`` (rfactor),
        whose two last dims are swapped so that the reduction comes last."""
        op = structured.SplitReductionOp(self.any, self.any, self.any, self.any,
                                         self._match(self.func_h, "mlc.block", name), split_factor=lanes,
                                         insert_split_dimension=axis, inner_parallel=True)
        perm = list(range(ndims - 2)) + [ndims - 1, ndims - 2]
        rf_h = structured.InterchangeOp(op.split_linalg_op, iterator_interchange=perm).transformed
        self._annotate(rf_h, "mlc.block", rf)
        self._annotate(op.fill_op, "mlc.block_init", rf)
        self._annotate(op.combining_linalg_op, "mlc.block", name)

    def _emit_cache(self, kind: str, reader: str, index: int, name: str, scope: str) -> None:
        """A nofold pad of one operand, rewritten into an allocation and a linalg.copy."""
        info = self.state.blocks[reader].info
        n = info.n_inputs + 1
        zero = (ir.FloatAttr.get(ir.Type.parse(info.element_type), 0.0) if "f" in info.element_type
                else ir.IntegerAttr.get(ir.Type.parse(info.element_type), 0))
        operand = index if kind == "read" else info.n_inputs
        nofold = [1 if i == operand else 0 for i in range(n)]
        pad = structured.PadOp(self.block_h[reader], padding_values=[zero] * n,
                               padding_dimensions=list(range(info.ndims)), nofold_flags=nofold,
                               copy_back_op="none" if kind == "read" else "linalg.copy")
        self.block_h[reader] = pad.padded
        if kind == "read":
            producer = transform.GetProducerOfOperand(self.any, pad.padded, operand).result
            copy = structured.RewriteInDestinationPassingStyleOp(self.any, producer).transformed
        else:
            copy = pad.copy
            if info.has_init:
                with ir.InsertionPoint(transform.ApplyPatternsOp(self.func_h).patterns):
                    transform.ApplyCanonicalizationPatternsOp()
                fill = transform.GetProducerOfOperand(self.any, pad.padded, operand).result
                self._annotate(fill, "mlc.block_init", reader)
                self.block_h[reader + "@init"] = fill
            else:
                producer = transform.GetProducerOfOperand(self.any, pad.padded, operand).result
                structured.RewriteInDestinationPassingStyleOp(self.any, producer)
        self._annotate(copy, "mlc.block", name)
        self._annotate(copy, "mlc.scope", scope)
        vector = self.state.__dict__.get("coop", {}).get(name, {}).get("vector", 1)
        if vector > 1:  # cooperative fetch with vectors (read by the cuda build)
            transform.AnnotateOp(copy, "mlc.vector", param=constant_param(vector))
        self.block_h[name] = copy

    def _emit_block(self, block: BlockState) -> None:
        st = self.state
        path = block.path
        m = 0
        while m < len(path) and path[m] in self.loop_h:
            m += 1
        handle = self.block_h[block.name]
        if m:
            self._merge_slices()
            if self._read_through_view(block.name):
                self._fuse_readers_first(block, path[m - 1])
                self._through_views(path[m - 1])
            handle = self._fuse(handle, block, m)
        level = st.init_level(block)
        if block.info.has_init and m and level >= 1:
            self._fuse(self.block_h[block.name + "@init"], block, m)
        if m and (self._read_through_view(block.name)
                  or any(s.kind == "view" for s in block.info.sources[:block.info.n_inputs])):
            # the blocks attached at the same loop (a convolution's gemm and im2col at the
            # batch loop its epilogue made) before its own inner loops are tiled: fused after
            # them they would land in its innermost tile
            self.block_h[block.name] = handle
            self.emitted.add(block.name)
            self._emit_attached(path[m - 1])
        start = m
        if block.info.has_init and level > m:
            self._fence_producers(block)
            for i in range(m, level):
                loop = st.loops[path[i]]
                op = structured.FuseOp(handle, tile_sizes=self._sizes(block, i),
                                       tile_interchange=self._interchange(block, i) or [],
                                       use_forall=loop.kind in ("parallel", "bound"))
                handle = op.transformed
                self.loop_h[path[i]] = list(op.loops)[0]
                self.loop_names[path[i]] = loop.name
                if loop.kind == "bound":  # structured.fuse makes foralls without a mapping
                    mapping = gpu_mapping(loop.thread, len(loop.parts[block.name]))
                    transform.AnnotateOp(self.loop_h[path[i]], "mapping", param=constant_param(mapping))
                self.emitted.add(block.name)
                self._emit_attached(path[i])  # (producers read through a view: not fenced)
            start = level
        end = len(path) - st.implicit_suffix(block)
        self.emitted.add(block.name)
        for i in range(start, end):
            handle = self._tile(block, handle, i)
            self._emit_attached(path[i])
        self.block_h[block.name] = handle

    def _fuse(self, handle: ir.Value, block: BlockState, m: int) -> ir.Value:
        """Fuse ``handle`` (``block`` or its init) into the loop ``block.path[m - 1]``.

        A block that does not vary with the inner shared loops (softmax's row sum computed
        at the column loop ``j`` of its consumer) is read there through the slice that an
        outer loop took: it is fused into the innermost loop it varies with first, through
        that slice, and then cloned into ``path[m - 1]`` (computed once per iteration of
        it, as TVM's ``compute_at``)."""
        path = block.path
        varies = [q for q in range(m) if self.state.loops[path[q]].parts.get(block.name)]
        for q in ([varies[-1]] if varies and varies[-1] < m - 1 else []) + [m - 1]:
            fused = structured.FuseIntoContainingOp(handle, self.loop_h[path[q]])
            handle = fused.fused_op
            self.loop_h[path[q]] = fused.new_containing_op
        return handle

    def _fuse_readers_first(self, block: BlockState, uid: int) -> None:
        """The readers of ``block`` (read through a view) that are under loop ``uid`` but
        attached deeper, not emitted yet (B's panel copy at ``k0`` reading an im2col computed
        at the batch loop above it), fused into ``uid`` first: ``block`` is then fused through them, at
        ``uid``; each is fused further in when its own loop is made."""
        for other in self.order:
            if other.name in self.emitted or uid not in other.path or other.name == block.name:
                continue
            if any(s.kind in ("block", "view") and s.name == block.name
                   for s in other.info.sources[:other.info.n_inputs]):
                self._through_views(uid)
                fused = structured.FuseIntoContainingOp(self.block_h[other.name], self.loop_h[uid])
                self.block_h[other.name] = fused.fused_op
                self.loop_h[uid] = fused.new_containing_op

    def _emit_attached(self, uid: int) -> None:
        """Emit the blocks attached (compute_at / reverse_compute_at) right at loop ``uid``,
        now that it exists: fused before the inner loops are tiled, they compute once per
        iteration of ``uid`` (after the inner tiling, the fusion would land in the innermost
        loop, next to the merged slice of the consumer's innermost tile)."""
        for other in self.order:
            if other.name in self.emitted:
                continue
            shared = [u for u in other.path if len(self.state.owners(u)) > 1]
            made = other.path[:self.state.attach_depth(other)]  # (by its consumers; a block that
            # also shares deeper loops with its own producers, a cache at k0, is fused at the
            # last loop its consumers make, before the producers attached at that same loop)
            if (shared and shared[-1] == uid and all(u in self.loop_h for u in shared)) or \
                    (made and made[-1] == uid and all(u in self.loop_h for u in made)):
                self._emit_block(other)

    def _tile(self, block: BlockState, handle: ir.Value, i: int) -> ir.Value:
        loop = self.state.loops[block.path[i]]
        sizes = self._sizes(block, i)
        if loop.kind in ("parallel", "bound"):
            mapping = None
            if loop.kind == "bound":
                mapping = gpu_mapping(loop.thread, len(loop.parts[block.name]))
            op = structured.TileUsingForallOp(handle, tile_sizes=sizes, mapping=mapping)
            self.loop_h[loop.uid] = op.forall_op
        else:
            op = structured.TileUsingForOp(handle, sizes=sizes, interchange=self._interchange(block, i))
            self.loop_h[loop.uid] = list(op.loops)[0]
        self.loop_names[loop.uid] = loop.name
        return op.tiled_op if hasattr(op, "tiled_op") else op.tiled_linalg_op

    def _fence_producers(self, block: BlockState) -> None:
        """Wrap not-yet-emitted producer blocks in a one-trip loop so that
        ``transform.structured.fuse`` (which fuses producers greedily) leaves them alone;
        canonicalization removes the loop at the end."""
        for src in block.info.sources[:block.info.n_inputs]:
            if src.kind != "block" or src.name in self.emitted or src.name not in self.state.blocks:
                continue
            prod = self.state.blocks[src.name]
            dims = [d for d, e in enumerate(prod.info.extents) if e is not None]
            if not dims:
                raise ScheduleError(f"block {block.name!r}: its init is placed below its loops, which needs "
                                    f"producer {src.name!r} to have a static dim")
            dim = dims[0]
            sizes = [0] * prod.info.ndims
            sizes[dim] = prod.info.extents[dim]
            op = structured.TileUsingForOp(self.block_h[src.name], sizes=sizes)
            self.block_h[src.name] = op.tiled_linalg_op

    def _finish(self, order: list[BlockState]) -> None:
        st = self.state
        for uid in self.view_loops:  # (the last fusion's slice of an empty destination)
            self._through_views(uid)
        for uid, h in self.loop_h.items():
            name = constant_param(ir.StringAttr.get(self.loop_names.get(uid, st.loops[uid].name)))
            transform.AnnotateOp(h, MLC_LOOP, param=name)
        for block in order:
            if block.blockized:
                self._annotate(self.block_h[block.name], "mlc.blockize", f"{block.name}_o")
            if block.tensorized:
                self._annotate(self.block_h[block.name], "mlc.tensorize", block.tensorized)
        # Blocks below peeled loops are vectorized after the peel (and after the unrolling
        # of the loops inside, in each copy): then every tile of a main loop has static
        # sizes and vectorizes without masks; only a remainder's tiles are masked.
        # (Vectorized first, the masks of a partial column tile were lowered to element
        # lists that still masked every tile of the main loop after the peel: 127 x 127
        # ran at 40% of the speed of 128 x 128.) The other blocks are vectorized first.
        peeled = self._peeled()
        under = {b.name for b in order if peeled & set(b.path)}
        vectorized = False
        for block in order:  # blocks outside the peeled loops: as they are
            if block.name not in under:
                vectorized |= self._vectorize(block, False)
        if vectorized:  # (slices folded into the transfers before any canonicalization)
            self._vector_cleanup()
        if peeled:
            vectorized |= self._peel_and_vectorize(order, peeled, under)
        if vectorized:
            if st.rfactors:  # lanes of partial sums: elementwise FMAs; rank-1 transfers (the
                # build then folds the reads of the expanded inputs)
                with ir.InsertionPoint(transform.ApplyPatternsOp(self.func_h).patterns):
                    tvector.ApplyLowerContractionPatternsOp(
                        lowering_strategy=ir.IntegerAttr.get(ir.IntegerType.get_signless(32), 3))  # parallelarith
                with ir.InsertionPoint(transform.ApplyPatternsOp(self.func_h).patterns):
                    tvector.ApplyCastAwayVectorLeadingOneDimPatternsOp()
                    transform.ApplyCanonicalizationPatternsOp()
        if not peeled:
            self._unroll(order, {})
        with ir.InsertionPoint(transform.ApplyPatternsOp(self.func_h).patterns):
            transform.ApplyCanonicalizationPatternsOp()
        transform.ApplyCommonSubexpressionEliminationOp(self.func_h)

    def _peel_and_vectorize(self, order: list[BlockState], peeled: set[int], under: set[str]) -> bool:
        """Peel the ``peeled`` loops, unroll the loops inside in every copy, then vectorize
        the blocks ``under`` them; returns whether any was vectorized.

        Each copy's unrolled loops are tagged with their trip count there, then the
        function is canonicalized (constants folded into the tiles' shapes, the dead
        originals of fused ops erased, one-trip remainder loops inlined) and the
        ``affine.min`` tile sizes of parallel loops inside a peeled one simplified by the
        loop bounds (127 rows on 2 cores: the 21 full tiles of the first 126 rows); then
        the tagged loops are unrolled, found by their tags. The contractions are formed as
        the constant masks of the remainders fold, then lowered to FMAs here: a masked
        ``vector.contract`` left to the build's vector-opt stage kept the remainder's
        accumulators in memory (the 15 columns of 127 x 127 cost more than its 112 full
        ones)."""
        copies = self._peel(order, peeled)
        narrow = self._narrow_remainders(order, peeled, under, copies)
        tags = self._unroll(order, copies, tag=True)
        with ir.InsertionPoint(transform.ApplyPatternsOp(self.func_h).patterns):
            transform.ApplyCanonicalizationPatternsOp()
        with ir.InsertionPoint(transform.ApplyPatternsOp(self.func_h).patterns):
            tloop.ApplyForLoopCanonicalizationPatternsOp()
        for tag, trips in tags:
            tloop.LoopUnrollOp(self._match(self.func_h, "mlc.unroll_at", tag, ["scf.for"]), factor=trips)
        with ir.InsertionPoint(transform.ApplyPatternsOp(self.func_h).patterns):
            transform.ApplyCanonicalizationPatternsOp()
        inside = False
        for block in order:
            if block.name in under:
                for key, sizes in narrow.get(block.name, []):  # (before the copies of full width)
                    self._vectorize_copy(block, key, sizes)
                inside |= self._vectorize(block, True)
        if inside:
            with ir.InsertionPoint(transform.ApplyPatternsOp(self.func_h).patterns):
                tvector.ApplyVectorReductionToContractPatternsOp()
                transform.ApplyCanonicalizationPatternsOp()
            self._vector_cleanup()
            with ir.InsertionPoint(transform.ApplyPatternsOp(self.func_h).patterns):
                tvector.ApplyLowerContractionPatternsOp(
                    lowering_strategy=ir.IntegerAttr.get(ir.IntegerType.get_signless(32), 2))  # outerproduct
                tvector.ApplyLowerOuterProductPatternsOp()
                tvector.ApplyLowerMasksPatternsOp()
                transform.ApplyCanonicalizationPatternsOp()
        return inside

    def _narrow_remainders(self, order: list[BlockState], peeled: set[int], under: set[str],
                           copies: dict[int, list[tuple[ir.Value, frozenset[int]]]]
                           ) -> dict[str, list[tuple[str, list[int]]]]:
        """The remainder copies of vectorized blocks whose vector dim is partial there and a
        power of two narrower than the vector (49 columns in tiles of 16: the last tile one
        column), each tagged (``mlc.vector_copy``) so that it is vectorized at that width.

        Vectorized at the full width, such a copy's transfers are masked, and bufferized,
        masked reads and writes of the accumulator on a view of its buffer stay in the
        reduction loop: the one-column tile of ResNet-18's 512 x 4608 x 49 contraction then
        accumulated through memory (a store per k step: 40-43 GFLOP/s, 48 columns 63-70 on
        Zen 3, one thread); at its width its accumulators are registers (44-56 GFLOP/s;
        256 x 2304 x 196, 4 columns left: 41-45 -> 43-62). Widths that are not powers of
        two stay masked (15 columns of 127 x 127 as ``vector<15xf32>``: 75 -> 21 GFLOP/s).
        Returns ``{block: [(tag, vector sizes), ...]}``."""
        st = self.state
        out: dict[str, list[tuple[str, list[int]]]] = {}
        for block in order:
            loops = [st.loops[u] for u in block.path]
            if block.name not in under or not loops or loops[-1].kind != "vectorized":
                continue
            sizes = [st.step(block, len(loops) - 2, d) for d in range(block.info.ndims)]
            vdims = [d for d, _ in loops[-1].parts.get(block.name, ())]
            inner = [u for u in block.path if u in peeled][-1]
            if len(vdims) != 1 or sizes[vdims[0]] is None:
                continue
            (dv,) = vdims
            for n, (scope, rem) in enumerate(copies[inner]):
                width, exact = st.tile_extent(block, len(loops) - 1, dv, rem)
                if not exact or width is None or width >= sizes[dv] or width & (width - 1):
                    continue
                key = f"{block.name}:{n}"
                self._annotate(self._match(scope, "mlc.block", block.name), "mlc.vector_copy", key)
                out.setdefault(block.name, []).append((key, [width if d == dv else z for d, z in enumerate(sizes)]))
        return out

    def _vectorize_copy(self, block: BlockState, key: str, sizes: list[int]) -> None:
        """Vectorize the copy of ``block`` tagged ``key`` (:meth:`_narrow_remainders`) by ``sizes``."""
        attrs = ir.DictAttr.get({"mlc.block": to_attr(block.name), "mlc.vector_copy": to_attr(key)})
        op = structured.MatchOp(self.any, self.func_h, op_attrs=attrs).result
        structured.VectorizeOp(op, sizes, vectorize_nd_extract=True)

    def _peeled(self) -> set[int]:
        """The peeled loops with a partial last tile (the others have nothing to peel)."""
        return {uid for uid, lp in self.state.loops.items()
                if lp.peel is not None and uid in self.loop_h
                and any(r != 0 for dims in lp.peel.values() for r in dims.values())}

    def _peel(self, order: list[BlockState], peeled: set[int]) -> dict[int, list[tuple[ir.Value, frozenset[int]]]]:
        """``transform.loop.peel`` of the ``peeled`` loops (those with a partial last tile),
        outermost first; returns ``{uid: [(copy, remainders), ...]}``: the main loop and the
        remainder made in each copy of the peeled loops around it, each with the set of
        peeled loops taken in their remainder there (``{}`` for an outermost peel's main).

        The unrolled loops below a peeled loop, and the peeled loops below another, are
        tagged first (``mlc.unroll`` / ``mlc.peel``) so that they are found again in every
        copy. A block's peeled loops iterate different dims (``FuncState`` checks), so the
        remainder of an inner one is the same in every copy of the outer ones: two peeled
        loops give four copies (full tiles, partial rows, partial columns, the corner)."""
        st = self.state
        around: dict[int, int | None] = {}  # peeled loop -> the innermost peeled loop around it
        depth: dict[int, int] = {}
        for block in order:
            path = block.path
            for i, uid in enumerate(path):
                outer = [u for u in path[:i] if u in peeled]
                if uid in peeled:
                    around.setdefault(uid, outer[-1] if outer else None)
                    depth[uid] = max(depth.get(uid, 0), i)
                    if outer:
                        self._annotate(self.loop_h[uid], "mlc.peel", str(uid))
                elif st.loops[uid].kind == "unrolled" and outer:
                    self._annotate(self.loop_h[uid], "mlc.unroll", str(uid))
        out: dict[int, list[tuple[ir.Value, frozenset[int]]]] = {}
        for uid in sorted(peeled, key=lambda u: depth[u]):
            parent = around[uid]
            scopes = [(None, frozenset())] if parent is None else out[parent]
            out[uid] = []
            for scope, rem in scopes:
                handle = self.loop_h[uid] if scope is None else self._match(scope, "mlc.peel", str(uid), ["scf.for"])
                loop = transform.CastOp(transform.OperationType.get("scf.for"), handle).result
                op = tloop.LoopPeelOp(self.any, self.any, loop)
                out[uid] += [(op.peeled_loop, rem), (op.remainder_loop, rem | {uid})]
        return out

    def _unroll(self, order: list[BlockState], peeled: dict[int, list[tuple[ir.Value, frozenset[int]]]],
                tag: bool = False) -> list[tuple[str, int]]:
        """Unroll every unrolled loop by its trip count, innermost first; inside peeled
        loops, in every copy (main loops and remainders), each by its own trip count.
        With ``tag``, annotate each loop (``mlc.unroll_at = "uid:trips"``) instead, and
        return the tags with their trip counts, innermost loops first, to unroll later."""
        st = self.state
        unrolled: dict[int, tuple[int, BlockState]] = {}
        for block in order:
            for i, uid in enumerate(block.path):
                if st.loops[uid].kind == "unrolled" and uid not in unrolled:
                    unrolled[uid] = (i, block)
        tags: list[tuple[str, int]] = []

        def unroll(handle: ir.Value, uid: int, trips: int) -> None:
            if not tag:
                tloop.LoopUnrollOp(handle, factor=trips)
                return
            self._annotate(handle, "mlc.unroll_at", f"{uid}:{trips}")
            if (f"{uid}:{trips}", trips) not in tags:
                tags.append((f"{uid}:{trips}", trips))

        for uid, (i, block) in sorted(unrolled.items(), key=lambda kv: -kv[1][0]):
            outer = next((u for u in reversed(block.path[:i]) if u in peeled), None)
            if outer is None:
                unroll(self.loop_h[uid], uid, st.trip_count(block, i))
                continue
            for scope, rem in peeled[outer]:
                trips = st.trip_count(block, i, rem)
                if trips is not None:
                    unroll(self._match(scope, "mlc.unroll", str(uid), ["scf.for"]), uid, trips)
        return tags

    def _vectorize(self, block: BlockState, after_peel: bool) -> bool:
        """Vectorize ``block`` (and its small init fill) if its innermost loop is vectorized;
        ``after_peel`` (the function canonicalized since), every copy of its op, matched by
        name. Returns whether it was."""
        st = self.state
        loops = [st.loops[u] for u in block.path]
        if not loops or loops[-1].kind != "vectorized":
            return False
        sizes = [st.step(block, len(loops) - 2, d) for d in range(block.info.ndims)]
        # vectorize_nd_extract: a tensor.extract in the body (a gather, a guarded read of te)
        # becomes a vector gather or a contiguous load instead of failing the vectorization
        structured.VectorizeOp(self._match(self.func_h, "mlc.block", block.name) if after_peel
                               else self.block_h[block.name], sizes, vectorize_nd_extract=True)
        self._vectorize_init(block, after_peel)
        return True

    def _vectorize_init(self, block: BlockState, after_peel: bool = False) -> None:
        """Vectorize the init fill of a vectorized reduction block when its tile is small.

        As in TVM, where ``decompose_reduction`` gives the init block copies of the
        block's loops (a vectorized loop stays vectorized). Besides, a fill left scalar
        writes through a ``memref.subview`` after bufferization, and such a view of the
        accumulator's buffer keeps ``hoist_redundant_vector_transfers`` from keeping the
        accumulator in registers across the reduction loop.
        """
        if not block.info.has_init:
            return
        tile = self.state.init_tile(block)
        if tile is None or math.prod(tile[1]) > MAX_VECTOR_ELEMENTS:
            return
        depth, sizes = tile
        # matched inside its loop: the original fill, dead after fusion, is still in the function
        # (after a peel, erased by the canonicalization: every copy is matched in the function)
        scope = self.loop_h[block.path[depth - 1]] if depth and not after_peel else self.func_h
        structured.VectorizeOp(self._match(scope, "mlc.block_init", block.name), sizes, vectorize_nd_extract=True)

    def _vector_cleanup(self) -> None:
        """The patterns ``vectorize_children_and_apply_patterns`` applies after vectorizing.

        Masked partial tiles fold into the transfers; ``mulf`` + ``multi_reduction``
        become ``vector.contract`` (lowered to outer products = broadcast + FMA rows by
        the build's ``vector-opt`` stage); transfers with broadcast/transpose permutation
        maps become plain transfers + ``vector.broadcast``/``transpose``; slices fold into
        the transfers.
        """
        with ir.InsertionPoint(transform.ApplyPatternsOp(self.func_h).patterns):
            tvector.ApplyLowerMaskedTransfersPatternsOp()
            tvector.ApplyLowerMasksPatternsOp()
            tvector.ApplyVectorReductionToContractPatternsOp()
            tvector.ApplyTransferPermutationPatternsOp()
            ttensor.ApplyFoldTensorSubsetOpsIntoVectorTransfersPatternsOp()
