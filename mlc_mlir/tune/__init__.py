"""Auto-tuning (course ch.4, the MetaSchedule analogue).

``db = mlc.tune.tune_tir(mod, target, max_trials_global, num_trials_per_iter, space=...,
work_dir=..., task_name=...)`` searches the space of a stochastic schedule (or the
auto-scheduling rules) for the fastest candidate, measured in child processes;
``mlc.tune.compile_tir(db, mod, target)`` replays the best trace; ``mlc.tune.tune_model``
tunes every tensor program of a graph module under one budget. One file per concept:

========================  ==========================================================
space_generator.py        ScheduleFn, AutoSchedule (the shared schedule rules)
sampler.py                IsolatedSpace, Sampler (the space sampled in a child process)
search_strategy.py        EvolutionarySearch (random, then cost-model-guided mutation)
mutator.py                one sampling decision changed
cost_model.py / features  GBStumpModel (NumPy), SklearnModel; loop-nest features
database.py               JSONDatabase (work_dir/database.jsonl), TuningRecord
measure.py                what a builder/runner does with a candidate (child side)
local.py / ray_backend    LocalBackend (worker processes), RayBackend (a Ray cluster)
task_scheduler.py         TaskScheduler (budget by weight and gain)
tune.py                   tune_tir, compile_tir, tune_model
progress.py / plot.py     tqdm bar, summary table, tuning-curve PNG
========================  ==========================================================
"""

from .cost_model import CostModel, GBStumpModel, SklearnModel
from .database import JSONDatabase, TuningRecord, workload_key
from .local import LocalBackend
from .measure import MeasureInput, MeasureResult
from .plot import plot, tuning_curve
from .ray_backend import RayBackend
from .sampler import IsolatedSpace, Sampler
from .search_strategy import EvolutionarySearch
from .space_generator import AutoSchedule, ScheduleFn, SpaceGenerator
from .target import parse_target
from .task_scheduler import TaskScheduler, TuneTask
from .tune import compile_tir, tune_model, tune_tir

__all__ = ["tune_tir", "compile_tir", "tune_model", "ScheduleFn", "AutoSchedule", "SpaceGenerator",
           "JSONDatabase", "TuningRecord", "workload_key", "LocalBackend", "RayBackend", "MeasureInput",
           "MeasureResult", "EvolutionarySearch", "CostModel", "GBStumpModel", "SklearnModel",
           "TaskScheduler", "TuneTask", "plot", "tuning_curve", "parse_target", "IsolatedSpace", "Sampler"]
