"""Wiring (MetaSchedule's tune.py): ``tune_tir``, ``compile_tir``, ``tune_model``."""

from __future__ import annotations

import logging
import os
import re
from typing import Any

from mlir import ir

from ..context import mlc_context
from ..errors import MlcError, TuneError
from ..graph.ir.analysis import graph_functions, walk_ops
from ..graph.legalize import DEFAULT_OP_MAP
from ..graph.transform.optimize import optimize
from ..ir import Module
from ..schedule import Schedule, Trace
from ..schedule.rules import window_strategies
from ..schedule.gpu_rules import gpu_space
from .cost_model import CostModel
from .database import JSONDatabase, TuningRecord, workload_key
from .features import program_flops
from .local import LocalBackend
from .measure import NO_GPU
from .model_check import keep_faster_kernels
from .sampler import IsolatedSpace, Sampler
from .search_strategy import EvolutionarySearch
from .space_generator import ScheduleFn, make_space
from .target import parse_target
from .task_scheduler import TaskScheduler, TuneTask

__all__ = ["tune_tir", "compile_tir", "tune_model"]

log = logging.getLogger("mlc_mlir.tune")
#: unit attribute on a tensor program that tune_model swapped in (already scheduled)
TUNED_ATTR = "mlc.tuned"


def _positive(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise TuneError(f"{name} must be a positive int, got {value!r}")
    return value


def _as_module(mod: Any, what: str) -> Module:
    if isinstance(mod, ir.Module):
        return Module(mod)
    if not isinstance(mod, Module):
        raise TuneError(f"{what}: mod must be an mlc.Module, got {type(mod).__name__}")
    return mod


def _make_task(name: str, mod: Module, func: str, space: Any, target: Any, db: JSONDatabase,
               seed: int | None, cost_model: CostModel | None, weight: float = 1.0,
               sampler: Sampler | None = None) -> TuneTask:
    key = workload_key(mod)
    try:
        flops = program_flops(Schedule(mod))
    except MlcError as exc:
        raise TuneError(f"task {name!r}: the module is not a schedulable tensor program: {exc}") from None
    gen = make_space(_default_space(space, target), target.text)
    if sampler is not None and not isinstance(gen, IsolatedSpace):
        gen = IsolatedSpace(gen, sampler, on_crash=lambda seed, why: _sample_failed(db, task, seed, why))
    search = EvolutionarySearch(gen, mod, seed=seed, cost_model=cost_model)
    task = TuneTask(name, mod, func, key, flops, search, weight=weight)
    db.commit_workload(key, name, str(mod), flops)
    old = [r for r in db.records(key) if r.extra.get("stage") != "sample"]
    task.failed += len(db.records(key)) - len(old)
    if old:
        log.info("task %s: resuming from %d records in %s", name, len(old), db.path)
        search.seen.update(r.decisions for r in old)
        search.resume([(r.trace, r.mean_secs) for r in old])
        for r in old:
            task.add(r.mean_secs)
        task.rounds = 1
        task.history.append(task.best_secs)
    return task


def _default_space(space: Any, target: Any) -> Any:
    """``space=None`` on a CUDA target: the tunable GPU rules (``gpu_rules.gpu_space``)."""
    if space is None and target.kind == "cuda":
        return ScheduleFn(gpu_space)
    return space


def _sample_failed(db: JSONDatabase, task: TuneTask, seed: int, why: str) -> None:
    """A sample whose process died or hung: one failed record (no trace), the run goes on."""
    log.warning("task %s: sampling seed %d failed: %s", task.name, seed, why)
    db.commit(TuningRecord(task.key, task.name, {"version": 1, "insts": []}, f"sample-seed:{seed}", None,
                           f"sample: {why}", extra={"stage": "sample", "seed": seed}))
    task.failed += 1


def _run(tasks: list[TuneTask], db: JSONDatabase, target: Any, *, max_trials: int, per_iter: int,
         backend: Any, num_workers: int | None, measure: dict[str, Any] | None, progress: bool) -> None:
    own = backend is None
    if own:
        # CUDA reserves far more address space than it uses: no RLIMIT_AS for GPU workers
        backend = LocalBackend(num_workers=num_workers, core_sets=target.core_sets(), threads=target.num_cores,
                               mem_limit_gb=None if target.kind == "cuda" else 8.0)
    try:
        scheduler = TaskScheduler(tasks, backend, db, target, max_trials=max_trials, num_trials_per_iter=per_iter,
                                  measure_opts=measure, progress=progress)
        scheduler.run()
        scheduler.validate()  # (nothing to validate where nothing ran: CUDA without a GPU)
    finally:
        if own:
            backend.close()


def tune_tir(mod: Module, target: Any = "llvm", max_trials_global: int = 64, num_trials_per_iter: int = 64,
             space: Any = None, work_dir: str | os.PathLike = "./tune_tmp", task_name: str = "main",
             seed: int | None = None, *, backend: Any = None, num_workers: int | None = None,
             cost_model: CostModel | None = None, measure: dict[str, Any] | None = None,
             progress: bool = True, isolate: bool = True) -> JSONDatabase:
    """Tune one tensor program (course: ``ms.tune_tir``); returns the database.

    Args:
        mod: a module with one tensor program (or one called ``task_name``).
        target: ``"llvm"`` or ``"llvm --num-cores=N"`` (cores per measurement), or
            ``"cuda"`` (default space: ``mlc.schedule.gpu_rules.gpu_space``; without a GPU
            every candidate is compiled and checked by ptxas, then TuneError says none ran).
        max_trials_global: candidates to measure in all (a resumed run counts the
            records already in ``work_dir``).
        num_trials_per_iter: candidates per batch (the cost model is refit after each).
        space: ``None`` (auto-scheduling rules), :class:`ScheduleFn`, or a function.
        work_dir: where ``database.jsonl`` lives.
        backend: :class:`LocalBackend` (default) or :class:`RayBackend`.
        measure: options of each measurement (``number``, ``repeat``, ``min_repeat_ms``,
            ``rtol``, ``build_fn``).
        isolate: sample the space in a child process (:mod:`mlc_mlir.tune.sampler`: a
            space that aborts or hangs costs one failed record); ``False`` samples here.

    Example::

        db = mlc.tune.tune_tir(mod, "llvm --num-cores=1", max_trials_global=16,
                               num_trials_per_iter=8, space=mlc.tune.ScheduleFn(fn),
                               work_dir="./tune_tmp", task_name="main")
        sch = mlc.tune.compile_tir(db, mod, "llvm --num-cores=1")
        print(sch.trace)

    Raises:
        TuneError: bad arguments, or a space that yields no valid candidate at all.
    """
    mod = _as_module(mod, "tune_tir")
    tgt = parse_target(target)
    _positive("max_trials_global", max_trials_global)
    _positive("num_trials_per_iter", num_trials_per_iter)
    funcs = mod.functions
    if not funcs:
        raise TuneError("tune_tir: the module has no function")
    func = task_name if task_name in funcs else funcs[0]
    if len(funcs) > 1 and task_name not in funcs:
        raise TuneError(f"tune_tir: the module has functions {funcs}; pass task_name= one of them")
    db = JSONDatabase(work_dir)
    sampler = Sampler() if isolate else None
    try:
        task = _make_task(task_name, mod, func, space, tgt, db, seed, cost_model, sampler=sampler)
        _run([task], db, tgt, max_trials=max_trials_global, per_iter=num_trials_per_iter, backend=backend,
             num_workers=num_workers, measure=measure, progress=progress)
    finally:
        if sampler is not None:
            sampler.close()
    _check_measured(db, [task], tgt)
    if task.trials == 0:
        raise TuneError(f"tune_tir: the space {task.search.space!r} produced no valid candidate "
                        f"({task.search.rejected} rejected; last error: {task.search.last_error})")
    return db


def _check_measured(db: JSONDatabase, tasks: list[TuneTask], target: Any) -> None:
    """On a CUDA target where no GPU is present, say so (every candidate was built, none run)."""
    if target.kind != "cuda":
        return
    recs = [r for t in tasks for r in db.records(t.key)]
    no_gpu = [r for r in recs if r.error and NO_GPU in r.error]
    if no_gpu and not any(r.ok for r in recs):
        kinds = sorted({str(r.extra.get("binary")) for r in no_gpu})
        raise TuneError(f"tuning for {target.text!r}: {NO_GPU} here; {len(no_gpu)} candidates were compiled "
                        f"(kernel binary format {'/'.join(kinds)}: 'bin' = PTX assembled by ptxas) and recorded "
                        f"in {db.path} as failed, none measured")


def _database(database: Any) -> JSONDatabase:
    if isinstance(database, JSONDatabase):
        return database
    if isinstance(database, (str, os.PathLike)):
        return JSONDatabase(database)
    raise TuneError(f"expected a database (tune_tir's result) or a work_dir, got {type(database).__name__}")


def compile_tir(database: Any, mod: Module, target: Any = "llvm") -> Schedule:
    """The best schedule of ``mod`` found in ``database`` (course: ``ms.tir_integration.compile_tir``).

    Its ``trace`` prints and replays; its ``mod`` builds. ``database`` may be a work_dir.

    Raises:
        TuneError: the database has no successful record of this module.
    """
    db = _database(database)
    mod = _as_module(mod, "compile_tir")
    parse_target(target)
    best = db.best(workload_key(mod))
    if not best:
        raise TuneError(f"compile_tir: {db.path} has no successful record of this module "
                        f"({len(db)} records of {len(db.workloads)} other workloads)")
    return Schedule(mod).replay(Trace.from_json(best[0].trace, mod))


def _prim_funcs(mod: Module) -> list[str]:
    return [name for name in mod.functions if "mlc.prim_func" in mod[name].op.attributes]


def _graph_ops(mod: Module) -> list[str]:
    """The graph ops (``mlc.matmul``...) that the graph functions of ``mod`` still hold, sorted."""
    with mlc_context():
        return sorted({o.name for f in graph_functions(mod.mlir_module) for o in walk_ops(f)
                       if o.name in DEFAULT_OP_MAP})


def _lower_graph_ops(mod: Module) -> Module:
    """``mod`` with its graph ops lowered to tensor programs as ``mlc.graph.build`` lowers them."""
    ops = _graph_ops(mod)
    if not ops:
        return mod

    log.info("tune_model: lowering the graph ops %s to tensor programs first (mlc.graph.optimize, opt_level 2: "
             "fusion, LegalizeOps, FuseTIR)", ", ".join(o[4:] for o in ops))
    return optimize(mod, opt_level=2)


def _call_counts(mod: Module, prims: list[str]) -> dict[str, int]:
    graph_text = "\n".join(str(mod[n].op) for n in mod.functions if n not in prims)
    return {p: len(re.findall(rf'(?:@|"){re.escape(p)}\b"?', graph_text)) for p in prims}


def tune_model(mod: Module, target: Any = "llvm", max_trials_global: int = 64,
               work_dir: str | os.PathLike = "./tune_tmp", *, num_trials_per_iter: int = 8, space: Any = None,
               seed: int | None = None, backend: Any = None, num_workers: int | None = None,
               funcs: list[str] | None = None, measure: dict[str, Any] | None = None,
               progress: bool = True, isolate: bool = True, check_model: bool = True) -> Module:
    """Tune every tensor program of a graph module and return a copy with the best kernels
    swapped in (course: ``relax_integration.tune_relax`` + ``compile_relax``).

    Graph ops (``matmul``, ``add``...) are lowered first, as ``mlc.graph.build`` lowers them
    (:func:`mlc_mlir.graph.optimize` at opt_level 2: FuseOps, LegalizeOps, FuseTIR), so the
    kernels tuned are the ones the build runs and the module returned holds them (TVM's
    ``tune_relax`` legalizes inside too); run ``LegalizeOps`` first to tune one kernel per op.
    Swapped-in kernels carry the unit attribute ``mlc.tuned``. The task scheduler shares
    ``max_trials_global`` among the kernels by weight (call sites) and measured gain; each
    kernel gets at least one batch. ``space`` is one
    space for all kernels or ``{name: space}``; ``funcs`` restricts the kernels tuned;
    ``isolate`` as in :func:`tune_tir`. With ``check_model`` (CPU targets) the model's
    ``main`` is timed at the end with and without each tuned kernel, and a kernel that makes
    the model slower goes back to the default rules (:mod:`.model_check`).

    Raises:
        TuneError: the module has neither a tensor program nor a graph op, or an unknown
            name in ``funcs``.
    """
    mod = _as_module(mod, "tune_model")
    tgt = parse_target(target)
    _positive("max_trials_global", max_trials_global)
    _positive("num_trials_per_iter", num_trials_per_iter)
    mod = _lower_graph_ops(mod)
    if tgt.kind != "cuda":  # the kernels the CPU default schedule runs: named convolutions as im2col + gemm
        mod = window_strategies(mod, tgt.text)
    prims = _prim_funcs(mod)
    if not prims:
        raise TuneError("tune_model: the module has no tensor program (func.func with mlc.prim_func) and no graph "
                        "op to lower to one")
    names = prims if funcs is None else list(funcs)
    unknown = [n for n in names if n not in prims]
    if unknown:
        raise TuneError(f"tune_model: funcs {unknown} are not tensor programs of the module; they are {prims}")
    counts = _call_counts(mod, prims)
    db = JSONDatabase(work_dir)
    tasks = []
    sampler = Sampler() if isolate else None
    try:
        for i, name in enumerate(names):
            with mlc_context():
                sub = Module.parse(str(mod[name].op))
            task_space = space.get(name) if isinstance(space, dict) else space
            tasks.append(_make_task(name, sub, name, task_space, tgt, db, None if seed is None else seed + i,
                                    None, weight=max(1, counts.get(name, 1)), sampler=sampler))
        _run(tasks, db, tgt, max_trials=max_trials_global, per_iter=num_trials_per_iter, backend=backend,
             num_workers=num_workers, measure=measure, progress=progress)
    finally:
        if sampler is not None:
            sampler.close()
    _check_measured(db, tasks, tgt)
    out = mod.clone()
    for task in tasks:
        best = db.best(task.key)
        if not best:
            log.warning("tune_model: no successful candidate for %s; it keeps its default schedule", task.name)
            continue
        sch = Schedule(task.mod).replay(Trace.from_json(best[0].trace, task.mod))
        out.update_func(task.name, sch.mod[task.name])
        with mlc_context():
            out[task.name].op.attributes[TUNED_ATTR] = ir.UnitAttr.get()
    if check_model and tgt.kind != "cuda":
        tuned = [t.name for t in tasks if TUNED_ATTR in out[t.name].op.attributes]
        out = keep_faster_kernels(mod, out, tuned, tgt.text, TUNED_ATTR)
    return out
