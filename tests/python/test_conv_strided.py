"""Strided convolutions in the default schedule: im2col reads the padded input split in its
column stride phases, so every tap reads consecutive pixels along the output row (no
stride-2 gathers); equal to torch, static and symbolic batch."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import mlc_mlir as mlc
from mlc_mlir import te, topi
from mlc_mlir.schedule.rules import default_schedule, window_strategies


def _conv(batch, c, hw, f, k, stride, pad, dilation=1):
    x, w = te.placeholder((batch, c, hw, hw), name="x"), te.placeholder((f, c, k, k), name="w")
    y = topi.nn.conv2d(x, w, stride, pad, dilation=dilation)
    return mlc.Module.parse(str(te.create_prim_func([x, w, y], name="conv")))


@pytest.mark.parametrize("batch,c,hw,f,k,stride,pad,dilation,phased", [
    (2, 3, 23, 8, 7, 2, 3, 1, True),     # a ResNet stem
    (1, 3, 16, 8, 3, 2, 1, 1, True),     # a MobileNet stem at a batch of one
    ("n", 4, 13, 6, 3, 3, 1, 1, True),   # stride 3, symbolic batch
    (2, 4, 12, 6, 3, 2, 2, 2, False),    # dilation 2 at stride 2: every tap in phase 0, read in place
    (2, 8, 10, 4, 1, 2, 0, 1, False),    # a 1x1 downsample reads one phase: read in place
])
def test_strided_conv_reads_column_phases_and_equals_torch(batch, c, hw, f, k, stride, pad, dilation, phased):
    mod = _conv(batch, c, hw, f, k, stride, pad, dilation)
    text = str(window_strategies(mod))
    im2col = next(ln for ln in text.splitlines() if 'mlc.block = "conv2d_im2col"' in ln)
    amap = im2col.split("indexing_maps = [")[1].split(",")[0]
    assert text.count("#map") and ('"conv2d_pad"' in text) == (phased or pad > 0), text
    # the phases' im2col reads the last index at d3 plus a constant (d3 * stride: the old gathers)
    maps = {ln.split(" = ")[0]: ln for ln in text.splitlines() if ln.startswith("#map")}
    assert (f"d3 * {stride}" not in maps[amap]) == phased, (maps[amap], text)
    rng = np.random.default_rng(13)
    n = 3 if batch == "n" else batch
    xv = rng.standard_normal((n, c, hw, hw)).astype("float32")
    wv = rng.standard_normal((f, c, k, k)).astype("float32")
    want = F.conv2d(torch.from_numpy(xv), torch.from_numpy(wv), stride=stride, padding=pad, dilation=dilation).numpy()
    out = np.zeros(want.shape, "float32")
    mlc.build(default_schedule(mod))["conv"](xv, wv, out)
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-4)
