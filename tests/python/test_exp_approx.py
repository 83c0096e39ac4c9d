"""The build's ``exp-approx`` stage (compiler/exp_approx.py): ``math.exp`` on f32 vectors
as a polynomial instead of one libm call per lane; within 2 ulp of exp over the finite
range, the limits and NaN as libm gives them, and the ops built on it (softmax, tanh-GELU)
equal torch."""

import numpy as np
import pytest
import torch

import mlc_mlir as mlc
from mlc_mlir import te, topi
from mlc_mlir.schedule.rules import default_schedule


def _ulps(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.abs(a.view(np.int32).astype(np.int64) - b.view(np.int32).astype(np.int64))


def test_vector_exp_is_within_two_ulp_and_keeps_the_limits(capsys):
    n = 1 << 14
    x = te.placeholder((n,), name="x")
    mod = default_schedule(te.create_prim_func([x, te.compute((n,), lambda i: te.exp(x[i]), name="y")], name="f"))
    rt = mlc.build(mod, print_after_all=True)
    dump = capsys.readouterr().err
    after = dump.split("// -----// IR Dump After exp-approx //----- //\n", 1)[1].split("// -----// IR Dump After", 1)[0]
    assert "math.exp" not in after and "math.fma" in after  # the vectorized exp became the polynomial
    special = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 88.72, 88.73, -87.33, -87.34, -1e-30], "float32")
    xs = np.concatenate([np.random.default_rng(0).uniform(-87.3, 88.7, n - 4096 - special.size),
                         np.linspace(-30, 30, 4096), special]).astype("float32")
    out = np.zeros(n, "float32")
    rt["f"](xs, out)
    with np.errstate(over="ignore"):
        want = np.exp(xs.astype("float64")).astype("float32")
    normal = np.isfinite(want) & (want >= np.finfo(np.float32).tiny)
    assert _ulps(out[normal], want[normal]).max() <= 2
    tail = out[-special.size:]
    assert np.isnan(tail[0]) and tail[1] == np.inf and tail[2] == 0.0 and tail[3] == 1.0 and tail[4] == 1.0
    assert tail[6] == np.inf and tail[8] == 0.0  # past FLT_MAX: inf; under FLT_MIN: 0 (no denormals)


@pytest.mark.parametrize("shape", [(3, 5, 37), (2, 128, 128)])
def test_softmax_and_tanh_gelu_on_the_polynomial_equal_torch(shape):
    rng = np.random.default_rng(1)
    x = te.placeholder(shape, name="x")
    gelu = te.compute(shape, lambda *i: 0.5 * x[i] * (1.0 + te.tanh(0.7978845608 * (x[i] + 0.044715 * x[i] * x[i] * x[i]))),
                      name="gelu")
    rt = mlc.build(default_schedule(te.create_prim_func([x, topi.nn.softmax(x, axis=-1), gelu], name="f")))
    xv = (rng.standard_normal(shape) * 8).astype("float32")
    sm, ge = np.zeros(shape, "float32"), np.zeros(shape, "float32")
    rt["f"](xv, sm, ge)
    t = torch.from_numpy(xv)
    np.testing.assert_allclose(sm, torch.softmax(t, -1).numpy(), rtol=2e-6, atol=1e-7)
    np.testing.assert_allclose(ge, torch.nn.functional.gelu(t, approximate="tanh").numpy(), rtol=2e-5, atol=1e-6)
