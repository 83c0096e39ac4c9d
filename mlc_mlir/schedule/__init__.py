"""Schedules: the course's ``tvm.tir.Schedule`` on linalg tensor programs.

``sch = mlc.Schedule(mod)``; primitives (``split``, ``reorder``, ``reverse_compute_at``,
``decompose_reduction``, ``sample_perfect_tile``, ...) are recorded in ``sch.trace`` and
compiled into one transform-dialect script applied to a copy of ``mod`` (``sch.mod``).
"""

from .apply import apply_transform_script
from .intrin import TensorIntrin
from .schedule import Schedule
from .trace import INSTRUCTION_KINDS, BlockRV, ExprRV, Instruction, InstructionKind, LoopRV, Trace
from . import rules  # noqa: E402  (default schedule rules: rules.apply_rules; after Schedule)

__all__ = [
    "Schedule",
    "Trace",
    "Instruction",
    "InstructionKind",
    "INSTRUCTION_KINDS",
    "BlockRV",
    "LoopRV",
    "ExprRV",
    "TensorIntrin",
    "apply_transform_script",
    "rules",
]
