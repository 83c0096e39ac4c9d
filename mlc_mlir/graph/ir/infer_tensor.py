"""Shape rules of the tensor graph ops (:mod:`.op_tensor`).

Registered into :data:`mlc_mlir.graph.ir.infer.RULES`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ...errors import GraphError
from ...tensor_types import Shape, format_shape

__all__ = ["TENSOR_RULES"]

ArgInfo = tuple[Shape, str]

TENSOR_RULES: dict[str, Callable[[str, Sequence[ArgInfo], dict[str, Any]], tuple[Shape, str]]] = {}
