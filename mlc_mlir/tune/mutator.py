"""Mutators (MetaSchedule's mutator/): a new candidate from a measured one by changing one
sampling decision to another of its options; the trace is then replayed (lazily, no MLIR)
and rejected if a later instruction no longer applies."""

from __future__ import annotations

import random

from ..schedule import Trace

__all__ = ["mutate_decision"]


def mutate_decision(trace: Trace, rng: random.Random) -> Trace | None:
    """``trace`` with one random sampling decision changed (None if there is no choice)."""
    choices = []
    for i, inst in enumerate(trace.instructions):
        options = inst.arg("_options")
        if inst.kind == "sample_perfect_tile" and options and len(options) > 1:
            choices.append((i, [list(o) for o in options if list(o) != list(inst.decision)]))
        elif inst.kind == "sample_categorical" and options and len(options) > 1:
            choices.append((i, [k for k in range(len(options)) if k != inst.decision]))
    if not choices:
        return None
    index, others = rng.choice(choices)
    return trace.with_decisions({index: rng.choice(others)})
