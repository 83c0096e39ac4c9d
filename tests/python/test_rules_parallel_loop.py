"""The loop the default rules run in parallel is the outermost one with more than one
iteration: a batch of one leads the loop nests of a batch-1 model, and the rules ran its
elementwise, depthwise, pooling and softmax blocks on one core in a parallel loop of one
iteration (MobileNet-v2 at batch 1 on 2 cores: 11.1 -> 9.4 ms, interleaved)."""

import re

import numpy as np
import pytest

import mlc_mlir as mlc
from mlc_mlir import te, topi
from mlc_mlir.schedule import Schedule
from mlc_mlir.schedule.rules import apply_rules

TARGET = "llvm -mcpu=haswell -num-cores=2"


def _parallel_loop(trace: str, block: str) -> int:
    """The position, among the block's loops as first fetched, of the loop made parallel."""
    part = trace[trace.index(f'sch.get_block(name="{block}"'):]
    fetched = re.search(r"\n(l\d+(?:, l\d+)*) = sch.get_loops", part).group(1).split(", ")
    loop = re.search(r"sch\.parallel\(loop=(l\d+)\)", part).group(1)
    later = re.findall(r"\n(l\d+(?:, l\d+)*) = sch.get_loops", part)
    for names in [fetched] + [n.split(", ") for n in later]:
        if loop in names:
            return names.index(loop)
    raise AssertionError(trace)


@pytest.mark.parametrize("batch,size,expected", [(1, 56, 1), (2, 56, 0), (1, 28, 1)])
def test_elementwise_block_of_a_batch_of_one_runs_its_channels_in_parallel(batch, size, expected):
    # (64 x 28 x 28: 50K elements, in parallel from 32K: MobileNet-v2's 14 x 14 layers)
    x = te.placeholder((batch, 64, size, size), name="x")
    y = te.compute(x.shape, lambda n, c, i, j: te.max(x[n, c, i, j], 0.0), name="relu")
    sch = Schedule(te.create_prim_func([x, y], name="k"))
    apply_rules(sch, TARGET)
    assert _parallel_loop(str(sch.trace), "relu") == expected, sch.trace
    xv = np.random.default_rng(0).standard_normal((batch, 64, size, size), dtype=np.float32)
    out = np.zeros_like(xv)
    mlc.build(sch.mod)["k"](xv, out)
    np.testing.assert_array_equal(out, np.maximum(xv, 0))


def test_softmax_of_a_batch_of_one_runs_its_heads_in_parallel():
    x = te.placeholder((1, 12, 128, 128), name="x")
    sch = Schedule(te.create_prim_func([x, topi.nn.softmax(x)], name="k"))
    apply_rules(sch, TARGET)
    trace = str(sch.trace)
    # a row chain (rule_rows.py): every block at the result's rows, the batch of one and the
    # 12 heads fused into the parallel loop
    loops = re.search(r'sch.get_block\(name="softmax".*\n(l\d+), (l\d+), (l\d+), (l\d+) = sch.get_loops', trace)
    fused = re.search(rf"(l\d+) = sch.fuse\({loops.group(1)}, {loops.group(2)}\)\n", trace)
    assert fused and f"sch.parallel(loop={fused.group(1)})" in trace, trace
    for block in ("max", "sum"):
        assert re.search(rf'sch.get_block\(name="{block}".*\nsch.compute_at', trace), trace
    xv = np.random.default_rng(1).standard_normal((1, 12, 128, 128), dtype=np.float32)
    e = np.exp(xv - xv.max(-1, keepdims=True))
    out = np.zeros_like(xv)
    mlc.build(sch.mod)["k"](xv, out)
    np.testing.assert_allclose(out, e / e.sum(-1, keepdims=True), rtol=1e-5, atol=1e-7)
