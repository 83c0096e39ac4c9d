"""Search spaces (MetaSchedule's space_generator/): where candidates come from.

A space turns a module and a seed into a schedule whose trace holds sampling decisions.
:class:`ScheduleFn` wraps a user's stochastic schedule (course ch.4); without one, the
auto-scheduling space applies the schedule rules shared with ``graph.build``'s default
schedules (``mlc_mlir.schedule.rules.apply_rules(sch, target, tunable=True)``), every
choice a ``sample_perfect_tile`` / ``sample_categorical`` decision. Generating a candidate
only runs the schedule's Python checks (primitives are applied lazily), so an invalid one
is rejected here, before any build.
"""

from __future__ import annotations

import random
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any

from ..errors import TuneError
from ..ir import Module
from ..schedule import Schedule, Trace
from ..schedule.rules import apply_rules
from ..schedule.trace import SAMPLING_KINDS
from .mutator import mutate_decision

__all__ = ["SpaceGenerator", "ScheduleFn", "AutoSchedule", "make_space"]


class SpaceGenerator(ABC):
    """Interface: ``generate(mod, seed) -> Schedule`` (raises ScheduleError if invalid);
    ``initial(mod)``: candidates to measure first; ``mutate(mod, trace, rng)``: a neighbour."""

    @abstractmethod
    def generate(self, mod: Module, seed: int) -> Schedule:
        """One candidate schedule of ``mod`` drawn with ``seed``."""

    def initial(self, mod: Module) -> list[Schedule]:
        """Candidates the search measures before any random sample (default: none)."""
        return []

    def mutate(self, mod: Module, trace: Trace, rng: random.Random) -> Schedule | None:
        """``trace`` with one sampling decision changed, replayed on ``mod`` (None when the
        trace has no choice); raises ScheduleError when the new decisions do not apply."""
        child = mutate_decision(trace, rng)
        if child is None:
            return None
        sch = Schedule(mod)
        child.replay_into(sch)
        return sch


class ScheduleFn(SpaceGenerator):
    """A space defined by a stochastic schedule function (course ch.4).

    Args:
        fn: ``fn(sch)`` calls primitives, including ``sample_perfect_tile`` /
            ``sample_categorical``, on ``sch``; it returns ``sch``, ``None`` (meaning
            ``sch``), another :class:`Schedule`, or a list of them (one is picked).

    Example::

        def stochastic_schedule_mm(sch):
            block_C = sch.get_block("C", "main")
            i, j, k = sch.get_loops(block=block_C)
            j_0, j_1 = sch.split(loop=j, factors=sch.sample_perfect_tile(loop=j, n=2))
            sch.reorder(i, j_0, k, j_1)
            sch.decompose_reduction(block_C, k)
            return sch

        space = mlc.tune.ScheduleFn(stochastic_schedule_mm)
    """

    def __init__(self, fn: Callable[[Schedule], Any]):
        if not callable(fn):
            raise TuneError(f"ScheduleFn expects a function of a Schedule, got {type(fn).__name__}")
        self.fn = fn

    def generate(self, mod: Module, seed: int) -> Schedule:
        sch = Schedule(mod, seed=seed)
        out = self.fn(sch)
        if out is None:
            return sch
        if isinstance(out, (list, tuple)):
            if not out:
                raise TuneError(f"ScheduleFn {_name(self.fn)} returned an empty list")
            out = random.Random(seed).choice(list(out))
        if not isinstance(out, Schedule):
            raise TuneError(f"ScheduleFn {_name(self.fn)} returned {type(out).__name__}, not a Schedule")
        return out

    def __repr__(self) -> str:
        return f"ScheduleFn({_name(self.fn)})"


class AutoSchedule(SpaceGenerator):
    """The auto-scheduling space: the schedule rules of ``graph.build`` over every block
    (``apply_rules(sch, target, decide=...)``), each choice a sampling decision.

    The space: per contraction, the register tile's columns (vector multiples dividing the
    extent, up to :meth:`Target.register_tile`) and rows (1 up to the register tile's, the
    remainder peeled so every tile is full), parallel or not (rows split per core), where
    the elementwise consumers are computed (register tile or row panel); for large ones the
    rows per cache block, k's block and the local copy of B's panel; per elementwise block
    the vector width and parallel; ``x @ w.T`` (both operands contiguous along k) in lane
    partial sums (``rfactor``) over a sampled mr x nr tile of accumulator vectors. The
    accumulator stays in registers across k (vector loop-carried values after the build's
    vector-opt stage).

    Candidates: the rules' own decisions first (:meth:`initial`); random samples keep each
    of the rules' decisions with probability ``keep``; a mutant changes one decision and
    re-runs the rules with the others (so the structure follows the decisions).
    """

    def __init__(self, target: Any = None, keep: float = 0.5):
        self.target = target
        self.keep = keep

    def _rules(self, mod: Module, decide: Any) -> Schedule:
        try:
            pass
        except ImportError as exc:
            raise TuneError("auto-scheduling (space=None) needs mlc_mlir.schedule.rules, which this build "
                            f"does not have ({exc}); pass space=mlc.tune.ScheduleFn(fn)") from None
        sch = Schedule(mod)
        out = apply_rules(sch, self.target, tunable=True, decide=decide)
        return out if isinstance(out, Schedule) else sch

    def generate(self, mod: Module, seed: int) -> Schedule:
        rng = random.Random(seed)
        return self._rules(mod, lambda d: d.default if rng.random() < self.keep else rng.randrange(len(d.options)))

    def initial(self, mod: Module) -> list[Schedule]:
        return [self._rules(mod, None)]

    def mutate(self, mod: Module, trace: Trace, rng: random.Random) -> Schedule | None:
        """One of the rules' decisions changed, the rules re-run with the others kept by name
        (a decision is its label, ``"Y.rows"``, and its place among the decisions so
        labelled): a decision the change removes is dropped, one it adds takes the rule's
        own pick. A trace whose sampling instructions have no labels (recorded before the
        decisions had names) is mutated as any trace is (one decision changed, replayed)."""
        named = _named_picks(trace)
        if named is None:
            return super().mutate(mod, trace, rng)
        sites = [key for key, (_, n) in named.items() if n > 1]
        if not sites:
            return None
        site = rng.choice(sites)
        pick, n = named[site]
        new = rng.choice([i for i in range(n) if i != pick])
        seen: dict[str, int] = {}

        def decide(d: Any) -> int | None:
            key = (d.label, seen.get(d.label, 0))
            seen[d.label] = key[1] + 1
            if key == site:
                return new if new < len(d.options) else None
            old = named.get(key, (None, 0))[0]
            return old if old is not None and old < len(d.options) else None
        return self._rules(mod, decide)

    def __repr__(self) -> str:
        return f"AutoSchedule(target={self.target!r})"


def make_space(space: Any, target: Any) -> SpaceGenerator:
    """``None`` -> :class:`AutoSchedule`; a SpaceGenerator as is; a plain function -> ScheduleFn."""
    if space is None:
        return AutoSchedule(target)
    if isinstance(space, SpaceGenerator):
        return space
    if callable(space):
        return ScheduleFn(space)
    raise TuneError(f"space must be None, a ScheduleFn or a function of a Schedule, got {type(space).__name__}")


def _named_picks(trace: Trace) -> dict[tuple[str, int], tuple[int | None, int]] | None:
    """``{(label, k): (index of the decision, number of options)}`` of the trace's sampling
    instructions (``k``: the k-th with that label); None when one has no label."""
    named: dict[tuple[str, int], tuple[int | None, int]] = {}
    counts: dict[str, int] = {}
    for inst in trace.instructions:
        if inst.kind not in SAMPLING_KINDS:
            continue
        label = inst.arg("label")
        if label is None:
            return None
        counts[label] = counts.get(label, 0) + 1
        named[(label, counts[label] - 1)] = (_index(inst), len(inst.arg("_options") or ()))
    return named


def _index(inst: Any) -> int | None:
    """The index of a sampling instruction's decision among its options."""
    if inst.kind == "sample_categorical":
        return inst.decision
    options = [list(o) for o in inst.arg("_options") or ()]
    return options.index(list(inst.decision)) if list(inst.decision) in options else None


def _name(fn: Any) -> str:
    return getattr(fn, "__qualname__", repr(fn))
