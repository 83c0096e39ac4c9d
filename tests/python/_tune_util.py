"""Helpers of the tuning tests: the course's spaces, and build functions that crash, hang
or compute the wrong result (importable by name in the tuning worker processes)."""

from __future__ import annotations

import os
import sys
import time

import numpy as np

import mlc_mlir as mlc

from _schedule_util import matmul_text


def stochastic_schedule_mm(sch):
    """Course ch.4: 5 candidates on a 128 matmul (the j tiling)."""
    block_c = sch.get_block("C", "main")
    i, j, k = sch.get_loops(block=block_c)
    j_0, j_1 = sch.split(loop=j, factors=sch.sample_perfect_tile(loop=j, n=2))
    sch.reorder(i, j_0, k, j_1)
    sch.decompose_reduction(block_c, k)
    return sch


def two_level_mm(sch):
    """25 candidates: i and j both tiled by a sampled factor."""
    block_c = sch.get_block("C", "main")
    i, j, k = sch.get_loops(block=block_c)
    i_0, i_1 = sch.split(loop=i, factors=sch.sample_perfect_tile(loop=i, n=2))
    j_0, j_1 = sch.split(loop=j, factors=sch.sample_perfect_tile(loop=j, n=2))
    sch.reorder(i_0, j_0, i_1, k, j_1)
    return sch


def aborting_schedule_mm(sch):
    """stochastic_schedule_mm whose process aborts when j's inner factor is 16, and hangs
    when it is 8 (a ScheduleFn that crashes on some sampled decisions)."""
    block_c = sch.get_block("C", "main")
    i, j, k = sch.get_loops(block=block_c)
    factors = sch.sample_perfect_tile(loop=j, n=2)
    if int(factors[1]) == 16:
        os.abort()
    if int(factors[1]) == 8 and os.environ.get("MLC_TEST_SAMPLER_HANG"):
        time.sleep(600)
    j_0, j_1 = sch.split(loop=j, factors=factors)
    sch.reorder(i, j_0, k, j_1)
    sch.decompose_reduction(block_c, k)
    return sch


class FirstThenMutateSpace(mlc.tune.SpaceGenerator):
    """A space with its own ``initial`` (which applies the schedule with MLIR: reads
    ``sch.mod``) and ``mutate`` (aborts when MLC_TEST_MUTATE_ABORT is set)."""

    def generate(self, mod, seed):
        return stochastic_schedule_mm(mlc.Schedule(mod, seed=seed))

    def initial(self, mod):
        sch = self.generate(mod, 0)
        assert "scf.for" in str(sch.mod)
        return [sch]

    def mutate(self, mod, trace, rng):
        from mlc_mlir.tune.mutator import mutate_decision

        if os.environ.get("MLC_TEST_MUTATE_ABORT"):
            os.abort()
        child = mutate_decision(trace, rng)
        sch = mlc.Schedule(mod)
        child.replay_into(sch)
        return sch


class _WrongRuntime:
    """A runtime module whose kernel writes a wrong result."""

    def __init__(self, rt):
        self.rt = rt

    def __getitem__(self, name):
        func = self.rt[name]

        def wrong(*args):
            func(*args)
            args[-1][0, 0] += 1.0

        wrong.signature = func.signature
        return wrong

    def time_evaluator(self, *args, **kwargs):
        return self.rt.time_evaluator(*args, **kwargs)


#: the build and run deadline of the misbehaving-candidate tests: generous (a loaded machine
#: never takes this long over a build or run of these small kernels), as only the hanging
#: candidate is meant to reach it
HANG_TIMEOUT = 20


def misbehaving_build(mod, target):
    """j inner 16: abort; 8: hang (until a deadline kills it); 2: wrong result; otherwise a
    normal build."""
    text = str(mod)
    if "step %c16" in text:
        os.abort()
    if "step %c8" in text:
        time.sleep(15 * HANG_TIMEOUT)  # bounded: with no working deadline the test fails, slowly
        raise RuntimeError("the hanging build was not stopped by its deadline")
    rt = mlc.build(mod, target)
    return _WrongRuntime(rt) if "step %c2" in text else rt


def resume_main(work_dir: str) -> None:
    """Run a tuning the test kills part-way (one candidate per batch)."""
    mod = mlc.Module.parse(matmul_text(64))
    mlc.tune.tune_tir(mod, "llvm --num-cores=1", max_trials_global=6, num_trials_per_iter=1,
                      space=mlc.tune.ScheduleFn(two_level_mm), work_dir=work_dir, seed=0, progress=False,
                      measure={"min_repeat_ms": 300.0, "repeat": 2})


if __name__ == "__main__":
    resume_main(sys.argv[1])


def te_linear(x, w, b):
    from mlc_mlir import te

    k = te.reduce_axis((0, x.shape[1]), name="k")
    y = te.compute((x.shape[0], w.shape[0]), lambda i, j: te.sum(x[i, k] * w[j, k], axis=k), name="Y")
    return te.compute(y.shape, lambda i, j: y[i, j] + b[j], name="Z")


def te_relu(x):
    from mlc_mlir import te

    return te.compute(x.shape, lambda i, j: te.max(x[i, j], 0.0), name="R")


def mlp_module(batch: int = 4, hidden: int = 32):
    """main(x, w0, b0, w1, b1) = linear(relu(linear(x))) with three tensor programs."""
    from mlc_mlir.graph import BlockBuilder, Var

    bb = BlockBuilder()
    x = Var("x", (batch, 64), "float32")
    w0, b0 = Var("w0", (hidden, 64), "float32"), Var("b0", (hidden,), "float32")
    w1, b1 = Var("w1", (16, hidden), "float32"), Var("b1", (16,), "float32")
    with bb.function("main", params=[x, w0, b0, w1, b1]):
        with bb.dataflow():
            h = bb.emit_te(te_linear, x, w0, b0)
            h = bb.emit_te(te_relu, h)
            out = bb.emit_output(bb.emit_te(te_linear, h, w1, b1))
        bb.emit_func_output(out)
    return bb.get()


def linear_space(sch):
    """Tile the output columns of the matmul block Y by a sampled factor, reduction inside."""
    func = sch.mod.functions[0]
    block = sch.get_block("Y", func)
    i, j, k = sch.get_loops(block)
    j_0, j_1 = sch.split(j, factors=sch.sample_perfect_tile(j, n=2))
    sch.reorder(i, j_0, k, j_1)
    return sch


def relu_space(sch):
    func = sch.mod.functions[0]
    i, j = sch.get_loops(sch.get_block("R", func))
    sch.split(j, factors=sch.sample_perfect_tile(j, n=2))
    return sch
