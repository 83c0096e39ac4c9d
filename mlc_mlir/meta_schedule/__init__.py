"""TVM MetaSchedule's names over :mod:`mlc_mlir.tune`, so the course's ch.4 code runs by
changing its imports::

    from mlc_mlir import meta_schedule as ms

    database = ms.tune_tir(mod=MyModule, target="llvm --num-cores=1", max_trials_global=64,
                           num_trials_per_iter=64,
                           space=ms.space_generator.ScheduleFn(stochastic_schedule_mm),
                           work_dir="./tune_tmp", task_name="main")
    sch = ms.tir_integration.compile_tir(database, MyModule, "llvm --num-cores=1")
"""

from ..tune import (CostModel, EvolutionarySearch, JSONDatabase, LocalBackend, RayBackend, TaskScheduler,
                    TuningRecord, tune_model, tune_tir)
from . import database, relax_integration, space_generator, tir_integration

__all__ = ["tune_tir", "tune_model", "space_generator", "tir_integration", "relax_integration", "database",
           "JSONDatabase", "TuningRecord", "LocalBackend", "RayBackend", "EvolutionarySearch", "CostModel",
           "TaskScheduler"]
