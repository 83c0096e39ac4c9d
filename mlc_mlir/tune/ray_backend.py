"""A Ray builder/runner: candidates spread over a Ray cluster's workers (optional extra
``tune-ray``: ``pip install mlc-mlir[tune-ray]``).

Each candidate is one Ray task. Inside it, the Ray worker hands the candidate to a
:class:`~mlc_mlir.tune.LocalBackend` of one process of its own (kept for the next
task), so a candidate gets the same time and memory limits as a local one, and one that
aborts or hangs costs that candidate only: the Ray worker survives and respawns its
child. A Ray-side deadline (twice the timeout, plus start-up) cancels a task whose worker
stopped answering (``max_retries=0``). Timings are taken wherever Ray placed the task:
with several tasks per machine they share its cores, so use one CPU per task and as many
tasks as measurement slots.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from typing import Any

from ..errors import TuneError
from .local import LocalBackend
from .measure import MeasureInput, MeasureResult

__all__ = ["RayBackend"]

log = logging.getLogger("mlc_mlir.tune")

#: per Ray worker process: its LocalBackend for each (threads, timeout, memory limit)
_LOCAL: dict[tuple[int, float, float | None], Any] = {}


def _threads(target: str) -> int:
    for word in target.split()[1:]:
        name, _, value = word.lstrip("-").partition("=")
        if name == "num-cores" and value.isdigit():
            return int(value)
    return 1


def _ray_measure(inp: MeasureInput, timeout: float, mem_limit_gb: float | None) -> MeasureResult:
    """Run in a Ray worker: measure ``inp`` in this worker's own child process."""
    key = (_threads(inp.target), timeout, mem_limit_gb)
    if key not in _LOCAL:
        cuda = inp.target.split()[0] == "cuda"
        _LOCAL[key] = LocalBackend(num_workers=1, build_timeout=timeout, run_timeout=timeout, threads=key[0],
                                   mem_limit_gb=None if cuda else mem_limit_gb)
    return _LOCAL[key].measure([inp])[0]


class RayBackend:
    """Measure candidates as Ray tasks.

    Args:
        address: a running cluster (``"auto"``, ``"ray://host:10001"``); ``None`` starts a
            local one with ``num_workers`` CPUs.
        num_workers: tasks in flight at once (and the local cluster's CPUs).
        timeout: build and run time limits of a candidate (seconds each).
        mem_limit_gb: address-space limit of the measuring process (``None``: none).

    Raises:
        TuneError: ``ray`` is not installed.
    """

    def __init__(self, *, address: str | None = None, num_workers: int = 2, timeout: float = 120.0,
                 mem_limit_gb: float | None = 8.0, **init_kwargs: Any):
        try:
            import ray
        except ImportError:
            raise TuneError("RayBackend needs the optional dependency ray: pip install 'mlc-mlir[tune-ray]'") from None
        self.ray = ray
        self.num_workers, self.timeout = int(num_workers), float(timeout)
        self.mem_limit_gb = mem_limit_gb
        self._owns = False
        if not ray.is_initialized():
            kwargs = {"include_dashboard": False, "log_to_driver": False, **init_kwargs}
            if address is None:
                kwargs["num_cpus"] = self.num_workers
            ray.init(address=address, **kwargs)
            self._owns = True
        self._remote = ray.remote(num_cpus=1, max_retries=0)(_ray_measure)

    def measure(self, inputs: Sequence[MeasureInput],
                on_result: Callable[[MeasureInput, MeasureResult], None] | None = None) -> list[MeasureResult]:
        """Measure every input; results in input order."""
        ray = self.ray
        todo = list(inputs)
        running: dict[Any, tuple[MeasureInput, float]] = {}
        results: dict[int, MeasureResult] = {}

        def done(inp: MeasureInput, res: MeasureResult) -> None:
            results[inp.index] = res
            if on_result is not None:
                on_result(inp, res)

        while todo or running:
            while todo and len(running) < self.num_workers:
                inp = todo.pop(0)
                ref = self._remote.remote(inp, self.timeout, self.mem_limit_gb)
                running[ref] = (inp, time.monotonic() + 2 * self.timeout + 60.0)
            ready, _ = ray.wait(list(running), num_returns=1, timeout=1.0)
            for ref in ready:
                inp, _ = running.pop(ref)
                try:
                    done(inp, ray.get(ref))
                except Exception as exc:  # the worker died: a failed candidate
                    done(inp, MeasureResult(inp.index, error=f"ray: {type(exc).__name__}: {str(exc)[:300]}"))
            now = time.monotonic()
            for ref, (inp, deadline) in list(running.items()):
                if now > deadline:
                    ray.cancel(ref, force=True)
                    running.pop(ref)
                    done(inp, MeasureResult(inp.index, error=f"ray: no answer after {2 * self.timeout + 60:g} s"))
        return [results[inp.index] for inp in inputs]

    def close(self) -> None:
        """Shut the local cluster down if this backend started it."""
        if self._owns and self.ray.is_initialized():
            self.ray.shutdown()
            self._owns = False

    def __enter__(self) -> RayBackend:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
