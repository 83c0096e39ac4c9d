"""conv2d on the shapes where index expressions degenerate (an output of width or height
1, strides larger than the window, 1x1 kernels), static and symbolic batch, against torch.

With an output width of 1 the im2col read ``p % ow * stride + kx`` is ``kx`` alone once
MLIR simplifies its affine map, and linalg then infers kx's range from the input's width:
te must simplify the same way to slice the operand (it once built invalid IR here, or with
a symbolic batch computed wrong values)."""

import itertools

import numpy as np
import pytest

import mlc_mlir as mlc
from mlc_mlir import graph as relax
from mlc_mlir.graph import op

torch = pytest.importorskip("torch")
rng = np.random.default_rng(0)

CASES = [(h, w, k, s, p, n) for h, w, k, s, p, n in itertools.product(
    [1, 2, 5], [1, 2, 4], [1, 3], [1, 2], [0, 1], [1, "n"]) if h + 2 * p >= k and w + 2 * p >= k]


@pytest.mark.parametrize("h, w, k, s, p, n", CASES)
def test_conv2d_degenerate_shapes_match_torch(h, w, k, s, p, n):
    x = relax.Var("x", (n, 3, h, w), "float32")
    wt = rng.standard_normal((4, 3, k, k)).astype(np.float32)
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            out = bb.emit_output(bb.emit(op.nn.conv2d(x, relax.const(wt), s, p)))
        bb.emit_func_output(out)
    ex = mlc.graph.build(bb.get(), "llvm", opt_level=0)
    xv = rng.standard_normal((2 if n == "n" else 1, 3, h, w)).astype(np.float32)
    got = mlc.graph.VirtualMachine(ex, mlc.cpu())["main"](xv).numpy()
    ref = torch.nn.functional.conv2d(torch.from_numpy(xv), torch.from_numpy(wt), stride=s, padding=p).numpy()
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5)
