"""Default GPU schedules by rule (the analogue of TVM's DLight fallback rules).

Every block of every tensor program gets one kernel:

* its static spatial loops come first (``reorder``), the innermost one is split by
  ``threads`` and bound to ``blockIdx.x`` / ``threadIdx.x``, the next two are bound to
  ``blockIdx.y`` and ``blockIdx.z``; further outer static loops (the batch of a convolution
  or of a batched matmul) and symbolic spatial loops stay serial inside each thread (grids
  must be static; no loop is fused, so a reduction's init sits under plain loops);
* a reduction block keeps its reduction loops serial inside (one thread per output
  element) and its init moves under the bound loops (``decompose_reduction``); with
  ``tunable=True`` the innermost reduction loop is split by a sampled factor and its inner
  part unrolled.

With ``tunable=True`` the thread count and the reduction split are ``sample_categorical`` /
``sample_perfect_tile`` decisions recorded in the trace, labelled ``"<block>.threads"`` and
``"<block>.k_unroll"``, so a tuner can mutate and replay them
(``space=mlc.tune.ScheduleFn(gpu_space)``).

    sch = mlc.Schedule(mod)
    apply_gpu_rules(sch)                       # or gpu_space(sch) for the tunable form
    rt = mlc.build(sch.mod, target="cuda")
"""

from __future__ import annotations

from ..errors import ScheduleError
from ..ir import Module
from .pad_blocks import pads_as_blocks
from .schedule import Schedule

__all__ = ["apply_gpu_rules", "gpu_space", "default_gpu_schedule", "THREAD_CHOICES", "MAX_GRID_Y"]

THREAD_CHOICES = (32, 64, 128, 256, 512)
DEFAULT_THREADS = 256
MAX_GRID_Y = 65535


def _threads_for(extent: int, threads: int) -> int:
    """The threads per block for an innermost extent: ``threads``, or the extent rounded
    up to a multiple of 32 when it is smaller (no idle warps)."""
    return min(threads, max(32, -(-extent // 32) * 32)) if extent < threads else threads


def _schedule_block(sch: Schedule, func: str, name: str, *, threads: int | None, tunable: bool) -> None:
    block = sch.get_block(name, func_name=func)
    info = sch._funcs[func].blocks[name].info
    loops = sch.get_loops(block)
    kinds = list(zip(loops, info.iters, info.extents))
    spatial = [lp for lp, it, e in kinds if it == "parallel" and e is not None]
    extents = [e for _, it, e in kinds if it == "parallel" and e is not None]
    symbolic = [lp for lp, it, e in kinds if it == "parallel" and e is None]  # serial in each thread
    reduction = [lp for lp, it, _ in kinds if it != "parallel"]
    if not spatial:
        raise ScheduleError(f"GPU rules: block {name!r} of @{func} has no static spatial loop to bind (extents "
                            f"{info.extents}); a full reduction to a scalar needs a cross-thread reduction, "
                            "which the GPU rules do not generate")
    if None in [e for _, it, e in kinds if it != "parallel"]:
        raise ScheduleError(f"GPU rules: block {name!r} of @{func} has a symbolic reduction extent")
    if loops != spatial + symbolic + reduction:
        sch.reorder(*spatial, *symbolic, *reduction)
    if tunable:
        threads = int(sch.sample_categorical(list(THREAD_CHOICES), [1 / len(THREAD_CHOICES)] * len(THREAD_CHOICES),
                                             label=f"{name}.threads"))
    # the innermost spatial loop on blockIdx.x / threadIdx.x, the next two on blockIdx.y and
    # blockIdx.z; outer ones (a batch) stay serial in each thread, between the bound loops
    # and the reduction, so the init of a reduction sits under unfused loops only
    grid, serial = spatial[-3:-1], spatial[:-3]
    if serial:
        sch.reorder(*grid, spatial[-1], *serial, *symbolic, *reduction)
    nthreads = _threads_for(extents[-1], threads or DEFAULT_THREADS)
    bx, tx = sch.split(spatial[-1], [None, nthreads])
    for loop, extent, axis in zip(reversed(grid), reversed(extents[-3:-1]), "yz"):
        if extent > MAX_GRID_Y:
            raise ScheduleError(f"GPU rules: block {name!r} of @{func} needs {extent} blocks along {axis}; CUDA "
                                f"allows {MAX_GRID_Y}")
        sch.bind(loop, f"blockIdx.{axis}")
    sch.bind(bx, "blockIdx.x")
    sch.bind(tx, "threadIdx.x")
    if reduction and tunable:
        factors = sch.sample_perfect_tile(reduction[-1], 2, max_innermost_factor=8, label=f"{name}.k_unroll")
        _, k_inner = sch.split(reduction[-1], factors)
        sch.unroll(k_inner)
    if reduction and info.has_init:
        now = sch.get_loops(block)
        n_reduction = len(reduction) + (1 if tunable else 0)
        sch.decompose_reduction(block, now[len(now) - n_reduction])


def apply_gpu_rules(sch: Schedule, *, threads: int = DEFAULT_THREADS, tunable: bool = False,
                    funcs: list[str] | None = None) -> Schedule:
    """Bind every block of the tensor programs of ``sch`` (or of ``funcs``) by rule.

    Raises:
        ScheduleError: a block the rules cannot map (no spatial loop, symbolic extents,
            a grid over the CUDA limits).
    """
    if tunable and threads != DEFAULT_THREADS:
        raise ScheduleError("apply_gpu_rules: threads= is a decision of the tunable form; pass one or the other")
    if threads not in THREAD_CHOICES and not (isinstance(threads, int) and 1 <= threads <= 1024):
        raise ScheduleError(f"apply_gpu_rules: threads must be 1..1024, got {threads!r}")
    for func in funcs if funcs is not None else sorted(sch._funcs):
        fstate = sch._funcs[func]
        for name in [n for n, b in sorted(fstate.blocks.items(), key=lambda kv: kv[1].info.order)
                     if b.cache_scope is None]:
            _schedule_block(sch, func, name, threads=None if tunable else threads, tunable=tunable)
    return sch


def gpu_space(sch: Schedule) -> Schedule:
    """The tunable GPU space: :func:`apply_gpu_rules` with sampled decisions (a schedule
    function for ``mlc.tune``'s ``ScheduleFn``)."""
    return apply_gpu_rules(sch, tunable=True)


def default_gpu_schedule(mod: Module, *, threads: int = DEFAULT_THREADS) -> Module:
    """``mod`` with every tensor program bound by the default rules (graph builds for cuda);
    a ``tensor.pad`` (a convolution's or pool's input) becomes a block, and a kernel, of its
    own first (:func:`~.pad_blocks.pads_as_blocks`)."""
    mod = mod.clone()
    pads_as_blocks(mod)
    sch = Schedule(mod)
    if not sch._funcs:
        return mod
    apply_gpu_rules(sch, threads=threads)
    return sch.mod
