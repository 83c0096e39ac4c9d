"""Index maps simplified with the loops' ranges before the default rules
(:func:`mlc_mlir.schedule.index_maps.simplify_index_maps`): a fused reshape chain's maps
become plain dims, an input read in mixed radix becomes an ``expand_shape`` view, what is
left a gather; each block then gets its rule (vectorized, parallel) and equals NumPy."""

import numpy as np
import pytest
import torch

import mlc_mlir as mlc
from mlc_mlir.schedule import Schedule
from mlc_mlir.schedule.index_maps import simplify_index_maps
from mlc_mlir.schedule.rules import apply_rules, default_schedule
from mlc_mlir.testing.programs import gather_generic as generic


def run(mod, x, out_shape, name="k"):
    y = np.full(out_shape, np.nan, np.float32)
    mlc.build(default_schedule(mod))[name](x, y)
    return y


def test_reshape_round_trip_becomes_plain_and_gets_the_elementwise_rule():
    # reshape (1024, 256) -> (8, 128, 256) -> relu -> back, as FuseTIR composes it
    mod = generic((1024, 256), (1024, 256), "(d0 floordiv 128) * 128 + d0 mod 128, d1",
                  body="%r = arith.maximumf %in, %cst : f32\n      linalg.yield %r : f32")
    text = str(simplify_index_maps(mod))
    assert "floordiv" not in text and " mod " not in text, text
    sch = Schedule(simplify_index_maps(mod))
    apply_rules(sch, "llvm -mcpu=haswell -num-cores=2")
    assert "sch.vectorize(" in str(sch.trace) and "sch.parallel(" in str(sch.trace), sch.trace
    x = np.random.default_rng(0).standard_normal((1024, 256), dtype=np.float32)
    np.testing.assert_array_equal(run(mod, x, (1024, 256)), np.maximum(x, 0))


def test_mixed_radix_read_becomes_an_expand_shape_view():
    # (32, 16, 8) read as (8, 4, 16, 8): x[d0 * 4 + d1, d2, d3]
    mod = generic((32, 16, 8), (8, 4, 16, 8), "d0 * 4 + d1, d2, d3")
    text = str(simplify_index_maps(mod))
    assert "tensor.expand_shape %arg0 [[0, 1], [2], [3]] output_shape [8, 4, 16, 8]" in text, text
    assert "d0 * 4" not in text, text
    x = np.random.default_rng(1).standard_normal((32, 16, 8), dtype=np.float32)
    np.testing.assert_array_equal(run(mod, x, (8, 4, 16, 8)), x.reshape(8, 4, 16, 8))


@pytest.mark.parametrize("extent,simplified", [(64, True), (100, False)])
def test_divisions_fold_only_within_the_ranges(extent, simplified):
    # (d0 * 64 + d1) split by 256: d0 floordiv 4 and (d0 mod 4) * 64 + d1 when d1 < 64;
    # with d1 up to 99 the carry reaches the quotient: the input read flat at d0 * 64 + d1
    mod = generic((4, 256), (12, extent), "(d0 * 64 + d1) floordiv 256, (d0 * 64 + d1) mod 256",
                  name="k")
    out = simplify_index_maps(mod)
    text = str(out)
    if simplified:
        assert "floordiv 256" not in text and "d0 floordiv 4" in text, text
    else:
        assert "tensor.collapse_shape %arg0 [[0, 1]]" in text and "-> (d0 * 64 + d1)>" in text, text
    x = np.random.default_rng(2).standard_normal((4, 256), dtype=np.float32)
    d0, d1 = np.meshgrid(np.arange(12), np.arange(extent), indexing="ij")
    lin = d0 * 64 + d1
    ref = x[lin // 256, lin % 256]
    np.testing.assert_array_equal(run(mod, x, (12, extent)), ref)
    np.testing.assert_array_equal(run(out, x, (12, extent)), ref)


def test_transpose_through_a_reshape_is_a_gather_run_in_parallel():
    # BERT's k per head: out[h, e, s] = qkv[s, (h * 64 + e) // 256, (h * 64 + e) % 256]
    mod = generic((128, 8, 256), (32, 64, 128), "d2, (d0 * 64 + d1) floordiv 256, (d0 * 64 + d1) mod 256")
    sch = Schedule(simplify_index_maps(mod))
    apply_rules(sch, "llvm -mcpu=haswell -num-cores=2")
    trace = str(sch.trace)
    assert "sch.parallel(" in trace, trace
    # s (8 KB apart in qkv) tiled by 8 with e (qkv's rows) between: the rows a tile reads stay in L1
    assert "l4, l5 = sch.split(loop=l3, factors=[None, 8])\nsch.reorder(l1, l4, l2, l5)" in trace, trace
    x = np.random.default_rng(3).standard_normal((128, 8, 256), dtype=np.float32)
    ref = x.reshape(128, 32, 64).transpose(1, 2, 0)
    np.testing.assert_array_equal(run(mod, x, (32, 64, 128)), ref)


@pytest.mark.parametrize("in_shape,out_shape,in_map,walk", [
    ((128, 8, 256), (32, 64, 128), "d2, (d0 * 64 + d1) floordiv 256, (d0 * 64 + d1) mod 256", 1),
    ((128, 8, 256), (32, 128, 64), "d1, (d0 * 64 + d2) floordiv 256, (d0 * 64 + d2) mod 256", None),  # q: rows
    ((2, 3), (6, 1, 1), "d0 floordiv 3, d0 mod 3", None),   # the output's last dim is not read along
])
def test_which_gathers_are_transposes(in_shape, out_shape, in_map, walk):
    from mlc_mlir.context import mlc_context
    from mlc_mlir.schedule.payload import read_blocks
    from mlc_mlir.schedule.rule_elementwise import transposed_dim

    with mlc_context():
        (info,) = read_blocks(simplify_index_maps(generic(in_shape, out_shape, in_map)).mlir_module).values()
    assert transposed_dim(info) == walk


def test_bert_layer_through_simplified_maps_equals_torch():
    # a batch-first encoder layer's reshape / permute kernels (the maps above) built by the
    # default rules: the model equals torch
    from mlc_mlir.testing import models
    layer = models.seeded(torch.nn.TransformerEncoderLayer(64, 2, 128, batch_first=True)).eval()
    x = torch.randn(2, 16, 64, generator=torch.Generator().manual_seed(0))
    mod = mlc.frontend.from_exported_program(torch.export.export(layer, (x,)))
    ex = mlc.graph.build(mod, "llvm", cache=False)
    got = mlc.graph.VirtualMachine(ex, mlc.cpu())["main"](x.numpy())
    with torch.no_grad():
        ref = layer(x).numpy()
    np.testing.assert_allclose(np.asarray(got), ref, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("in_shape,in_map,shifted", [
    ((4, 10, 12), "d0, d1 + 1, d2 + 2", True),     # a window's tap: read through a slice at (0, 1, 2)
    ((4, 10, 12), "d0, d1 + 3, d2 + 1", True),
    ((4, 15, 12), "d0, d1 * 2 + 1, d2 + 2", False),  # strided: kept (strided slices became scalar loads)
])
def test_shifted_reads_become_slices_and_get_the_elementwise_rule(in_shape, in_map, shifted):
    mod = generic(in_shape, (4, 7, 10), in_map, body="%r = arith.maximumf %in, %cst : f32\n"
                  "      linalg.yield %r : f32")
    out = simplify_index_maps(mod)
    text = str(out)
    assert ("tensor.extract_slice %arg0" in text and "d1 + " not in text) == shifted, text
    sch = Schedule(out)
    apply_rules(sch, "llvm -mcpu=haswell -num-cores=1")
    assert ("sch.vectorize(" in str(sch.trace)) == shifted, sch.trace
    x = np.random.default_rng(3).standard_normal(in_shape, dtype=np.float32)
    d0, d1, d2 = np.meshgrid(np.arange(4), np.arange(7), np.arange(10), indexing="ij")
    a, b, c = (eval(e, {"d0": d0, "d1": d1, "d2": d2}) for e in in_map.split(", "))
    np.testing.assert_array_equal(run(mod, x, (4, 7, 10)), np.maximum(x[a, b, c], 0))


def test_shifted_reads_of_a_dynamic_batch_slice_it_whole():
    src = str(generic((4, 10, 12), (4, 8, 10), "d0, d1 + 2, d2 + 1")).replace("tensor<4x10x12xf32>", "tensor<?x10x12xf32>") \
        .replace("tensor<4x8x10xf32>", "tensor<?x8x10xf32>")
    mod = mlc.Module.parse(src)
    text = str(simplify_index_maps(mod))
    assert "tensor.dim %arg0" in text and "[0, 2, 1]" in text and "d1 + 2" not in text, text
    x = np.random.default_rng(4).standard_normal((3, 10, 12), dtype=np.float32)
    np.testing.assert_array_equal(run(mod, x, (3, 8, 10)), x[:, 2:10, 1:11])


@pytest.mark.parametrize("in_map,rewritten", [
    ("0, d1, d2", True),    # a batch of one read at index 0: the batch loop's dim instead
    ("d0, 0, d2", False),   # index 0 of a size-1 dim whose loop has 3 iterations: a broadcast, kept
])
def test_index_zero_of_a_unit_loop_becomes_its_dim(in_map, rewritten):
    in_shape, out_shape = ((1, 3, 8), (1, 3, 8)) if rewritten else ((1, 1, 8), (1, 3, 8))
    mod = generic(in_shape, out_shape, in_map, body="%r = arith.maximumf %in, %cst : f32\n      linalg.yield %r : f32")
    text = str(simplify_index_maps(mod))
    assert ("(d0, d1, d2) -> (0, d1, d2)" not in text and "(d0, d1, d2) -> (d0, 0, d2)" not in text) == rewritten, text
    x = np.random.default_rng(5).standard_normal(in_shape, dtype=np.float32)
    np.testing.assert_array_equal(run(mod, x, out_shape), np.broadcast_to(np.maximum(x, 0), out_shape))
