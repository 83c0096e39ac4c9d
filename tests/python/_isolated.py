"""Run test code in a child process: an abort or segfault there fails one test, not the run."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap

PRELUDE = """
import numpy as np
import mlc_mlir as mlc
from mlc_mlir import te
"""


def run_child(code: str, *, timeout: float = 300) -> str:
    """Run ``code`` (after :data:`PRELUDE`) in a fresh interpreter; return its stdout.

    An uncaught ``MlcError`` is printed as ``ERR <class>: <message>``; any crash (signal) or
    other exception fails the calling test with the child's stderr.
    """
    wrapped = PRELUDE + "try:\n" + textwrap.indent(textwrap.dedent(code), "    ") + (
        "\nexcept mlc.MlcError as _exc:\n    print(f'ERR {type(_exc).__name__}: {_exc}')\n")
    proc = subprocess.run([sys.executable, "-c", wrapped], capture_output=True, text=True, timeout=timeout)
    if proc.returncode < 0:
        raise AssertionError(f"child process killed by {signal.Signals(-proc.returncode).name}:\n"
                             + proc.stderr[-3000:])
    if proc.returncode != 0:
        raise AssertionError(f"child process failed (exit {proc.returncode}):\n{proc.stderr[-3000:]}")
    return proc.stdout


def expect_error(code: str, error: str, *needles: str, timeout: float = 300) -> str:
    """Run ``code`` in a child; it must raise the MlcError subclass ``error`` whose message
    contains every one of ``needles``. Returns the message."""
    out = run_child(code, timeout=timeout)
    lines = [ln for ln in out.splitlines() if ln.startswith("ERR ")]
    assert lines, f"expected {error}, the code succeeded; output:\n{out}"
    head = lines[-1]
    assert head.startswith(f"ERR {error}:"), head
    text = out[out.rindex("ERR "):]
    for needle in needles:
        assert needle in text, f"{needle!r} not in {text!r}"
    return text
