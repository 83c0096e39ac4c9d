"""Static memory planning of graph builds (issue 25, item 4): the intermediates of a lowered
graph function share one arena (tensors whose lifetimes do not overlap share bytes), and
``ex.memory_plan`` reports the peak. Each build's result is compared with NumPy or torch; the plan's figures with the
model's own tensor sizes."""

import logging

import numpy as np
import pytest
from _deploy_models import cnn_module, cnn_params, cnn_reference, mlp_module, mlp_params, mlp_reference

import mlc_mlir as mlc
from mlc_mlir.graph import op
from mlc_mlir.runtime.vm import MemoryPlan

KB = 1024


def chain_module(widths: list[int], batch: int = 16) -> tuple[mlc.Module, list[np.ndarray]]:
    """x -> relu(x @ w0) -> relu(. @ w1) -> ...: one intermediate per layer but the last."""
    rng = np.random.default_rng(0)
    weights = [(rng.standard_normal((a, b)) / np.sqrt(a)).astype("float32") for a, b in zip(widths, widths[1:])]
    bb = mlc.graph.BlockBuilder()
    x = mlc.graph.Var("x", (batch, widths[0]), "float32")
    with bb.function("main", [x]):
        with bb.dataflow():
            h = x
            for w in weights:
                h = bb.emit(op.relu(bb.emit(op.matmul(h, mlc.graph.const(w)))))
            out = bb.emit_output(h)
        bb.emit_func_output(out)
    return bb.get(), weights


def chain_reference(weights: list[np.ndarray], x: np.ndarray) -> np.ndarray:
    for w in weights:
        x = np.maximum(x @ w, 0)
    return x


def test_chain_shares_buffers():
    widths = [64, 256, 64, 256, 64, 256, 32]
    mod, weights = chain_module(widths)
    ex = mlc.graph.build(mod, "llvm")
    plan = ex.memory_plan["main"]
    assert isinstance(plan, MemoryPlan)
    sizes = [16 * w * 4 for w in widths[1:-1]]  # the five intermediates, 64-byte multiples here
    assert plan.intermediates == len(sizes) and plan.dynamic == 0
    assert plan.total_bytes == sum(sizes)
    # two neighbours live at once at most: a layer's input and output
    assert plan.live_bytes == max(a + b for a, b in zip(sizes, sizes[1:]))
    # alternating 16 KiB / 4 KiB tensors in one arena: the plan holds no more than the tensors
    assert plan.buffers == 1 and plan.planned_bytes == plan.live_bytes == max(sizes) + min(sizes)
    assert plan.live_bytes <= plan.planned_bytes < plan.total_bytes
    assert plan.peak_bytes >= plan.planned_bytes
    x = np.random.default_rng(1).standard_normal((16, 64)).astype("float32")
    y = mlc.graph.VirtualMachine(ex, mlc.cpu())["main"](x).numpy()
    np.testing.assert_allclose(y, chain_reference(weights, x), rtol=1e-4, atol=1e-4)
    # the same inputs again (the buffers reused by the next call too)
    np.testing.assert_array_equal(mlc.graph.VirtualMachine(ex, mlc.cpu())["main"](x).numpy(), y)


def test_plan_is_logged(caplog):
    caplog.set_level(logging.INFO, logger="mlc_mlir")
    mod, _ = chain_module([32, 64, 32, 16])
    mlc.graph.build(mod, "llvm")
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("memory plan of main")]
    assert lines and "2 intermediates in" in lines[0] and "peak" in lines[0]


def test_cnn_scratch_and_library_round_trip(tmp_path):
    p = cnn_params()
    ex = mlc.graph.build(cnn_module(p), "llvm")
    plan = ex.memory_plan["main"]
    # conv -> relu -> pool -> flatten -> dense: the flatten is a view of the pool's result
    # (a reshape kernel called as a view), so two intermediates in one arena, live at once
    # (the pool reads the convolution's); the convolution's im2col is its own scratch,
    # counted in the peak on top of the arena
    assert plan.intermediates == 2 and plan.buffers == 1
    assert plan.planned_bytes == plan.live_bytes == plan.total_bytes
    assert plan.scratch_bytes > 0 and plan.planned_bytes < plan.peak_bytes <= plan.planned_bytes + plan.scratch_bytes
    ex.export_library(tmp_path / "cnn.so")
    loaded = mlc.runtime.load_module(tmp_path / "cnn.so")
    assert loaded.memory_plan == ex.memory_plan
    x = np.random.default_rng(0).random((1, 1, 8, 8), dtype="float32")
    y = mlc.graph.VirtualMachine(loaded, mlc.cpu())["main"](x).numpy()
    np.testing.assert_allclose(y, cnn_reference(p, x), rtol=1e-4, atol=1e-4)


def test_compile_cache_keeps_the_plan(tmp_path, monkeypatch):
    monkeypatch.setenv("MLC_CACHE_DIR", str(tmp_path / "cache"))
    mod, weights = chain_module([32, 128, 32, 128, 8])
    first = mlc.graph.build(mod, "llvm")
    second = mlc.graph.build(mod, "llvm")  # from the cache
    assert type(second).__name__ == "CachedExecutable"
    assert second.memory_plan == first.memory_plan and first.memory_plan["main"].buffers == 1
    x = np.random.default_rng(2).standard_normal((16, 32)).astype("float32")
    np.testing.assert_allclose(mlc.graph.VirtualMachine(second, mlc.cpu())["main"](x).numpy(),
                               chain_reference(weights, x), rtol=1e-4, atol=1e-4)


def test_dynamic_batch_keeps_its_own_allocations():
    p = mlp_params()
    ex = mlc.graph.build(mlp_module(p), "llvm")  # batch "n"
    plan = ex.memory_plan["main"]
    assert plan.intermediates >= 1 and plan.dynamic == plan.intermediates == plan.buffers
    assert plan.planned_bytes == plan.total_bytes == 0
    rng = np.random.default_rng(3)
    for batch in (1, 7, 33):
        x = rng.random((batch, 784), dtype="float32")
        np.testing.assert_allclose(mlc.graph.VirtualMachine(ex, mlc.cpu())["main"](x).numpy(),
                                   mlp_reference(p, x), rtol=1e-4, atol=1e-4)


def test_resnet_block_against_torch():
    torch = pytest.importorskip("torch")
    from mlc_mlir.testing import models

    model = models.seeded(models.ResNet18()).eval()
    x = torch.randn(2, 3, 32, 32, generator=torch.Generator().manual_seed(0))
    ex = mlc.graph.build(mlc.frontend.from_exported_program(torch.export.export(model, (x,))), "llvm")
    plan = ex.memory_plan["main"]
    # ResNet-18's activations between its ~20 kernels in one arena of what they hold at once
    assert plan.intermediates >= 15 and plan.buffers == 1
    assert plan.live_bytes == plan.planned_bytes < plan.total_bytes / 2
    y = mlc.graph.VirtualMachine(ex, mlc.cpu())["main"](x.numpy()).numpy()
    ref = model(x).detach().numpy()
    assert np.abs(y - ref).max() <= 1e-5 * np.abs(ref).max()
    assert plan.peak_bytes > 0 and str(plan).startswith(f"{plan.intermediates} intermediates in {plan.buffers} buffers")


def test_memory_plan_json_round_trip():
    plan = MemoryPlan(intermediates=5, buffers=2, dynamic=0, planned_bytes=8 * KB, live_bytes=6 * KB,
                      total_bytes=20 * KB, scratch_bytes=KB, peak_bytes=9 * KB)
    assert MemoryPlan.from_json(plan.to_json()) == plan
