"""One-row contractions (a classifier at batch 1) stream B by rows (``rule_gemv``): k outside
the row of columns, one block of whole vectors per core, the columns vectorized; decision
``row_stream`` gives the register tile back; smaller B, more rows or columns that are no
whole vectors keep the register tile. Every form equals NumPy."""

import numpy as np
import pytest

import mlc_mlir as mlc
from mlc_mlir import te
from mlc_mlir.schedule.rule_gemv import ROW_STREAM_MIN_BYTES
from mlc_mlir.schedule.rules import apply_rules


def _linear(m, k, n):
    a = te.placeholder((m, k), name="A")
    b = te.placeholder((k, n), name="B")
    bias = te.placeholder((n,), name="bias")
    r = te.reduce_axis((0, k), "k")
    c = te.compute((m, n), lambda i, j: te.sum(a[i, r] * b[r, j], axis=r), name="matmul")
    d = te.compute((m, n), lambda i, j: c[i, j] + bias[j], name="add")
    return te.create_prim_func([a, b, bias, d], name="mm")


def _run(m, k, n, target, decide=None):
    sch = mlc.Schedule(_linear(m, k, n))
    apply_rules(sch, target, decide=decide)
    rng = np.random.default_rng(7)
    a, b, bias = (rng.standard_normal(s).astype("float32") for s in ((m, k), (k, n), (n,)))
    out = np.full((m, n), np.nan, "float32")
    mlc.build(sch.mod)["mm"](a, b, bias, out)
    np.testing.assert_allclose(out, a @ b + bias, rtol=1e-4, atol=1e-3)
    return str(sch.trace)


@pytest.mark.parametrize("cores,blocks", [(1, 1), (2, 5)])
def test_one_row_streams_b_by_rows(cores, blocks):
    # MobileNet-v2's classifier: 1280 x 1000 (5 MB of B); on AVX2 (pinned: the rule counts the
    # target's vectors) 125 vectors of columns in 5 blocks
    # on two cores; k (l3) outside the columns' loops
    trace = _run(1, 1280, 1000, f"llvm -mcpu=haswell --num-cores={cores}")
    assert f"factors=[{blocks}, None, 8]" in trace, trace
    assert "sch.reorder(l1, l4, l3, l5, l6)" in trace, trace
    assert ("sch.parallel(loop=l4)" in trace) == (cores > 1), trace


def test_row_stream_is_a_decision():
    trace = _run(1, 1280, 1000, "llvm -mcpu=haswell --num-cores=1", decide={"row_stream": 0})
    assert "factors=[1, None, 8]" not in trace and 'label="matmul.cols"' in trace, trace  # the register tile's


@pytest.mark.parametrize("m,k,n", [(1, 64, 128), (2, 1280, 1000), (1, 1280, 1001)])
def test_others_keep_the_register_tile(m, k, n):
    # a small B (32 KB), two rows, columns that are no whole vectors
    assert m > 1 or n % 8 or k * n * 4 < ROW_STREAM_MIN_BYTES
    trace = _run(m, k, n, "llvm -mcpu=haswell --num-cores=2")
    assert "None, 8]" not in trace.split("get_block(name=\"add\"")[0], trace
