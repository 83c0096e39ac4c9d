"""Gathers whose lanes read evenly spaced elements run as loads (compiler/gathers.py): a
strided window reads its input in place, clamped into it, as gathers; the build loads each
vector whose clamps are inactive as one run plus a shuffle and gathers only at the borders.
Both paths equal torch on images wide enough to have interior vectors and borders on each
side; a gather at data-dependent offsets is left alone."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import mlc_mlir as mlc
from mlc_mlir import te, topi
from mlc_mlir.compiler import vector_opt
from mlc_mlir.schedule.rules import default_schedule
from mlc_mlir.schedule import windows
from mlc_mlir.schedule.windows import reads_in_place, windows_to_taps

T = torch.from_numpy


@pytest.fixture
def rewritten(monkeypatch):
    """How many gathers the build's vector-opt stage rewrote, per function."""
    counts = []
    real = vector_opt.gathers_to_loads

    def counting(fn):
        counts.append(real(fn))
        return counts[-1]

    monkeypatch.setattr(vector_opt, "gathers_to_loads", counting)
    return counts


# name: (te builder over x (and w), weight shape, torch reference)
CASES = {
    "depthwise_stride2": (lambda x, w: topi.nn.conv2d(x, w, 2, 1, groups=5), (5, 1, 3, 3),
                          lambda x, w: F.conv2d(x, w, stride=2, padding=1, groups=5)),
    "depthwise_stride2_5x5": (lambda x, w: topi.nn.conv2d(x, w, 2, 2, groups=5), (5, 1, 5, 5),
                              lambda x, w: F.conv2d(x, w, stride=2, padding=2, groups=5)),
    "max_pool_stride2": (lambda x: topi.nn.max_pool2d(x, 3, 2, padding=1), None,
                         lambda x: F.max_pool2d(x, 3, 2, 1)),
    "avg_pool_stride3": (lambda x: topi.nn.avg_pool2d(x, 3, 3, padding=1), None,
                         lambda x: F.avg_pool2d(x, 3, 3, 1)),
}


@pytest.mark.parametrize("width", [56, 67, 96])
@pytest.mark.parametrize("name", sorted(CASES))
def test_strided_windows_load_their_interior_and_equal_torch(name, width, rewritten):
    """Widths 67, 96 and 56: a depthwise convolution's output rows of 34 pixels (its stride
    phases), 48 (in place, 8-lane vectors) and 28 (in place, 4-lane vectors)."""
    build, wshape, ref = CASES[name]
    x = te.placeholder((2, 5, 23, width), name="x")
    args = [x] if wshape is None else [x, te.placeholder(wshape, name="w")]
    out_t = build(*args)
    mod = mlc.Module.parse(str(te.create_prim_func([*args, out_t], name="win")))
    if wshape is not None:  # a depthwise convolution this wide reads in place, a narrower its phases
        assert ("_pad00" in str(windows_to_taps(mod))) == (width == 67)
    lib = mlc.build(default_schedule(mod))
    assert sum(rewritten) >= 1, rewritten  # the taps' (or phases') gathers became guarded loads
    rng = np.random.default_rng(width)
    # the padding shows: every value negative, so a tap wrongly reading the clamped border
    # pixel instead of the pad value (0 for convolutions, -inf for max) changes the result
    xv = -np.abs(rng.standard_normal((2, 5, 23, width))).astype("float32") - 0.5
    vals = [xv] if wshape is None else [xv, rng.standard_normal(wshape).astype("float32")]
    want = ref(*map(T, vals)).numpy()
    out = np.zeros(want.shape, "float32")
    lib["win"](*vals, out)
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("width, in_place", [
    (56, True),   # MobileNet-v2's 112 -> 56: most vectors inside the image
    (28, True),   # 56 -> 28: 7 x 4 lanes
    (14, False),  # 28 -> 14: no 4-lane vectors, the phases
    (7, False),   # 14 -> 7
    (12, False),  # three 4-lane vectors: too few
])
def test_strided_depthwise_reads_in_place_where_rows_have_interior_vectors(width, in_place):
    """MobileNet-v2's stride-2 depthwise convolutions (measured: see reads_in_place)."""
    assert reads_in_place(width) == in_place


def test_a_lookup_keeps_its_gather(rewritten):
    """``take`` reads at offsets loaded from memory: nothing to prove, the gather stays."""
    table = te.placeholder((50, 16), name="table")
    ids = te.placeholder((24,), dtype="int64", name="ids")
    mod = mlc.Module.parse(str(te.create_prim_func([table, ids, topi.take(table, ids, axis=0)], name="take")))
    lib = mlc.build(default_schedule(mod))
    assert sum(rewritten) == 0
    tv = np.random.default_rng(1).standard_normal((50, 16)).astype("float32")
    iv = np.random.default_rng(2).integers(0, 50, 24)
    out = np.zeros((24, 16), "float32")
    lib["take"](tv, iv, out)
    np.testing.assert_array_equal(out, tv[iv])


def test_a_stride_one_window_pads_its_rows_to_whole_vectors_and_copies_nothing_unpadded():
    """A stride-1 window's padded copy has rows of a multiple of PAD_ROW_MULTIPLE columns
    (13 + 2 -> 16); a window without padding reads its input, no copy."""
    x = te.placeholder((1, 3, 9, 13), name="x")
    padded = windows_to_taps(mlc.Module.parse(str(te.create_prim_func(
        [x, topi.nn.max_pool2d(x, 3, 1, padding=1)], name="win"))))
    assert "tensor<1x3x11x16xf32>" in str(padded) and windows.PAD_ROW_MULTIPLE == 8
    plain = windows_to_taps(mlc.Module.parse(str(te.create_prim_func([x, topi.nn.max_pool2d(x, 3, 1)], name="win"))))
    assert "_pad" not in str(plain) and "linalg.pooling" not in str(plain)


@pytest.mark.parametrize("pool, ref", [
    (lambda x: topi.nn.max_pool2d(x, 2, 2), lambda x: F.max_pool2d(x, 2, 2)),
    (lambda x: topi.nn.avg_pool2d(x, 3, 2), lambda x: F.avg_pool2d(x, 3, 2)),
])
def test_strided_runs_stay_inside_the_buffer_at_both_of_its_ends(pool, ref, rewritten):
    """A stride-2 run starts one element before its first lane's and ends at its last lane's:
    unpadded windows read the buffer's first element at the first vector (whose run would
    start before the buffer: it gathers) and its last element at the last vector (a run
    from the first lane would end past it). Rows of 8 vectors: the column loop is peeled."""
    x = te.placeholder((1, 2, 3, 129), name="x")
    mod = mlc.Module.parse(str(te.create_prim_func([x, pool(x)], name="pool")))
    lib = mlc.build(default_schedule(mod))
    assert sum(rewritten) >= 1, rewritten
    xv = np.random.default_rng(3).standard_normal((1, 2, 3, 129)).astype("float32")
    want = ref(T(xv)).numpy()
    out = np.zeros(want.shape, "float32")
    lib["pool"](xv, out)
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", ["max_pool_stride2", "depthwise_stride2"])
def test_strided_windows_of_a_symbolic_batch_equal_torch(name, rewritten):
    """A symbolic batch (the flat view's size dynamic, the batch loop's range unknown to range
    analysis): the column loop is still peeled and the runs' checks still hold."""
    build, wshape, ref = CASES[name]
    x = te.placeholder(("n", 5, 23, 96), name="x")
    args = [x] if wshape is None else [x, te.placeholder(wshape, name="w")]
    mod = mlc.Module.parse(str(te.create_prim_func([*args, build(*args)], name="win")))
    lib = mlc.build(default_schedule(mod))
    assert sum(rewritten) >= 1, rewritten
    rng = np.random.default_rng(5)
    xv = -np.abs(rng.standard_normal((3, 5, 23, 96))).astype("float32") - 0.5
    vals = [xv] if wshape is None else [xv, rng.standard_normal(wshape).astype("float32")]
    want = ref(*map(T, vals)).numpy()
    out = np.zeros(want.shape, "float32")
    lib["win"](*vals, out)
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)
