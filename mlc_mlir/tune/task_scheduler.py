"""The task scheduler (MetaSchedule's task_scheduler/): shares one trial budget among
the tensor programs of a model.

Every task first gets one batch (no task is left untuned); after that each batch goes
to the task with the largest expected saving: its weight (calls per model run) times its
best time times its recent relative gain (plus a floor, so a stalled task can still
win). Tasks whose space is exhausted drop out. Every measured candidate is committed to
the database as it finishes.

At the end (:meth:`TaskScheduler.validate`) the fastest few candidates of each task are
measured again, interleaved: on a shared machine one measurement can read 20% slow (a
load spike, a worker's first run) and misrank the rules' own kernel below a worse one.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from ..ir import Module
from .database import JSONDatabase, TuningRecord
from .measure import MeasureInput
from .progress import Progress, summary_table
from .search_strategy import EvolutionarySearch
from .target import TuneTarget

__all__ = ["TuneTask", "TaskScheduler"]

log = logging.getLogger("mlc_mlir.tune")
GAIN_FLOOR = 0.05
#: the validation after the search: this many fastest distinct candidates per task ...
VALIDATE_TOP = 4
#: ... are measured again this many times each (rounds interleaved: A B C D A B C D)
VALIDATE_ROUNDS = 2


@dataclass
class TuneTask:
    """One tensor program to tune."""

    name: str
    mod: Module
    func: str
    key: str
    flops: float
    search: EvolutionarySearch
    weight: float = 1.0
    trials: int = 0
    failed: int = 0
    rounds: int = 0
    best_secs: float = float("inf")
    first_secs: float = float("inf")
    history: list[float] = field(default_factory=list)

    def add(self, secs: float) -> None:
        self.trials += 1
        if secs == float("inf"):
            self.failed += 1
        elif self.first_secs == float("inf"):
            self.first_secs = secs
        self.best_secs = min(self.best_secs, secs)

    def row(self) -> dict[str, Any]:
        return {"task": self.name, "weight": int(self.weight) if float(self.weight).is_integer() else self.weight,
                "trials": self.trials, "failed": self.failed, "best_secs": self.best_secs,
                "first_secs": self.first_secs, "flops": self.flops}


class TaskScheduler:
    """Run batches of candidates of several tasks within ``max_trials`` trials."""

    def __init__(self, tasks: list[TuneTask], backend: Any, db: JSONDatabase, target: TuneTarget, *,
                 max_trials: int, num_trials_per_iter: int, measure_opts: dict[str, Any] | None = None,
                 progress: bool = True):
        self.tasks, self.backend, self.db, self.target = tasks, backend, db, target
        self.max_trials, self.per_iter = max_trials, num_trials_per_iter
        self.measure_opts = dict(measure_opts or {})
        self.show = progress

    def _score(self, task: TuneTask) -> float:
        finite = [t.best_secs for t in self.tasks if t.best_secs < float("inf")]
        best = task.best_secs if task.best_secs < float("inf") else max(finite, default=1.0)
        hist = task.history
        gain = 0.0
        if len(hist) >= 2 and hist[-2] < float("inf"):
            gain = max(0.0, (hist[-2] - hist[-1]) / hist[-2])
        elif task.best_secs == float("inf"):
            gain = 1.0 / (1 + task.rounds)
        else:
            gain = 0.5
        return task.weight * best * (gain + GAIN_FLOOR)

    def _pick(self) -> TuneTask | None:
        active = [t for t in self.tasks if not t.search.exhausted]
        if not active:
            return None
        untried = [t for t in active if t.rounds == 0]
        return untried[0] if untried else max(active, key=self._score)

    def _inputs(self, task: TuneTask, cands: list[Any]) -> list[MeasureInput]:
        text = str(task.mod)
        return [MeasureInput(task.key, text, task.func, c.trace.as_json(), self.target.text, index=i,
                             **self.measure_opts) for i, c in enumerate(cands)]

    def run(self) -> None:
        """Tune until the budget is spent or every space is exhausted; log a summary."""
        done = sum(t.trials for t in self.tasks)
        bar = Progress(self.max_trials, min(done, self.max_trials), enabled=self.show)
        try:
            while done < self.max_trials:
                task = self._pick()
                if task is None:
                    bar.stopped(self._exhausted_note())
                    log.info("every search space is exhausted after %d trials (%s)", done, self._exhausted_note())
                    break
                cands = task.search.propose(min(self.per_iter, self.max_trials - done))
                task.rounds += 1
                if not cands:
                    continue
                self._measure(task, cands, bar)
                done += len(cands)
        finally:
            bar.close()
        table = summary_table([t.row() for t in self.tasks])
        if self.show:
            print(table)
        else:
            log.info("tuning summary\n%s", table)

    def _exhausted_note(self) -> str:
        """Why tuning stopped before its budget: ``space exhausted: 5 distinct candidates``."""
        distinct = sum(len(t.search.seen) for t in self.tasks)
        if len(self.tasks) == 1:
            return f"space exhausted: {distinct} distinct candidates"
        return f"every space exhausted: {distinct} distinct candidates in {len(self.tasks)} tasks"

    def validate(self, top: int = VALIDATE_TOP, rounds: int = VALIDATE_ROUNDS) -> None:
        """Measure the ``top`` fastest distinct candidates of each task ``rounds`` more times.

        The new records carry ``extra["stage"] == "validate"`` (not trials: the tuning curve
        and the trial counts skip them); :meth:`JSONDatabase.best` then ranks each candidate
        by the median of its measurements.
        """
        for task in self.tasks:
            recs = self.db.best(task.key, k=top)
            if len(recs) < 2 or rounds < 1:
                continue
            text = str(task.mod)
            for rnd in range(1, rounds + 1):
                inputs = [MeasureInput(task.key, text, task.func, r.trace, self.target.text, index=i,
                                       **self.measure_opts) for i, r in enumerate(recs)]

                def on_result(inp: MeasureInput, res: Any, rnd: int = rnd) -> None:
                    cand = recs[inp.index]
                    self.db.commit(TuningRecord(
                        task.key, task.name, inp.trace, cand.decisions,
                        tuple(res.run_secs) if res.run_secs and not res.error else None, res.error,
                        self.target.text, res.build_secs, {**dict(res.extra), "stage": "validate", "round": rnd}))

                self.backend.measure(inputs, on_result)
            best = self.db.best(task.key)
            if best:
                task.best_secs = self.db.secs(best[0])
            log.info("%s: validated the %d fastest candidates (%d rounds); best %.1f us", task.name, len(recs),
                     rounds, task.best_secs * 1e6)

    def _measure(self, task: TuneTask, cands: list[Any], bar: Progress) -> None:
        secs = [float("inf")] * len(cands)

        def on_result(inp: MeasureInput, res: Any) -> None:
            cand = cands[inp.index]
            record = TuningRecord(task.key, task.name, inp.trace, cand.key,
                                  tuple(res.run_secs) if res.run_secs and not res.error else None,
                                  res.error, self.target.text, res.build_secs, dict(res.extra))
            self.db.commit(record)
            secs[inp.index] = record.mean_secs
            task.add(record.mean_secs)
            if res.error:
                log.info("%s: candidate failed: %s", task.name, res.error)
            gflops = task.flops / task.best_secs / 1e9 if task.best_secs < float("inf") else None
            bar.update(task.name, task.best_secs, gflops)

        self.backend.measure(self._inputs(task, cands), on_result)
        task.search.notify(cands, secs)
        task.history.append(task.best_secs)
