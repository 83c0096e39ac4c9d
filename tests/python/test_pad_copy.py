"""Padded copies of narrow rows as a fill and a copy (``rewrite_named.pad_by_copy`` /
``copy_pads``): where an input's rows are no multiple of 8 pixels, the strategies' padded
copy (a select of clamped reads per padded pixel: vector gathers) becomes a fill of the
padded tensor and an identity copy of the rows into its interior (``insert_slice``), each
a block the rules schedule; wider rows keep the gathers. Equal to torch for depthwise
convolutions, pooling (the pad value -inf) and convolutions (the tiles' extra rows, the
bands, a batch)."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import mlc_mlir as mlc
from mlc_mlir import te, topi
from mlc_mlir.context import mlc_context
from mlc_mlir.schedule.payload import read_blocks
from mlc_mlir.schedule.rewrite_named import COPY_PAD_MAX_BYTES
from mlc_mlir.schedule.rules import default_schedule, window_strategies

T = torch.from_numpy


def _blocks(mod):
    with mlc_context():
        return sorted(name for _, name in read_blocks(mod.mlir_module))


def _check(mod, name, vals, want, *, copied):
    """``mod``'s strategies pad by a fill and a copy iff ``copied``; under the default
    rules ``name`` equals ``want``."""
    strat = window_strategies(mod)
    blocks, text = _blocks(strat), str(strat)
    fills = [b for b in blocks if b.endswith("_pad_fill")]
    assert bool(fills) == copied, blocks
    assert ("tensor.insert_slice" in text) == copied, text
    assert "mlc.pad_by_copy" not in text  # (the mark gone once rewritten, or never set)
    if copied:
        assert fills[0].removesuffix("_fill") in blocks  # the copy keeps the pad's name
    out = np.full(want.shape, np.nan, "float32")
    mlc.build(default_schedule(mod))[name](*vals, out)
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-4)


def _rng_vals(shapes, seed=3):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s).astype("float32") for s in shapes]


@pytest.mark.parametrize("batch,c,hw,copied", [(1, 12, 14, True), (2, 5, 7, True), (1, 3, 28, False),
                                               (1, 4, 16, False), ("n", 3, 14, False), (1, 300, 30, False),
                                               (1, 5, 13, True)])
def test_depthwise_pads_narrow_rows_by_copy(batch, c, hw, copied):
    # 14, 13 and 7 pixels a row: fill + copy; rows of whole 4-lane vectors from 16 on (16,
    # 28: windows.reads_in_place) read in place, clamped: no padded tensor; a symbolic batch
    # stays; a padded tensor over COPY_PAD_MAX_BYTES (300 x 32 x 32 floats, 1.2 MB) stays
    if c == 300:
        assert c * 32 * 32 * 4 > COPY_PAD_MAX_BYTES
    x = te.placeholder((batch, c, hw, hw), name="x")
    w = te.placeholder((c, 1, 3, 3), name="w")
    mod = mlc.Module.parse(str(te.create_prim_func([x, w, topi.nn.conv2d(x, w, 1, 1, groups=c)], name="dw")))
    n = 2 if batch == "n" else batch
    xv, wv = _rng_vals([(n, c, hw, hw), (c, 1, 3, 3)])
    _check(mod, "dw", [xv, wv], F.conv2d(T(xv), T(wv), padding=1, groups=c).numpy(), copied=copied)


def test_max_pool_pads_with_its_value():
    # stride-1 max pooling pads with -inf: the fill's value; negative inputs show it
    x = te.placeholder((1, 4, 7, 7), name="x")
    mod = mlc.Module.parse(str(te.create_prim_func([x, topi.nn.max_pool2d(x, 3, 1, padding=1)], name="pool")))
    (xv,) = _rng_vals([(1, 4, 7, 7)])
    xv = -np.abs(xv) - 1.0
    _check(mod, "pool", [xv], F.max_pool2d(T(xv), 3, 1, 1).numpy(), copied=True)


@pytest.mark.parametrize("batch,c,hw,f,pad", [(1, 8, 14, 16, 1), (2, 4, 14, 8, 1), (1, 3, 7, 5, 2),
                                              (1, 6, 12, 4, 1)])
def test_conv_pads_narrow_rows_by_copy(batch, c, hw, f, pad):
    # one image in packed tiles (its padded copy has extra rows below), a batch (per image),
    # a padding of 2 at 7 x 7; 12 pixels a row is no multiple of 8 either
    x = te.placeholder((batch, c, hw, hw), name="x")
    w = te.placeholder((f, c, 3, 3), name="w")
    mod = mlc.Module.parse(str(te.create_prim_func([x, w, topi.nn.conv2d(x, w, 1, pad)], name="conv")))
    xv, wv = _rng_vals([(batch, c, hw, hw), (f, c, 3, 3)])
    _check(mod, "conv", [xv, wv], F.conv2d(T(xv), T(wv), padding=pad).numpy(), copied=True)

