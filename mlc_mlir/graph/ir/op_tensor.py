"""Tensor graph ops (``mlc.graph.op``, the course's ``relax.op``): comparisons and masks,
reductions, indexing, slicing and joining, creation and casts. Shape rules in
:mod:`.infer_tensor`, legalizations in :mod:`mlc_mlir.graph.legalize.tensor`."""

from __future__ import annotations

from typing import Any

from .op_base import _call

__all__: list[str] = []
