"""The course's MLP on real data (scikit-learn digits): every variant equals NumPy."""

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

import mlc_mlir as mlc

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "mlp_digits.py"


@pytest.fixture(scope="module")
def mlp():
    pytest.importorskip("sklearn")
    spec = importlib.util.spec_from_file_location("mlp_digits", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    x_train, y_train, x_test, y_test = module.load_data()
    params = module.train_mlp(x_train, y_train)
    ref = module.numpy_mlp(x_test, *(params[k] for k in ("w0", "b0", "w1", "b1")))
    return module, params, x_test, y_test, ref


def check(mod, args, ref, y):
    logits = mlc.graph.VirtualMachine(mlc.graph.build(mod), mlc.cpu())["main"](*args).numpy()
    np.testing.assert_array_equal(logits.argmax(1), ref.argmax(1))
    np.testing.assert_allclose(logits, ref, rtol=1e-4, atol=1e-4)
    return (logits.argmax(1) == y).mean()


@pytest.mark.parametrize("kinds", [("tir", "tir", "tir"), ("env", "env", "env"), ("tir", "env", "env"),
                                   ("env", "tir", "tir")])
def test_variants_match_numpy(mlp, kinds):
    module, params, x, y, ref = mlp
    base = module.tensor_programs() if "tir" in kinds else None
    acc = check(module.build_mlp(kinds, base), [x, *(params[k] for k in ("w0", "b0", "w1", "b1"))], ref, y)
    assert acc > 0.93


@pytest.mark.isolated  # a broken BindParams can abort the interpreter
def test_bind_params_and_graph_ops(mlp):
    module, params, x, y, ref = mlp
    mixture = module.build_mlp(("tir", "env", "env"), module.tensor_programs())
    bound = mlc.graph.transform.BindParams("main", params)(mixture)
    assert check(bound, [x], ref, y) > 0.93
    assert check(bound, [x[:7]], ref[:7], y[:7]) >= 0.0  # another batch size, same executable kind
    weights = [params[k] for k in ("w0", "b0", "w1", "b1")]
    assert check(module.build_mlp_ops(), [x, *weights], ref, y) > 0.93


def test_example_main_runs(mlp, capsys, monkeypatch):
    module = mlp[0]
    # main() imports its sibling examples/mlp_fusion.py, found beside the script when run as one
    spec = importlib.util.spec_from_file_location("mlp_fusion", EXAMPLE.with_name("mlp_fusion.py"))
    fusion = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fusion)
    monkeypatch.setitem(sys.modules, "mlp_fusion", fusion)
    assert module.main() == 0
    out = capsys.readouterr().out
    assert out.count("argmax == NumPy: True") == 5
