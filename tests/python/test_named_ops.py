"""Legalization to upstream's named ops, where linalg (or tensor) has one for the graph op:
the tensor programs hold ``linalg.conv_2d_nchw_fchw``, ``linalg.depthwise_conv_2d_nchw_chw``,
``linalg.pooling_nchw_max/sum``, ``linalg.batch_matmul``, ``linalg.broadcast``, ``tensor.pad``,
``tensor.extract_slice``, ``tensor.concat``; each equals torch, unscheduled and through the
default build; the schedule rules read named ops; the default schedule's convolution strategy
(im2col + contraction) takes named convolutions and leaves the others; its window strategy
(unrolled taps) takes pooling and depthwise convolutions."""

import re

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import mlc_mlir as mlc
from mlc_mlir import te, topi
from mlc_mlir.graph import BlockBuilder, Var, op
from mlc_mlir.schedule.conv_gemm import convs_to_gemm
from mlc_mlir.schedule.payload import read_blocks
from mlc_mlir.schedule import Schedule
from mlc_mlir.schedule.rules import apply_rules, default_schedule, window_strategies
from mlc_mlir.schedule.windows import MAX_TAPS, windows_to_taps
from mlc_mlir.context import mlc_context

T = torch.from_numpy

# graph op -> (parameters, expression, the named op its tensor program holds, torch reference)
CASES = {
    "conv2d": ([(2, 4, 9, 9), (6, 4, 3, 3)], lambda x, w: op.nn.conv2d(x, w, strides=2, padding=1),
               ["tensor.pad", "linalg.conv_2d_nchw_fchw"], lambda x, w: F.conv2d(x, w, stride=2, padding=1)),
    "depthwise": ([(1, 8, 9, 9), (8, 1, 3, 3)], lambda x, w: op.nn.conv2d(x, w, padding=1, dilation=2, groups=8),
                  ["linalg.depthwise_conv_2d_nchw_chw"], lambda x, w: F.conv2d(x, w, padding=1, dilation=2, groups=8)),
    "max_pool2d": ([(2, 3, 11, 11)], lambda x: op.nn.max_pool2d(x, 3, 2, padding=1),
                   ["tensor.pad", "linalg.pooling_nchw_max"], lambda x: F.max_pool2d(x, 3, 2, 1)),
    "avg_pool2d": ([(1, 3, 8, 8)], lambda x: op.nn.avg_pool2d(x, 2, 2),
                   ["linalg.pooling_nchw_sum"], lambda x: F.avg_pool2d(x, 2, 2)),
    "batch_matmul": ([(3, 5, 7), (3, 7, 4)], op.matmul, ["linalg.batch_matmul"], torch.matmul),
    "broadcast_to": ([(1, 5, 1)], lambda x: op.broadcast_to(x, (2, 3, 5, 4)), ["linalg.broadcast"],
                     lambda x: x.expand(2, 3, 5, 4)),
    "strided_slice": ([(4, 9, 6)], lambda x: op.strided_slice(x, [1, 2], [1, 0], [9, 5], [2, 1]),
                      ["tensor.extract_slice"], lambda x: x[:, 1:9:2, 0:5]),
    "concat": ([(2, 3), (2, 5)], lambda a, b: op.concat([a, b], axis=1), ["tensor.concat"],
               lambda a, b: torch.cat([a, b], 1)),
}


def _graph(shapes, body):
    params = [Var(f"p{k}", s) for k, s in enumerate(shapes)]
    bb = BlockBuilder()
    with bb.function("main", params):
        with bb.dataflow():
            gv = bb.emit_output(body(*params))
        bb.emit_func_output(gv)
    return bb.get()


@pytest.mark.parametrize("name", sorted(CASES))
def test_graph_op_legalizes_to_the_named_op_and_equals_torch(name):
    shapes, body, named, ref = CASES[name]
    mod = _graph(shapes, body)
    legal = mlc.graph.transform.LegalizeOps()(mod)
    programs = "\n".join(str(legal[f]) for f in legal.functions if f != "main")
    for kind in named:
        assert kind in programs, f"{name}: no {kind} in\n{programs}"
    rng = np.random.default_rng(len(name))
    args = [rng.standard_normal(s).astype("float32") for s in shapes]
    want = ref(*(T(a) for a in args)).numpy()
    for opt_level in (0, 2):  # op by op (each named op its own kernel), and fused + default rules
        ex = mlc.graph.build(mod, "llvm", opt_level=opt_level, cache=False)
        got = mlc.graph.VirtualMachine(ex, mlc.cpu())["main"](*args).numpy()
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5, err_msg=f"{name} at opt_level {opt_level}")


def test_te_named_ops_unscheduled_equal_torch():
    """te.create_prim_func emits the named ops (an output made by a tensor op is copied into
    its argument by a linalg.copy of the compute's name); mlc.build runs them as they are."""
    x, w = te.placeholder((2, 8, 10, 10), name="x"), te.placeholder((8, 1, 3, 3), name="w")
    v = te.placeholder((1, 7), name="v")
    outs = [topi.nn.conv2d(x, w, 2, 1, 1, "NCHW", 8), topi.nn.pool2d(x, 3, 2, 1, 1, "avg"),
            topi.broadcast_to(v, (3, 5, 7)), topi.nn.pad(x, (0, 1, 0, 2), (1, 0, 2, 0), 3.0)]
    mod = te.create_prim_func([x, w, v, *outs], name="f")
    text = str(mod)
    assert 'linalg.copy' in text and 'mlc.block = "pad' in text and "linalg.generic" in text  # avg's divide
    rng = np.random.default_rng(0)
    xa, wa, va = (rng.standard_normal([int(d) for d in t.shape]).astype("float32") for t in (x, w, v))
    res = [np.zeros([int(d) for d in o.shape], "float32") for o in outs]
    mlc.build(mod)["f"](xa, wa, va, *res)
    refs = [F.conv2d(T(xa), T(wa), stride=2, padding=1, groups=8), F.avg_pool2d(T(xa), 3, 2, 1),
            T(va).expand(3, 5, 7), F.pad(T(xa), (2, 0, 0, 2, 1, 0, 0, 1), value=3.0)]
    for got, want in zip(res, refs):
        np.testing.assert_allclose(got, want.numpy(), rtol=1e-5, atol=1e-5)


def test_generic_forms_stay_where_no_named_op_fits():
    """Grouped convolutions, depthwise with a channel multiplier, reversed slices, integer
    convolutions, broadcast batch matmuls: the generic (named ops would compute otherwise)."""
    x = te.placeholder((1, 6, 7, 7), name="x")
    xi = te.placeholder((1, 2, 5, 5), "int32", name="xi")
    a, b = te.placeholder((1, 5, 4), name="a"), te.placeholder((3, 4, 2), name="b")
    outs = [topi.nn.conv2d(x, te.placeholder((9, 2, 3, 3), name="g"), 1, 1, 1, "NCHW", 3),
            topi.nn.conv2d(x, te.placeholder((12, 1, 3, 3), name="m"), 1, 1, 1, "NCHW", 6),
            topi.strided_slice(x, [5], [0], [-2], axes=[1]),
            topi.nn.conv2d(xi, te.placeholder((2, 2, 1, 1), "int32", name="wi")),
            topi.nn.matmul(a, b)]
    for t in outs:
        assert t.named is None, t.name


def test_rules_read_named_ops_and_schedule_batch_matmul():
    a, b = te.placeholder((4, 32, 64), name="a"), te.placeholder((4, 64, 48), name="b")
    mod = te.create_prim_func([a, b, topi.nn.matmul(a, b)], name="bmm")
    with mlc_context():
        info = read_blocks(mod.mlir_module)[("bmm", "matmul")]
    assert info.op_name == "linalg.batch_matmul" and info.iters == ("parallel",) * 3 + ("reduction",)
    assert info.maps == ((0, 1, 3), (0, 3, 2), (0, 1, 2)) and info.has_init
    sched = default_schedule(mod)
    assert "vector.fma" in str(sched) or "vector.contract" in str(sched) or "vector<" in str(sched)
    rng = np.random.default_rng(1)
    av, bv = rng.standard_normal((4, 32, 64)).astype("float32"), rng.standard_normal((4, 64, 48)).astype("float32")
    out = np.zeros((4, 32, 48), "float32")
    mlc.build(sched)["bmm"](av, bv, out)
    np.testing.assert_allclose(out, av @ bv, rtol=1e-4, atol=1e-4)


def _conv_module(init_value=0.0, pad=1):
    x, w = te.placeholder(("n", 4, 9, 9), name="x"), te.placeholder((8, 4, 3, 3), name="w")
    y = topi.nn.relu(topi.nn.conv2d(x, w, 1, pad))
    text = str(te.create_prim_func([x, w, y], name="conv"))
    if init_value:  # the convolution accumulates onto init_value
        found = re.search(r'linalg\.fill \{mlc\.block_init = "conv2d"\} ins\((%cst\w*) : f32\)', text)
        assert found is not None, text
        fill, at = found.group(0), text.rindex("\n", 0, found.start()) + 1
        text = (text[:at] + f"    %init = arith.constant {init_value:e} : f32\n"
                + text[at:].replace(fill, fill.replace(found.group(1), "%init"), 1))
    return mlc.Module.parse(text)


def test_default_schedule_turns_named_convs_into_im2col_and_a_contraction():
    mod = _conv_module()
    assert "linalg.conv_2d_nchw_fchw" in str(mod)
    gemm = convs_to_gemm(mod)
    text = str(gemm)
    assert "linalg.conv_2d_nchw_fchw" not in text
    assert "tensor.pad" not in text  # im2col reads the input in place, its padding a condition
    assert "tensor.collapse_shape" in text and "tensor.expand_shape" in text  # kernel (F, C*KH*KW), result NCHW: views
    with mlc_context():
        names = {b for _, b in read_blocks(gemm.mlir_module)}
    assert {"conv2d_im2col", "conv2d_gemm"} <= names, names
    assert "linalg.conv_2d_nchw_fchw" in str(mod)  # the input is left as it was
    rng = np.random.default_rng(2)
    xv, wv = rng.standard_normal((3, 4, 9, 9)).astype("float32"), rng.standard_normal((8, 4, 3, 3)).astype("float32")
    want = torch.relu(F.conv2d(T(xv), T(wv), padding=1)).numpy()
    for m in (mod, default_schedule(mod)):  # the named op lowered as it is, and the schedule's strategy
        out = np.zeros((3, 8, 9, 9), "float32")
        mlc.build(m)["conv"](xv, wv, out)
        np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-4)


def test_conv_strategy_leaves_convs_it_does_not_compute():
    mod = _conv_module(init_value=1.5)  # accumulating onto a non-zero init: not conv2d_gemm's result
    assert "1.500000e+00" in str(mod)
    assert "linalg.conv_2d_nchw_fchw" in str(convs_to_gemm(mod))


WINDOW_CASES = {
    # name: (te program builder over x (and w), torch reference, the named op it holds)
    "max_pool_pad_stride": (lambda x: topi.nn.max_pool2d(x, 3, 2, padding=1), None,
                            lambda x: F.max_pool2d(x, 3, 2, 1), "linalg.pooling_nchw_max"),
    "max_pool_ceil": (lambda x: topi.nn.max_pool2d(x, 3, 2, ceil_mode=True), None,
                      lambda x: F.max_pool2d(x, 3, 2, ceil_mode=True), "linalg.pooling_nchw_max"),
    "avg_pool_pad": (lambda x: topi.nn.avg_pool2d(x, 3, 1, padding=1), None,
                     lambda x: F.avg_pool2d(x, 3, 1, 1), "linalg.pooling_nchw_sum"),
    "depthwise_stride_pad": (lambda x, w: topi.nn.conv2d(x, w, 2, 1, groups=6), (6, 1, 3, 3),
                             lambda x, w: F.conv2d(x, w, stride=2, padding=1, groups=6),
                             "linalg.depthwise_conv_2d_nchw_chw"),
    "depthwise_dilated_5x5": (lambda x, w: topi.nn.conv2d(x, w, 1, (2, 3), dilation=(1, 2), groups=6), (6, 1, 5, 5),
                              lambda x, w: F.conv2d(x, w, padding=(2, 3), dilation=(1, 2), groups=6),
                              "linalg.depthwise_conv_2d_nchw_chw"),
}


@pytest.mark.parametrize("name", sorted(WINDOW_CASES))
def test_window_strategy_unrolls_taps_and_equals_torch(name):
    """Pooling and depthwise convolutions become one all-parallel compute of unrolled taps
    (no named op, no tensor.pad), scheduled by the rules; equal to torch on odd sizes and a
    symbolic batch."""
    build, wshape, ref, named = WINDOW_CASES[name]
    x = te.placeholder(("n", 6, 11, 13), name="x")
    args = [x] if wshape is None else [x, te.placeholder(wshape, name="w")]
    mod = mlc.Module.parse(str(te.create_prim_func([*args, build(*args)], name="win")))
    assert named in str(mod)
    taps = windows_to_taps(mod)
    text = str(taps)
    assert named not in text and "tensor.pad" not in text, text
    # a stride-1 window reads the input padded once (a compute of its own, the only
    # gather) at affine indices; a narrow strided depthwise convolution reads its four
    # stride phases (one compute each); a strided pooling gathers its taps in place
    padded = name == "depthwise_dilated_5x5" or name == "avg_pool_pad"
    assert (text.count("tensor.extract ") == 1 and "_pad\"" in text) == padded, text
    phases = name == "depthwise_stride_pad"
    four = text.count("tensor.extract ") == 4 and all(f'_pad{p}"' in text for p in ("00", "01", "10", "11"))
    assert four == phases, text
    sched = default_schedule(mod)
    assert "vector.gather" in str(sched)  # the rules vectorized the pad (or the taps) along the width
    rng = np.random.default_rng(5)
    xv = rng.standard_normal((3, 6, 11, 13)).astype("float32")
    vals = [xv] if wshape is None else [xv, rng.standard_normal(wshape).astype("float32")]
    want = ref(*map(T, vals)).numpy()
    out = np.zeros(want.shape, "float32")
    mlc.build(sched)["win"](*vals, out)
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)


def test_window_strategy_keeps_its_init_and_leaves_what_it_cannot_take():
    """A pooling that accumulates onto a non-neutral init keeps it (max(init, taps)); a window
    of more than MAX_TAPS taps stays a named op; both equal torch."""
    x = te.placeholder((1, 2, 12, 12), name="x")
    text = str(te.create_prim_func([x, topi.nn.max_pool2d(x, 2, 2)], name="pool"))
    fill = 'linalg.fill {mlc.block_init = "max_pool2d"} ins(%cst : f32)'
    assert fill in text
    at = text.rindex("\n", 0, text.index(fill)) + 1
    text = text[:at] + "    %init = arith.constant 5.0e-01 : f32\n" + text[at:].replace(fill, fill.replace("%cst", "%init"))
    xv = np.random.default_rng(6).standard_normal((1, 2, 12, 12)).astype("float32")
    for src, want in ((text, np.maximum(F.max_pool2d(T(xv), 2, 2).numpy(), 0.5)), (None, None)):
        if src is None:  # 9 x 9 = 81 taps > MAX_TAPS
            assert MAX_TAPS < 81
            src = str(te.create_prim_func([x, topi.nn.max_pool2d(x, 9, 1)], name="pool"))
            want = F.max_pool2d(T(xv), 9, 1).numpy()
            assert "linalg.pooling_nchw_max" in str(windows_to_taps(mlc.Module.parse(src)))
        mod = mlc.Module.parse(src)
        out = np.zeros(want.shape, "float32")
        mlc.build(default_schedule(mod))["pool"](xv, out)
        np.testing.assert_allclose(out, want, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("batch", ["n", 1, 2])
@pytest.mark.parametrize("kernel,stride,pad", [(1, 1, 0), (1, 2, 0), (3, 2, 1)])
def test_conv_strategy_reads_pointwise_inputs_in_place_and_equals_torch(batch, kernel, stride, pad):
    """A 1x1 convolution of stride 1 has no im2col (the contraction reads the input viewed
    (C, H * W)); strided and wider ones gather one; all equal torch, on a symbolic, one and a
    static batch."""
    x, w = te.placeholder((batch, 5, 7, 9), name="x"), te.placeholder((12, 5, kernel, kernel), name="w")
    mod = mlc.Module.parse(str(te.create_prim_func([x, w, topi.nn.conv2d(x, w, stride, pad)], name="conv")))
    gemm = convs_to_gemm(mod)
    with mlc_context():
        names = {b for _, b in read_blocks(gemm.mlir_module)}
    assert "conv2d_gemm" in names
    assert ("conv2d_im2col" in names) == ((kernel, stride) != (1, 1)), names
    n = 2 if batch == "n" else batch
    rng = np.random.default_rng(7)
    xv, wv = rng.standard_normal((n, 5, 7, 9)).astype("float32"), rng.standard_normal((12, 5, kernel, kernel)).astype("float32")
    want = F.conv2d(T(xv), T(wv), stride=stride, padding=pad).numpy()
    out = np.zeros(want.shape, "float32")
    mlc.build(default_schedule(mod))["conv"](xv, wv, out)
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("gather", [False, True])
def test_conv2d_gemm_with_a_flat_kernel_pads_once_and_copies_rows(gather):
    """``topi.nn.conv2d_gemm`` with a flattened kernel (F, C*KH*KW): the input padded once,
    im2col (K, OH, OW) read at affine indices (a sum over one element without ``gather``,
    so that fusion keeps it a buffer); unscheduled and through the default schedule (which
    views im2col as (K, OH * OW)) it equals torch, strided and padded, at batch 2."""
    x = te.placeholder((2, 3, 9, 8), name="x")
    w = te.placeholder((4, 3 * 3 * 3), name="w")
    y = topi.nn.conv2d_gemm(x, w, (2, 1), (1, 1, 1, 0), gather=gather, kernel_size=(3, 3))
    mod = mlc.Module.parse(str(te.create_prim_func([x, w, y], name="conv")))
    rng = np.random.default_rng(4)
    xv, wv = rng.standard_normal((2, 3, 9, 8), dtype=np.float32), rng.standard_normal((4, 27), dtype=np.float32)
    want = F.conv2d(F.pad(T(xv), (1, 0, 1, 1)), T(wv).reshape(4, 3, 3, 3), stride=(2, 1)).numpy()
    assert "tensor.collapse_shape" in str(default_schedule(mod))  # the contraction reads im2col flat
    for m in (mod, default_schedule(mod)):
        out = np.zeros(want.shape, np.float32)
        mlc.build(m)["conv"](xv, wv, out)
        np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("size", [14, 9])
def test_depthwise_with_its_epilogue_is_vectorized_along_the_row(size):
    """A stride-1 depthwise convolution followed by its bias and ReLU6 (MobileNet-v2's
    kernel): the taps read the padded input through slices at their offsets, so the taps'
    block is elementwise and the rules vectorize it along the output row (with shifted
    index maps it had no rule, and LLVM vectorized across one pixel's taps: 3x slower)."""
    x, w = te.placeholder((2, 16, size, size), name="x"), te.placeholder((16, 1, 3, 3), name="w")
    b = te.placeholder((1, 16, 1, 1), name="b")
    y = topi.nn.conv2d(x, w, 1, 1, groups=16)
    z = te.compute(y.shape, lambda n, c, i, j: te.min(te.max(y[n, c, i, j] + b[0, c, 0, 0], 0.0), 6.0), name="clip")
    mod = mlc.Module.parse(str(te.create_prim_func([x, w, b, z], name="dw")))
    sched = default_schedule(mod)
    sch = Schedule(window_strategies(mod))
    apply_rules(sch, "llvm -mcpu=haswell -num-cores=1")
    trace = str(sch.trace)
    tail = trace[trace.index('sch.get_block(name="depthwise_conv2d"'):]
    assert "sch.vectorize(" in tail.split("sch.get_block(")[1], trace
    rng = np.random.default_rng(6)
    vals = [rng.standard_normal(s).astype("float32") for s in ((2, 16, size, size), (16, 1, 3, 3), (1, 16, 1, 1))]
    want = torch.clamp(F.conv2d(T(vals[0]), T(vals[1]), padding=1, groups=16) + T(vals[2]), 0, 6).numpy()
    out = np.zeros(want.shape, "float32")
    mlc.build(sched)["dw"](*vals, out)
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("batch,stride", [(1, 1), (3, 1), (1, 2), (2, 2)])
def test_depthwise_epilogue_is_computed_on_each_row_of_the_taps(batch, stride):
    """The bias + ReLU6 after a depthwise convolution's taps is computed on each row
    right after the taps (``reverse_compute_at``), at a batch of one too (its read
    ``y[0, c, i, j]`` is taken as the batch loop's dim), instead of a pass of its own over
    the whole result (MobileNet-v2's 144-channel 56 x 56 layer at batch 8: 3.8 -> 2.6 ms).
    At stride 2 the taps read the input's stride phases at unit strides, so they are
    vectorized and fused the same way (no gather left in the taps)."""
    x, w = te.placeholder((batch, 16, 12, 12), name="x"), te.placeholder((16, 1, 3, 3), name="w")
    b = te.placeholder((1, 16, 1, 1), name="b")
    y = topi.nn.conv2d(x, w, stride, 1, groups=16)
    if batch == 1:  # as legalization writes it at a batch of one
        z = te.compute(y.shape, lambda n, c, i, j: te.min(te.max(y[0, c, i, j] + b[0, c, 0, 0], 0.0), 6.0),
                       name="clip")
    else:
        z = te.compute(y.shape, lambda n, c, i, j: te.min(te.max(y[n, c, i, j] + b[0, c, 0, 0], 0.0), 6.0),
                       name="clip")
    mod = mlc.Module.parse(str(te.create_prim_func([x, w, b, z], name="dw")))
    sch = Schedule(window_strategies(mod))
    apply_rules(sch, "llvm -mcpu=haswell -num-cores=2")
    trace = str(sch.trace)
    assert 'sch.get_block(name="clip"' in trace and "sch.reverse_compute_at(" in trace, trace
    after = trace[trace.index("sch.reverse_compute_at("):]
    assert "sch.vectorize(" in after, trace
    taps = trace[trace.index('sch.get_block(name="depthwise_conv2d"'):].split("sch.get_block(")[1]
    assert "sch.vectorize(" in taps, trace
    rng = np.random.default_rng(7)
    vals = [rng.standard_normal(s).astype("float32") for s in ((batch, 16, 12, 12), (16, 1, 3, 3), (1, 16, 1, 1))]
    want = torch.clamp(F.conv2d(T(vals[0]), T(vals[1]), stride=stride, padding=1, groups=16) + T(vals[2]),
                       0, 6).numpy()
    out = np.zeros(want.shape, "float32")
    mlc.build(sch.mod)["dw"](*vals, out)
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)
