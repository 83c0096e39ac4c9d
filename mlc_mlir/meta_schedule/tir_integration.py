"""``ms.tir_integration``: ``tune_tir`` and ``compile_tir`` (best schedule from a database)."""

from ..tune.tune import compile_tir
from .tune import tune_tir

__all__ = ["tune_tir", "compile_tir"]
