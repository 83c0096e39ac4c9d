# RUN: %PYTHON %s | filecheck %s
# graph.build schedules every fused kernel with the default rules (schedule/rules.py) at its
# default opt_level: the fused matmul + bias + relu is register-tiled and vectorized (FMAs
# on vectors in the compiled code: the weights, folded to w.T by FoldConstant, give 16-wide
# rows of the 32 hidden columns and the 10 outputs in tiles of 5: not whole vectors, so at
# most one vector wide), opt_level=0 keeps
# scalar loops; both match NumPy.
import numpy as np

import mlc_mlir as mlc
from mlc_mlir.graph import BlockBuilder, Var, op
from mlc_mlir.testing import run

rng = np.random.default_rng(0)
w0, b0 = rng.standard_normal((32, 48)).astype("float32") / 7, rng.standard_normal(32).astype("float32")
w1, b1 = rng.standard_normal((10, 32)).astype("float32") / 6, rng.standard_normal(10).astype("float32")
x = rng.standard_normal((16, 48)).astype("float32")


def mlp() -> mlc.Module:
    bb = BlockBuilder()
    xv = Var("x", (16, 48), "float32")
    with bb.function("main", [xv]):
        with bb.dataflow():
            h = bb.emit(op.relu(op.add(op.matmul(xv, op.permute_dims(mlc.graph.const(w0))), mlc.graph.const(b0))))
            gv = bb.emit_output(op.add(op.matmul(h, op.permute_dims(mlc.graph.const(w1))), mlc.graph.const(b1)))
        bb.emit_func_output(gv)
    return bb.get()


REF = np.maximum(x @ w0.T + b0, 0) @ w1.T + b1


def build_and_report(level):
    # the AVX2 register file the tiles above describe (an AVX-512 host's own build tiles wider)
    ex = mlc.graph.build(mlp(), target="llvm -mcpu=haswell", opt_level=level)
    out = mlc.graph.VirtualMachine(ex)["main"](x).numpy()
    llvm = ex.get_source("llvm-dialect")
    fmas = sorted({line.split("->")[-1].strip() for line in llvm.splitlines() if "llvm.intr.fmuladd(" in line})
    print(f"opt_level={level}: vector FMAs {fmas}; matches NumPy: {np.allclose(out, REF, rtol=1e-5, atol=1e-5)}")


# CHECK-LABEL: TEST: test_default_opt_level_vectorizes
# CHECK: opt_level=2: vector FMAs ['vector<16xf32>', 'vector<5xf32>']; matches NumPy: True
@run
def test_default_opt_level_vectorizes():
    build_and_report(2)


# CHECK-LABEL: TEST: test_opt_level_0_keeps_scalar_loops
# CHECK: opt_level=0: vector FMAs []; matches NumPy: True
@run
def test_opt_level_0_keeps_scalar_loops():
    build_and_report(0)
