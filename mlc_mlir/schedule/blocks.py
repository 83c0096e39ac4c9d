"""Block primitives: compute_at, reverse_compute_at, decompose_reduction, blockize.

A mixin of :class:`~mlc_mlir.schedule.Schedule`. Moving a block under a loop makes that
loop shared: at emission the consumer of the group is tiled and the producers are fused
into the loop (``transform.structured.fuse_into_containing_op``), then tiled further.
"""

from __future__ import annotations

from ..context import mlc_context
from ..errors import ScheduleError
from .footprint import block_accesses, shared_footprint
from .peel import share_peel
from .state import BlockState, FuncState, Loop
from .trace import BlockRV, LoopRV
from .intrin import TensorIntrin, tile_signature

__all__ = ["BlockPrimitives"]


class BlockPrimitives:
    """Move blocks between loop nests and split off their init."""

    def compute_at(self, block: BlockRV, loop: LoopRV, *, preserve_unit_loops: bool = False) -> None:
        """Compute producer ``block`` under ``loop`` of a consumer, just the region that one
        iteration of ``loop`` reads; its remaining dims become new loops ``ax0, ax1...``.

        Preconditions: a block under ``loop`` reads ``block``'s result with plain indices;
        no other block is attached to ``block``'s loops. Unit loops are always dropped
        (``preserve_unit_loops`` is accepted for the course's signature).

        A ``"shared"`` read cache covers what the whole thread block reads (TVM's region
        relaxation, :mod:`.footprint`): the ``threadIdx`` loops around ``loop`` are relaxed
        and every read of the cached tensor counts, window offsets included. Course ch.6
        window sum, ``i_1`` bound to 128 threads::

            sch.compute_at(A_shared, i1)
            sch.get_loops(A_shared)        # [i_0, i_1, ax0]: ax0 over 130 elements
            ax0, ax1 = sch.split(sch.get_loops(A_shared)[-1], [None, 128])
            sch.bind(ax1, "threadIdx.x")   # cooperative fetch

        The emitted program still fuses each thread's tile; the CUDA build widens it to the
        block's region in workgroup memory.

        IR before: ``Y`` (matmul) then ``C`` (relu) at top level. Schedule::

            i, j = sch.get_loops(sch.get_block("C"))
            sch.compute_at(sch.get_block("Y"), j)

        IR after (the 1x1 matmul and its fill are computed inside ``j``)::

            scf.for %i { scf.for %j {
                linalg.fill {mlc.block_init = "Y"} ... tensor<1x1xf32>
                linalg.matmul {mlc.block = "Y"} ... tensor<1x128xf32>, tensor<128x1xf32>
                linalg.generic {mlc.block = "C"} ... tensor<1x1xf32>
            } {mlc.loop = "j"} } {mlc.loop = "i"}
        """
        with self._edit():
            fstate, prod, uid, cons = self._attach_args(block, loop, "compute_at", consumer_under=True)
            oper = _operand_from(cons, prod.name, views=True)
            pmap, cmap = prod.info.maps[-1], cons.info.maps[oper]
            _plain(pmap, prod.info.shapes[-1], prod.name, "compute_at")
            _plain(cmap, cons.info.shapes[oper], cons.name, "compute_at")
            index = cons.path.index(uid)
            c_to_p = _through_view(fstate, cons, prod, oper, cons.path[:index + 1])
            base = [(e, e is not None) for e in prod.info.extents]
            for dc, dp in c_to_p.items():
                base[dp] = fstate.tile_extent(cons, index + 1, dc)
            wide = self._shared_base(fstate, prod, cons, oper, index)
            shared = {u: tuple((c_to_p[dc], e) for dc, e in fstate.loops[u].parts[cons.name] if dc in c_to_p)
                      for u in cons.path[:index + 1]}
            self._attach(fstate, prod, cons.path[:index + 1], shared, wide or base)
            prod.block_wide = wide is not None and wide != base
            share_peel(fstate, cons.path[:index + 1], cons.name, prod.name, c_to_p)
            self._record("compute_at", [("block", block), ("loop", loop)])

    def _shared_base(self, fstate: FuncState, prod: BlockState, cons: BlockState, oper: int,
                     index: int) -> list | None:
        """The thread block's region for a ``"shared"`` read cache (:mod:`.footprint`), or
        None for other blocks (their tile is what one iteration of the loop reads)."""
        if prod.cache_scope != "shared" or not any(c[0] == "read" and c[3] == prod.name for c in fstate.caches):
            return None
        cache = self.__dict__.setdefault("_accesses", {})
        key = (fstate.func, cons.name)
        if key not in cache:
            with mlc_context():
                cache[key] = block_accesses(self._orig.mlir_module, fstate.func, cons.name)
        return shared_footprint(fstate, prod, cons, oper, index, cache[key])

    def reverse_compute_at(self, block: BlockRV, loop: LoopRV, *, preserve_unit_loops: bool = False) -> None:
        """Compute consumer ``block`` under ``loop`` of its producer, on the tile that one
        iteration of ``loop`` produces; its remaining dims become loops ``ax0, ax1...``.

        Preconditions: ``block`` reads the result of a block under ``loop`` with plain
        indices; the loops down to ``loop`` are spatial loops of that producer. Unit loops
        are always dropped (``preserve_unit_loops`` is accepted for the course's signature).

        IR before (``Y`` split and reordered to ``i, j_0, k, j_1``). Schedule::

            sch.reverse_compute_at(sch.get_block("C"), j0)

        IR after (course ch.2: ``C`` on the 1x4 tile right after ``Y`` computes it)::

            scf.for %i { scf.for %j0 step %c4 {
                linalg.fill {mlc.block_init = "Y"} ... tensor<1x4xf32>
                scf.for %k { linalg.matmul {mlc.block = "Y"} ... tensor<1x4xf32> } {mlc.loop = "k"}
                linalg.generic {mlc.block = "C"} ... tensor<1x4xf32>
            } {mlc.loop = "j_0"} } {mlc.loop = "i"}
        """
        with self._edit():
            fstate, cons, uid, prod = self._attach_args(block, loop, "reverse_compute_at", consumer_under=False)
            index = prod.path.index(uid)
            for u in prod.path[:index + 1]:
                lp = fstate.loops[u]
                if any(prod.info.is_reduction(d) for d, _ in lp.parts[prod.name]):
                    raise ScheduleError(f"reverse_compute_at: loop {lp.name} is a reduction loop of block "
                                        f"{prod.name!r}; {cons.name!r} needs its final values")
            oper = _operand_from(cons, prod.name, views=True)
            pmap, cmap = prod.info.maps[-1], cons.info.maps[oper]
            _plain(pmap, prod.info.shapes[-1], prod.name, "reverse_compute_at")
            _plain(cmap, cons.info.shapes[oper], cons.name, "reverse_compute_at")
            p_to_c = {dp: dc for dc, dp in _through_view(fstate, cons, prod, oper, prod.path[:index + 1],
                                                        tiled_by=prod, what="reverse_compute_at").items()}
            base = [(e, e is not None) for e in cons.info.extents]
            for dp, dc in p_to_c.items():
                base[dc] = fstate.tile_extent(prod, index + 1, dp)
            shared = {u: tuple((p_to_c[dp], e) for dp, e in fstate.loops[u].parts[prod.name] if dp in p_to_c)
                      for u in prod.path[:index + 1]}
            self._attach(fstate, cons, prod.path[:index + 1], shared, base)
            share_peel(fstate, prod.path[:index + 1], prod.name, cons.name, p_to_c)
            self._record("reverse_compute_at", [("block", block), ("loop", loop)])

    def _attach_args(self, block, loop, what: str, *, consumer_under: bool):
        fstate, moved = self._resolve_block(block, what)
        lstate, uid = self._resolve_loop(loop, what)
        if lstate is not fstate:
            raise ScheduleError(f"{what}: block {moved.name!r} and loop {lstate.loops[uid].name} are in "
                                "different functions")
        lp = fstate.loops[uid]
        if moved.name in lp.parts:
            raise ScheduleError(f"{what}: block {moved.name!r} is already under loop {lp.name}")
        if moved.blockized:
            raise ScheduleError(f"{what}: block {moved.name!r} is blockized; move it before blockize")
        for u in moved.path:
            if len(fstate.owners(u)) > 1:
                raise ScheduleError(f"{what}: block {moved.name!r} shares loop {fstate.loops[u].name} with "
                                    "other blocks; it cannot move again")
        under = [fstate.blocks[b] for b in lp.parts]
        if consumer_under:
            related = [b for b in under if _operand_from(b, moved.name, strict=False, views=True) is not None]
            role = f"reads the result of {moved.name!r}"
        else:
            related = [b for b in under if _operand_from(moved, b.name, strict=False, views=True) is not None]
            role = f"produces an input of {moved.name!r}"
        if not related:
            raise ScheduleError(f"{what}: no block under loop {lp.name} ({', '.join(lp.parts)}) {role}")
        _check_group_consumers(fstate, set(lp.parts) | {moved.name}, lp.name, what)
        return fstate, moved, uid, related[0]

    def _attach(self, fstate: FuncState, moved: BlockState, prefix: list[int],
                shared: dict[int, tuple], base: list) -> None:
        for u in moved.path:
            del fstate.loops[u]
        own = []
        for d, (ext, _) in enumerate(base):
            if ext is None or ext > 1:
                uid = self._new_uid()
                fstate.loops[uid] = Loop(uid, f"ax{len(own)}", {moved.name: ((d, ext),)})
                own.append(uid)
        for u, parts in shared.items():
            fstate.loops[u].parts[moved.name] = parts
        moved.path = list(prefix) + own
        moved.base = list(base)
        moved.init_level = None
        moved.block_wide = False

    def decompose_reduction(self, block: BlockRV, loop: LoopRV) -> BlockRV:
        """Place ``block``'s init (its ``linalg.fill``) right before ``loop``: under the
        loops that enclose ``loop``, once per tile of them.

        Preconditions: ``block`` has an init fill (``mlc.block_init``); ``loop`` is one of
        its loops; every loop outside ``loop`` is spatial for ``block``.

        IR before (course ch.4 ``schedule_mm``: loops ``i, j_0, k, j_1``; the fill is on
        the whole 128x128 output). Schedule::

            sch.decompose_reduction(block_C, k)

        IR after::

            scf.for %i { scf.for %j0 step %c4 {
                linalg.fill {mlc.block_init = "C"} ... tensor<1x4xf32>
                scf.for %k { linalg.matmul ... tensor<1x4xf32> } {mlc.loop = "k"}
            } {mlc.loop = "j_0"} } {mlc.loop = "i"}

        Returns:
            A handle to the init block (``<name>_init``); it cannot be scheduled further.
        """
        with self._edit():
            fstate, bstate = self._resolve_block(block, "decompose_reduction")
            lstate, uid = self._resolve_loop(loop, "decompose_reduction")
            if lstate is not fstate or uid not in bstate.path:
                raise ScheduleError(f"decompose_reduction: loop {loop.name} is not a loop of block "
                                    f"{bstate.name!r}")
            if not bstate.info.has_init:
                raise ScheduleError(f"decompose_reduction: block {bstate.name!r} has no init (a linalg.fill "
                                    "marked mlc.block_init that initialises its output)")
            index = bstate.path.index(uid)
            for u in bstate.path[:index]:
                lp = fstate.loops[u]
                if any(bstate.info.is_reduction(d) for d, _ in lp.parts[bstate.name]):
                    raise ScheduleError(f"decompose_reduction: loop {lp.name} outside {loop.name} is a reduction "
                                        f"loop of {bstate.name!r}; the init must stay outside every reduction loop")
            init_name = f"{bstate.name}_init"
            if init_name in fstate.aliases:
                raise ScheduleError(f"decompose_reduction: block {bstate.name!r} is already decomposed")
            bstate.init_level = index
            fstate.aliases[init_name] = ("init", bstate.name)
            rv = BlockRV(init_name, fstate.func)
            self._record("decompose_reduction", [("block", block), ("loop", loop)], (rv,))
        return rv

    def blockize(self, loop: LoopRV, *, preserve_unit_iters: bool = True) -> BlockRV:
        """Make the sub-nest from ``loop`` inward one block: a tile of the op that stays
        whole (course ch.6 "tensorized block"); the returned outer block ``<name>_o`` has
        the loops outside ``loop``.

        Preconditions: ``loop`` and the loops inside it belong to one block only, are serial
        and have static extents.

        Schedule (1024^3 matmul)::

            i, j, k = sch.get_loops(sch.get_block("matmul"))
            i, ii = sch.split(i, factors=[None, 16])
            j, ji = sch.split(j, factors=[None, 16])
            k, ki = sch.split(k, factors=[None, 16])
            sch.reorder(i, j, k, ii, ji, ki)
            block_mm = sch.blockize(ii)

        IR after::

            scf.for %i { scf.for %j { scf.for %k {
                linalg.matmul {mlc.block = "matmul", mlc.blockize = "matmul_o"}
                    ins(... tensor<16x16xf32>, tensor<16x16xf32>) outs(... tensor<16x16xf32>)
            } } }
        """
        with self._edit():
            fstate, uid = self._resolve_loop(loop, "blockize")
            rv, _ = self._blockize(fstate, uid, "blockize")
            self._record("blockize", [("loop", loop)], (rv,))
        return rv


    def _blockize(self, fstate: FuncState, uid: int, what: str) -> tuple[BlockRV, BlockState]:
        bstate = fstate.block_of_loop(uid, what)
        name = fstate.loops[uid].name
        index = bstate.path.index(uid)
        inner = bstate.path[index:]
        for u in inner:
            lp = fstate.loops[u]
            if len(fstate.owners(u)) > 1 or lp.kind != "serial" or lp.peel is not None:
                raise ScheduleError(f"{what}: loop {lp.name} inside {name} is shared, peeled or {lp.kind}")
        tile = [fstate.step(bstate, index - 1, d) for d in range(bstate.info.ndims)]
        if None in tile:
            raise ScheduleError(f"{what}: the loops inside {name} have dynamic extents")
        for u in inner:
            del fstate.loops[u]
        bstate.path = bstate.path[:index]
        bstate.inner_tile = tile
        bstate.blockized = True
        outer = f"{bstate.name}_o"
        fstate.aliases[outer] = ("outer", bstate.name)
        return BlockRV(outer, fstate.func), bstate

    def tensorize(self, block_or_loop: BlockRV | LoopRV, tensor_intrin: str) -> None:
        """Replace the tile computed by a blockized block (or by the sub-nest from a loop,
        which is blockized first) by a call of a registered intrinsic's implementation.

        Preconditions: the intrinsic is registered (:meth:`TensorIntrin.register`); the
        tile has exactly the intrinsic's shapes (no partial tiles), indexing maps,
        iterator kinds, element type and body; a block with an init is decomposed first.

        Schedule (course ch.6, after blockize/cache_read/cache_write/decompose_reduction)::

            sch.tensorize(block_mm, "tmm16")

        IR after (the 16x16x16 matmul tile becomes a call)::

            %r = func.call @tmm16_impl(%a, %b, %acc) {mlc.tensorized = "tmm16"}
                : (tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>) -> tensor<16x16xf32>
            ...
            func.func private @tmm16_impl(...)
        """
        intrin = TensorIntrin.get(tensor_intrin) if isinstance(tensor_intrin, str) else None
        if intrin is None:
            raise ScheduleError(f"tensorize: tensor_intrin must be a registered name, got {tensor_intrin!r}")
        with self._edit():
            if isinstance(block_or_loop, LoopRV):
                fstate, uid = self._resolve_loop(block_or_loop, "tensorize")
                _, bstate = self._blockize(fstate, uid, "tensorize")
            else:
                fstate, bstate = self._resolve_block(block_or_loop, "tensorize")
                if not bstate.blockized:
                    raise ScheduleError(f"tensorize: block {bstate.name!r} is not blockized; blockize a loop "
                                        "first or pass that loop")
            if bstate.tensorized:
                raise ScheduleError(f"tensorize: block {bstate.name!r} is already tensorized")
            if bstate.info.has_init and bstate.init_level is None:
                raise ScheduleError(f"tensorize: block {bstate.name!r} has an init; decompose_reduction first")
            for d in range(bstate.info.ndims):
                ext, exact = fstate.tile_extent(bstate, len(bstate.path), d)
                if not exact or ext != bstate.inner_tile[d]:
                    raise ScheduleError(f"tensorize: block {bstate.name!r} has partial tiles in dim {d}; "
                                        "the split factors must divide the extents")
            got = tile_signature(bstate.info, bstate.inner_tile)
            if got != intrin.signature:
                raise ScheduleError(f"tensorize: the tile of block {bstate.name!r} (shapes {got[2]}, body "
                                    f"{list(got[5])}) does not match intrinsic {intrin.name!r} (shapes "
                                    f"{intrin.signature[2]}, body {list(intrin.signature[5])})")
            bstate.tensorized = intrin.name
            self._record("tensorize", [("block_or_loop", block_or_loop), ("tensor_intrin", tensor_intrin)])


def _check_group_consumers(fstate: FuncState, group: set[str], loop: str, what: str) -> None:
    """Legality of a loop nest shared by ``group``: a block of the group whose result another
    block of the group reads is computed tile by tile inside the shared loops, so no block
    outside the group may read it (it would need the whole tensor; upstream's fusion of
    such a producer aborts the process)."""
    for name in sorted(group):
        readers = sorted(b.name for b in fstate.blocks.values()
                         if _operand_from(b, name, strict=False, views=True) is not None)
        inside = [r for r in readers if r in group]
        outside = [r for r in readers if r not in group]
        if inside and outside:
            raise ScheduleError(f"{what}: block {name!r} would be computed tile by tile under loop {loop} for "
                                f"{inside}, but block(s) {outside} outside that loop also read its result; "
                                "a producer read both inside and outside shared loops is not supported")


def _operand_from(block: BlockState, producer: str, *, strict: bool = True, views: bool = False) -> int | None:
    """The input of ``block`` that reads ``producer``'s result (with ``views``: also through
    a reshape of it)."""
    kinds = ("block", "view") if views else ("block",)
    for i, src in enumerate(block.info.sources[:block.info.n_inputs]):
        if src.kind in kinds and src.name == producer:
            return i
    if strict:
        raise ScheduleError(f"block {block.name!r} does not read the result of {producer!r}")
    return None


def _through_view(fstate: FuncState, cons: BlockState, prod: BlockState, oper: int, shared: list[int], *,
                  tiled_by: BlockState | None = None, what: str = "compute_at") -> dict[int, int]:
    """The consumer's dims that index ``prod``'s result -> the producer's dims. Through a
    reshape view of the result (a convolution's contraction reads its im2col
    ``(n, k, oh, ow)`` as ``(n, k, oh * ow)``; its epilogue reads the result ``(n, f, p)``
    as ``(n, f, oh, ow)``) only the dims the reshape keeps map; the ``shared`` loops (of
    the consumer, or of ``tiled_by``) must not tile a reshaped one: its region in the other
    block would not be a box."""
    src = cons.info.sources[oper]
    pmap, cmap = prod.info.maps[-1], cons.info.maps[oper]
    if src.kind == "block":
        # (a dim of size 1 read at index 0, softmax's kept row max: no loop of its own)
        return {cmap[r]: pmap[r] for r in range(len(cmap)) if cmap[r] is not None and pmap[r] is not None}
    c_to_p: dict[int, int] = {}
    reshaped: set[int] = set()
    oshape, pshape = cons.info.shapes[oper], prod.info.shapes[-1]
    for odims, pdims in src.groups:
        # (a group that only adds or drops dims of size 1 keeps its one other dim: softmax's
        # row sums (n, h, s, 1) read as (n, h, s))
        real_o = [r for r in odims if oshape[r] != 1] if len(odims) > 1 else list(odims)
        real_p = [r for r in pdims if pshape[r] != 1] if len(pdims) > 1 else list(pdims)
        if len(real_o) == 1 and len(real_p) == 1:
            if cmap[real_o[0]] is not None and pmap[real_p[0]] is not None:
                c_to_p[cmap[real_o[0]]] = pmap[real_p[0]]
        elif tiled_by is None:
            reshaped |= {cmap[r] for r in odims}
        else:
            reshaped |= {pmap[r] for r in pdims}
    owner = tiled_by or cons
    for u in shared:
        lp = fstate.loops[u]
        tiled = [d for d, _ in lp.parts[owner.name] if d in reshaped]
        if tiled:
            raise ScheduleError(f"{what}: block {cons.name!r} reads {prod.name!r} through a reshape, and "
                                f"loop {lp.name} tiles its reshaped dim d{tiled[0]} of {owner.name!r}; only "
                                "the dims the reshape keeps can be shared")
    return c_to_p


def _plain(amap: tuple, shape: tuple, name: str, what: str) -> None:
    """Each dim of the tensor indexed by its own loop index, or a dim of size 1 at index 0."""
    dims = [d for d in amap if d is not None]
    if any(d is None and shape[r] != 1 for r, d in enumerate(amap)) or len(set(dims)) != len(dims):
        raise ScheduleError(f"{what}: block {name!r} indexes the tensor with non-plain indices (such as i + k); "
                            "only plain loop indices are supported")
