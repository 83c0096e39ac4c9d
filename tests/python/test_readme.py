"""The README's code blocks run as written (with a prelude defining what they assume)."""

import re
from pathlib import Path

import numpy as np

README = (Path(__file__).resolve().parents[2] / "README.md").read_text()
BLOCKS = re.findall(r"```python\n(.*?)```", README, re.S)

GRAPH_PRELUDE = '''
import numpy as np
import mlc_mlir as mlc
from mlc_mlir import te

def te_linear(x, w, b):
    k = te.reduce_axis((0, x.shape[1]), name="k")
    mm = te.compute((x.shape[0], w.shape[0]), lambda i, j: te.sum(x[i, k] * w[j, k], axis=k), name="matmul")
    return te.compute(mm.shape, lambda i, j: mm[i, j] + b[j], name="linear")

@mlc.register_func("env.relu", override=True)
def env_relu(x, out):
    np.maximum(x, 0, out=out)

rng = np.random.default_rng(0)
w0_np, b0_np = rng.standard_normal((128, 64), dtype=np.float32), rng.standard_normal(128, dtype=np.float32)
w1_np, b1_np = rng.standard_normal((10, 128), dtype=np.float32), rng.standard_normal(10, dtype=np.float32)
w0, b0, w1, b1 = (mlc.graph.const(a) for a in (w0_np, b0_np, w1_np, b1_np))
images = rng.standard_normal((5, 64), dtype=np.float32)
'''


def test_quick_example_runs():
    scope: dict = {}
    exec(BLOCKS[0], scope)
    np.testing.assert_allclose(scope["c"], np.maximum(scope["a"] @ scope["b"], 0), rtol=1e-5)


def test_schedule_example_runs():
    scope: dict = {}
    exec(BLOCKS[0], scope)
    exec(BLOCKS[1], scope)
    c = np.zeros((128, 128), np.float32)
    scope["rt"]["mm_relu"](scope["a"], scope["b"], c)
    np.testing.assert_allclose(c, np.maximum(scope["a"] @ scope["b"], 0), rtol=1e-5)


def test_graph_example_runs():
    scope: dict = {}
    exec(GRAPH_PRELUDE + BLOCKS[2], scope)
    ref = np.maximum(scope["images"] @ scope["w0_np"].T + scope["b0_np"], 0) @ scope["w1_np"].T + scope["b1_np"]
    np.testing.assert_allclose(scope["logits"], ref, rtol=1e-4, atol=1e-4)


OPT_PRELUDE = '''
import numpy as np
import mlc_mlir as mlc
bb = mlc.graph.BlockBuilder()
x, y, z = (mlc.graph.Var(n, (4, 8), "float32") for n in "xyz")
with bb.function("main", [x, y, z]):
    with bb.dataflow():
        lv0 = bb.emit(mlc.graph.op.multiply(x, y))
        lv1 = bb.emit(mlc.graph.op.add(lv0, z))
        gv = bb.emit_output(mlc.graph.op.relu(lv1))
    bb.emit_func_output(gv)
mod = bb.get()
'''


def test_graph_optimization_example_runs():
    scope: dict = {}
    exec(OPT_PRELUDE + BLOCKS[3], scope)
    mod = scope["mod"]
    text = str(mod)
    assert "mlc.multiply" not in text and "mlc.add" not in text  # rewritten, fused, legalized
    rng = np.random.default_rng(0)
    x, y, z = (rng.standard_normal((4, 8), dtype=np.float32) for _ in range(3))
    import mlc_mlir as mlc
    vm = mlc.graph.VirtualMachine(mlc.graph.build(mod, opt_level=0), mlc.cpu())
    np.testing.assert_allclose(vm["main"](x, y, z).numpy(), np.maximum(x * y + z, 0), rtol=1e-5)
