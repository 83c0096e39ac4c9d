"""``ms.cost_model``: the learned cost models of the search (TVM's ``meta_schedule.cost_model``).

``ms.cost_model.XGBModel()`` is the model MetaSchedule's logs name ("Saved XGBModel"): here
gradient-boosted regression stumps fitted in NumPy (:class:`mlc_mlir.tune.GBStumpModel`, the search's
default), so no XGBoost is needed. XGBoost itself plugs in as
``mlc.tune.SklearnModel(xgboost.XGBRegressor())``. Either goes to
``ms.tune_tir(..., cost_model=...)``.
"""

from __future__ import annotations

from typing import Any

from ..errors import TuneError
from ..tune.cost_model import CostModel, GBStumpModel

__all__ = ["CostModel", "XGBModel"]


class XGBModel(GBStumpModel):
    """TVM's ``ms.cost_model.XGBModel``: gradient-boosted trees on the candidates' features.

    The trees are depth-1 stumps (:class:`GBStumpModel`), refit after every batch on
    ``-log(run time)``; TVM's XGBoost options (``extractor``, ``config``,
    ``num_warmup_samples``, ...) have no equivalent and raise :class:`TuneError`.

    Args:
        rounds: boosting rounds.
        learning_rate: shrinkage of each stump.

    Example::

        db = ms.tune_tir(mod, "llvm", max_trials_global=64, num_trials_per_iter=16,
                         work_dir="./tune_tmp", cost_model=ms.cost_model.XGBModel())
    """

    def __init__(self, *, rounds: int = 80, learning_rate: float = 0.2, **tvm_options: Any):
        if tvm_options:
            raise TuneError(f"XGBModel({', '.join(f'{k}=...' for k in tvm_options)}): TVM's XGBoost options have no "
                            "equivalent here (XGBModel is GBStumpModel: gradient-boosted stumps in NumPy, options "
                            "rounds= and learning_rate=); for XGBoost itself use "
                            "mlc.tune.SklearnModel(xgboost.XGBRegressor(...))")
        super().__init__(rounds=rounds, learning_rate=learning_rate)
