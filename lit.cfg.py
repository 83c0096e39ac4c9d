# lit configuration: `lit tests/lit` (make test runs it).
# RUN lines use %PYTHON, mlc-opt and filecheck: the interpreter running lit and the console
# scripts installed beside it. mlc_mlir is the installed package, never the checkout.
import os
import sys

import lit.formats

config.name = "mlc-mlir"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir", ".py"]
root = os.path.dirname(os.path.abspath(__file__))
config.test_exec_root = os.path.join(root, ".lit-out")
config.excludes = ["lit.cfg.py", "Inputs", "__pycache__", ".venv", "mlc_mlir", "examples", "benchmarks"]

python = sys.executable
bindir = os.path.dirname(python)
config.substitutions.append(("%PYTHON", python))
config.substitutions.append(("%ROOT", root))
# `mlc-opt` and `filecheck` resolve through PATH to the venv's console scripts.
config.environment["PATH"] = os.pathsep.join([bindir, os.environ.get("PATH", "")])
# Only the shared test helpers (tests/python/_*_util.py); they import the installed mlc_mlir.
config.environment["PYTHONPATH"] = os.path.join(root, "tests", "python")
# lit tests check what builds print and produce: never a build from the persistent compile cache
config.environment["MLC_CACHE_DIR"] = "off"
for var in ("HOME", "TMPDIR", "MLC_OPENMP_LIB", "MLC_CUDA_TOOLKIT", "MLC_DIALECTS_DIR", "MLC_LOG"):
    if var in os.environ:
        config.environment[var] = os.environ[var]
