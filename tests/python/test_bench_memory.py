"""benchmarks/bench_memory.py's measure (the bytes malloc hands out during a call, at their
peak) on known allocations, and our build's memory plan against it: what a graph call
allocates is the plan's peak (its buffers and kernel scratch) and the output."""

import sys

import numpy as np
import pytest
from _benchmarks import load_benchmark
from test_memory_plan import chain_module

import mlc_mlir as mlc

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallinfo2")


@pytest.fixture(scope="module")
def bench():
    load_benchmark("bench_common")
    load_benchmark("bench_models")  # bench_memory imports it by name
    return load_benchmark("bench_memory")


def test_a_kept_allocation_counts(bench):
    kept = []
    rise = bench._call_rise_mb(lambda: kept.append(np.ones(10 << 18, "float32")))  # 10 MB
    assert 9.9 <= rise <= 10.5, rise
    assert bench._call_rise_mb(lambda: None) < 0.1


def test_a_graph_call_allocates_its_planned_peak(bench):
    mod, _ = chain_module([512, 1024, 512, 1024, 512, 1024, 256], batch=256)
    ex = mlc.graph.build(mod, "llvm")
    plan = ex.memory_plan["main"]
    fn = mlc.graph.VirtualMachine(ex, mlc.cpu())["main"]
    x = np.random.default_rng(0).standard_normal((256, 512)).astype("float32")
    outs = []
    rise = bench._call_rise_mb(lambda: outs.append(fn(x)))  # the output kept: counted
    out_mb = 256 * 256 * 4 / 2**20
    assert plan.buffers == 1 and plan.planned_bytes == (1024 + 512) * 256 * 4
    # the arena is freed by the time the call returns; the peak is the plan's
    assert plan.peak_bytes / 2**20 <= rise + 0.05 and rise <= plan.peak_bytes / 2**20 + out_mb + 1.0, (rise, plan)
