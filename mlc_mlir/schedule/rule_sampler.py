"""The schedule rules' choices (:mod:`.rules`): plain values, or sampling instructions.

With ``tunable`` each choice of a rule is recorded as ``sample_perfect_tile`` /
``sample_categorical`` with the rule's pick as its decision; ``decide`` picks the decision
instead, site by site in the order the rules reach them (the auto-tuner's space:
:class:`mlc_mlir.tune.AutoSchedule`); a pick that is not an index of the site's options is
a :class:`~mlc_mlir.errors.ScheduleError` naming the site, the pick and the options.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

from ..errors import ScheduleError
from .sampling import perfect_tilings
from .schedule import Schedule
from .trace import LoopRV

__all__ = ["Decide", "RuleSampler"]

#: ``decide(site, n_options, default_index) -> index``: picks a decision at each sampling
#: site of the rules, in the order they are reached (the tuner's random sampling and
#: mutation); an index in ``range(n_options)``, or None to keep the rule's choice
Decide = Callable[[int, int, int], int | None]


class RuleSampler:
    """The rules' choices: plain values, or (``tunable``) sampling instructions whose
    decision is the rule's default or what ``decide`` picks."""

    def __init__(self, sch: Schedule, tunable: bool, decide: Decide | None):
        self.sch, self.tunable, self.decide, self.site = sch, tunable or decide is not None, decide, 0

    def _pick(self, options: list, default: int, what: str) -> int:
        """The index ``decide`` picks among ``options`` (``default``: the rule's own)."""
        if self.decide is None:
            return default
        site, n = self.site, len(options)
        self.site += 1
        pick = self.decide(site, n, default)
        if pick is None:
            return default
        try:
            index = None if isinstance(pick, bool) else operator.index(pick)
        except TypeError:
            index = None
        if index is None or not 0 <= index < n:
            shown = ", ".join(map(str, options[:16])) + (f", ... ({n} in all)" if n > 16 else "")
            raise ScheduleError(f"apply_rules: decide picked {pick!r} for decision {site} ({what}); valid picks "
                                f"are the indices 0..{n - 1} of [{shown}] (the rule's own pick: {default}), "
                                "or None for the rule's own")
        return index

    def split(self, loop: LoopRV, extent: int | None, inner: int, cap: int) -> tuple[list[LoopRV], int]:
        """Split ``loop`` into (outer, inner) with ``inner`` dividing ``extent``; returns the
        loops and the inner factor taken."""
        if not self.tunable or extent is None:
            return self.sch.split(loop, [None, inner]), inner
        options = [list(o) for o in perfect_tilings(extent, 2, max(cap, inner))]
        choice = options[self._pick(options, options.index([extent // inner, inner]),
                                    f"sample_perfect_tile of loop {loop.name}")]
        factors = self.sch.sample_perfect_tile(loop, 2, max_innermost_factor=max(cap, inner), decision=choice)
        return self.sch.split(loop, factors), choice[1]

    def choose(self, candidates: list[int], default: int) -> Any:
        """One of ``candidates`` (an ExprRV when tunable: usable as a split factor)."""
        if not self.tunable or len(candidates) < 2:
            return default
        i = self._pick(candidates, candidates.index(default), "sample_categorical")
        return self.sch.sample_categorical(candidates, [1.0 / len(candidates)] * len(candidates), decision=i)
