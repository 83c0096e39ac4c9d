"""The local builder/runner: a pool of worker processes (MetaSchedule's LocalBuilder and
LocalRunner, tinygrad's BEAM process pool).

Each worker is a spawned process with a memory limit (``RLIMIT_AS``); it builds candidates
in parallel with the other workers, then waits for the parent's go-ahead to run: one
runner at a time (per core set with ``serial_runs=False``), every thread of it pinned to
its cores, with the OpenMP settings the kernels are timed with elsewhere
(``OMP_NUM_THREADS``, ``KMP_BLOCKTIME``: spinning workers between back-to-back calls,
whatever the tuning process's environment says). While candidates run, the building
workers (all their threads) are moved off the running cores, or paused (``SIGSTOP``, their
build deadline stopped too) when no other core is free, so a build never shares a core
with a measurement. A worker that dies (abort, segfault, out of
memory) or passes its build/run deadline is killed and replaced; its candidate becomes a
failed result and the tuning run goes on. A build deadline counts from the moment the
worker is ready (spawned, its imports done): a start-up slowed by a loaded machine is
not charged to the candidate (the start-up has a deadline of its own,
:data:`STARTUP_TIMEOUT`).
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing as mp
import os
import signal
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from multiprocessing.connection import wait
from typing import Any

from ..errors import TuneError
from .measure import MeasureInput, MeasureResult
from .measure import build_candidate, build_info, run_candidate

__all__ = ["LocalBackend", "STARTUP_TIMEOUT"]

log = logging.getLogger("mlc_mlir.tune")

#: seconds a spawned worker may take to be ready (its imports), on top of the build
#: deadline of its first candidate
STARTUP_TIMEOUT = 120.0


def _die_with_parent() -> None:
    """Linux: this child is killed when its parent dies (even while paused by SIGSTOP), so
    a killed tuning run leaves no worker behind."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def _pin(pid: int, cores: Any) -> None:
    """Set the affinity of every thread of process ``pid`` (``sched_setaffinity(pid)`` alone
    moves only its main thread, not the compiler's or OpenMP's threads)."""
    try:
        tids = [int(t) for t in os.listdir(f"/proc/{pid}/task")]
    except OSError:
        tids = [pid]
    for tid in tids:
        try:
            os.sched_setaffinity(tid, cores)
        except OSError:  # a thread that just ended
            pass


def _worker_main(conn: Any, mem_limit: int | None, threads: int, blocktime_ms: int = 200) -> None:
    """Child process: build on request, run when allowed, report, forever."""
    _die_with_parent()
    # before the OpenMP runtime starts (at the first parallel loop): the runner's settings
    os.environ["OMP_NUM_THREADS"] = str(threads)
    os.environ["KMP_BLOCKTIME"] = str(blocktime_ms)
    if mem_limit:
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (mem_limit, mem_limit))

    all_cores = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else None
    conn.send(("ready", None))  # the parent starts the build clock of a waiting candidate now
    while True:
        msg = conn.recv()
        if msg is None:
            return
        inp: MeasureInput = msg
        res = MeasureResult(inp.index)
        try:
            rt, res.build_secs = build_candidate(inp)
            res.extra.update(build_info(rt))
        except Exception as exc:
            res.error = f"build: {type(exc).__name__}: {str(exc)[:500]}"
            conn.send(("built", res))
            continue
        conn.send(("built", None))
        cores = conn.recv()
        t0 = time.perf_counter()
        res.extra["run_at"] = time.monotonic()  # system-wide clock: runs of workers compare
        try:
            if cores and all_cores is not None:
                _pin(os.getpid(), cores)
                res.extra["cores"] = list(cores)
            res.extra.update(omp_threads=int(os.environ["OMP_NUM_THREADS"]),
                             kmp_blocktime=int(os.environ["KMP_BLOCKTIME"]))
            res.run_secs = run_candidate(inp, rt, res.extra)
        except Exception as exc:
            res.error = f"run: {type(exc).__name__}: {str(exc)[:500]}"
        finally:
            if all_cores is not None:
                _pin(os.getpid(), all_cores)
        del rt
        res.extra["run_wall"] = round(time.perf_counter() - t0, 4)
        conn.send(("done", res))


@contextlib.contextmanager
def _main_hidden() -> Iterator[None]:
    """Hide the parent's ``__main__`` from spawn, so a worker does not re-run the user's
    script (course code has no ``if __name__ == "__main__"`` guard); a ``build_fn`` must
    therefore live in an importable module."""
    main = sys.modules.get("__main__")
    saved = {k: main.__dict__.pop(k) for k in ("__file__", "__spec__") if main is not None and k in main.__dict__}
    if main is not None:
        main.__spec__ = None
    try:
        yield
    finally:
        if main is not None:
            del main.__spec__
            main.__dict__.update(saved)


class _Worker:
    def __init__(self, ctx: Any, mem_limit: int | None, threads: int, blocktime_ms: int):
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=_worker_main, args=(child, mem_limit, threads, blocktime_ms), daemon=True)
        with _main_hidden():
            self.proc.start()
        child.close()
        self.job: MeasureInput | None = None
        self.state = "idle"  # idle | building | waiting | running
        self.deadline = float("inf")
        self.ready = False  # said "ready" (imports done): build deadlines count from then
        self.cores: tuple[int, ...] | None = None
        self.pin: Any = None  # None (all cores) | frozenset of cores | "paused"
        self.remaining = 0.0  # build seconds left while paused

    def move(self, pin: Any, all_cores: frozenset[int]) -> None:
        """Pin a building worker to ``pin`` (None: every core) or pause it (``"paused"``)."""
        if pin == self.pin or not self.proc.is_alive():
            return
        try:
            if self.pin == "paused":
                os.kill(self.proc.pid, signal.SIGCONT)
                self.deadline = time.monotonic() + self.remaining
            if pin == "paused":
                self.remaining = self.deadline - time.monotonic()
                self.deadline = float("inf")
                os.kill(self.proc.pid, signal.SIGSTOP)
            elif hasattr(os, "sched_setaffinity"):
                _pin(self.proc.pid, pin or all_cores)
        except (ProcessLookupError, OSError):
            pass
        self.pin = pin

    def kill(self) -> None:
        if self.proc.is_alive():
            self.proc.kill()
        self.proc.join(5)
        self.conn.close()


def _death(proc: Any) -> str:
    code = proc.exitcode
    if code is not None and code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exited with code {code}"


class LocalBackend:
    """Build and run candidates in local worker processes.

    Args:
        num_workers: parallel builders (default: the number of cores, at most 4).
        core_sets: disjoint core tuples; one candidate runs at a time on each (default:
            all cores as one set).
        build_timeout / run_timeout: seconds before a worker is killed.
        mem_limit_gb: address-space limit of a worker (``None``: none).
        threads: ``OMP_NUM_THREADS`` of the workers (parallel loops).
        quiet_runs: keep builds off the cores of a running measurement (moved, or paused
            when no core is free); ``False`` lets them overlap (more throughput, more noise).
        serial_runs: one measurement at a time on the machine (default), on the first free
            core set; ``False`` runs one per core set at once (they share caches, memory
            bandwidth and maybe a physical core, and leave no core to anything else).
        blocktime_ms: ``KMP_BLOCKTIME`` of the runners: OpenMP workers spin this long
            between calls, as in a benchmark's back-to-back calls (0: each call pays the
            wake-up of the workers, 20-40 us).
    """

    def __init__(self, *, num_workers: int | None = None, core_sets: Sequence[tuple[int, ...]] | None = None,
                 build_timeout: float = 120.0, run_timeout: float = 60.0, mem_limit_gb: float | None = 8.0,
                 threads: int | None = None, quiet_runs: bool = True, serial_runs: bool = True,
                 blocktime_ms: int = 200):
        ncpu = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
        self.num_workers = int(num_workers or min(4, ncpu))
        if self.num_workers < 1:
            raise TuneError(f"LocalBackend: num_workers must be >= 1, got {num_workers!r}")
        self.core_sets = [tuple(c) for c in (core_sets or [tuple(sorted(os.sched_getaffinity(0)))])]
        self.build_timeout, self.run_timeout = float(build_timeout), float(run_timeout)
        self.mem_limit = int(mem_limit_gb * 2 ** 30) if mem_limit_gb else None
        self.threads = int(threads or max(len(c) for c in self.core_sets))
        self.quiet_runs, self.serial_runs = bool(quiet_runs), bool(serial_runs)
        if not isinstance(blocktime_ms, int) or isinstance(blocktime_ms, bool) or blocktime_ms < 0:
            raise TuneError(f"LocalBackend: blocktime_ms must be an int >= 0, got {blocktime_ms!r}")
        self.blocktime_ms = blocktime_ms
        self._all = frozenset(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else frozenset()
        self._ctx = mp.get_context("spawn")
        self._workers: list[_Worker | None] = [None] * self.num_workers

    def _worker(self, i: int) -> _Worker:
        w = self._workers[i]
        if w is None or not w.proc.is_alive():
            if w is not None:
                w.kill()
            w = self._workers[i] = _Worker(self._ctx, self.mem_limit, self.threads, self.blocktime_ms)
        return w

    def start(self) -> LocalBackend:
        """Spawn every worker now (otherwise each starts with its first candidate)."""
        for i in range(self.num_workers):
            self._worker(i)
        return self

    def measure(self, inputs: Sequence[MeasureInput],
                on_result: Callable[[MeasureInput, MeasureResult], None] | None = None) -> list[MeasureResult]:
        """Measure every input; results in input order. ``on_result`` sees each as it ends."""
        pending = list(inputs)
        results: dict[int, MeasureResult] = {}
        free_cores = list(self.core_sets)
        by_index = {inp.index: inp for inp in inputs}

        def finish(w: _Worker, res: MeasureResult) -> None:
            results[res.index] = res
            if w.cores is not None:
                free_cores.append(w.cores)
            w.job, w.state, w.cores, w.deadline = None, "idle", None, float("inf")
            if on_result is not None:
                on_result(by_index[res.index], res)

        while len(results) < len(inputs):
            for i in range(self.num_workers):
                if pending and (self._workers[i] is None or self._workers[i].state == "idle"):
                    w = self._worker(i)
                    w.job, w.state = pending.pop(0), "building"
                    w.deadline = time.monotonic() + self.build_timeout + (0.0 if w.ready else STARTUP_TIMEOUT)
                    w.conn.send(w.job)
            for w in self._workers:
                busy = self.serial_runs and any(v is not None and v.state == "running" for v in self._workers)
                if w is not None and w.state == "waiting" and free_cores and not busy:
                    w.cores, w.state = free_cores.pop(0), "running"
                    w.deadline = time.monotonic() + self.run_timeout
                    w.conn.send(w.cores)
            self._quiet_builders()
            self._poll(finish)
        return [results[inp.index] for inp in inputs]

    def _quiet_builders(self) -> None:
        """Move building workers off the cores of running ones (pause them if none is free)."""
        live = [w for w in self._workers if w is not None]
        running = frozenset(c for w in live if w.state == "running" and w.cores for c in w.cores)
        pin: Any = None
        if self.quiet_runs and running and self._all:
            free = self._all - running
            pin = free if free else "paused"
        for w in live:
            if w.state == "building":
                w.move(pin, self._all)

    def _poll(self, finish: Callable[[_Worker, MeasureResult], None]) -> None:
        busy = [w for w in self._workers if w is not None and w.state != "idle"]
        waits = {id(w.conn): w for w in busy} | {w.proc.sentinel: w for w in busy}
        timeout = max(0.0, min(w.deadline for w in busy) - time.monotonic()) if busy else 0.1
        ready = wait([w.conn for w in busy] + [w.proc.sentinel for w in busy], timeout=min(timeout, 1.0))
        handled = set()
        for obj in ready:
            w = waits[id(obj)] if not isinstance(obj, int) else waits[obj]
            if id(w) in handled:
                continue
            handled.add(id(w))
            try:
                if w.conn.poll():
                    tag, res = w.conn.recv()
                    if tag == "ready":
                        w.ready = True
                        if w.state == "building":  # the build clock starts now
                            if w.pin == "paused":
                                w.remaining = self.build_timeout
                            else:
                                w.deadline = time.monotonic() + self.build_timeout
                    elif tag == "built" and res is None:
                        w.move(None, self._all)  # blocked on its go-ahead: unpinned before it pins itself
                        w.state, w.deadline = "waiting", float("inf")
                    else:
                        finish(w, res)
                    continue
            except (EOFError, OSError):
                pass
            w.proc.join(1)
            self._fail(w, finish, f"{w.state}: worker {_death(w.proc)}")
        now = time.monotonic()
        for w in busy:
            if id(w) not in handled and w.state in ("building", "running") and now > w.deadline:
                if not w.ready:
                    self._fail(w, finish, "starting: the worker was not ready after "
                                          f"{STARTUP_TIMEOUT + self.build_timeout:g} s")
                    continue
                limit = self.build_timeout if w.state == "building" else self.run_timeout
                self._fail(w, finish, f"{w.state}: timed out after {limit:g} s")

    def _fail(self, w: _Worker, finish: Callable[[_Worker, MeasureResult], None], why: str) -> None:
        log.info("candidate %d failed: %s", w.job.index, why)
        job = w.job
        w.kill()
        finish(w, MeasureResult(job.index, error=why))
        self._workers[self._workers.index(w)] = None

    def close(self) -> None:
        """Stop the workers."""
        for i, w in enumerate(self._workers):
            if w is not None:
                try:
                    if w.proc.is_alive() and w.state == "idle":
                        w.conn.send(None)
                        w.proc.join(2)
                except OSError:
                    pass
                w.kill()
            self._workers[i] = None

    def __enter__(self) -> LocalBackend:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass
