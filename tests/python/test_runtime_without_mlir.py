"""``mlc_mlir.runtime`` stands alone: it imports no MLIR module, and calls compiled code
it is handed (here: the JIT's symbol lookup of a module built beforehand, kept alive)."""

import subprocess
import sys

CODE = r"""
import sys
import numpy as np
import mlc_mlir as mlc
from mlc_mlir import te

# build with the compiler (MLIR loaded), keep the JIT's code alive and its symbol lookup
A = te.placeholder(("n", 8), name="A")
B = te.compute(A.shape, lambda i, j: A[i, j] * 2.0 + 1.0, name="B")
jit = mlc.build(te.create_prim_func([A, B], name="f"))
keep = (jit.engine, jit.engine.raw_lookup, jit.signatures, jit._fast_plans)

# forget every mlc_mlir and mlir module, and make mlir unimportable
for name in [n for n in sys.modules if n == "mlir" or n.startswith(("mlir.", "mlc_mlir"))]:
    del sys.modules[name]
class NoMLIR:
    def find_spec(self, name, path=None, target=None):
        if name == "mlir" or name.startswith("mlir."):
            raise ImportError(f"{name}: MLIR is not installed here")
        return None
sys.meta_path.insert(0, NoMLIR())

import mlc_mlir.runtime as rt
import mlc_mlir.runtime.vm  # the virtual machine's run-time half too
from mlc_mlir.errors import ArgumentError
from mlc_mlir.runtime.module import RuntimeModule
assert not any(n == "mlir" or n.startswith("mlir.") for n in sys.modules), sorted(sys.modules)
mod = RuntimeModule(lookup=keep[1], signatures=keep[2], target="llvm", keep_alive=[keep[0]], fast_plans=keep[3])
a = np.arange(24, dtype=np.float32).reshape(3, 8)
out = np.zeros_like(a)
mod["f"](a, out)                                    # the fast entry
np.testing.assert_array_equal(out, a * 2 + 1)
out2 = rt.empty((3, 8), "float32")
mod["f"](rt.array(a), out2)                         # the checked path, runtime arrays
np.testing.assert_array_equal(out2.numpy(), a * 2 + 1)
try:
    mod["f"](a, np.zeros((4, 8), np.float32))
except ArgumentError as exc:
    print("refused:", exc)
print("mlir modules:", [n for n in sys.modules if n == "mlir" or n.startswith("mlir.")])
"""


def test_runtime_imports_and_calls_without_mlir():
    proc = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "refused: @f" in proc.stdout and "mlir modules: []" in proc.stdout, proc.stdout
