"""The default rules' decisions by name: labelled in the trace and its JSON, picked by name
with ``decide`` (a function of a Decision, or a mapping), kept by name in the tuner's
mutants; older traces without labels still load and replay; a rule's primitives are
called only where their preconditions hold, and a failure of one propagates."""

import json
import random

import numpy as np
import pytest

import mlc_mlir as mlc
from mlc_mlir.schedule import Schedule, Trace
from mlc_mlir.schedule.rules import DECISIONS, Decision, apply_rules

import _rules_programs as programs
from _fuzz_cases import _two_sums

TWO_CORES = "llvm -mcpu=haswell -num-cores=2"
ONE_CORE = "llvm -mcpu=haswell -num-cores=1"


def labels(trace: Trace) -> list[str]:
    return [i.arg("label") for i in trace.instructions if i.kind.startswith("sample_")]


def mm_relu_128() -> mlc.Module:
    return programs.PROGRAMS["mm_relu_128"]()


def test_decisions_are_labelled_in_the_trace_and_its_json():
    sch = apply_rules(Schedule(mm_relu_128()), TWO_CORES, tunable=True)
    assert labels(sch.trace) == ["Y.parallel", "Y.cols", "Y.split_cores", "Y.rows", "Y.epilogue_at"]
    text = str(sch.trace)
    assert 'label="Y.rows", decision=5)' in text and 'label="Y.cols", decision=[8, 16])' in text
    data = sch.trace.as_json()
    assert [args["label"] for kind, args, _, _ in data["insts"] if kind.startswith("sample_")] == labels(sch.trace)
    again = Schedule(mm_relu_128()).replay(Trace.from_json(json.dumps(data)))
    assert str(again.trace) == text and str(again.mod) == str(sch.mod)
    # every label is <block>.<a documented decision>; the large path's names too
    big = apply_rules(Schedule(programs.PROGRAMS["matmul_1000"]()), TWO_CORES, tunable=True)
    assert labels(big.trace) == ["Y.parallel", "Y.peel_cols", "Y.col_block", "Y.split_cores", "Y.row_block",
                                 "Y.rows", "Y.k_block", "Y.k_unroll", "Y.cache_b"]
    assert {label.split(".")[1] for label in labels(big.trace)} <= set(DECISIONS)


def test_an_older_trace_without_labels_loads_and_replays():
    sch = apply_rules(Schedule(mm_relu_128()), TWO_CORES, tunable=True)
    data = sch.trace.as_json()
    for _, args, _, _ in data["insts"]:
        args.pop("label", None)
    old = Trace.from_json(data)
    assert labels(old) == [None] * 5 and "label=" not in str(old)
    assert str(Schedule(mm_relu_128()).replay(old).mod) == str(sch.mod)
    with pytest.raises(mlc.ScheduleError, match=r"label must be a str or None, got 3"):
        Schedule(mm_relu_128()).sample_categorical([1, 2], [0.5, 0.5], label=3)


def test_decide_function_sees_each_decision_by_name():
    seen: list[Decision] = []

    def pick(decision):
        seen.append(decision)
        return len(decision.options) - 1 if decision.name == "rows" else None

    sch = apply_rules(Schedule(mm_relu_128()), TWO_CORES, decide=pick)
    assert [d.name for d in seen] == ["parallel", "cols", "split_cores", "rows", "epilogue_at"]
    assert {(d.func, d.block) for d in seen} == {("mm_relu", "Y")} and [d.site for d in seen] == list(range(5))
    rows = seen[3]
    assert rows.options == (1, 2, 3, 4, 5, 6) and rows.default == 5 and rows.kind == "sample_categorical"
    cols = seen[1]
    assert cols.options == (16, 8, 4, 2, 1) and cols.options[cols.default] == 16  # the inner factors
    assert cols.kind == "sample_perfect_tile"


def test_decide_mapping_picks_values_by_name_label_or_function():
    by_name = apply_rules(Schedule(mm_relu_128()), TWO_CORES, decide={"rows": 4, "parallel": 0})
    text = str(by_name.trace)
    assert 'label="Y.rows", decision=3)' in text and 'label="Y.parallel", decision=0)' in text
    assert "sch.parallel(" not in text
    # the most specific key wins
    specific = apply_rules(Schedule(mm_relu_128()), TWO_CORES,
                           decide={"rows": 4, "Y.rows": 3, "mm_relu/Y.rows": 2, "Y.cols": 8})
    text = str(specific.trace)
    assert 'label="Y.rows", decision=1)' in text and 'label="Y.cols", decision=[16, 8])' in text
    a, b = (np.random.default_rng(s).standard_normal((128, 128), dtype=np.float32) for s in (0, 1))
    out = np.zeros((128, 128), np.float32)
    mlc.build(specific.mod, target="llvm -num-cores=2")["mm_relu"](a, b, out)
    np.testing.assert_allclose(out, np.maximum(a @ b, 0), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("picks,message", [
    ({"rows": 7}, r"decide gives 7 for decision Y\.rows \(sample_categorical, key 'rows'\); its options are "
                  r"\[1, 2, 3, 4, 5, 6\] \(the rule's own: 6\)"),
    ({"Y.parallel": True}, r"decide gives True for decision Y\.parallel"),
    ({"Y.cols": 3}, r"decide gives 3 for decision Y\.cols \(sample_perfect_tile of loop j, key 'Y.cols'\); its "
                    r"options are \[16, 8, 4, 2, 1\]"),
    ({"Y.row": 2}, r"decide names \['Y\.row'\], which no decision of the rules matches; the decisions reached are "
                   r"\['Y\.parallel', 'Y\.cols', 'Y\.split_cores', 'Y\.rows', 'Y\.epilogue_at'\]"),
])
def test_decide_mapping_refuses_what_is_not_an_option(picks, message):
    with pytest.raises(mlc.ScheduleError, match=message):
        apply_rules(Schedule(mm_relu_128()), TWO_CORES, decide=picks)


def test_decide_of_another_type_is_refused():
    with pytest.raises(mlc.ScheduleError, match=r"decide must be a function of a Decision or a mapping"):
        apply_rules(Schedule(mm_relu_128()), TWO_CORES, decide=[1, 2])


def test_mutants_keep_the_other_decisions_by_name():
    mod = programs.PROGRAMS["mm_127"]()
    space = mlc.tune.AutoSchedule(TWO_CORES)
    parent = space.generate(mod, 3)
    before = {i.arg("label"): i.decision for i in parent.trace.instructions if i.kind.startswith("sample_")}
    rng = random.Random(0)
    changed_any = False
    for _ in range(12):
        child = space.mutate(mod, parent.trace, rng)
        after = {i.arg("label"): i.decision for i in child.trace.instructions if i.kind.startswith("sample_")}
        if set(after) == set(before):  # (a changed peel or parallel can change the structure)
            changed = [k for k in before if before[k] != after[k]]
            assert len(changed) <= 1, (before, after)
            changed_any |= len(changed) == 1
    assert changed_any


def test_mutating_an_unlabelled_trace_changes_one_decision():
    mod = mm_relu_128()
    (first,) = mlc.tune.AutoSchedule(TWO_CORES).initial(mod)
    data = first.trace.as_json()
    for _, args, _, _ in data["insts"]:
        args.pop("label", None)
    old = Trace.from_json(data, mod)
    child = mlc.tune.AutoSchedule(TWO_CORES).mutate(mod, old, random.Random(1))
    diffs = [(a.decision, b.decision) for a, b in zip(old.instructions, child.trace.instructions)
             if a.decision != b.decision]
    assert len(diffs) == 1 and len(child.trace) == len(old)


def test_a_failing_primitive_of_a_rule_propagates(monkeypatch):
    """The rules check the preconditions of what they call; a ScheduleError from a call that
    should never fail is not swallowed (it once was, for vectorize, unroll, parallel and
    reverse_compute_at)."""
    def planted(self, loop):
        raise mlc.ScheduleError("planted parallel failure")

    monkeypatch.setattr(Schedule, "parallel", planted)
    for name in ("mm_relu_128", "matmul_1024", "mlp_linear0_b64", "add_relu_512x512"):
        with pytest.raises(mlc.ScheduleError, match="planted parallel failure"):
            apply_rules(Schedule(programs.PROGRAMS[name]()), TWO_CORES, decide={"parallel": 1})


def test_two_sums_read_by_one_block_fuse_it_once():
    """Block C reads two row sums: the first sum's epilogue computes it; the second sum's
    epilogue stops there (C is scheduled already; it once tried and swallowed the error)."""
    mod, inputs, want, _ = _two_sums(12, 64)
    sch = apply_rules(Schedule(mod), ONE_CORE, tunable=True)
    text = str(sch.trace)
    assert text.count("sch.reverse_compute_at(") == 3, text  # S1 at S1_rf, S2 at S2_rf, C at S1_rf
    out = np.zeros_like(want)
    mlc.build(sch.mod)["main"](*inputs, out)
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-4)


def test_one_column_tiles_unroll_the_epilogue_rows_not_the_column_loop():
    """17 columns in tiles of 1 (no column peel): the epilogue's tile is mr x 1, its one loop
    the rows, vectorized; the contraction's column-tile loop is not unrolled (it once was, as
    the epilogue's 'rows', and a parallel loop there then failed without a word)."""
    m, n, k = 64, 17, 64
    mod = programs._mm(m, n, k, relu=True, name="f")
    sch = apply_rules(Schedule(mod), TWO_CORES, decide={"peel_cols": 0, "cols": 1, "parallel": 1})
    text = str(sch.trace)
    assert text.count("sch.unroll(") == 1 and "sch.parallel(" in text, text
    a = np.random.default_rng(0).standard_normal((m, k), dtype=np.float32)
    b = np.random.default_rng(1).standard_normal((k, n), dtype=np.float32)
    out = np.zeros((m, n), np.float32)
    mlc.build(sch.mod, target="llvm -num-cores=2")["f"](a, b, out)
    np.testing.assert_allclose(out, np.maximum(a @ b, 0), rtol=1e-4, atol=1e-4)
    assert str(Schedule(mod).replay(Trace.from_json(sch.trace.as_json())).mod) == str(sch.mod)


def test_a_one_by_one_epilogue_tile_is_not_vectorized():
    """x @ w.T with tiles of 1 x 1 accumulator vectors: the epilogue has no loop of its own
    (vectorize was once tried on the shared column loop and the error swallowed)."""
    mod = programs.PROGRAMS["mlp_linear1_b64"]()
    sch = apply_rules(Schedule(mod), ONE_CORE, decide={"Y.cols": 1, "Y.rows": 1})
    text = str(sch.trace)
    assert text.count("sch.vectorize(") == 1 and text.count("sch.reverse_compute_at(") == 2, text
    x = np.random.default_rng(0).standard_normal((64, 128), dtype=np.float32)
    w = np.random.default_rng(1).standard_normal((10, 128), dtype=np.float32)
    bias = np.random.default_rng(2).standard_normal(10, dtype=np.float32)
    out = np.zeros((64, 10), np.float32)
    mlc.build(sch.mod)["linear1"](x, w, bias, out)
    np.testing.assert_allclose(out, x @ w.T + bias, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("target, width, factor", [
    ("llvm -mcpu=haswell", 112, 16), ("llvm -mcpu=skylake-avx512", 112, 16), ("llvm -mcpu=haswell", 96, 32),
    ("llvm -mcpu=haswell", 114, 19), ("llvm -mcpu=haswell", 7, 7)])
def test_elementwise_rows_are_vectorized_in_whole_vectors_where_a_divisor_allows(target, width, factor):
    """The vector factor of an elementwise row: whole vectors (16 of 112 pixels, not 28: three
    vectors and a masked remainder, MobileNet-v2's 112 x 112 depthwise taps 0.94 -> 0.70 ms on
    AVX2), else the largest divisor up to four vectors."""
    from mlc_mlir import te

    x = te.placeholder((3, width), "float32", name="x")
    y = te.compute((3, width), lambda i, j: te.max(x[i, j], te.const(0.0, "float32")), name="Y")
    sch = apply_rules(Schedule(te.create_prim_func([x, y], name="f")), target)
    assert f"sch.split(loop=l2, factors=[None, {factor}])" in str(sch.trace), str(sch.trace)
    if "avx512" in target:  # (scheduled for it anywhere; built only where the machine has AVX-512)
        return
    a = np.random.default_rng(0).standard_normal((3, width), dtype=np.float32)
    out = np.zeros_like(a)
    mlc.build(sch.mod, target=target)["f"](a, out)
    np.testing.assert_array_equal(out, np.maximum(a, 0))


@pytest.mark.parametrize("target, width, factor", [
    ("llvm -mcpu=haswell", 120, 8), ("llvm -mcpu=skylake-avx512", 128, 16), ("llvm -mcpu=haswell", 28, 4),
    ("llvm -mcpu=haswell", 114, 19)])
def test_rows_read_through_clamped_extracts_take_one_vector(target, width, factor):
    """A row read through ``tensor.extract`` (a padded copy: the clamped read under its
    condition) takes one vector where it divides the row: the build loads each vector that
    misses the border as a run, and a mask of the hardware's width stays one register
    (the 32-channel 112 x 112 depthwise convolution's padded copy: 24 lanes 0.79-0.99 ms, 8
    lanes 0.26-0.31, AVX2); else half or a quarter of one (28: 4 lanes); a row of no such
    divisor keeps the elementwise factor."""
    from mlc_mlir import te, topi

    x = te.placeholder((3, width - 2), "float32", name="x")
    y = topi.nn.pad(x, (0, 1), (0, 1), pad_value=-1.0, name="Y")
    y.named = None  # the generic, as the window strategy pads
    sch = apply_rules(Schedule(te.create_prim_func([x, y], name="f")), target)
    assert f"sch.split(loop=l2, factors=[None, {factor}])" in str(sch.trace), str(sch.trace)
    if "avx512" in target:
        return
    a = np.random.default_rng(0).standard_normal((3, width - 2), dtype=np.float32)
    out = np.zeros((3, width), np.float32)
    mlc.build(sch.mod, target=target)["f"](a, out)
    np.testing.assert_array_equal(out, np.pad(a, ((0, 0), (1, 1)), constant_values=-1.0))


@pytest.mark.parametrize("rows, cols, parallel", [(1024, 256, 1), (64, 256, 0)])
def test_a_one_input_row_reduction_runs_in_parallel_from_the_elementwise_size(rows, cols, parallel):
    """A row sum (layer_norm's, BERT d256 at batch 8: 1024 x 256 = 262K elements, under the
    contraction threshold of 512K multiply-adds) runs its rows in parallel on two cores from
    the elementwise blocks' 32K elements; 64 x 256 stays on one. Results equal NumPy."""
    from mlc_mlir import te
    x = te.placeholder((rows, cols), "float32", name="x")
    r = te.reduce_axis((0, cols), "r")
    s = te.compute((rows,), lambda i: te.sum(x[i, r], axis=r), name="S")
    sch = apply_rules(Schedule(te.create_prim_func([x, s], name="rowsum")), TWO_CORES, tunable=True)
    text = str(sch.trace)
    assert f'label="S.parallel", decision={parallel})' in text
    assert ("sch.parallel(" in text) == bool(parallel)
    a = np.random.default_rng(3).standard_normal((rows, cols), dtype=np.float32)
    out = np.full(rows, np.nan, np.float32)
    mlc.build(sch.mod)["rowsum"](a, out)
    np.testing.assert_allclose(out, a.sum(axis=1), rtol=1e-4, atol=1e-4)
