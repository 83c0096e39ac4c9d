"""A schedule's transform script saved to a file and applied by ``mlc-opt
--transform-script=FILE`` gives exactly ``sch.mod`` (course ch.2 schedule, with sampling)."""

import numpy as np

import mlc_mlir as mlc
from mlc_mlir.tools.mlc_opt import main

from _schedule_util import mm_relu_text


def _course_schedule() -> mlc.Schedule:
    sch = mlc.Schedule(mlc.Module.parse(mm_relu_text()), seed=3)
    block_y = sch.get_block("Y", func_name="mm_relu")
    i, j, k = sch.get_loops(block_y)
    j_factors = sch.sample_perfect_tile(j, n=2, max_innermost_factor=8)
    j0, j1 = sch.split(j, factors=j_factors)
    sch.reorder(j0, k, j1)
    sch.reverse_compute_at(sch.get_block("C", "mm_relu"), j0)
    sch.decompose_reduction(block_y, k)
    return sch


def test_saved_script_through_mlc_opt_equals_schedule(tmp_path, capsys):
    sch = _course_schedule()
    script = tmp_path / "schedule.mlir"
    script.write_text(sch.trace.transform_script())
    payload = tmp_path / "mm_relu.mlir"
    payload.write_text(mm_relu_text())
    out = tmp_path / "out.mlir"
    assert main([str(payload), f"--transform-script={script}", "-o", str(out)]) == 0, capsys.readouterr().err
    applied = mlc.Module.parse(out.read_text())
    assert str(applied) == str(mlc.Module.parse(str(sch.mod)))
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((128, 128), dtype=np.float32), rng.standard_normal((128, 128), dtype=np.float32)
    c = np.zeros((128, 128), np.float32)
    mlc.build(applied)["mm_relu"](a, b, c)
    np.testing.assert_allclose(c, np.maximum(a @ b, 0), rtol=1e-4, atol=1e-4)


def test_failing_script_reports_error(tmp_path, capsys):
    payload = tmp_path / "mm_relu.mlir"
    payload.write_text(mm_relu_text())
    script = tmp_path / "bad.mlir"
    script.write_text("module attributes {transform.with_named_sequence} {\n"
                      "  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {\n"
                      "    %m = transform.structured.match ops{[\"linalg.matmul\"]} in %root"
                      " : (!transform.any_op) -> !transform.any_op\n"
                      "    transform.structured.tile_using_for %m tile_sizes [0, 0, 0, 4]"
                      " : (!transform.any_op) -> (!transform.any_op, !transform.any_op)\n"
                      "    transform.yield\n  }\n}\n")
    assert main([str(payload), f"--transform-script={script}"]) == 1
    assert "error" in capsys.readouterr().err
