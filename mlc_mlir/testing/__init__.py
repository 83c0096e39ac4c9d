"""Shared test helpers (TVM's ``tir/schedule/testing.py``, MLIR's Python lit ``run``).

    from mlc_mlir.testing import run, check_schedule
    from mlc_mlir.testing.programs import mm_relu

    @run
    def test_split():                 # prints "TEST: test_split" (FileCheck: CHECK-LABEL)
        sch = mlc.Schedule(mm_relu())
        ...

- :func:`run`: the lit-test decorator; each case runs even when an earlier one raised,
  and the script exits non-zero if any did;
- :func:`check_schedule`: a schedule computes the expected values (built and run on the
  CPU) and replaying its trace rebuilds the same IR;
- :mod:`.programs`: the course's small tensor programs (``mm_relu``, ``matmul``...);
- :mod:`.gpu`, :mod:`.cuda_schedules`: the course's GPU schedules.

Part of the installed package so tests, lit scripts and benchmarks import it without
``sys.path`` edits.
"""

from __future__ import annotations

import atexit
import os
import sys
import traceback
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .programs import N, build_and_run, inputs

__all__ = ["run", "check_schedule", "check_mm_relu", "check_matmul", "filecheck"]

_failed: list[str] = []


def _exit_if_failed() -> None:
    if _failed:
        print(f"FAILED: {', '.join(_failed)}", flush=True)  # the traceback went to stderr
        os._exit(1)


def run(f: Callable[[], Any]) -> Callable[[], Any]:
    """Run the lit test case ``f`` now, after printing ``TEST: <name>`` (for ``CHECK-LABEL``).

    An exception is printed to stderr and the next cases still run; the script then exits
    with status 1, so lit reports the failure.
    """
    print(f"\nTEST: {f.__name__}", flush=True)
    try:
        f()
    except Exception:  # noqa: BLE001 - reported, and the process fails at exit
        traceback.print_exc()
        if not _failed:
            atexit.register(_exit_if_failed)
        _failed.append(f.__name__)
    sys.stdout.flush()
    return f


def check_schedule(sch: Any, func: str, args: Sequence[np.ndarray], expected: np.ndarray, *,
                   orig: Any = None, rtol: float = 1e-4, atol: float = 1e-4) -> None:
    """The scheduled module computes ``expected`` and replaying the trace gives the same IR.

    Args:
        sch: an :class:`mlc_mlir.schedule.Schedule`.
        func: the function to run; ``args`` are its arguments (the output last, written in place).
        expected: the values the output must hold (NumPy's answer).
        orig: the module to replay the trace on (default: the schedule's own original).
    """
    out = build_and_run(sch.mod, func, *args)
    np.testing.assert_allclose(out, expected, rtol=rtol, atol=atol)
    replayed = sch.trace.apply(orig)
    assert str(replayed.mod) == str(sch.mod), "replaying the trace does not rebuild the scheduled IR"


def check_mm_relu(sch: Any, n: int = N) -> None:
    """:func:`check_schedule` of a schedule of :func:`.programs.mm_relu` against NumPy."""
    a, b = inputs(n)
    check_schedule(sch, "mm_relu", [a, b, np.zeros((n, n), np.float32)], np.maximum(a @ b, 0))


def check_matmul(sch: Any, n: int = N) -> None:
    """:func:`check_schedule` of a schedule of :func:`.programs.matmul` against NumPy."""
    a, b = inputs(n)
    check_schedule(sch, "main", [a, b, np.zeros((n, n), np.float32)], a @ b)


def filecheck(text: str, checks: str) -> None:
    """Match ``text`` against FileCheck directives ``checks`` (``CHECK:``, ``CHECK-SAME:``...).

    IR shape in pytest checked as in lit tests, with ``%[[X:.+]]`` captures instead of
    SSA names. Raises AssertionError with FileCheck's report when it does not match.
    """
    import subprocess
    import tempfile

    with tempfile.NamedTemporaryFile("w", suffix=".checks", delete=False) as f:
        f.write(checks)
    try:
        proc = subprocess.run([sys.executable, "-m", "filecheck", f.name], input=text, text=True,
                              capture_output=True)
    finally:
        os.unlink(f.name)
    if proc.returncode != 0:
        raise AssertionError(f"FileCheck failed:\n{proc.stderr or proc.stdout}")
