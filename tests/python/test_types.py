"""Type checking of code that uses the package: mypy (config: pyproject.toml's [tool.mypy])
passes on examples/ and finds the mistakes of a small misuse snippet, so the public names
(``mlc.build``, ``mlc.Schedule``, ``mlc.graph``...) have their real types, not ``Any``."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("mypy", reason="mypy is in the test extra (pip install -e '.[test]')")

ROOT = Path(__file__).resolve().parents[2]

# Each line marked `# E: <text>` must get one mypy error containing <text>, and no other line any.
BAD = '''\
import numpy as np
import mlc_mlir as mlc
from mlc_mlir import graph as relax
from mlc_mlir import meta_schedule as ms
from mlc_mlir import te

A = te.placeholder((4, 4), "float32", name="A")
B = te.compute((4, 4), lambda i, j: A[i, j] + 1.0, name="B")
mod = te.create_prim_func([A, B])
rt = mlc.build(mod, target="llvm")
rt.no_such_method()  # E: "RuntimeModule" has no attribute "no_such_method"
mlc.no_such_name  # E: Module has no attribute "no_such_name"
mlc.build("not a module")  # E: Argument 1 to "build" has incompatible type "str"
sch = mlc.Schedule(mod)
sch.no_such_primitive()  # E: "Schedule" has no attribute "no_such_primitive"
sch.split(sch.get_loops(sch.get_block("B"))[0], factors=[None, 2])
sch2 = mlc.tir.Schedule(mod)
sch2.get_block(3)  # E: Argument 1 to "get_block" of "Schedule" has incompatible type "int"
relax.op.no_such_op  # E: Module has no attribute "no_such_op"
mlc.runtime.no_such_function  # E: Module has no attribute "no_such_function"
mlc.te.no_such_function  # E: Module has no attribute "no_such_function"
mlc.tune.no_such_function  # E: Module has no attribute "no_such_function"
mlc.topi.no_such_function  # E: Module has no attribute "no_such_function"
mlc.frontend.no_such_function  # E: Module has no attribute "no_such_function"
mlc.ir.no_such_name  # E: Module has no attribute "no_such_name"
x: int = mlc.nd.array(np.zeros(3))  # E: Incompatible types in assignment
db = ms.tune_tir(mod, "llvm", max_trials_global=4)
db.no_such_method()  # E: "JSONDatabase" has no attribute "no_such_method"
best = ms.tune_tir(mod, "llvm", config=ms.TuneConfig(max_trials_global=4))
best.trace.no_such_method()  # E: "Trace" has no attribute "no_such_method"
'''

# Every public name of API.md reached from `mlc`: mypy must know its type (not Any).
PUBLIC = ["mlc.build", "mlc.Module", "mlc.IRModule", "mlc.Function", "mlc.Schedule", "mlc.cpu", "mlc.cuda",
          "mlc.register_func", "mlc.MlcError", "mlc.ScheduleError", "mlc.GraphError", "mlc.BuildError",
          "mlc.nd.array", "mlc.nd.empty", "mlc.nd.NDArray", "mlc.runtime.array", "mlc.runtime.empty",
          "mlc.te.placeholder", "mlc.te.compute", "mlc.te.create_prim_func", "mlc.schedule.Trace",
          "mlc.schedule.TensorIntrin", "mlc.schedule.apply_transform_script", "mlc.tir.Schedule",
          "mlc.graph.BlockBuilder", "mlc.graph.Var", "mlc.graph.DataflowVar", "mlc.graph.const",
          "mlc.graph.op.matmul", "mlc.graph.op.call_tir", "mlc.graph.op.call_dps_packed", "mlc.graph.build",
          "mlc.graph.VirtualMachine", "mlc.graph.transform.LegalizeOps", "mlc.graph.transform.FuseOps",
          "mlc.graph.transform.BindParams", "mlc.graph.PyExprMutator", "mlc.tune.tune_tir", "mlc.tune.compile_tir",
          "mlc.tune.tune_model", "mlc.tune.plot", "mlc.meta_schedule.tune_tir", "mlc.meta_schedule.TuneConfig",
          "mlc.meta_schedule.cost_model.XGBModel", "mlc.meta_schedule.space_generator.ScheduleFn",
          "mlc.meta_schedule.tir_integration.compile_tir", "mlc.meta_schedule.relax_integration.tune_relax",
          "mlc.frontend.from_fx", "mlc.frontend.from_exported_program", "mlc.topi.nn.matmul", "mlc.topi.add",
          "mlc.ir.IRModule"]
GOOD = "import mlc_mlir as mlc\n" + "".join(f"reveal_type({n})\n" for n in PUBLIC)


def _mypy(*paths: str | Path) -> tuple[list[str], list[str]]:
    proc = subprocess.run([sys.executable, "-m", "mypy", "--no-error-summary", "--show-error-codes",
                           *map(str, paths)], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode in (0, 1), f"mypy crashed:\n{proc.stdout}\n{proc.stderr}"
    lines = proc.stdout.splitlines()
    return [line for line in lines if ": note: " in line], [line for line in lines if ": error: " in line]


def test_examples_pass_and_misuse_is_caught(tmp_path):
    bad = tmp_path / "mlc_types_misuse.py"
    bad.write_text(BAD)
    good = tmp_path / "mlc_types_public.py"
    good.write_text(GOOD)
    notes, errors = _mypy("examples", bad, good)  # one run: the package is analysed once
    revealed = [n.split("Revealed type is ")[1] for n in notes if "Revealed type is " in n]
    assert len(revealed) == len(PUBLIC), notes
    untyped = [name for name, t in zip(PUBLIC, revealed) if t.strip('"') == "Any"]
    assert not untyped, f"public names that type checkers see as Any: {untyped}"
    in_examples = [e for e in errors if e.startswith("examples")]
    assert not in_examples, "mypy errors in examples/:\n" + "\n".join(in_examples)

    found: dict[int, list[str]] = {}
    for e in errors:
        # (by file name: mypy's cache may report the path of an earlier run's identical file)
        m = re.match(r"(?:.*/)?mlc_types_misuse\.py:(\d+): error: (.*)", e)
        assert m, f"an error outside examples/ and the misuse snippet: {e}"
        found.setdefault(int(m.group(1)), []).append(m.group(2))
    expected = {n: line.split("# E: ")[1] for n, line in enumerate(BAD.splitlines(), 1) if "# E: " in line}
    missing = {n: text for n, text in expected.items() if not any(text in msg for msg in found.get(n, []))}
    assert not missing, f"mypy did not report these (line: expected text): {missing}; it reported {found}"
    unexpected = {n: msgs for n, msgs in found.items() if n not in expected}
    assert not unexpected, f"errors on lines that are correct: {unexpected}"
