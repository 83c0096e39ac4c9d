"""Train the digits MLP of ``examples/mlp_digits.py``, export it and one test image for main.c.

    python export_mlp.py build        # build/mlp.so, build/image.bin, build/expected.txt

The model is the course's MLP (64 -> 128 -> 10) written with graph ops, its trained weights
bound as constants, built by ``mlc.graph.build`` and written by ``ex.export_library``; the
image is the first digit of the test split, 64 float32 pixels in [0, 1]. Prints the class
Python predicts (the JIT's and the loaded library's), which main.c must print too.
"""

from __future__ import annotations

import runpy
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np

import mlc_mlir as mlc
from mlc_mlir.graph import op

# examples/mlp_digits.py: the digits data and training (run by its path: examples/ is no package)
digits = SimpleNamespace(**runpy.run_path(str(Path(__file__).resolve().parent.parent / "mlp_digits.py")))


def mlp_module(p: dict[str, np.ndarray]) -> mlc.Module:
    bb = mlc.graph.BlockBuilder()
    x = mlc.graph.Var("x", ("n", 64), "float32")
    w0, b0, w1, b1 = (mlc.graph.const(p[k]) for k in ("w0", "b0", "w1", "b1"))
    with bb.function("main", [x]):
        with bb.dataflow():
            lv0 = bb.emit(op.relu(bb.emit(op.add(bb.emit(op.matmul(x, op.permute_dims(w0))), b0))))
            gv = bb.emit_output(bb.emit(op.add(bb.emit(op.matmul(lv0, op.permute_dims(w1))), b1)))
        bb.emit_func_output(gv)
    return bb.get()


def main(out_dir: str = "build") -> int:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    x_train, y_train, x_test, y_test = digits.load_data()
    params = digits.train_mlp(x_train, y_train)
    ex = mlc.graph.build(mlp_module(params), target="llvm")
    ex.export_library(out / "mlp.so")
    image = np.ascontiguousarray(x_test[:1], dtype=np.float32)
    image.tofile(out / "image.bin")
    jit = mlc.graph.VirtualMachine(ex, mlc.cpu())["main"](image).numpy()
    loaded = mlc.graph.VirtualMachine(mlc.runtime.load_module(out / "mlp.so"), mlc.cpu())["main"](image).numpy()
    np.testing.assert_allclose(loaded, jit, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(jit, digits.numpy_mlp(image, **params), rtol=1e-4, atol=1e-4)
    predicted = int(jit.argmax())
    (out / "expected.txt").write_text(f"class {predicted}\n")
    print(f"exported {out / 'mlp.so'} ({(out / 'mlp.so').stat().st_size} bytes) and {out / 'image.bin'} "
          f"(a {y_test[0]}); Python predicts class {predicted}")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
