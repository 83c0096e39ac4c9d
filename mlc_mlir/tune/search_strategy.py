"""Search strategies (MetaSchedule's search_strategy/): which candidates to measure next.

:class:`EvolutionarySearch` samples the space at random until the cost model has data,
then breeds: mutants of the fastest measured traces (:mod:`.mutator`), evolved for a few
rounds by the cost model's score, mixed with fresh random samples (epsilon-greedy).
A candidate is proposed once: its decisions key is remembered, measured or not.
"""

from __future__ import annotations

import logging
import random
from dataclasses import dataclass
from typing import Any

from ..errors import MlcError
from ..ir import Module
from ..schedule import Schedule, Trace
from .cost_model import CostModel, GBStumpModel
from .features import candidate_features, decisions_key
from .space_generator import SpaceGenerator

__all__ = ["Candidate", "EvolutionarySearch"]

log = logging.getLogger("mlc_mlir.tune")


@dataclass
class Candidate:
    """A schedule not yet measured: its trace, decisions key and features."""

    trace: Trace
    key: str
    features: dict[str, float]


class EvolutionarySearch:
    """Random sampling, then cost-model-guided evolution over sampling decisions.

    Args:
        space: the space generator; mod: the task's module.
        cost_model: default :class:`GBStumpModel`.
        eps_greedy: fraction of each batch taken from random samples.
        genetic_rounds / mutants_per_round / parents: the evolution's size.
    """

    def __init__(self, space: SpaceGenerator, mod: Module, *, seed: int | None = None,
                 cost_model: CostModel | None = None, eps_greedy: float = 0.25, genetic_rounds: int = 3,
                 mutants_per_round: int = 48, parents: int = 8):
        self.space, self.mod = space, mod
        self.rng = random.Random(seed)
        self.model = cost_model if cost_model is not None else GBStumpModel()
        self.eps, self.rounds, self.mutants, self.parents = eps_greedy, genetic_rounds, mutants_per_round, parents
        self.seen: set[str] = set()
        self.measured: list[tuple[Candidate, float]] = []
        self.rejected = 0
        self.started = False
        self.exhausted = False
        self.last_error: str | None = None

    # -- candidates ----------------------------------------------------------------------
    def _candidate(self, sch: Schedule) -> Candidate:
        trace = sch.trace
        return Candidate(Trace(trace.instructions, self.mod), decisions_key(trace), candidate_features(sch))

    def _sample(self) -> Candidate | None:
        try:
            return self._candidate(self.space.generate(self.mod, self.rng.randrange(2 ** 31)))
        except MlcError as exc:  # an invalid candidate: rejected before any build
            self.rejected += 1
            self.last_error = str(exc)
            return None

    def _replay(self, trace: Trace) -> Candidate | None:
        sch = Schedule(self.mod)
        try:
            trace.replay_into(sch)
        except MlcError as exc:
            self.rejected += 1
            self.last_error = str(exc)
            return None
        return self._candidate(sch)

    def _mutant(self, parent: Trace) -> Candidate | None:
        """A neighbour of ``parent`` from the space (one decision changed), or None if invalid."""
        try:
            sch = self.space.mutate(self.mod, parent, self.rng)
        except MlcError as exc:
            self.rejected += 1
            self.last_error = str(exc)
            return None
        return self._candidate(sch) if sch is not None else None

    def _initial(self, taken: set[str]) -> list[Candidate]:
        """The space's first candidates (the rules' own decisions), once."""
        if self.started:
            return []
        self.started = True
        try:
            out = [self._candidate(sch) for sch in self.space.initial(self.mod)]
        except MlcError as exc:
            self.rejected += 1
            self.last_error = str(exc)
            return []
        out = [c for c in out if c.key not in self.seen and c.key not in taken]
        taken.update(c.key for c in out)
        return out

    def _random(self, n: int, taken: set[str]) -> list[Candidate]:
        out: list[Candidate] = []
        misses = 0
        while len(out) < n and misses < max(32, 8 * n):
            cand = self._sample()
            if cand is None or cand.key in self.seen or cand.key in taken:
                misses += 1
                continue
            taken.add(cand.key)
            out.append(cand)
        return out

    def _evolve(self, n: int, taken: set[str], extra: list[Candidate] = ()) -> list[Candidate]:
        ok = sorted((m for m in self.measured if m[1] < float("inf")), key=lambda m: m[1])
        parents = [c.trace for c, _ in ok[:self.parents]] + [c.trace for c in extra]
        if not parents:
            parents = [c.trace for c, _ in self.measured[-self.parents:]]
        if not parents:
            return []
        pool: list[Candidate] = []
        for _ in range(self.rounds):
            children = []
            for _ in range(self.mutants):
                cand = self._mutant(self.rng.choice(parents))
                if cand is not None and cand.key not in self.seen and cand.key not in taken:
                    taken.add(cand.key)
                    children.append(cand)
            if not children:
                break
            pool.extend(children)
            scores = self.model.predict([c.features for c in children])
            best = sorted(zip(scores, range(len(children))), reverse=True)[:self.parents]
            parents = parents[:self.parents // 2] + [children[i].trace for _, i in best]
        scores = self.model.predict([c.features for c in pool])
        return [pool[i] for _, i in sorted(zip(scores, range(len(pool))), key=lambda p: -p[0])][:n]

    def propose(self, n: int) -> list[Candidate]:
        """Up to ``n`` new candidates (fewer when the space is exhausted)."""
        taken: set[str] = set()
        if not self.model.trained:
            batch = self._initial(taken)[:n]
            batch += self._random(n - len(batch), taken)
        else:
            n_rand = max(1, int(round(self.eps * n))) if n > 1 else 0
            batch = self._evolve(n - n_rand, taken)
            batch += self._random(n - len(batch), taken)
        if len(batch) < n:  # a space whose sampling repeats itself (rules' default decisions): mutate
            batch += self._evolve(n - len(batch), taken, batch)
        if not batch:
            self.exhausted = True
            log.info("space exhausted after %d candidates (%d rejected; last error: %s)",
                     len(self.seen), self.rejected, self.last_error)
        self.seen.update(c.key for c in batch)
        return batch

    # -- feedback ------------------------------------------------------------------------
    def notify(self, cands: list[Candidate], secs: list[float]) -> None:
        """Record measured times (``inf`` for failures) and refit the cost model."""
        for cand, s in zip(cands, secs):
            self.seen.add(cand.key)
            self.measured.append((cand, s))
        self.model.update([c.features for c, _ in self.measured], [s for _, s in self.measured])

    def resume(self, traces: list[tuple[dict[str, Any], float]]) -> None:
        """Load earlier measurements (a resumed run): replay each trace for its features."""
        cands, secs = [], []
        for obj, s in traces:
            try:
                cand = self._replay(Trace.from_json(obj, self.mod))
            except MlcError:
                cand = None
            if cand is not None:
                cands.append(cand)
                secs.append(s)
        self.notify(cands, secs)
