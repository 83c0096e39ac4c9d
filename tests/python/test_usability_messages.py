"""What a user sees (issue 22): a bad ``MLC_LOG`` only warns, a misspelt graph op names the
public module and close names, the tuning bar says why it stopped short of its budget, and
the demo counts its variants right."""

import ast
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import mlc_mlir as mlc
from mlc_mlir import graph as relax

from _schedule_util import matmul
from _tune_util import stochastic_schedule_mm

ROOT = Path(__file__).resolve().parents[2]


def test_invalid_mlc_log_warns_and_import_works():
    env = {k: v for k, v in os.environ.items() if not k.startswith("MLC_")}
    proc = subprocess.run([sys.executable, "-c", "import mlc_mlir as mlc; print(mlc.Module.__name__)"],
                          env={**env, "MLC_LOG": "verbose"}, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0 and proc.stdout.strip() == "Module", proc.stderr
    assert "RuntimeWarning: MLC_LOG='verbose' is not a log level (ignored)" in proc.stderr
    assert "use one of debug, info, warning, error" in proc.stderr


@pytest.mark.parametrize("spell, namespace, hint", [
    (lambda: relax.op.no_such_op, "mlc_mlir.graph.op", None),
    (lambda: mlc.graph.op.matmull, "mlc_mlir.graph.op", "did you mean matmul?"),
    (lambda: relax.op.conv2d, "mlc_mlir.graph.op", "did you mean nn.conv2d?"),
    (lambda: relax.op.nn.conv2, "mlc_mlir.graph.op.nn", "did you mean conv2d?"),
])
def test_missing_graph_op_names_the_public_module_and_close_names(spell, namespace, hint):
    with pytest.raises(AttributeError) as info:
        spell()
    err = info.value
    assert isinstance(err, mlc.GraphError) and isinstance(err, relax.op.UnknownOpError)
    msg = str(err)
    assert msg.startswith(f"{namespace} has no op "), msg
    assert "graph.ir" not in msg  # not the internal module path
    listed = msg.split("its ops: ")[1]
    assert ("matmul" if namespace == "mlc_mlir.graph.op" else "conv2d") in listed
    if hint:
        assert hint in msg
    else:
        assert "did you mean" not in msg
    assert not hasattr(relax.op, "no_such_op") and hasattr(relax.op, "matmul")


def test_progress_bar_says_the_space_is_exhausted(tmp_path, capsys):
    db = mlc.tune.tune_tir(matmul(), "llvm --num-cores=1", max_trials_global=8, num_trials_per_iter=4,
                           space=mlc.tune.ScheduleFn(stochastic_schedule_mm), work_dir=tmp_path, seed=0,
                           measure={"repeat": 2, "min_repeat_ms": 1.0}, progress=True)
    assert len(db.records()) == 5
    err = capsys.readouterr().err.replace("\r", "\n")
    last = [line for line in err.splitlines() if "5/8" in line][-1]
    assert "space exhausted: 5 distinct candidates" in last, err[-2000:]


def test_demo_says_how_many_ways_it_prints():
    path = ROOT / "examples" / "mlp_digits.py"
    text = path.read_text()
    tree = ast.parse(text)
    main = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "main")
    titles = [c.args[0].value for c in ast.walk(main) if isinstance(c, ast.Call)
              and getattr(c.func, "id", None) == "run_variant" and isinstance(c.args[0], ast.Constant)]
    assert [t[:3] for t in titles] == ["(a)", "(b)", "(c)", "(d)", "(e)"]
    words = {3: "three", 4: "four", 5: "five", 6: "six"}
    claimed = re.findall(r"\b(three|four|five|six) ways\b", text)
    assert claimed and set(claimed) == {words[len(titles)]}, claimed
