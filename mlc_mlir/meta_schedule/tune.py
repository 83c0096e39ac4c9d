"""``ms.tune_tir`` with TVM 0.9's ``config=ms.TuneConfig(...)`` (course ch.4, one text of it).

The course's older cell::

    sch_tuned = ms.tune_tir(mod=MyModule, target="llvm --num-cores=1",
                            config=ms.TuneConfig(max_trials_global=64, num_trials_per_iter=64),
                            space=ms.space_generator.ScheduleFn(stochastic_schedule_mm),
                            work_dir="./tune_tmp", task_name="main")
    print(sch_tuned.trace)

returns the best schedule, as TVM 0.9 did. Without ``config`` this is
:func:`mlc_mlir.tune.tune_tir` (budget as keywords; returns the database, for
``ms.tir_integration.compile_tir``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, overload

from ..errors import TuneError
from ..ir import Module
from ..schedule import Schedule
from ..tune.tune import compile_tir as _compile_tir
from ..tune.tune import tune_tir as _tune_tir
from ..tune.database import JSONDatabase

__all__ = ["TuneConfig", "tune_tir"]


@dataclass(frozen=True)
class TuneConfig:
    """The tuning budget of TVM 0.9's ``ms.TuneConfig``.

    Args:
        max_trials_global: candidates to measure in all.
        num_trials_per_iter: candidates per batch (the cost model is refit after each).
        max_trials_per_task: at most this many for one task (``None``: no limit).

    Raises:
        TuneError: a budget that is not a positive int.
    """

    max_trials_global: int
    num_trials_per_iter: int = 64
    max_trials_per_task: int | None = None

    def __post_init__(self) -> None:
        for name in ("max_trials_global", "num_trials_per_iter", "max_trials_per_task"):
            value = getattr(self, name)
            if value is None and name == "max_trials_per_task":
                continue
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise TuneError(f"TuneConfig: {name} must be a positive int, got {value!r}")


@overload
def tune_tir(mod: Module, target: Any = ..., max_trials_global: int | None = ...,
             num_trials_per_iter: int | None = ..., space: Any = ..., work_dir: str | os.PathLike = ...,
             task_name: str = ..., seed: int | None = ..., *, config: None = ..., **options: Any) -> JSONDatabase: ...
@overload
def tune_tir(mod: Module, target: Any = ..., max_trials_global: int | None = ...,
             num_trials_per_iter: int | None = ..., space: Any = ..., work_dir: str | os.PathLike = ...,
             task_name: str = ..., seed: int | None = ..., *, config: TuneConfig, **options: Any) -> Schedule: ...
def tune_tir(mod: Module, target: Any = "llvm", max_trials_global: int | None = None,
             num_trials_per_iter: int | None = None, space: Any = None, work_dir: str | os.PathLike = "./tune_tmp",
             task_name: str = "main", seed: int | None = None, *, config: TuneConfig | None = None,
             **options: Any) -> JSONDatabase | Schedule:
    """Tune one tensor program (course: ``ms.tune_tir``).

    Args:
        config: TVM 0.9's budget object; with it the call returns the best
            :class:`~mlc_mlir.schedule.Schedule` (``sch_tuned.trace``, ``sch_tuned.mod``),
            and ``max_trials_global`` / ``num_trials_per_iter`` must not be given too.
        options: the keyword options of :func:`mlc_mlir.tune.tune_tir` (``backend``,
            ``cost_model``, ``measure``, ``progress``...).

    Returns:
        The database without ``config`` (as :func:`mlc_mlir.tune.tune_tir`), the best
        schedule with it (as :func:`mlc_mlir.tune.compile_tir` of that database).

    Raises:
        TuneError: ``config`` together with a budget keyword, ``config`` not a TuneConfig,
            or what :func:`mlc_mlir.tune.tune_tir` raises.
    """
    if config is None:
        return _tune_tir(mod, target, 64 if max_trials_global is None else max_trials_global,
                         64 if num_trials_per_iter is None else num_trials_per_iter, space, work_dir, task_name,
                         seed, **options)
    if not isinstance(config, TuneConfig):
        raise TuneError(f"tune_tir: config must be an ms.TuneConfig, got {type(config).__name__}")
    if max_trials_global is not None or num_trials_per_iter is not None:
        raise TuneError("tune_tir: give the budget either in config=ms.TuneConfig(...) or as max_trials_global= / "
                        "num_trials_per_iter=, not both")
    budget = config.max_trials_global
    if config.max_trials_per_task is not None:
        budget = min(budget, config.max_trials_per_task)  # one task here
    db = _tune_tir(mod, target, budget, config.num_trials_per_iter, space, work_dir, task_name, seed, **options)
    return _compile_tir(db, mod, target)
