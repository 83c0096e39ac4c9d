"""Helpers of the CUDA tests: the course ch.6 programs and their GPU schedules."""

from __future__ import annotations

import os
from pathlib import Path

from mlc_mlir.testing.gpu import matmul_blocking, vector_add  # noqa: F401 - re-exported
from mlc_mlir.compiler.gpu_pipeline import cuda_toolkit


def ptxas() -> Path | None:
    """``ptxas`` of the ``nvidia-cuda-nvcc`` wheel (the toolkit the build uses), if installed."""
    toolkit = cuda_toolkit()
    path = Path(toolkit) / "bin" / "ptxas" if toolkit else None
    return path if path is not None and os.access(path, os.X_OK) else None
