"""The hand-written CUDA schedules of the benchmarks (moved to :mod:`mlc_mlir.testing.cuda_schedules`)."""

from mlc_mlir.testing.cuda_schedules import *  # noqa: F401,F403
from mlc_mlir.testing.cuda_schedules import __all__  # noqa: F401
