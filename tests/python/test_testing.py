"""mlc_mlir.testing: the lit @run decorator, filecheck, check_schedule."""

import subprocess
import sys

import numpy as np
import pytest

from mlc_mlir.schedule import Schedule
from mlc_mlir.testing import check_matmul, check_schedule, filecheck
from mlc_mlir.testing.programs import inputs, matmul

SCRIPT = """
from mlc_mlir.testing import run

@run
def test_first():
    raise ValueError("boom")

@run
def test_second():
    print("second ran")
"""


def test_run_keeps_going_and_fails_the_script():
    proc = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True)
    assert proc.returncode == 1
    filecheck(proc.stdout, "CHECK-LABEL: TEST: test_first\nCHECK-LABEL: TEST: test_second\nCHECK: second ran\n")
    assert "ValueError: boom" in proc.stderr and "FAILED: test_first" in proc.stdout


def test_filecheck_reports_a_mismatch():
    filecheck("%0 = arith.addi %a, %b : i32\n", "CHECK: %[[S:.+]] = arith.addi\n")
    with pytest.raises(AssertionError, match="FileCheck failed"):
        filecheck("%0 = arith.addi %a, %b : i32\n", "CHECK: arith.muli\n")


def test_check_schedule_runs_and_replays():
    sch = Schedule(matmul(32))
    i, j, k = sch.get_loops(sch.get_block("C", "main"))
    sch.split(j, factors=[None, 4])
    check_matmul(sch, 32)
    a, b = inputs(32)
    args = [a, b, np.zeros((32, 32), np.float32)]
    with pytest.raises(AssertionError, match="Mismatched elements"):
        check_schedule(sch, "main", args, a @ b + 1)
    with pytest.raises(AssertionError, match="replaying the trace"):
        check_schedule(sch, "main", args, a @ b, orig=matmul(64))
