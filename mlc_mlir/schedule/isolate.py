"""Hand-written transform scripts that could abort the interpreter are tried in a child process.

The upstream transform interpreter checks most misuse (a handle used after the op it
points to was consumed gives a diagnostic), but with assertions on, some scripts still
abort the process (a loop handle used after ``one_shot_bufferize`` + canonicalization +
``apply_licm``). A script made only of the ops in :data:`SAFE_OPS` (matching, tiling,
fusion, vectorization, annotations, knobs) is applied directly; any other script is first
applied to a copy of the module by the upstream interpreter in a child process, so that
a crash there becomes a :class:`~mlc_mlir.errors.ScheduleError` here; if the child does
not crash, the script is applied in this process (which reports any clean failure).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile

from mlir import ir

from ..errors import ScheduleError
from ..context import mlc_context

__all__ = ["SAFE_OPS", "is_provably_safe", "dry_run_in_child"]

#: Transform ops whose misuse the interpreter reports as a diagnostic (never an abort).
SAFE_OPS = frozenset({
    "builtin.module", "transform.named_sequence", "transform.yield", "transform.structured.match",
    "transform.structured.tile_using_for", "transform.structured.tile_using_forall",
    "transform.structured.vectorize",
    "transform.structured.interchange", "transform.annotate", "transform.tune.knob",
    "transform.param.constant", "transform.get_parent_op", "transform.loop.unroll",
})

CHILD_TIMEOUT_S = 600
_CHILD_CODE = "import sys; from mlc_mlir.schedule.isolate import _child; sys.exit(_child(sys.argv[1]))"


def is_provably_safe(tmod: ir.Module) -> bool:
    """Whether every op of the script is in :data:`SAFE_OPS`."""
    unsafe = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        if op.name not in SAFE_OPS:
            unsafe.append(op.name)
            return ir.WalkResult.INTERRUPT
        return ir.WalkResult.ADVANCE

    tmod.operation.walk(visit)
    return not unsafe


def dry_run_in_child(payload_text: str, script_text: str) -> None:
    """Run the script's interpreter on ``payload_text`` in a child process; raise
    :class:`ScheduleError` if that crashes it (naming the signal)."""
    with tempfile.TemporaryDirectory(prefix="mlc-script-") as tmp:
        spec = os.path.join(tmp, "job.json")
        with open(spec, "w", encoding="utf-8") as f:
            json.dump({"payload": payload_text, "script": script_text}, f)
        try:
            proc = subprocess.run([sys.executable, "-c", _CHILD_CODE, spec],
                                  capture_output=True, text=True, timeout=CHILD_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            raise ScheduleError(f"apply_transform_script: the script ran longer than {CHILD_TIMEOUT_S} s "
                                "in its trial process") from None
    if proc.returncode == 0:
        return
    tail = "\n".join(proc.stderr.strip().splitlines()[-6:])
    if proc.returncode < 0:
        sig = signal.Signals(-proc.returncode).name
        raise ScheduleError(f"apply_transform_script: the script crashed the transform interpreter ({sig}) "
                            f"in a trial process; it is not applied. Interpreter output:\n{tail}")
    raise ScheduleError(f"apply_transform_script: the trial process failed (exit {proc.returncode}):\n{tail}")


def _child(spec_path: str) -> int:
    """Run only the upstream interpreter on the job (where aborts happen). Its diagnostics
    and Python-side steps (registered tensor intrinsics live in the parent) are left to
    the parent, which applies the script again in process."""
    from mlir.dialects.transform import interpreter

    from .apply import _entry  # here, not at the top: schedule.apply imports this module

    with open(spec_path, encoding="utf-8") as f:
        job = json.load(f)
    with mlc_context() as ctx:
        ctx.attach_diagnostic_handler(lambda diag: True)
        try:
            payload, tmod = ir.Module.parse(job["payload"]), ir.Module.parse(job["script"])
            interpreter.apply_named_sequence(payload, _entry(tmod), tmod)
        except (ValueError, ir.MLIRError, ScheduleError):
            return 0  # a clean failure: the parent reports it with its diagnostics
    return 0
