"""Loop primitives: split, reorder, fuse, parallel, vectorize, unroll, bind.

A mixin of :class:`~mlc_mlir.schedule.Schedule`; see :mod:`.state` for the loop model.
The IR examples use ``mm_relu`` of docs/conventions.md (128x128 f32, block ``Y`` is a
``linalg.matmul`` with its init fill, block ``C`` the relu).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from ..errors import ScheduleError
from .fuse_nest import fuse_general, needs_general_fuse
from .state import MAX_UNROLL, MAX_VECTOR_ELEMENTS, Loop
from .trace import ExprRV, LoopRV

__all__ = ["LoopPrimitives"]

THREAD_AXES = tuple(f"{a}.{d}" for a in ("blockIdx", "threadIdx") for d in "xyz")


def _factor(value: Any, what: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, ExprRV):
        value = value.value
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise ScheduleError(f"{what}: a sampled factor must be a positive int, got {value!r}")
        return value
    if isinstance(value, bool) or not isinstance(value, int):
        raise ScheduleError(f"{what}: factors must be positive ints, sampled values or None, got {value!r}")
    if value <= 0:
        raise ScheduleError(f"{what}: factors must be positive, got {value}")
    return value


class LoopPrimitives:
    """Split, reorder, fuse and annotate loops."""

    def split(self, loop: LoopRV, factors: Sequence[int | ExprRV | None], *,
              preserve_unit_iters: bool = True) -> list[LoopRV]:
        """Split ``loop`` into ``len(factors)`` nested loops, outermost first.

        Preconditions: ``loop`` is a live loop of one block (not shared after
        compute_at, not fused from several dims); at most one factor is ``None`` (it is
        inferred as the ceiling quotient); when all factors are given their product equals
        the extent. A factor that does not divide the extent is legal: the partial tile is
        guarded by ``affine.min``. On a dynamic extent only the outermost factor may be
        ``None``. Loops of extent 1 are kept (``preserve_unit_iters`` is accepted for the
        course's signature). The own loop of a ``"shared"`` copy sized to the thread
        block's region by ``compute_at`` (or a fusion of its loops) splits into ``[None,
        threads]`` or ``[None, threads, vector]``: cooperative fetching (:mod:`.cache`).

        IR before (block ``Y`` untouched: all loops inside the op)::

            %y = linalg.matmul {mlc.block = "Y"} ins(%A, %B : ...) outs(%f : tensor<128x128xf32>)

        Schedule::

            i, j, k = sch.get_loops(sch.get_block("Y"))
            j0, j1 = sch.split(j, factors=[None, 4])

        IR after (``i`` and ``j_0`` become loops; ``k``, ``j_1`` stay inside the op)::

            scf.for %i = %c0 to %c128 step %c1 ... {
              scf.for %j0 = %c0 to %c128 step %c4 ... {
                linalg.matmul {mlc.block = "Y"} ins(... tensor<1x128xf32>, tensor<128x4xf32>)
                                                outs(... tensor<1x4xf32>)
              } {mlc.loop = "j_0"}
            } {mlc.loop = "i"}

        Returns:
            The new loops, named ``<name>_0``, ``<name>_1``...
        """
        fstate, uid = self._resolve_loop(loop, "split")
        if not isinstance(factors, (list, tuple)) or not factors:
            raise ScheduleError(f"split: factors must be a non-empty list, got {factors!r}")
        vals = [_factor(f, "split") for f in factors]
        with self._edit():
            block = fstate.block_of_loop(uid, "split")
            old = fstate.loops[uid]
            if old.kind != "serial" or old.peel is not None:
                how = f"bound to {old.thread}" if old.kind == "bound" else old.kind if old.peel is None else "peeled"
                raise ScheduleError(f"split: loop {old.name} is already {how}; splitting it would drop that "
                                    "annotation (split first, then annotate the new loops)")
            parts = old.parts[block.name]
            if block.cache_scope == "shared" and (len(parts) != 1 or block.block_wide):
                # cooperative fetching (course ch.6): the copy's fused loop, or its own loop
                # over the thread block's region (compute_at of a shared cache)
                return self._split_shared_copy(fstate, block, uid, vals, loop, factors)
            if len(parts) != 1:
                raise ScheduleError(f"split: loop {old.name} is a fusion of several dims; splitting it is not "
                                    "supported")
            dim, extent = parts[0]
            vals = _infer_factors(vals, extent, old.name)
            index = block.path.index(uid)
            new = []
            for n, f in enumerate(vals):
                nid = self._new_uid()
                fstate.loops[nid] = Loop(nid, f"{old.name}_{n}", {block.name: ((dim, f),)})
                new.append(nid)
            inner = math.prod(vals[1:]) if None not in vals else None
            if extent is not None and inner and 0 < extent - (vals[0] - 1) * inner < inner:
                fstate.loops[new[0]].tail = {block.name: {dim: (extent - (vals[0] - 1) * inner, inner)}}
            block.path[index:index + 1] = new
            del fstate.loops[uid]
            rvs = [self._loop_rv(fstate, n) for n in new]
            self._record("split", [("loop", loop), ("factors", list(factors))], tuple(rvs))
        return rvs

    def reorder(self, *loops: LoopRV) -> None:
        """Reorder loops of one block: the given loops take, in the given order, the
        positions they occupy together (other loops stay where they are).

        Preconditions: the loops are live, distinct, all of one block and not shared;
        two loops of the same dim keep their outer-before-inner order (the tiling
        cannot express the other order).

        IR before (after ``j0, j1 = sch.split(j, [None, 4])``)::

            scf.for %i { scf.for %j0 step 4 { linalg.matmul 1x4 (k=128 inside) } }

        Schedule::

            sch.reorder(j0, k, j1)

        IR after::

            scf.for %i { scf.for %j0 step %c4 { scf.for %k step %c1 {
                linalg.matmul ins(... tensor<1x1xf32>, tensor<1x4xf32>) outs(... tensor<1x4xf32>)
            } {mlc.loop = "k"} } {mlc.loop = "j_0"} } {mlc.loop = "i"}
        """
        if len(loops) == 1 and isinstance(loops[0], (list, tuple)):
            loops = tuple(loops[0])
        resolved = [self._resolve_loop(lp, "reorder") for lp in loops]
        uids = [u for _, u in resolved]
        if len(set(uids)) != len(uids):
            raise ScheduleError("reorder: a loop is given twice")
        with self._edit():
            fstate = resolved[0][0]
            owners = {tuple(fstate.owners(u)) for u in uids}
            if len({f.func for f, _ in resolved}) != 1 or len(owners) != 1:
                names = {fstate.loops[u].name: fstate.owners(u) for u in uids}
                raise ScheduleError(f"reorder: the loops must belong to one block; got {names}")
            block = fstate.block_of_loop(uids[0], "reorder")
            positions = sorted(block.path.index(u) for u in uids)
            path = list(block.path)
            for pos, u in zip(positions, uids):
                path[pos] = u
            _check_dim_order(fstate, block, path)
            block.path = path
            self._record("reorder", [("loops", list(loops))])

    def fuse(self, *loops: LoopRV, preserve_unit_iters: bool = True) -> LoopRV:
        """Fuse consecutive loops of one block into one loop.

        Loops of the same dim merge into one loop of that dim; loops of different dims
        become one loop over several dims: an ``scf.forall`` over all of them once
        parallel (the usual ``fuse`` then ``parallel``), nested ``scf.for`` otherwise
        (the outer one carries the fused name).

        Schedule::

            i, j = sch.get_loops(sch.get_block("C"))
            ij = sch.fuse(i, j)
            sch.parallel(ij)

        IR after::

            scf.forall (%i, %j) in (128, 128) shared_outs(...) {
              linalg.generic {mlc.block = "C"} ... tensor<1x1xf32>
            } {mlc.loop = "i_j_fused"}
        """
        if len(loops) == 1 and isinstance(loops[0], (list, tuple)):
            loops = tuple(loops[0])
        if not loops:
            raise ScheduleError("fuse: give at least one loop")
        resolved = [self._resolve_loop(lp, "fuse") for lp in loops]
        uids = [u for _, u in resolved]
        with self._edit():
            fstate = resolved[0][0]
            if len(uids) == 1 or needs_general_fuse(fstate, uids):  # one loop; shared or interleaved loops
                uid = uids[0] if len(uids) == 1 else fuse_general(fstate, uids, self._new_uid)
                rv = self._loop_rv(fstate, uid)
                self._record("fuse", [("loops", list(loops))], (rv,))
                return rv
            block = fstate.block_of_loop(uids[0], "fuse")
            for u in uids[1:]:
                if fstate.block_of_loop(u, "fuse") is not block:
                    raise ScheduleError("fuse: the loops must belong to one block")
            index = block.path.index(uids[0])
            if block.path[index:index + len(uids)] != uids:
                raise ScheduleError("fuse: the loops must be consecutive, outermost first: "
                                    + ", ".join(fstate.loops[u].name for u in uids))
            if len(uids) == 1:
                rv = self._loop_rv(fstate, uids[0])
            else:
                rv = self._fuse_loops(fstate, block, index, uids)
            self._record("fuse", [("loops", list(loops))], (rv,))
        return rv

    def _fuse_loops(self, fstate, block, index: int, uids: list[int]) -> LoopRV:
        parts: list[tuple[int, int | None]] = []
        for u in uids:
            lp = fstate.loops[u]
            if lp.kind != "serial" or lp.peel is not None:
                raise ScheduleError(f"fuse: loop {lp.name} is already {lp.kind if lp.peel is None else 'peeled'}")
            for d, e in lp.parts[block.name]:
                if parts and parts[-1][0] == d:
                    prev = parts[-1][1]
                    parts[-1] = (d, None if prev is None or e is None else prev * e)
                elif any(p[0] == d for p in parts):
                    raise ScheduleError(f"fuse: loop {lp.name} iterates a dim already fused further out; "
                                        "this fusion is not supported")
                else:
                    parts.append((d, e))
        nid = self._new_uid()
        name = "_".join(fstate.loops[u].name for u in uids) + "_fused"
        fstate.loops[nid] = Loop(nid, name, {block.name: tuple(parts)})
        block.path[index:index + len(uids)] = [nid]
        for u in uids:
            del fstate.loops[u]
        return self._loop_rv(fstate, nid)

    def _set_kind(self, loop: LoopRV, kind: str, what: str, thread: str | None = None) -> tuple:
        fstate, uid = self._resolve_loop(loop, what)
        lp = fstate.loops[uid]
        if lp.kind != "serial" or lp.peel is not None:
            raise ScheduleError(f"{what}: loop {lp.name} is already {lp.kind if lp.peel is None else 'peeled'}")
        for bname, parts in lp.parts.items():
            info = fstate.blocks[bname].info
            for d, _ in parts:
                if kind != "unrolled" and info.is_reduction(d):
                    raise ScheduleError(f"{what}: loop {lp.name} is a reduction loop of block {bname!r}; "
                                        f"it cannot be {kind}")
        lp.kind, lp.thread = kind, thread
        return fstate, uid, lp

    def parallel(self, loop: LoopRV) -> None:
        """Run ``loop``'s iterations in parallel threads (``scf.forall``; OpenMP at build).

        Preconditions: ``loop`` iterates only spatial (parallel) dims of every block under it.

        Schedule::

            i, j = sch.get_loops(sch.get_block("C"))
            sch.parallel(i)

        IR after::

            scf.forall (%i) in (128) shared_outs(%o = %C) {
              linalg.generic {mlc.block = "C"} ... outs(... tensor<1x128xf32>)
            } {mlc.loop = "i"}
        """
        with self._edit():
            self._set_kind(loop, "parallel", "parallel")
            self._record("parallel", [("loop", loop)])

    def vectorize(self, loop: LoopRV) -> None:
        """Vectorize ``loop``: it stays inside the linalg op, which
        ``transform.structured.vectorize`` turns into vector ops (masked on partial tiles).

        Preconditions: ``loop`` is the innermost loop of one block, spatial, with a static
        extent of at most 512 elements (large vectors make the IR and compile time explode).

        Schedule::

            i, j = sch.get_loops(sch.get_block("C"))
            j0, j1 = sch.split(j, factors=[None, 8])
            sch.vectorize(j1)

        IR after::

            scf.for %i { scf.for %j0 step %c8 {
                vector.transfer_read ... vector<1x8xf32>
                arith.maximumf ... vector<1x8xf32>
                vector.transfer_write ...
            } {mlc.loop = "j_0"} } {mlc.loop = "i"}
        """
        with self._edit():
            fstate, uid = self._resolve_loop(loop, "vectorize")
            if self._vectorize_shared_copy(fstate, uid):
                self._record("vectorize", [("loop", loop)])
                return
            block = fstate.block_of_loop(uid, "vectorize")
            lp = fstate.loops[uid]
            if block.path[-1] != uid:
                raise ScheduleError(f"vectorize: loop {lp.name} must be the innermost loop of block "
                                    f"{block.name!r}")
            if len(lp.parts[block.name]) != 1:
                raise ScheduleError(f"vectorize: loop {lp.name} fuses several dims; vectorize one dim")
            ext = lp.extent
            if ext is None:
                raise ScheduleError(f"vectorize: loop {lp.name} has a dynamic extent; split it by a constant first")
            size = ext * math.prod(block.inner_tile)
            if size > MAX_VECTOR_ELEMENTS:
                raise ScheduleError(f"vectorize: loop {lp.name} has {size} elements; vectors of more than "
                                    f"{MAX_VECTOR_ELEMENTS} elements are refused (split it first)")
            self._set_kind(loop, "vectorized", "vectorize")
            self._record("vectorize", [("loop", loop)])

    def unroll(self, loop: LoopRV) -> None:
        """Fully unroll ``loop`` (``transform.loop.unroll`` by its trip count).

        Preconditions: a static trip count (no partial tile above it) of at most 256,
        a serial loop.

        Schedule::

            i, j, k = sch.get_loops(sch.get_block("Y"))
            k0, k1 = sch.split(k, factors=[None, 4])
            sch.unroll(k1)

        IR after: the ``k_1`` loop is gone; its body appears 4 times inside ``k_0``.
        """
        with self._edit():
            fstate, uid, lp = self._set_kind(loop, "unrolled", "unroll")
            block = fstate.blocks[fstate.owners(uid)[0]]
            trips = fstate.trip_count(block, block.path.index(uid))
            if trips is None:
                raise ScheduleError(f"unroll: loop {lp.name} has a dynamic trip count (a split factor above it "
                                    "does not divide its extent, or the extent is symbolic)")
            if trips > MAX_UNROLL:
                raise ScheduleError(f"unroll: loop {lp.name} has {trips} iterations; at most {MAX_UNROLL} are "
                                    "unrolled")
            self._record("unroll", [("loop", loop)])

    def bind(self, loop: LoopRV, thread_axis: str) -> None:
        """Bind ``loop`` to a GPU axis (``"blockIdx.x"``, ``"threadIdx.y"``...): an
        ``scf.forall`` with a ``#gpu.block``/``#gpu.thread`` mapping, for the GPU build.

        Preconditions: a spatial loop; a known axis name.
        """
        if thread_axis not in THREAD_AXES:
            raise ScheduleError(f"bind: unknown thread axis {thread_axis!r}; use one of {list(THREAD_AXES)}")
        with self._edit():
            self._set_kind(loop, "bound", "bind", thread_axis)
            self._record("bind", [("loop", loop), ("thread_axis", thread_axis)])


def _infer_factors(vals: list[int | None], extent: int | None, name: str) -> list[int | None]:
    nones = [i for i, v in enumerate(vals) if v is None]
    if len(nones) > 1:
        raise ScheduleError(f"split: at most one factor may be None, got {vals}")
    known = math.prod(v for v in vals if v is not None)
    if extent is None:
        if nones != [0]:
            raise ScheduleError(f"split: loop {name} has a symbolic extent; give every factor but the "
                                f"outermost (which must be None), got {vals}")
        return vals
    if nones:
        vals = list(vals)
        vals[nones[0]] = -(-extent // known)
        return vals
    if known != extent:
        raise ScheduleError(f"split: the product of factors {vals} is {known}, but loop {name} has extent "
                            f"{extent}")
    return vals


def _check_dim_order(fstate, block, path: list[int]) -> None:
    original = {}
    for pos, u in enumerate(block.path):
        original[u] = pos
    for d in range(block.info.ndims):
        seq = [u for u in path if any(dd == d for dd, _ in fstate.loops[u].parts[block.name])]
        if [original[u] for u in seq] != sorted(original[u] for u in seq):
            names = [fstate.loops[u].name for u in seq]
            raise ScheduleError(f"reorder: loops {names} of the same dim would be inner-before-outer; "
                                "this order is not supported")
