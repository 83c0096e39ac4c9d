# lit configuration: `lit tests/lit` (make test runs it).
# RUN lines use %PYTHON, mlc-opt and filecheck (all from the project's virtual environment).
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
# `mlc-opt` and `filecheck` resolve through PATH: the venv's console scripts, then tools/.
config.environment["PATH"] = os.pathsep.join([bindir, os.path.join(root, "tools"), os.environ.get("PATH", "")])
config.environment["PYTHONPATH"] = os.pathsep.join([root, os.environ.get("PYTHONPATH", "")])
for var in ("HOME", "TMPDIR", "MLC_OPENMP_LIB"):
    if var in os.environ:
        config.environment[var] = os.environ[var]
