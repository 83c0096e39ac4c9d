"""Crash isolation of sampling (mlc_mlir.tune.sampler): a space that aborts or hangs costs
one failed record; the schedule is applied only in child processes."""

from __future__ import annotations

import sys

import pytest

import mlc_mlir as mlc
from mlc_mlir.schedule import Schedule
from mlc_mlir.tune.sampler import IsolatedSpace, Sampler, dumps_space

from _schedule_util import check_matmul, matmul
from _tune_util import aborting_schedule_mm, stochastic_schedule_mm

TARGET = "llvm --num-cores=1"
FAST = {"repeat": 2, "min_repeat_ms": 1.0}


def _inner(record):
    return record.trace["insts"][2][3][1]


def test_aborting_schedule_fn_costs_one_failed_record(tmp_path):
    mod = matmul()
    db = mlc.tune.tune_tir(mod, TARGET, max_trials_global=4, num_trials_per_iter=4,
                           space=mlc.tune.ScheduleFn(aborting_schedule_mm), work_dir=tmp_path, seed=0,
                           measure=FAST, progress=False)
    crashed = [r for r in db.records() if r.extra.get("stage") == "sample"]
    measured = [r for r in db.records() if r.extra.get("stage") != "sample"]
    assert crashed and all("SIGABRT" in r.error and r.error.startswith("sample:") for r in crashed)
    assert len(measured) == 4 and all(r.ok for r in measured)
    assert len({_inner(r) for r in measured}) == 4
    again = mlc.tune.JSONDatabase(tmp_path)
    assert len(again) == len(db)
    best = mlc.tune.compile_tir(again, mod, TARGET)
    check_matmul(best)
    assert [len(ys) for ys in mlc.tune.tuning_curve(again).values()] == [4]  # crashes are not trials
    # a resumed run counts the crashes as failures, not as measured trials
    db2 = mlc.tune.tune_tir(mod, TARGET, max_trials_global=4, num_trials_per_iter=4,
                            space=mlc.tune.ScheduleFn(aborting_schedule_mm), work_dir=tmp_path, seed=0,
                            measure=FAST, progress=False)
    assert len([r for r in db2.records() if r.extra.get("stage") != "sample"]) == 4


def test_hanging_sample_is_killed_and_the_sampler_comes_back(monkeypatch):
    monkeypatch.setenv("MLC_TEST_SAMPLER_HANG", "1")
    mod = matmul()
    crashes = []
    sampler = Sampler(timeout=3.0)
    try:
        space = IsolatedSpace(mlc.tune.ScheduleFn(aborting_schedule_mm), sampler,
                              on_crash=lambda seed, why: crashes.append(why))
        assert space.isolated
        outcomes = []
        for seed in range(40):
            try:
                outcomes.append(space.generate(mod, seed).trace.decisions[2][1])
            except mlc.TuneError as exc:
                outcomes.append(str(exc))
            if any("timed out" in str(o) for o in outcomes) and any("SIGABRT" in str(o) for o in outcomes) \
                    and isinstance(outcomes[-1], int):
                break
        assert any("timed out after 3 s" in c for c in crashes)
        assert any("killed by SIGABRT" in c for c in crashes)
        assert isinstance(outcomes[-1], int) and outcomes[-1] in (1, 2, 4)  # a sample after the crashes
    finally:
        sampler.close()


def test_auto_schedule_is_applied_only_in_child_processes(tmp_path, monkeypatch):
    """The auto-scheduling rules read sch.mod (they apply the schedule with MLIR): with
    isolation, the tuning process itself applies nothing."""
    applied = []
    original = Schedule._apply_state

    def counting(self):
        applied.append(1)
        return original(self)

    monkeypatch.setattr(Schedule, "_apply_state", counting)
    mod = matmul()
    db = mlc.tune.tune_tir(mod, TARGET, max_trials_global=3, num_trials_per_iter=3, work_dir=tmp_path, seed=0,
                           measure=FAST, progress=False)
    assert applied == [] and any(r.ok for r in db.records())
    mlc.tune.tune_tir(mod, TARGET, max_trials_global=4, num_trials_per_iter=1, work_dir=tmp_path / "b", seed=0,
                      measure=FAST, progress=False, isolate=False)
    assert applied, "without isolation the rules apply the schedule in this process"


def _closure_space(inner):
    def space(sch):
        return stochastic_schedule_mm(sch) if inner else sch

    return space


def test_lambdas_and_closures_are_sampled_in_the_child_with_cloudpickle(tmp_path, monkeypatch):
    pytest.importorskip("cloudpickle")
    lam = mlc.tune.ScheduleFn(lambda sch: stochastic_schedule_mm(sch))
    assert dumps_space(lam) is not None and dumps_space(mlc.tune.ScheduleFn(_closure_space(True))) is not None
    mod = matmul()
    db = mlc.tune.tune_tir(mod, TARGET, max_trials_global=2, num_trials_per_iter=2, space=lam,
                           work_dir=tmp_path, seed=0, measure=FAST, progress=False)
    assert all(r.ok for r in db.records())
    # without cloudpickle a lambda is sampled in this process (documented fallback); tuning still works
    monkeypatch.setitem(sys.modules, "cloudpickle", None)
    assert dumps_space(lam) is None
    assert dumps_space(mlc.tune.ScheduleFn(stochastic_schedule_mm)) is not None  # by reference
    sampler = Sampler()
    try:
        assert not IsolatedSpace(lam, sampler).isolated
    finally:
        sampler.close()
    db = mlc.tune.tune_tir(mod, TARGET, max_trials_global=2, num_trials_per_iter=2, space=lam,
                           work_dir=tmp_path / "b", seed=0, measure=FAST, progress=False)
    assert all(r.ok for r in db.records())
    check_matmul(mlc.tune.compile_tir(db, mod))


def _proc_state(pid):
    return open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0]


def _wait_state(pid, want, timeout=5.0):
    import time

    end = time.monotonic() + timeout
    while _proc_state(pid) not in want and time.monotonic() < end:
        time.sleep(0.01)
    return _proc_state(pid)


def test_builders_keep_off_the_cores_of_a_running_measurement():
    import os

    cores = sorted(os.sched_getaffinity(0))
    with mlc.tune.LocalBackend(num_workers=2, core_sets=[tuple(cores)]).start() as backend:
        mod = matmul()  # a measured candidate each: the workers have their compiler's threads then
        trace = Schedule(mod).trace.as_json()
        jobs = [mlc.tune.MeasureInput("k", str(mod), "main", trace, "llvm", index=i, **FAST) for i in range(2)]
        assert all(r.error is None for r in backend.measure(jobs))
        runner, builder = backend._workers
        runner.state, runner.cores = "running", tuple(cores)
        builder.state, builder.deadline = "building", float("inf")
        backend._quiet_builders()  # no free core: the builder is paused, its deadline stopped
        assert _wait_state(builder.proc.pid, "T") == "T" and builder.pin == "paused"
        runner.state, runner.cores = "idle", None
        builder.remaining = 30.0
        backend._quiet_builders()
        assert _wait_state(builder.proc.pid, "SR") in "SR" and builder.pin is None
        assert 29.0 < builder.deadline - __import__("time").monotonic() <= 30.0
        if len(cores) > 1:  # a running core set of one core: the builder moves to the others
            runner.state, runner.cores = "running", (cores[0],)
            backend._quiet_builders()
            assert os.sched_getaffinity(builder.proc.pid) == set(cores[1:])
            threads = os.listdir(f"/proc/{builder.proc.pid}/task")
            assert len(threads) > 1
            assert all(os.sched_getaffinity(int(t)) == set(cores[1:]) for t in threads)  # every thread moves
            runner.state, runner.cores = "idle", None
            backend._quiet_builders()
            assert os.sched_getaffinity(builder.proc.pid) == set(cores)
        builder.state = runner.state = "idle"


def test_runner_records_its_warm_up_windows_and_openmp_settings(tmp_path, monkeypatch):
    """The runner warms up, times each repeat as the best of several windows, and runs with
    its own OpenMP settings (``KMP_BLOCKTIME`` 200 ms even when the tuning process has 0:
    waking the workers would be timed with every call), recorded in each result."""
    import os

    monkeypatch.setenv("KMP_BLOCKTIME", "0")
    cores = sorted(os.sched_getaffinity(0))
    with mlc.tune.LocalBackend(num_workers=1, core_sets=[(cores[-1],)], threads=1) as backend:
        db = mlc.tune.tune_tir(matmul(), TARGET, max_trials_global=2, num_trials_per_iter=2,
                               space=mlc.tune.ScheduleFn(stochastic_schedule_mm), work_dir=tmp_path, seed=0,
                               backend=backend, measure={**FAST, "number": 4}, progress=False)
    records = mlc.tune.JSONDatabase(tmp_path).records()  # what the database file keeps
    assert len(records) == 2 and all(r.ok for r in records)
    for r in records:
        assert r.extra["kmp_blocktime"] == 200 and r.extra["omp_threads"] == 1 and r.extra["cores"] == [cores[-1]]
        assert r.extra["warmup_calls"] >= 1 and 1 <= r.extra["windows_per_repeat"] <= 5
        assert r.extra["calls_per_window"] * r.extra["windows_per_repeat"] >= 4 and len(r.run_secs) == 2
    with pytest.raises(mlc.TuneError, match="blocktime_ms must be an int >= 0, got -1"):
        mlc.tune.LocalBackend(blocktime_ms=-1)


def test_one_measurement_at_a_time_by_default(tmp_path):
    """Two one-core sets: builds go on in parallel, but runs never overlap (a second run
    would share the caches and leave no core to the builders); ``serial_runs=False``
    allows one per core set."""
    import os

    cores = sorted(os.sched_getaffinity(0))
    sets = [(c,) for c in cores[:2]]
    with mlc.tune.LocalBackend(num_workers=2, core_sets=sets) as backend:
        db = mlc.tune.tune_tir(matmul(), TARGET, max_trials_global=5, num_trials_per_iter=5,
                               space=mlc.tune.ScheduleFn(stochastic_schedule_mm), work_dir=tmp_path, seed=0,
                               backend=backend, measure=FAST, progress=False)
    spans = sorted((r.extra["run_at"], r.extra["run_at"] + r.extra["run_wall"]) for r in db.records())
    assert len(spans) == 5 and all(r.ok for r in db.records())
    assert all(end <= nxt + 1e-3 for (_, end), (nxt, _) in zip(spans, spans[1:]))
    assert not mlc.tune.LocalBackend(core_sets=sets, serial_runs=False).serial_runs


def test_a_spaces_initial_and_mutate_run_in_the_sampler(monkeypatch):
    import random

    from _tune_util import FirstThenMutateSpace

    applied = []
    original = Schedule._apply_state
    monkeypatch.setattr(Schedule, "_apply_state", lambda self: applied.append(1) or original(self))
    mod = matmul()
    crashes = []
    sampler = Sampler(timeout=30.0)
    try:
        space = IsolatedSpace(FirstThenMutateSpace(), sampler, on_crash=lambda seed, why: crashes.append(why))
        (first,) = space.initial(mod)
        child = space.mutate(mod, first.trace, random.Random(1))
        assert child.trace.decisions[2] != first.trace.decisions[2]
        assert applied == []  # initial() read sch.mod in the sampler, not here
        monkeypatch.setenv("MLC_TEST_MUTATE_ABORT", "1")
        sampler.close()  # the next sampler process sees the variable
        with pytest.raises(mlc.TuneError, match="killed by SIGABRT"):
            space.mutate(mod, first.trace, random.Random(1))
        assert len(crashes) == 1
        assert space.generate(mod, 3).trace.decisions  # the sampler came back
    finally:
        sampler.close()


def test_a_sampled_schedule_comes_back_whole():
    """The parent's copy of a child's sample has the same trace, loop-nest features and
    (once applied) module as one sampled here, restored from its state or replayed."""
    from mlc_mlir.tune.features import candidate_features

    mod = matmul()
    sampler = Sampler()
    try:
        for space in (mlc.tune.ScheduleFn(stochastic_schedule_mm), mlc.tune.AutoSchedule("llvm -num-cores=1")):
            here = space.generate(mod, 5)
            there = IsolatedSpace(space, sampler).generate(mod, 5)
            replayed = IsolatedSpace._restored(mod, (here.trace.as_json(), None), 5)
            for sch in (there, replayed):
                assert str(sch.trace) == str(here.trace)
                assert candidate_features(sch) == candidate_features(here)
                assert str(sch.mod) == str(here.mod)
    finally:
        sampler.close()


def test_workers_die_with_a_killed_tuning_process():
    import os
    import signal
    import subprocess
    import time

    code = ("import os, time, mlc_mlir as mlc\n"
            "from mlc_mlir.tune.sampler import Sampler\n"
            "b = mlc.tune.LocalBackend(num_workers=2)\n"
            "bad = [mlc.tune.MeasureInput('k', 'not mlir', 'main', {}, index=i) for i in range(2)]\n"
            "assert all(r.error for r in b.measure(bad))\n"  # both workers are in their loop
            "s = Sampler(); s._ask(('space', 0, b''), 60)\n"
            "for w in b._workers: w.proc.pid and os.kill(w.proc.pid, 19)\n"  # one paused (SIGSTOP), like a quiet run
            "print(*[w.proc.pid for w in b._workers], s._proc.pid, flush=True)\n"
            "time.sleep(600)\n")
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    pids = [int(p) for p in proc.stdout.readline().split()]
    assert len(pids) == 3
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    deadline = time.monotonic() + 10
    alive = pids
    while alive and time.monotonic() < deadline:
        time.sleep(0.1)
        alive = [p for p in pids if os.path.exists(f"/proc/{p}") and _proc_state(p) != "Z"]
    assert not alive, f"children {alive} outlived their killed parent"
