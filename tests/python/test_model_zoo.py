"""Real PyTorch models (issue 24), imported with from_exported_program and (where torch.fx
traces them) from_fx, built for the CPU, run on the VM and compared with torch eager: the
largest difference at most 1e-5 of the largest reference value, at batch 1 and batch 8.
Each family also exports with a dynamic batch (``torch.export.Dim``; GPT-2 a dynamic
sequence too): one build runs both sizes. Sizes are small (definitions in mlc_mlir.testing.models) so the
file builds in a few minutes on two cores."""

import time

import numpy as np
import pytest

torch = pytest.importorskip("torch")
from torch import fx  # noqa: E402
from torch.export import Dim  # noqa: E402

from mlc_mlir.testing import models as Z  # noqa: E402
import mlc_mlir as mlc  # noqa: E402

TOL = 1e-5


def gen(seed):
    return torch.Generator().manual_seed(seed)


def image(batch, seed=0):
    return (torch.randn(batch, 3, 32, 32, generator=gen(seed)),)


def tokens(batch, seq=16, seed=0):
    return (torch.randn(batch, seq, 64, generator=gen(seed)),)


def hf_inputs(batch, seq=16, seed=0):
    ids = torch.randint(0, 100, (batch, seq), generator=gen(seed))
    mask = torch.ones(batch, seq, dtype=torch.int64)
    mask[-1, : seq // 4] = 0  # left padding in the last row
    return ids, mask


def encoder_inputs(batch, seed=0):
    src = torch.randn(batch, 8, 32, generator=gen(seed))
    pad = torch.zeros(batch, 8, dtype=torch.bool)
    pad[-1, 6:] = True
    return src, pad


def vm_of(mod, label):
    start = time.perf_counter()
    vm = mlc.graph.VirtualMachine(mlc.graph.build(mod, "llvm"), mlc.cpu())
    print(f"{label}: build {time.perf_counter() - start:.1f} s")
    return vm


def assert_matches(vm, model, inputs):
    with torch.no_grad():
        ref = model(*inputs).numpy()
    out = vm["main"](*[t.numpy() for t in inputs]).numpy()
    assert out.shape == ref.shape
    err = np.abs(out - ref).max() / np.abs(ref).max()
    assert err <= TOL, f"max relative error {err:.3g} at shapes {[tuple(t.shape) for t in inputs]}"


def exported(model, inputs, label, dynamic_shapes=None):
    start = time.perf_counter()
    mod = mlc.frontend.from_exported_program(torch.export.export(model, inputs, dynamic_shapes=dynamic_shapes))
    print(f"{label}: export + import {time.perf_counter() - start:.1f} s")
    return vm_of(mod, label)


def traced(model, inputs, label, trace=fx.symbolic_trace):
    start = time.perf_counter()
    dtypes = [str(t.dtype).replace("torch.", "") for t in inputs]
    mod = mlc.frontend.from_fx(trace(model), [tuple(t.shape) for t in inputs], dtype=dtypes)
    print(f"{label}: trace + import {time.perf_counter() - start:.1f} s")
    return vm_of(mod, label)


# -- ResNet-18 -----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def resnet():
    return Z.seeded(Z.ResNet18(width=8, num_classes=10))


@pytest.mark.parametrize("batch", [1, 8])
def test_resnet18_exported(resnet, batch):
    assert_matches(exported(resnet, image(batch), f"resnet18 export b{batch}"), resnet, image(batch, seed=1))


@pytest.mark.parametrize("batch", [8])
def test_resnet18_fx(resnet, batch):
    assert_matches(traced(resnet, image(batch), f"resnet18 fx b{batch}"), resnet, image(batch, seed=2))


def test_resnet18_dynamic_batch(resnet):
    vm = exported(resnet, image(2), "resnet18 export dynamic", {"x": {0: Dim("batch")}})
    for batch in (1, 8):
        assert_matches(vm, resnet, image(batch, seed=batch))


# -- MobileNet-v2 --------------------------------------------------------------------------
def mobilenet(pool="adaptive"):
    return Z.seeded(Z.MobileNetV2(width_mult=0.25, num_classes=10, pool=pool, depth=2))


def test_mobilenet_v2_exported():
    model = mobilenet()
    assert_matches(exported(model, image(1), "mobilenet_v2 export b1"), model, image(1, seed=1))


def test_mobilenet_v2_fx():
    model = mobilenet(pool="mean")
    assert_matches(traced(model, image(8), "mobilenet_v2 fx b8"), model, image(8, seed=2))


def test_mobilenet_v2_dynamic_batch():
    model = mobilenet()
    vm = exported(model, image(2), "mobilenet_v2 export dynamic", {"x": {0: Dim("batch")}})
    for batch in (1, 8):
        assert_matches(vm, model, image(batch, seed=batch))


# -- GPT-2 block (plain torch) -------------------------------------------------------------
@pytest.fixture(scope="module")
def gpt2_block():
    return Z.seeded(Z.GPT2Block(d=64, n_head=4, block_size=16))


@pytest.mark.parametrize("batch", [1, 8])
def test_gpt2_block_exported(gpt2_block, batch):
    assert_matches(exported(gpt2_block, tokens(batch), f"gpt2 block export b{batch}"), gpt2_block,
                   tokens(batch, seed=1))


@pytest.mark.parametrize("batch", [1, 8])
def test_gpt2_block_fx(gpt2_block, batch):
    vm = traced(gpt2_block, tokens(batch), f"gpt2 block fx b{batch}", trace=Z.fx_trace)
    assert_matches(vm, gpt2_block, tokens(batch, seed=2))


def test_gpt2_block_dynamic_batch(gpt2_block):
    vm = exported(gpt2_block, tokens(2), "gpt2 block export dynamic batch", {"x": {0: Dim("batch")}})
    for batch in (1, 8):
        assert_matches(vm, gpt2_block, tokens(batch, seed=batch))


def test_gpt2_block_dynamic_batch_and_sequence():
    model = Z.seeded(Z.GPT2Block(d=64, n_head=4, block_size=32))
    dims = {"x": {0: Dim("batch"), 1: Dim("seq", min=2, max=31)}}
    vm = exported(model, tokens(2, seq=12), "gpt2 block export dynamic batch+seq", dims)
    for batch, seq in ((1, 8), (8, 16)):
        assert_matches(vm, model, tokens(batch, seq=seq, seed=batch))


@pytest.mark.parametrize("batch", [1, 8])
def test_triu_mask_attention_both_frontends(batch):
    model = Z.seeded(Z.TriuMaskBlock(d=32, n_head=4, seq=8))
    x = (torch.randn(batch, 8, 32, generator=gen(batch)),)
    assert_matches(exported(model, x, f"triu attention export b{batch}"), model, x)
    assert_matches(traced(model, x, f"triu attention fx b{batch}"), model, x)


# -- transformers' GPT2Model ---------------------------------------------------------------
@pytest.fixture(scope="module")
def hf_gpt2():
    model = Z.hf_gpt2(d=64, n_layer=2, n_head=4)
    if model is None:
        pytest.fail("transformers is not installed (pip install transformers)")
    return Z.HFGPT2Wrapper(Z.seeded(model)).eval()


@pytest.mark.parametrize("batch", [1, 8])
def test_hf_gpt2_exported(hf_gpt2, batch):
    vm = exported(hf_gpt2, hf_inputs(batch), f"hf gpt2 export b{batch}")
    assert_matches(vm, hf_gpt2, hf_inputs(batch, seed=1))


def test_hf_gpt2_dynamic_batch(hf_gpt2):
    batch = Dim("batch")
    dims = {"input_ids": {0: batch}, "attention_mask": {0: batch}}
    vm = exported(hf_gpt2, hf_inputs(2), "hf gpt2 export dynamic batch", dims)
    for b in (1, 8):
        assert_matches(vm, hf_gpt2, hf_inputs(b, seed=b))


# -- nn.TransformerEncoderLayer ------------------------------------------------------------
@pytest.fixture(scope="module")
def encoder():
    return Z.seeded(Z.encoder_layer(d=32, n_head=4, ff=64))


def test_transformer_encoder_layer_exported_batch1(encoder):
    x = (torch.randn(1, 8, 32, generator=gen(1)),)
    assert_matches(exported(encoder, x, "encoder export b1"), encoder, x)


def test_transformer_encoder_layer_padding_mask_batch8(encoder):
    model = Z.EncoderWithMask(encoder).eval()
    assert_matches(exported(model, encoder_inputs(8), "encoder+mask export b8"), model, encoder_inputs(8, seed=1))


def test_transformer_encoder_layer_dynamic_batch(encoder):
    model = Z.EncoderWithMask(encoder).eval()
    batch = Dim("batch")
    vm = exported(model, encoder_inputs(2), "encoder+mask export dynamic", {"src": {0: batch}, "pad_mask": {0: batch}})
    for b in (1, 8):
        assert_matches(vm, model, encoder_inputs(b, seed=b))
