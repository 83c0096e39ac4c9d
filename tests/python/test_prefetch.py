"""Software prefetch of the rows a 1x1 convolution's tile steps through (compiler/prefetch.py):
a reduction that jumps (nearly) a page or more per step gets a prefetch of the same row two
column tiles ahead (rows of 1000 floats, a classifier's weights, too); results equal NumPy;
rows closer together (a 28 x 28 image's 3136 bytes) get none."""

import numpy as np
import pytest

import mlc_mlir as mlc
from mlc_mlir import te
from mlc_mlir.schedule import Schedule
from mlc_mlir.schedule.rules import apply_rules


def pointwise(f: int, c: int, pixels: int) -> mlc.Module:
    """``y[f, p] = sum_c w[f, c] * x[c, p]``: a 1x1 convolution of one NCHW image viewed (C, H*W)."""
    w = te.placeholder((f, c), "float32", name="w")
    x = te.placeholder((c, pixels), "float32", name="x")
    k = te.reduce_axis((0, c), "k")
    y = te.compute((f, pixels), lambda i, p: te.sum(w[i, k] * x[k, p], axis=k), name="Y")
    return te.create_prim_func([w, x, y], name="pointwise")


def _after_vector_opt(capfd, mod: mlc.Module):
    rt = mlc.build(mod, print_after_all=True)
    err = capfd.readouterr().err
    return rt, err.split("IR Dump After vector-opt //----- //", 1)[1].split("// -----// IR Dump After", 1)[0]


@pytest.mark.parametrize("pixels, prefetched", [(3136, True), (12544, True), (1000, True), (784, False)])
def test_rows_a_page_apart_are_prefetched(capfd, pixels, prefetched):
    sch = Schedule(pointwise(16, 24, pixels))
    apply_rules(sch, "llvm -num-cores=1")
    rt, ir_text = _after_vector_opt(capfd, sch.mod)
    assert ("memref.prefetch" in ir_text) == prefetched, ir_text[:3000]
    if prefetched:  # two 16-column tiles ahead, within the row
        assert "arith.constant 32 : index" in ir_text and f"arith.constant {pixels - 1} : index" in ir_text
    rng = np.random.default_rng(3)
    w = rng.standard_normal((16, 24), dtype=np.float32)
    x = rng.standard_normal((24, pixels), dtype=np.float32)
    y = np.full((16, pixels), np.nan, np.float32)
    rt["pointwise"](w, x, y)
    np.testing.assert_allclose(y, w @ x, rtol=1e-4, atol=1e-4)
