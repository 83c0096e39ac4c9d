"""Helpers of the schedule tests (now :mod:`mlc_mlir.testing`; this module re-exports them)."""

from mlc_mlir.testing import check_matmul, check_mm_relu, check_schedule  # noqa: F401
from mlc_mlir.testing.programs import (N, build_and_run, dyn_add_text, inputs, loop_names,  # noqa: F401
                                       matmul, matmul_text, mm_relu, mm_relu_text)

run = build_and_run
