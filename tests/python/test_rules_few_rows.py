"""The default rules on contractions with fewer rows than the register tile (batch 1..5 of a
linear layer): wider column tiles (see tests/lit/schedule/rules.py), equal to NumPy on
column counts the wide tile divides and on ones it does not."""

import numpy as np
import pytest

import mlc_mlir as mlc
from mlc_mlir import te
from mlc_mlir.schedule.rules import apply_rules


def linear_relu(m: int, n: int, k: int) -> mlc.Module:
    x = te.placeholder((m, k), "float32", name="x")
    w = te.placeholder((k, n), "float32", name="w")
    b = te.placeholder((n,), "float32", name="b")
    r = te.reduce_axis((0, k), "r")
    y = te.compute((m, n), lambda i, j: te.sum(x[i, r] * w[r, j], axis=r), name="Y")
    c = te.compute((m, n), lambda i, j: te.max(y[i, j] + b[j], 0), name="C")
    return te.create_prim_func([x, w, b, c], name="linear")


@pytest.mark.parametrize("m", [1, 2, 3, 5])
@pytest.mark.parametrize("n,k", [(128, 784), (72, 33), (40, 16)])
def test_few_rows_equal_numpy(rng, m, n, k):
    sch = mlc.Schedule(linear_relu(m, n, k))
    apply_rules(sch, "llvm -num-cores=1")
    x, w, b = (rng.standard_normal(s).astype("float32") for s in [(m, k), (k, n), (n,)])
    out = np.zeros((m, n), "float32")
    mlc.build(sch.mod)["linear"](x, w, b, out)
    np.testing.assert_allclose(out, np.maximum(x @ w + b, 0), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("m,n", [(128, 128), (127, 96), (6, 64)])
def test_column_blocks_per_core_equal_numpy(rng, m, n):
    """On two cores the rules may give each core a block of column tiles (all the rows)
    instead of a block of rows: decisions ``parallel`` and ``split_cores`` (with 127 rows
    there is no row block per core: columns without a decision; 2-row tiles then)."""
    k = 40
    sch = mlc.Schedule(linear_relu(m, n, k))
    apply_rules(sch, "llvm -mcpu=haswell -num-cores=2",
                decide={"Y.parallel": 1, "split_cores": 1} if m % 2 == 0 else {"Y.parallel": 1, "rows": 2})
    text = str(sch.trace)
    assert "factors=[2, None]" in text and "sch.parallel(" in text, text
    x, w, b = (rng.standard_normal(s).astype("float32") for s in [(m, k), (k, n), (n,)])
    out = np.zeros((m, n), "float32")
    mlc.build(sch.mod)["linear"](x, w, b, out)
    np.testing.assert_allclose(out, np.maximum(x @ w + b, 0), rtol=1e-4, atol=1e-4)
