"""The package's layers (.importlinter at the repository root): the ground floor imports
nothing above it, and no layer imports one above it (import-linter's layers contract)."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_layer_contract_holds():
    lint = shutil.which("lint-imports", path=str(Path(sys.executable).parent))
    if lint is None:
        pytest.fail("import-linter is not installed (it is in the test extra: pip install -e '.[test]')")
    proc = subprocess.run([lint, "--config", str(ROOT / ".importlinter")], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "3 kept, 0 broken" in proc.stdout  # the layers; the runtime without MLIR; the graph subpackages


def test_ground_floor_module_shows_graph_functions_without_importing_graph_first():
    """``mlc.Module`` imports no graph code; parsing a graph module and indexing it still
    gives the graph layer's Function (loaded through the view the package root wires)."""
    code = """
import sys
from mlc_mlir.ir import Module
assert not any(m.startswith("mlc_mlir.graph") for m in sys.modules), "ir imported the graph layer"
mod = Module.parse('''
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> attributes {mlc.graph} {
  %y = "mlc.relu"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}''')
f = mod["main"]
print(type(f).__module__, [str(p) for p in f.params])
"""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("mlc_mlir.graph"), proc.stdout
