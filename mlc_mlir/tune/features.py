"""Features of a candidate for the cost model, read from its schedule without MLIR.

A candidate is described by its loop nest after the schedule (the abstract state the
schedule keeps: every block's loops outermost first, their extents and kinds) and by its
sampling decisions. Computing them costs microseconds and runs nothing that can abort.
"""

from __future__ import annotations

import math
from typing import Any

__all__ = ["candidate_features", "program_flops", "decisions_key"]


def _log(x: float | None) -> float:
    return math.log2(x) if x else 0.0


def candidate_features(sch: Any) -> dict[str, float]:
    """``{name: value}`` features of schedule ``sch`` (a :class:`mlc.Schedule`)."""
    feats: dict[str, float] = {}
    for fname, fstate in sch._funcs.items():
        for bname, block in fstate.blocks.items():
            tag = f"{fname}.{bname}"
            loops = [fstate.loops[uid] for uid in block.path if uid in fstate.loops]
            feats[f"{tag}.n_loops"] = len(loops)
            for pos, loop in enumerate(loops):
                ext = loop.extent
                feats[f"{tag}.l{pos}.log"] = _log(ext)
                feats[f"{tag}.l{pos}.{loop.kind}"] = 1.0
            for kind in ("parallel", "vectorized", "unrolled"):
                exts = [lp.extent or 1 for lp in loops if lp.kind == kind]
                feats[f"{tag}.{kind}.log"] = _log(math.prod(exts)) if exts else 0.0
            if loops:
                feats[f"{tag}.inner.log"] = _log(loops[-1].extent)
            feats[f"{tag}.attached"] = float(len(loops) > 0 and any(len(lp.parts) > 1 for lp in loops))
            feats[f"{tag}.init_level"] = float(block.init_level or 0)
            feats[f"{tag}.cache"] = float(block.cache_scope is not None)
    for i, inst in enumerate(sch._insts):
        if inst.kind == "sample_perfect_tile":
            for j, v in enumerate(inst.decision):
                feats[f"d{i}.{j}"] = _log(v)
        elif inst.kind == "sample_categorical":
            feats[f"d{i}={inst.decision}"] = 1.0
            feats[f"d{i}.v"] = float(inst.arg("_selected"))
    return feats


def decisions_key(trace: Any) -> str:
    """A key identifying a candidate within its space: its instruction kinds and decisions."""
    parts = []
    for inst in trace.instructions:
        if inst.decision is not None:
            parts.append(f"{inst.kind}:{inst.decision}")
    return ";".join(parts) + f"|{len(trace.instructions)}"


def program_flops(sch: Any) -> float:
    """Floating-point operations of one run of the unscheduled program (2 per multiply-add
    of a reduction, 1 per element otherwise)."""
    total = 0.0
    for fstate in sch._funcs.values():
        for block in fstate.blocks.values():
            n = math.prod(e or 1 for e in block.info.extents)
            total += n * (2 if "reduction" in block.info.iters else 1)
    return total
