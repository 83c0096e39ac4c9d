"""Traces as data: as_json / from_json through the instruction-kind registry,
Schedule.replay, and lazy application of primitives."""

import json

import pytest

from mlc_mlir import ScheduleError
from mlc_mlir.schedule import INSTRUCTION_KINDS, Schedule, Trace

from _schedule_util import check_matmul, matmul, mm_relu


def course_schedule(sch):
    block_c = sch.get_block("C", "main")
    i, j, k = sch.get_loops(block=block_c)
    j_factors = sch.sample_perfect_tile(loop=j, n=2)
    j_0, j_1 = sch.split(loop=j, factors=j_factors)
    sch.reorder(i, j_0, k, j_1)
    sch.decompose_reduction(block_c, k)
    return sch


def fused_schedule(sch):
    block_y = sch.get_block("Y", "mm_relu")
    i, j, k = sch.get_loops(block_y)
    i0, i1 = sch.split(i, factors=sch.sample_perfect_tile(i, n=2, max_innermost_factor=8))
    j0, j1 = sch.split(j, factors=[None, 16])
    sch.reorder(i0, j0, k, i1, j1)
    sch.reverse_compute_at(sch.get_block("C", "mm_relu"), j0)
    sch.vectorize(j1)
    sch.parallel(i0)
    sch.decompose_reduction(block_y, k)
    return sch


@pytest.mark.parametrize("make, schedule", [(matmul, course_schedule), (mm_relu, fused_schedule)])
def test_json_round_trip_replays_to_same_ir(make, schedule):
    sch = schedule(Schedule(make(), seed=5))
    text = json.dumps(sch.trace.as_json())
    back = Trace.from_json(json.loads(text))
    assert str(back) == str(sch.trace)
    assert back.decisions == sch.trace.decisions
    replayed = Schedule(make()).replay(back)
    assert str(replayed.mod) == str(sch.mod)
    assert str(Trace.from_json(back.to_json_str(), make()).apply().mod) == str(sch.mod)


def test_replay_with_other_decision_gives_that_tiling():
    sch = course_schedule(Schedule(matmul(), seed=0))
    other = Schedule(matmul()).replay(Trace.from_json(sch.trace.as_json()).with_decisions({2: [32, 4]}))
    assert "decision=[32, 4]" in str(other.trace)
    check_matmul(other)


def test_registry_knows_every_primitive():
    for name in ("split", "reorder", "fuse", "sample_perfect_tile", "cache_write", "reverse_compute_at"):
        assert INSTRUCTION_KINDS[name].name == name
    assert INSTRUCTION_KINDS["reorder"].positional and INSTRUCTION_KINDS["sample_categorical"].sampling


def test_bad_json_raises_schedule_error():
    with pytest.raises(ScheduleError, match="unknown trace instruction kind 'explode'"):
        Trace.from_json({"version": 1, "insts": [["explode", {}, [], None]]})
    with pytest.raises(ScheduleError, match="not an earlier output"):
        Trace.from_json({"version": 1, "insts": [["get_loops", {"block": {"rv": 3}}, [], None]]})
    with pytest.raises(ScheduleError, match="expected"):
        Trace.from_json({"insts": 3})
    with pytest.raises(ScheduleError, match="not JSON"):
        Trace.from_json("{oops")
    with pytest.raises(ScheduleError, match="replay expects a Trace"):
        Schedule(matmul()).replay("split")


def test_primitives_are_applied_lazily_once():
    sch = Schedule(matmul(), seed=1)
    calls = []
    orig = sch._apply_state
    sch._apply_state = lambda: calls.append(1) or orig()
    course_schedule(sch)
    assert calls == []
    first = str(sch.mod)
    assert str(sch.mod) == first and calls == [1]


def test_failing_script_rolls_back_to_before_the_failing_primitive(monkeypatch):
    from mlc_mlir.schedule import schedule as schedule_module

    real = schedule_module.run_transform

    def picky(payload, tmod, **kw):  # the interpreter rejecting any script that unrolls
        if "transform.loop.unroll" in str(tmod):
            raise ScheduleError("schedule: the transform script failed:\nunroll refused")
        return real(payload, tmod, **kw)

    monkeypatch.setattr(schedule_module, "run_transform", picky)
    sch = Schedule(matmul())
    block_c = sch.get_block("C", "main")
    i, j, k = sch.get_loops(block_c)
    j0, j1 = sch.split(j, factors=[None, 4])
    sch.reorder(i, j0, k, j1)
    sch.unroll(j1)
    sch.decompose_reduction(block_c, k)
    with pytest.raises(ScheduleError, match=r"(?s)sch.unroll\(loop=l5\): .*unroll refused.*rolled back"):
        sch.mod
    assert [inst.kind for inst in sch.trace.instructions][-1] == "reorder"
    assert "step %c4" in str(sch.mod)
    check_matmul(sch)


def test_every_recorded_kind_is_registered():
    import re
    from pathlib import Path

    import mlc_mlir.schedule as pkg

    recorded = set()
    for path in Path(pkg.__file__).parent.glob("*.py"):
        recorded |= set(re.findall(r'_record\(\s*"([a-z_]+)"', path.read_text()))
    assert recorded and recorded <= set(INSTRUCTION_KINDS), sorted(recorded - set(INSTRUCTION_KINDS))


def _two_matmuls():
    import mlc_mlir as mlc
    from mlc_mlir.testing.programs import matmul_text
    return mlc.Module.parse(matmul_text(name="f") + matmul_text(name="g"))


def _run_two(mod):
    import numpy as np

    import mlc_mlir as mlc
    from mlc_mlir.testing.programs import N, inputs
    a, b = inputs()
    rt = mlc.build(mod)
    for func in ("f", "g"):
        out = np.zeros((N, N), np.float32)
        rt[func](a, b, out)
        np.testing.assert_allclose(out, a @ b, rtol=1e-4, atol=1e-4)


def test_a_failing_primitive_restores_its_function_and_keeps_the_others():
    # each primitive saves only the functions it resolves: a primitive refused on @g leaves
    # @g as it was and @f's schedule as it is; both keep scheduling afterwards
    sch = Schedule(_two_matmuls())
    fi, fj, fk = sch.get_loops(sch.get_block("C", "f"))
    sch.split(fj, factors=[None, 4])
    gi, gj, gk = sch.get_loops(sch.get_block("C", "g"))
    sch.split(gi, factors=[None, 8])
    with pytest.raises(ScheduleError):
        sch.parallel(sch.get_loops(sch.get_block("C", "g"))[-1])  # g's k: a reduction
    assert len(sch.get_loops(sch.get_block("C", "g"))) == 4 and len(sch.get_loops(sch.get_block("C", "f"))) == 4
    sch.split(sch.get_loops(sch.get_block("C", "f"))[0], factors=[None, 2])
    text = str(sch.mod)
    assert "step %c4" in text and "step %c8" in text and "step %c2" in text, text
    _run_two(sch.mod)


def test_a_failing_script_restores_every_function_to_before_its_primitive(monkeypatch):
    # the script rejected at a later apply: the state goes back to before the failing
    # primitive in every function (here @g's split after it is dropped too)
    from mlc_mlir.schedule import schedule as schedule_module

    real = schedule_module.run_transform

    def picky(payload, tmod, **kw):
        if "transform.loop.unroll" in str(tmod):
            raise ScheduleError("schedule: the transform script failed:\nunroll refused")
        return real(payload, tmod, **kw)

    monkeypatch.setattr(schedule_module, "run_transform", picky)
    sch = Schedule(_two_matmuls())
    gi, gj, gk = sch.get_loops(sch.get_block("C", "g"))
    sch.split(gj, factors=[None, 8])
    fi, fj, fk = sch.get_loops(sch.get_block("C", "f"))
    f0, f1 = sch.split(fj, factors=[None, 4])
    sch.reorder(fi, f0, fk, f1)
    sch.unroll(f1)
    gi2, gj0, gj1, gk2 = sch.get_loops(sch.get_block("C", "g"))
    sch.split(gi2, factors=[None, 2])
    with pytest.raises(ScheduleError, match="rolled back"):
        sch.mod
    assert [inst.kind for inst in sch.trace.instructions][-1] == "reorder"
    assert len(sch.get_loops(sch.get_block("C", "g"))) == 4  # g: i, j0, j1, k (its later split dropped)
    sch.split(sch.get_loops(sch.get_block("C", "g"))[0], factors=[None, 2])
    text = str(sch.mod)
    assert "step %c4" in text and "step %c8" in text and "step %c2" in text, text
    _run_two(sch.mod)
