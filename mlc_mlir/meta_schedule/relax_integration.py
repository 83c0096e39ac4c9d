"""``ms.relax_integration``: tune every tensor program of a graph module (``tune_relax``)."""

from ..tune.tune import tune_model as tune_relax

__all__ = ["tune_relax"]
