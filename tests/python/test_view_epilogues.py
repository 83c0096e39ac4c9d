"""The epilogue of a 1x1 convolution, read through the NCHW view of its contraction, runs
in the contraction's (n, f, h * w) shape and is computed on its register tile."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import mlc_mlir as mlc
from mlc_mlir import te, topi
from mlc_mlir.schedule import Schedule
from mlc_mlir.schedule.rules import apply_rules, window_strategies
from mlc_mlir.schedule.view_epilogues import collapse_view_epilogues


def _pointwise(batch: int, c: int, hw: int, f: int, *, residual: bool) -> mlc.Module:
    x, w = te.placeholder((batch, c, hw, hw), name="x"), te.placeholder((f, c, 1, 1), name="w")
    b = te.placeholder((1, f, 1, 1), name="b")
    conv = topi.nn.conv2d(x, w, 1, 0)
    args = [x, w, b]
    if residual:
        r = te.placeholder((batch, f, hw, hw), name="r")
        args.append(r)
        y = te.compute(conv.shape, lambda n, k, i, j: conv[n, k, i, j] + b[0, k, 0, 0] + r[n, k, i, j], name="add")
    else:
        y = te.compute(conv.shape, lambda n, k, i, j: te.min(te.max(conv[n, k, i, j] + b[0, k, 0, 0], 0.0), 6.0),
                       name="clip")
    return mlc.Module.parse(str(te.create_prim_func([*args, y], name="pw")))


@pytest.mark.parametrize("residual", [False, True], ids=["bias_relu6", "bias_residual"])
@pytest.mark.parametrize("batch,c,hw,f", [(2, 16, 12, 24), (1, 8, 7, 20)])
def test_pointwise_epilogue_runs_collapsed_on_the_register_tile(residual, batch, c, hw, f):
    mod = window_strategies(_pointwise(batch, c, hw, f, residual=residual))
    text = str(mod)
    epi = "add" if residual else "clip"
    line = next(ln for ln in text.splitlines() if f'mlc.block = "{epi}"' in ln)
    # the epilogue over the contraction's (n, f, h * w) ((f, h * w) for a batch of one)
    assert f"x{hw * hw}xf32>" in line and f"x{hw}x{hw}xf32>" not in line, text
    if residual:
        assert "tensor.collapse_shape %arg3" in text, text
    sch = Schedule(mod)
    apply_rules(sch, "llvm -mcpu=haswell -num-cores=2")
    trace = str(sch.trace)
    assert f'sch.get_block(name="{epi}"' in trace and "sch.reverse_compute_at(" in trace, trace
    rng = np.random.default_rng(11)
    shapes = [(batch, c, hw, hw), (f, c, 1, 1), (1, f, 1, 1)] + ([(batch, f, hw, hw)] if residual else [])
    vals = [rng.standard_normal(s).astype("float32") for s in shapes]
    t = [torch.from_numpy(v) for v in vals]
    y = F.conv2d(t[0], t[1]) + t[2]
    want = (y + t[3] if residual else torch.clamp(y, 0, 6)).numpy()
    out = np.zeros(want.shape, "float32")
    mlc.build(sch.mod)["pw"](*vals, out)
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)


def test_epilogue_reading_a_row_index_is_left_as_it_is():
    """A block whose body reads ``linalg.index`` (here: the output row) would change meaning
    collapsed: left alone."""
    x, w = te.placeholder((1, 4, 6, 6), name="x"), te.placeholder((8, 4, 1, 1), name="w")
    conv = topi.nn.conv2d(x, w, 1, 0)
    y = te.compute(conv.shape, lambda n, k, i, j: conv[n, k, i, j] * te.const(1.0, "float32") + i.astype("float32"),
                   name="rowadd")
    mod = window_strategies(mlc.Module.parse(str(te.create_prim_func([x, w, y], name="pw"))))
    assert collapse_view_epilogues(mod) is mod
    line = next(ln for ln in str(mod).splitlines() if 'mlc.block = "rowadd"' in ln)
    assert "tensor<1x8x6x6xf32>" in line, str(mod)
    rng = np.random.default_rng(12)
    xv, wv = rng.standard_normal((1, 4, 6, 6)).astype("float32"), rng.standard_normal((8, 4, 1, 1)).astype("float32")
    want = (F.conv2d(torch.from_numpy(xv), torch.from_numpy(wv)) + torch.arange(6.0).reshape(1, 1, 6, 1)).numpy()
    out = np.zeros(want.shape, "float32")
    mlc.build(mod)["pw"](xv, wv, out)
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)
