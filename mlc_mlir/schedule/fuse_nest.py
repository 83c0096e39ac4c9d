"""``fuse`` of loops shared by several blocks (after compute_at / reverse_compute_at) and
of interleaved tile loops (``fuse(i_0, j_0, i_1, j_1)``), as MetaSchedule's traces do.

Called by :meth:`~mlc_mlir.schedule.Schedule.fuse` when the loops are shared or their
dims interleave. For every block under the loops, the loops must be consecutive in its
path; per block, loops of extent 1 are dropped (they iterate nothing) and consecutive
loops of one dim merge. A dim that still appears twice, apart, cannot be one tiled loop
and raises :class:`ScheduleError`.

Course ch.4.5 (decisions ``i: [4, 1, 32, 1]``, ``j: [4, 1, 8, 4]``, ``C_global`` attached
at ``j_1``)::

    l40 = sch.fuse(i_0, j_0, i_1, j_1)   # shared by C and C_global -> one loop over (i, j)
    sch.parallel(l40)                    # scf.forall (4, 4) around both blocks
"""

from __future__ import annotations

from ..errors import ScheduleError
from .state import FuncState, Loop

__all__ = ["needs_general_fuse", "fuse_general"]


def _block_parts(fstate: FuncState, block: str, uids: list[int]) -> tuple:
    parts: list[tuple[int, int | None]] = []
    for u in uids:
        for d, e in fstate.loops[u].parts[block]:
            if e == 1:
                continue  # a unit loop iterates nothing
            if parts and parts[-1][0] == d:
                prev = parts[-1][1]
                parts[-1] = (d, None if prev is None or e is None else prev * e)
            elif any(p[0] == d for p in parts):
                names = ", ".join(fstate.loops[x].name for x in uids)
                raise ScheduleError(f"fuse({names}): in block {block!r} dim {d} is iterated by two loops of "
                                    "extent > 1 with another dim between them; such a fused loop cannot be "
                                    "tiled (fuse loops of one dim next to each other, or unit loops)")
            else:
                parts.append((d, e))
    if not parts:  # all unit loops: keep one unit part
        parts.append(fstate.loops[uids[0]].parts[block][0])
    return tuple(parts)


def needs_general_fuse(fstate: FuncState, uids: list[int]) -> bool:
    """Whether ``uids`` are shared by several blocks or iterate interleaved dims."""
    if any(len(fstate.owners(u)) > 1 for u in uids):
        return True
    seen: list[int] = []
    for u in uids:
        for d, _ in next(iter(fstate.loops[u].parts.values())):
            if seen and seen[-1] != d and d in seen:
                return True
            seen.append(d)
    return False


def fuse_general(fstate: FuncState, uids: list[int], new_uid) -> int:
    """Replace loops ``uids`` by one loop in every block under them; returns its uid."""
    owners = fstate.owners(uids[0])
    names = ", ".join(fstate.loops[u].name for u in uids)
    for u in uids[1:]:
        if fstate.owners(u) != owners:
            raise ScheduleError(f"fuse({names}): the loops are not under the same blocks "
                                f"({fstate.loops[uids[0]].name}: {owners}, {fstate.loops[u].name}: {fstate.owners(u)})")
    for u in uids:
        if fstate.loops[u].kind != "serial" or fstate.loops[u].peel is not None:
            raise ScheduleError(f"fuse: loop {fstate.loops[u].name} is already "
                                f"{fstate.loops[u].kind if fstate.loops[u].peel is None else 'peeled'}")
    parts = {}
    for b in owners:
        path = fstate.blocks[b].path
        index = path.index(uids[0])
        if path[index:index + len(uids)] != uids:
            raise ScheduleError(f"fuse({names}): the loops must be consecutive, outermost first, in block {b!r}")
        parts[b] = _block_parts(fstate, b, uids)
    nid = new_uid()
    fstate.loops[nid] = Loop(nid, "_".join(fstate.loops[u].name for u in uids) + "_fused", parts)
    for b in owners:
        path = fstate.blocks[b].path
        index = path.index(uids[0])
        path[index:index + len(uids)] = [nid]
    for u in uids:
        del fstate.loops[u]
    return nid
