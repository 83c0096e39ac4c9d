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
from ..schedule import Schedule

__all__ = ["SpaceGenerator", "ScheduleFn", "AutoSchedule", "make_space"]


class SpaceGenerator(ABC):
    """Interface: ``generate(mod, seed) -> Schedule`` (raises ScheduleError if invalid)."""

    @abstractmethod
    def generate(self, mod: Module, seed: int) -> Schedule:
        """One candidate schedule of ``mod`` drawn with ``seed``."""


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
    """The auto-scheduling space: ``apply_rules(sch, target, tunable=True)`` over every block."""

    def __init__(self, target: Any = None):
        self.target = target

    def generate(self, mod: Module, seed: int) -> Schedule:
        try:
            from ..schedule.rules import apply_rules
        except ImportError as exc:
            raise TuneError("auto-scheduling (space=None) needs mlc_mlir.schedule.rules, which this build "
                            f"does not have ({exc}); pass space=mlc.tune.ScheduleFn(fn)") from None
        sch = Schedule(mod, seed=seed)
        out = apply_rules(sch, self.target, tunable=True)
        return out if isinstance(out, Schedule) else sch

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


def _name(fn: Any) -> str:
    return getattr(fn, "__qualname__", repr(fn))
