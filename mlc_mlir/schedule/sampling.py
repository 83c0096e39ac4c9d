"""Sampling primitives (course ch.4): random choices recorded with their decisions.

A decision is printed in the trace (``decision=[32, 4]``), emitted as a
``transform.tune.knob`` with its ``selected`` value, and replayed (or replaced) by
``trace.apply`` / ``trace.with_decisions``. A ``label`` names what the decision is for
(the default rules label theirs ``"<block>.<decision>"``, e.g. ``label="Y.rows"``); it is
printed, stored in the trace's JSON and replayed with it, and changes nothing else.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from ..errors import ScheduleError
from .trace import ExprRV, LoopRV

__all__ = ["SamplingPrimitives", "perfect_tilings"]

DEFAULT_MAX_INNERMOST = 16


def perfect_tilings(extent: int, n: int, max_innermost_factor: int) -> list[tuple[int, ...]]:
    """Every ``n``-tuple of positive ints whose product is ``extent`` and whose last
    element is at most ``max_innermost_factor``, in lexicographic order."""
    divisors = [d for d in range(1, extent + 1) if extent % d == 0]

    def rec(rest: int, k: int) -> list[tuple[int, ...]]:
        if k == 1:
            return [(rest,)] if rest <= max_innermost_factor else []
        return [(d,) + tail for d in divisors if rest % d == 0 for tail in rec(rest // d, k - 1)]

    return rec(extent, n)


class SamplingPrimitives:
    """sample_perfect_tile and sample_categorical."""

    def sample_perfect_tile(self, loop: LoopRV, n: int, max_innermost_factor: int | None = None,
                            decision: Sequence[int] | None = None, *, label: str | None = None) -> list[ExprRV]:
        """Sample ``n`` factors whose product is exactly ``loop``'s extent (innermost at most
        ``max_innermost_factor``, default 16 as in TVM).

        Example (course ch.4 ``stochastic_schedule_mm``)::

            i, j, k = sch.get_loops(sch.get_block("C", "main"))
            j_factors = sch.sample_perfect_tile(loop=j, n=2)
            j_0, j_1 = sch.split(loop=j, factors=j_factors)
            print(sch.trace)
            # v4, v5 = sch.sample_perfect_tile(loop=l2, n=2, max_innermost_factor=16, decision=[32, 4])

        ``label`` names the decision in the trace (``label="Y.cols"``).

        Raises:
            ScheduleError: a dynamic extent, ``n < 1``, no tiling within
                ``max_innermost_factor``, a ``decision`` that is not a valid tiling, or a
                ``label`` that is not a str.
        """
        _check_label(label, "sample_perfect_tile")
        limit = DEFAULT_MAX_INNERMOST if max_innermost_factor is None else max_innermost_factor
        if not isinstance(n, int) or n < 1:
            raise ScheduleError(f"sample_perfect_tile: n must be a positive int, got {n!r}")
        if not isinstance(limit, int) or limit < 1:
            raise ScheduleError(f"sample_perfect_tile: max_innermost_factor must be a positive int, got {limit!r}")
        fstate, uid = self._resolve_loop(loop, "sample_perfect_tile")
        extent = fstate.loops[uid].extent
        if extent is None:
            raise ScheduleError(f"sample_perfect_tile: loop {loop.name} has a dynamic extent")
        options = perfect_tilings(extent, n, limit)
        if not options:
            raise ScheduleError(f"sample_perfect_tile: no tiling of loop {loop.name} (extent {extent}) into {n} "
                                f"factors has an innermost factor <= max_innermost_factor={limit}")
        if decision is None:
            choice = self._rng.choice(options)
        else:
            choice = tuple(int(v) for v in decision)
            if choice not in options:
                raise ScheduleError(f"sample_perfect_tile: decision {list(decision)} is not a tiling of extent "
                                    f"{extent} into {n} factors with innermost <= {limit}")
        rvs = [ExprRV(v) for v in choice]
        with self._edit(changes_ir=False):
            self._record("sample_perfect_tile",
                         [("loop", loop), ("n", n), ("max_innermost_factor", limit), *_label_arg(label),
                          ("_options", tuple(list(o) for o in options)), ("_selected", list(choice))],
                         tuple(rvs), list(choice))
        return rvs

    def sample_categorical(self, candidates: Sequence[int], probs: Sequence[float],
                           decision: int | None = None, *, label: str | None = None) -> ExprRV:
        """Sample one of ``candidates`` with probabilities ``probs``; the decision is the
        chosen index (``decision=1`` picks ``candidates[1]``); ``label`` names the decision
        in the trace (``label="Y.rows"``).

        Raises:
            ScheduleError: lengths differ, probabilities are negative or do not sum to 1,
                the decision is out of range, or ``label`` is not a str.
        """
        _check_label(label, "sample_categorical")
        cands, ps = list(candidates), [float(p) for p in probs]
        if not cands or len(cands) != len(ps):
            raise ScheduleError(f"sample_categorical: {len(cands)} candidates but {len(ps)} probabilities")
        if any(p < 0 for p in ps) or not math.isclose(sum(ps), 1.0, rel_tol=1e-6):
            raise ScheduleError(f"sample_categorical: probabilities must be >= 0 and sum to 1, got {ps}")
        if not all(isinstance(c, int) and not isinstance(c, bool) for c in cands):
            raise ScheduleError(f"sample_categorical: candidates must be ints, got {cands}")
        if decision is None:
            index = self._rng.choices(range(len(cands)), weights=ps)[0]
        else:
            if not isinstance(decision, int) or not 0 <= decision < len(cands):
                raise ScheduleError(f"sample_categorical: decision must be an index in [0, {len(cands)}), "
                                    f"got {decision!r}")
            index = decision
        rv = ExprRV(cands[index])
        with self._edit(changes_ir=False):
            self._record("sample_categorical",
                         [("candidates", cands), ("probs", ps), *_label_arg(label), ("_options", tuple(cands)),
                          ("_selected", cands[index])], (rv,), index)
        return rv


def _check_label(label: object, what: str) -> None:
    if label is not None and not isinstance(label, str):
        raise ScheduleError(f"{what}: label must be a str or None, got {label!r}")


def _label_arg(label: str | None) -> list[tuple[str, str]]:
    """The ``label`` argument as recorded: absent when None (unlabelled traces keep their form)."""
    return [] if label is None else [("label", label)]
