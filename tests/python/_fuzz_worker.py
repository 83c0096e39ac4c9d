"""The fuzz suite's child process: runs one case per request, so an abort kills only it.

Protocol: one JSON request per line on stdin (``{"case": name, "args": {...}}``), one
JSON reply per line on the original stdout (``{"status": ..., "detail": ...}``):
``ok`` (right answer), ``mlc_error`` (a clean MlcError), ``escape`` (another exception
left the public API), ``wrong`` (an accepted input gave a wrong result). Run as a script:
``python tests/python/_fuzz_worker.py``; :class:`FuzzWorker` drives it from the tests.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import traceback

__all__ = ["FuzzWorker", "CaseFailure"]


class CaseFailure(AssertionError):
    """A fuzz case crashed the worker, escaped as a non-MlcError, or gave a wrong answer."""


class FuzzWorker:
    """A long-lived worker process; restarted after a crash (which fails that one case)."""

    def __init__(self, timeout: float = 120):
        self.timeout = timeout
        self.proc: subprocess.Popen | None = None

    def _start(self) -> None:
        script = os.path.abspath(__file__)
        self.proc = subprocess.Popen([sys.executable, script], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True, bufsize=1)

    def run(self, case: str, args: dict) -> dict:
        """Run one case; raise :class:`CaseFailure` unless it is ``ok`` or ``mlc_error``."""
        if self.proc is None or self.proc.poll() is not None:
            self._start()
        self.proc.stdin.write(json.dumps({"case": case, "args": args}) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            self.proc.wait(timeout=30)
            err = self.proc.stderr.read()[-3000:]
            code = self.proc.returncode
            self.proc = None
            raise CaseFailure(f"{case}({args!r}) killed the worker (exit {code}):\n{err}")
        reply = json.loads(line)
        if reply["status"] not in ("ok", "mlc_error"):
            raise CaseFailure(f"{case}({args!r}): {reply['status']}: {reply['detail']}")
        return reply

    def close(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.stdin.close()
            self.proc.wait(timeout=30)
        self.proc = None


def _serve() -> None:
    import mlc_mlir as mlc
    from _fuzz_cases import CASES, WrongResult

    out = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # anything the cases print goes to stderr, not into the protocol
    sys.stdout = sys.stderr
    for line in sys.stdin:
        req = json.loads(line)
        try:
            CASES[req["case"]](**req["args"])
            reply = {"status": "ok", "detail": ""}
        except WrongResult as exc:
            reply = {"status": "wrong", "detail": str(exc)}
        except mlc.MlcError as exc:
            reply = {"status": "mlc_error", "detail": f"{type(exc).__name__}: {str(exc)[:300]}"}
        except Exception as exc:  # noqa: BLE001 - what the fuzz suite looks for
            reply = {"status": "escape",
                     "detail": f"{type(exc).__name__}: {exc}\n" + "".join(traceback.format_exc(limit=6))}
        out.write(json.dumps(reply) + "\n")


if __name__ == "__main__":
    _serve()
