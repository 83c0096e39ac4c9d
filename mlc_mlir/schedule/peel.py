"""``peel``: full tiles only. A loop whose step does not divide its extent runs over its
full tiles; a copy of its body after it computes the last, partial tile.

A mixin of :class:`~mlc_mlir.schedule.Schedule`. Emission: ``transform.loop.peel`` on the
loop once the nest is tiled and vectorized (:mod:`.emit`); loops inside it are then
unrolled in each copy by that copy's own static trip count. With every tile of the main
loop full, a register tile can take the size that fills the register file (6 x 16 f32 on
AVX2) where the extent is not a multiple of it (128 rows = 21 x 6 + 2): the main loop's
tiles have static shapes, their rows unroll, their accumulators stay in registers.
"""

from __future__ import annotations

from ..errors import ScheduleError
from .state import FuncState
from .trace import LoopRV

__all__ = ["PeelPrimitives", "share_peel"]


class PeelPrimitives:
    """peel."""

    def peel(self, loop: LoopRV) -> None:
        """Split off the last, partial tile of ``loop``: the loop runs over full tiles, a
        copy of its body after it computes the remainder (upstream ``transform.loop.peel``).

        Preconditions: ``loop`` is a serial loop of one block (peel before compute_at /
        reverse_compute_at, like split), emitted as a loop (a loop inside the linalg op has
        nothing to peel: split it first), and no other peeled loop of the block iterates the
        same dim (rows and columns may both be peeled: four copies). When the
        step divides the extent there is no partial tile: the peel changes nothing (so a
        tuner may keep it in a trace whose decisions change). Loops inside ``loop`` have
        static trip counts again (``unroll`` them after the peel).

        IR before (``Y``'s ``i`` split by 6, ``128 = 21 * 6 + 2``: the last tile is partial,
        so the unrolled rows and the tile shape depend on ``affine.min``)::

            scf.for %i0 = %c0 to %c128 step %c6 {
              %m = affine.min affine_map<(d0) -> (-d0 + 128, 6)>(%i0)
              scf.for %j0 ... { scf.for %k ... { scf.for %i1 = %c0 to %m step %c1 { ... } } }
            } {mlc.loop = "i_0"}

        Schedule::

            i0, i1 = sch.split(i, factors=[None, 6])
            j0, j1 = sch.split(j, factors=[None, 16])
            sch.reorder(i0, j0, k, i1, j1)
            sch.peel(i0)
            sch.vectorize(j1)
            sch.unroll(i1)

        IR after (21 full 6-row tiles, then the 2-row remainder, each unrolled)::

            scf.for %i0 = %c0 to %c126 step %c6 {
              scf.for %j0 ... { scf.for %k ... { (6 rows of vector<1x16xf32>) } }
            } {mlc.loop = "i_0"}
            scf.for %j0 ... { scf.for %k ... { (2 rows of vector<1x16xf32>) } }
        """
        fstate, uid = self._resolve_loop(loop, "peel")
        with self._edit():
            block = fstate.block_of_loop(uid, "peel")
            lp = fstate.loops[uid]
            if lp.kind != "serial" or lp.peel is not None:
                raise ScheduleError(f"peel: loop {lp.name} is already {'peeled' if lp.peel else lp.kind}; only a "
                                    "serial loop can be peeled")
            index = block.path.index(uid)
            rem: dict[int, int | None] = {}
            for d, _ in lp.parts[block.name]:
                ext, exact = fstate.tile_extent(block, index, d)
                step = fstate.step(block, index, d)
                rem[d] = ext % step if ext is not None and step is not None and exact else None
            lp.peel = {block.name: rem}
            if index >= len(block.path) - fstate.implicit_suffix(block):  # pragma: no cover - peel stops the suffix
                raise ScheduleError(f"peel: loop {lp.name} stays inside the op; split it first")
            self._record("peel", [("loop", loop)])


def share_peel(fstate: FuncState, prefix: list[int], src: str, dst: str, dim_map: dict[int, int]) -> None:
    """After ``dst`` is attached under loops ``prefix`` of ``src`` (compute_at /
    reverse_compute_at): the peeled ones among them peel ``dst``'s mapped dims too, and
    those with a partial last iteration (``Loop.tail``) have it for ``dst`` too."""
    for uid in prefix:
        lp = fstate.loops[uid]
        for field in ("peel", "tail"):
            per = getattr(lp, field)
            if per is not None and src in per:
                per[dst] = {dim_map[d]: r for d, r in per[src].items() if d in dim_map}
