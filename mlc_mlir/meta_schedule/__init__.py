"""TVM MetaSchedule's names over :mod:`mlc_mlir.tune`, so the course's ch.4 code runs by
changing its imports::

    from mlc_mlir import meta_schedule as ms

    database = ms.tune_tir(mod=MyModule, target="llvm --num-cores=1", max_trials_global=64,
                           num_trials_per_iter=64,
                           space=ms.space_generator.ScheduleFn(stochastic_schedule_mm),
                           work_dir="./tune_tmp", task_name="main")
    sch = ms.tir_integration.compile_tir(database, MyModule, "llvm --num-cores=1")

The older spelling ``ms.tune_tir(..., config=ms.TuneConfig(max_trials_global=64,
num_trials_per_iter=64), ...)`` returns the best schedule directly (:mod:`.tune`);
``ms.cost_model.XGBModel`` is the search's learned cost model (:mod:`.cost_model`).

Only TVM's spellings live here; the implementations and the project's own names
(``tune_model``, ``LocalBackend``, ``GBStumpModel``...) are in :mod:`mlc_mlir.tune`.
"""

from ..tune import CostModel, TaskScheduler
from . import cost_model, database, relax_integration, space_generator, tir_integration
from .tune import TuneConfig, tune_tir

__all__ = ["tune_tir", "TuneConfig", "space_generator", "tir_integration", "relax_integration", "database",
           "cost_model", "CostModel", "TaskScheduler"]
