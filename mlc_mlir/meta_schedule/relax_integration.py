"""``ms.relax_integration``: tune every tensor program of a graph module (``tune_relax``)."""

from ..tune.tune import tune_model

tune_relax = tune_model

__all__ = ["tune_relax", "tune_model"]
