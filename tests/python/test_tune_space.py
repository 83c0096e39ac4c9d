"""The auto-scheduling space (``space=None``, :class:`mlc.tune.AutoSchedule`): the rules'
own schedule first, random samples and mutants of the rules' decisions, the 6x16
full-tile register-accumulator schedule of mm_relu 128 among its candidates, and a small
tuning run through the public API (the tuned kernel equals NumPy; the best trace replays
to the same IR). No timing here: benchmarks/bench_tune.py."""

import random
import re

import numpy as np
import pytest

import mlc_mlir as mlc
from mlc_mlir.schedule import Schedule, Trace
from mlc_mlir.schedule.rules import apply_rules
from mlc_mlir.testing import check_mm_relu, filecheck
from mlc_mlir.testing.programs import mm_relu

from test_schedule_perf_shape import ir_after_stage

HASWELL = "llvm -mcpu=haswell -num-cores=1"


def test_first_candidate_is_the_rules_schedule():
    mod = mm_relu()
    (first,) = mlc.tune.AutoSchedule(HASWELL).initial(mod)
    plain = Schedule(mod)
    apply_rules(plain, HASWELL)
    assert str(first.mod) == str(plain.mod)
    assert "sample_categorical" in str(first.trace) and "sample_perfect_tile" in str(first.trace)


def test_invalid_decide_pick_is_a_schedule_error():
    """A pick that is not an index of a decision's options is refused, naming the decision
    (its label, site and sample kind), the pick and the options (it was once replaced by
    the rule's own pick without a word); None and NumPy integers are picks."""
    seen = []

    def record(decision):
        seen.append(decision)
        return None  # the rule's own pick

    sch = Schedule(mm_relu())
    apply_rules(sch, HASWELL, decide=record)
    ref = Schedule(mm_relu())
    apply_rules(ref, HASWELL, tunable=True)
    assert str(sch.trace) == str(ref.trace)
    assert str(Schedule(mm_relu()).replay(Trace.from_json(sch.trace.as_json())).mod) == str(sch.mod)
    sampled = [i for i in sch.trace.instructions if i.kind in ("sample_categorical", "sample_perfect_tile")]
    assert [(i.kind, i.arg("label")) for i in sampled] == [(d.kind, d.label) for d in seen]
    assert {"sample_categorical", "sample_perfect_tile"} <= {d.kind for d in seen}
    for kind in ("sample_categorical", "sample_perfect_tile"):
        d = next(d for d in seen if d.kind == kind)
        n = len(d.options)
        for bad in (n, -1, 1.0, "0", True):
            msg = (rf"decide picked {re.escape(repr(bad))} for decision {re.escape(d.label)} \(site {d.site}, "
                   rf"{kind}[^)]*\); valid picks are the indices 0\.\.{n - 1} of \[")
            with pytest.raises(mlc.ScheduleError, match=msg):
                apply_rules(Schedule(mm_relu()), HASWELL,
                            decide=lambda x, site=d.site, bad=bad: bad if x.site == site else None)
    np_picks = Schedule(mm_relu())
    apply_rules(np_picks, HASWELL, decide=lambda d: np.int64(d.default))
    assert str(np_picks.trace) == str(ref.trace)


def test_space_samples_and_mutates_real_choices():
    mod = mm_relu()
    space = mlc.tune.AutoSchedule(HASWELL)
    traces = [space.generate(mod, seed).trace for seed in range(12)]
    keys = {mlc.tune.features.decisions_key(t) for t in traces}
    assert len(keys) >= 6                                   # the decisions vary
    tiles = {inst.decision for t in traces for inst in t.instructions
             if inst.kind == "sample_categorical" and inst.arg("candidates") == [1, 2, 3, 4, 5, 6]}
    assert len(tiles) >= 3                                  # register-tile rows 1..6
    rng = random.Random(0)
    (parent,) = space.initial(mod)
    child = space.mutate(mod, parent.trace, rng)
    changed = [(a.decision, b.decision) for a, b in zip(parent.trace.instructions, child.trace.instructions)
               if a.kind == b.kind and a.decision != b.decision]
    assert len(changed) >= 1
    check_mm_relu(child)


def test_space_expresses_the_6x16_register_accumulator(capsys):
    # the rules' decisions on AVX2: 6x16 tiles, 126 rows of full tiles + a peeled 2-row
    # remainder, relu on the tile; replayed from its JSON it gives the same IR, and after
    # the build's vector-opt stage the k loop carries the 6 accumulator rows as vectors
    (cand,) = mlc.tune.AutoSchedule(HASWELL).initial(mm_relu())
    text = str(cand.trace)
    assert "candidates=[1, 2, 3, 4, 5, 6]" in text and "decision=5)" in text and "sch.peel(" in text
    again = Schedule(mm_relu()).replay(Trace.from_json(cand.trace.to_json_str()))
    assert str(again.mod) == str(cand.mod)
    after, rt = ir_after_stage(again.mod, "vector-opt", capsys)
    filecheck(after, """
    CHECK: scf.for %{{.*}} = %c0 to %c126 step %c6
    CHECK: scf.for {{.*}} iter_args({{.*}}) -> ([[V:vector<(1x)?16xf32>]], [[V]], [[V]], [[V]], [[V]], [[V]])
    CHECK-COUNT-6: vector.fma {{.*}} : vector<16xf32>
    CHECK: arith.maximumf {{.*}} vector<
    """)
    check_mm_relu(again)


def test_tuned_kernel_equals_numpy_and_best_trace_replays(tmp_path):
    mod = mm_relu()
    target = "llvm --num-cores=1"
    db = mlc.tune.tune_tir(mod, target, max_trials_global=4, num_trials_per_iter=4, work_dir=tmp_path, seed=0,
                           measure={"repeat": 2, "min_repeat_ms": 1.0}, progress=False)
    assert len(db.records()) == 4
    sch = mlc.tune.compile_tir(db, mod, target)
    check_mm_relu(sch)
    best = db.best(mlc.tune.database.workload_key(mod))[0]
    replayed = Schedule(mod).replay(Trace.from_json(best.trace))
    assert str(replayed.mod) == str(sch.mod)
    a = np.ones((128, 128), np.float32)
    out = np.zeros((128, 128), np.float32)
    mlc.build(replayed.mod)["mm_relu"](a, -a, out)
    np.testing.assert_array_equal(out, np.zeros_like(out))
