"""The schedule rules' decisions (:mod:`.rules`): plain values, or named sampling instructions.

Every choice a rule makes is a named decision of the block it schedules (``rows``,
``cols``, ``parallel``, ...: the table in :func:`.rules.apply_rules`). With ``tunable``
each is recorded as ``sample_perfect_tile`` / ``sample_categorical`` labelled
``"<block>.<name>"`` (``label="Y.rows"`` in the trace and in the tuning database's
records), the rule's pick as its decision. ``decide`` picks instead:

* a function ``decide(decision: Decision) -> int | None``: an index into
  ``decision.options``, or None for the rule's own pick (the auto-tuner's random samples
  and mutants, :class:`mlc_mlir.tune.AutoSchedule`);
* a mapping ``{key: value}``: ``value`` one of the decision's options (``{"rows": 4}``,
  ``{"Y.cols": 8, "Y.parallel": 0}``), ``key`` a decision's name (every block),
  ``"<block>.<name>"`` or ``"<func>/<block>.<name>"`` (the most specific key wins); a
  key no decision matches is an error once the rules are done.

A pick that is not one of the options is a :class:`~mlc_mlir.errors.ScheduleError`
naming the decision, the pick and the options.
"""

from __future__ import annotations

import contextlib
import operator
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import ScheduleError
from .sampling import perfect_tilings
from .schedule import Schedule
from .trace import LoopRV

__all__ = ["Decision", "Decide", "RuleSampler"]


@dataclass(frozen=True)
class Decision:
    """One decision of the rules, as ``decide`` sees it.

    Attributes:
        name: what is decided (``"rows"``, ``"cols"``, ``"parallel"``, ...).
        block: the block the rule schedules (``"Y"``).
        func: its tensor program (``"mm_relu"``).
        options: the values the rule may take (ints; for a split, the inner factor).
        default: the index of the rule's own pick in ``options``.
        site: how many decisions the rules reached before this one.
        kind: ``"sample_categorical"`` or ``"sample_perfect_tile"`` (how it is recorded).
    """

    name: str
    block: str
    func: str
    options: tuple[int, ...]
    default: int
    site: int
    kind: str

    @property
    def label(self) -> str:
        """``"<block>.<name>"``: the label of its sampling instruction in the trace."""
        return f"{self.block}.{self.name}"

    def keys(self) -> tuple[str, str, str]:
        """The keys a ``decide`` mapping may give it by, most specific first."""
        return f"{self.func}/{self.label}", self.label, self.name


#: ``decide(decision) -> index | None``, or ``{key: option value}`` (see the module's doc)
Decide = Callable[[Decision], Any] | Mapping[str, Any]


class RuleSampler:
    """The rules' choices: plain values, or (``tunable``) named sampling instructions
    whose decision is the rule's pick or what ``decide`` picks.

    A rule calls :meth:`choose` / :meth:`split` inside ``with sampler.block(func, name):``,
    which names the block its decisions belong to.
    """

    def __init__(self, sch: Schedule, tunable: bool, decide: Decide | None):
        if decide is not None and not callable(decide) and not isinstance(decide, Mapping):
            raise ScheduleError(f"apply_rules: decide must be a function of a Decision or a mapping "
                                f"{{name: option}}, got {type(decide).__name__}")
        self.sch, self.tunable, self.decide = sch, tunable or decide is not None, decide
        self.site, self.func, self.block_name = 0, "", ""
        self.reached: list[Decision] = []

    @contextlib.contextmanager
    def block(self, func: str, name: str) -> Iterator[RuleSampler]:
        """Name the block (of function ``func``) the decisions made inside belong to."""
        outer = self.func, self.block_name
        self.func, self.block_name = func, name
        try:
            yield self
        finally:
            self.func, self.block_name = outer

    def check_mapping_used(self) -> None:
        """Raise if a key of a ``decide`` mapping matched no decision the rules reached."""
        if not isinstance(self.decide, Mapping):
            return
        known = {key for d in self.reached for key in d.keys()}
        unused = sorted(str(k) for k in self.decide if k not in known)
        if unused:
            raise ScheduleError(f"apply_rules: decide names {unused}, which no decision of the rules matches; the "
                                f"decisions reached are {[d.label for d in self.reached] or 'none'}")

    def _pick(self, name: str, options: list[int], default: int, kind: str, what: str) -> int:
        """The index picked among ``options`` (``default``: the rule's own) for decision ``name``."""
        decision = Decision(name, self.block_name, self.func, tuple(options), default, self.site, kind)
        self.site += 1
        self.reached.append(decision)
        if self.decide is None:
            return default
        if isinstance(self.decide, Mapping):
            return _pick_value(self.decide, decision, what)
        pick = self.decide(decision)
        if pick is None:
            return default
        try:
            index = None if isinstance(pick, bool) else operator.index(pick)
        except TypeError:
            index = None
        if index is None or not 0 <= index < len(options):
            raise ScheduleError(f"apply_rules: decide picked {pick!r} for decision {decision.label} (site "
                                f"{decision.site}, {what}); valid picks are the indices 0..{len(options) - 1} of "
                                f"[{_shown(options)}] (the rule's own pick: {default}), or None for the rule's own")
        return index

    def split(self, name: str, loop: LoopRV, extent: int | None, inner: int, cap: int) -> tuple[list[LoopRV], int]:
        """Split ``loop`` into (outer, inner) with ``inner`` dividing ``extent`` (decision
        ``name``, its options the inner factors); returns the loops and the inner factor."""
        if not self.tunable or extent is None:
            return self.sch.split(loop, [None, inner]), inner
        tilings = [list(o) for o in perfect_tilings(extent, 2, max(cap, inner))]
        index = self._pick(name, [t[1] for t in tilings], tilings.index([extent // inner, inner]),
                           "sample_perfect_tile", f"sample_perfect_tile of loop {loop.name}")
        choice = tilings[index]
        factors = self.sch.sample_perfect_tile(loop, 2, max_innermost_factor=max(cap, inner), decision=choice,
                                               label=f"{self.block_name}.{name}")
        return self.sch.split(loop, factors), choice[1]

    def choose(self, name: str, candidates: list[int], default: int) -> Any:
        """Decision ``name``: one of ``candidates`` (an ExprRV when tunable: usable as a split
        factor); no decision when there is one candidate."""
        if not self.tunable or len(candidates) < 2:
            return default
        i = self._pick(name, candidates, candidates.index(default), "sample_categorical", "sample_categorical")
        return self.sch.sample_categorical(candidates, [1.0 / len(candidates)] * len(candidates), decision=i,
                                           label=f"{self.block_name}.{name}")


def _pick_value(picks: Mapping[str, Any], decision: Decision, what: str) -> int:
    """The index of the option a ``decide`` mapping gives ``decision`` (its own when none)."""
    key = next((k for k in decision.keys() if k in picks), None)
    if key is None:
        return decision.default
    value = picks[key]
    if isinstance(value, bool) or value not in decision.options:
        raise ScheduleError(f"apply_rules: decide gives {value!r} for decision {decision.label} ({what}, key "
                            f"{key!r}); its options are [{_shown(list(decision.options))}] (the rule's own: "
                            f"{decision.options[decision.default]})")
    return decision.options.index(value)


def _shown(options: list) -> str:
    return ", ".join(map(str, options[:16])) + (f", ... ({len(options)} in all)" if len(options) > 16 else "")
