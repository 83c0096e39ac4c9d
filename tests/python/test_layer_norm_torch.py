"""``torch.nn.LayerNorm`` imported both ways equals torch at every batch and graph
``opt_level`` (the default build once computed wrong rows for batches 2-6: two reductions
bufferized into one buffer, see compiler/partial_writes.py)."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")
from torch import fx, nn  # noqa: E402

import mlc_mlir as mlc  # noqa: E402


def layer_norm_model(d=8):
    torch.manual_seed(0)
    model = nn.Sequential(nn.LayerNorm(d)).eval()
    with torch.no_grad():
        model[0].weight.uniform_(0.5, 1.5)
        model[0].bias.uniform_(-1, 1)
    return model


def run(mod, x, opt_level):
    vm = mlc.graph.VirtualMachine(mlc.graph.build(mod, opt_level=opt_level), mlc.cpu())
    return vm["main"](x).numpy()


@pytest.mark.parametrize("batch", [1, 2, 3, 5, 6, 9])
@pytest.mark.parametrize("opt_level", [0, 1, 2])
def test_layer_norm_from_fx_every_batch_and_level(batch, opt_level):
    model = layer_norm_model()
    x = np.random.default_rng(batch).standard_normal((batch, 8)).astype("float32")
    mod = mlc.frontend.from_fx(fx.symbolic_trace(model), [(batch, 8)])
    np.testing.assert_allclose(run(mod, x, opt_level), model(torch.from_numpy(x)).detach().numpy(),
                               rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("batch", [2, 4])
def test_layer_norm_from_exported_program(batch):
    model = layer_norm_model(16)
    x = np.random.default_rng(batch).standard_normal((batch, 16)).astype("float32")
    mod = mlc.frontend.from_exported_program(torch.export.export(model, (torch.from_numpy(x),)))
    np.testing.assert_allclose(run(mod, x, 2), model(torch.from_numpy(x)).detach().numpy(), rtol=1e-5, atol=1e-5)
