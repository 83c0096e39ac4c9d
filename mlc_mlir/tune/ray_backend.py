"""A Ray builder/runner: candidates spread over a Ray cluster's workers (optional extra
``tune-ray``: ``pip install mlc-mlir[tune-ray]``).

Each candidate is one Ray task that builds and runs it in a Ray worker process; a worker
that aborts or passes the timeout costs that candidate only (``max_retries=0``). Timings
are taken wherever Ray placed the task: with several tasks per machine they share its
cores, so use one CPU per task and as many tasks as measurement slots.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from typing import Any

from ..errors import TuneError
from .measure import MeasureInput, MeasureResult, measure_in_process

__all__ = ["RayBackend"]

log = logging.getLogger("mlc_mlir.tune")


def _ray_measure(inp: MeasureInput) -> MeasureResult:
    return measure_in_process(inp)


class RayBackend:
    """Measure candidates as Ray tasks.

    Args:
        address: a running cluster (``"auto"``, ``"ray://host:10001"``); ``None`` starts a
            local one with ``num_workers`` CPUs.
        num_workers: tasks in flight at once (and the local cluster's CPUs).
        timeout: seconds per candidate before its task is cancelled.

    Raises:
        TuneError: ``ray`` is not installed.
    """

    def __init__(self, *, address: str | None = None, num_workers: int = 2, timeout: float = 180.0,
                 **init_kwargs: Any):
        try:
            import ray
        except ImportError:
            raise TuneError("RayBackend needs the optional dependency ray: pip install 'mlc-mlir[tune-ray]'") from None
        self.ray = ray
        self.num_workers, self.timeout = int(num_workers), float(timeout)
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
                running[self._remote.remote(inp)] = (inp, time.monotonic() + self.timeout)
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
                    done(inp, MeasureResult(inp.index, error=f"ray: timed out after {self.timeout:g} s"))
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
