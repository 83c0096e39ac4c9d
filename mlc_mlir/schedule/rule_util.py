"""Helpers the default schedule rules share (:mod:`.rules`, :mod:`.rule_blocked`): what a
contraction block is, the register tile's caps, divisors, the rows of a register tile."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..errors import ScheduleError
from ..target import Target
from .payload import BlockInfo
from .rule_sampler import RuleSampler
from .schedule import Schedule
from .trace import LoopRV

__all__ = ["_Contraction", "register_tile_for", "_plain", "_contraction", "_largest_divisor", "_try", "_macs",
           "_register_rows", "_sample_rows", "_column_tile", "_par_options", "_divisors"]


@dataclass(frozen=True)
class _Contraction:
    """What the contraction rule needs to know about a block."""

    i: int | None        # iteration dim of the second-to-last output dim
    j: int               # iteration dim of the last output dim
    batch: tuple[int, ...]
    reduce: tuple[int, ...]
    contiguous: bool     # j is the last index of every input operand that reads it


def register_tile_for(info: BlockInfo, target: Target) -> tuple[int, int]:
    """The (rows, columns) register-tile caps of a contraction block on ``target``."""
    kind = _contraction(info)
    dtype = info.element_type
    lanes = target.vector_lanes(dtype)
    if kind is None or kind.contiguous:
        return target.register_tile(dtype)
    return target.vector_registers // 2, lanes


def _plain(info: BlockInfo) -> bool:
    """Every operand indexed by plain iteration dims (no reshape arithmetic); an input dim
    of size 1 may be indexed by a constant (a broadcast scalar)."""
    return all(d is not None or (o < info.n_inputs and info.shapes[o][r] == 1)
               for o, m in enumerate(info.maps) for r, d in enumerate(m))


def _contraction(info: BlockInfo) -> _Contraction | None:
    out = info.maps[-1]
    if not _plain(info) or not any(info.is_reduction(d) for d in range(info.ndims)) or not out or None in out:
        return None
    j = out[-1]
    if info.is_reduction(j) or info.extents[j] is None:
        return None
    i = out[-2] if len(out) >= 2 else None
    reduce = tuple(d for d in range(info.ndims) if info.is_reduction(d))
    batch = tuple(d for d in out[:-2] if d is not None)
    readers = [m for m in info.maps[:info.n_inputs] if j in m]
    contiguous = all(m[-1] == j for m in readers)
    return _Contraction(i, j, batch, reduce, contiguous)


def _largest_divisor(extent: int | None, cap: int) -> int:
    if extent is None:
        return 1
    return max(d for d in range(1, min(extent, max(cap, 1)) + 1) if extent % d == 0)


def _try(fn, *args) -> bool:
    try:
        fn(*args)
        return True
    except ScheduleError:
        return False


def _macs(info: BlockInfo) -> int:
    n = 1
    for e in info.extents:
        n *= e if e is not None else 64
    return n


def _register_rows(sm: RuleSampler, sch: Schedule, loop: LoopRV, extent: int, cap: int, *,
                   divide: bool = False) -> tuple[list[LoopRV], int]:
    """Split ``loop`` by the register tile's rows ``mr`` (the target's, or sampled; with
    ``divide`` the largest divisor of ``extent`` by default), the remainder peeled when
    ``mr`` does not divide ``extent``: every tile of the main loop is full."""
    mr = _sample_rows(sm, extent, cap, divide=divide)
    loops = sch.split(loop, [None, mr])
    return loops, int(mr)


def _sample_rows(sm: RuleSampler, extent: int, cap: int, *, divide: bool = False) -> Any:
    """The register tile's rows ``mr`` (1 up to ``cap``; by default the target's, or with
    ``divide`` the largest divisor of ``extent``): an ExprRV when sampled."""
    default = _largest_divisor(extent, cap) if divide else min(cap, extent)
    return sm.choose(list(range(1, min(cap, extent) + 1)), default)


def _column_tile(extent: int | None, cap: int, lanes: int) -> int:
    """The register tile's columns: the largest divisor of ``extent`` up to ``cap`` that is
    whole vectors, else the largest divisor up to one vector. A tile wider than a vector
    that is not whole vectors lowers badly: the course MLP's last layer (64 x 10 outputs,
    k 128) ran 25 us as one ``vector<10xf32>`` per row, 6.5 us in tiles of 5 columns."""
    if extent is None:
        return 1
    whole = [d for d in range(lanes, min(extent, cap) + 1, lanes) if extent % d == 0]
    return whole[-1] if whole else _largest_divisor(extent, lanes)


def _par_options(tgt: Target) -> list[int]:
    """Parallel or not: a decision only where the target has several cores (one core: no
    decision, so that the tuner spends no trial on a one-thread parallel loop)."""
    return [0, 1] if tgt.num_cores > 1 else [0]


def _divisors(extent: int | None, cap: int) -> list[int]:
    return [d for d in range(1, min(extent or 1, max(cap, 1)) + 1) if (extent or 1) % d == 0]
