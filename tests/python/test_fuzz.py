"""Property-based fuzzing (Hypothesis) of every layer, each case in a worker process.

Properties: malformed text parses or raises ``ParseError``; a random schedule (illegal
steps refused with ``ScheduleError``) computes NumPy's answer and its trace replays to the
same IR (programs with several reductions, ``rfactor`` among the primitives); the default
rules with random decisions compute NumPy's answer; a random graph computes NumPy's answer
at every opt level; a random stack of torch layers imported both ways equals torch eager;
misusing a compiled function raises an ``MlcError`` or computes the right answer. A crash of the worker
process, any other exception, or a wrong answer fails the test with the case.

``make test`` runs a fixed-seed slice (``MLC_FUZZ_EXAMPLES``, default 12 per property,
derandomized); ``make fuzz`` runs a long random search (``MLC_FUZZ_EXAMPLES=300``,
``MLC_FUZZ_SEED`` to replay a seed).
"""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, example, given, seed, settings
from hypothesis import strategies as st

from _fuzz_cases import GRAPH_OPS, MISUSES, PRIMITIVES, SEED_TEXTS, TORCH_LAYERS
from _fuzz_worker import FuzzWorker

EXAMPLES = int(os.environ.get("MLC_FUZZ_EXAMPLES", "12"))
SEED = os.environ.get("MLC_FUZZ_SEED")
FUZZ = settings(max_examples=EXAMPLES, deadline=None, derandomize=SEED is None, database=None,
                suppress_health_check=list(HealthCheck), print_blob=True)


def _seeded(fn):
    return seed(int(SEED))(fn) if SEED is not None else fn


@pytest.fixture(scope="module")
def worker():
    w = FuzzWorker()
    yield w
    w.close()


TOKENS = ["{", "}", "(", ")", "[", "]", "<", ">", "->", ":", ",", "%x", "@f", "!llvm.ptr", "tensor<?x",
          "affine_map<(d0) -> (", '"', "\ud800", "\x00", "dense<", "0x", "i1", "f8E4M3FN", "// c\n", "\n",
          "func.func", "^bb0:", "= ", "#map", "-9223372036854775809"]


@st.composite
def malformed_texts(draw):
    text = draw(st.sampled_from(SEED_TEXTS))
    for _ in range(draw(st.integers(1, 4))):
        pos = draw(st.integers(0, len(text)))
        kind = draw(st.sampled_from(["delete", "insert", "dup", "deep", "text"]))
        if kind == "delete":
            text = text[:pos] + text[pos + draw(st.integers(1, 20)):]
        elif kind == "insert":
            text = text[:pos] + draw(st.sampled_from(TOKENS)) + text[pos:]
        elif kind == "dup":
            text = text[:pos] + text[pos:pos + 40] * draw(st.integers(2, 50)) + text[pos:]
        elif kind == "deep":
            o, c = draw(st.sampled_from(["()", "[]", "{}", "<>"]))
            n = draw(st.sampled_from([10, 600, 5000, 30000]))
            text = text[:pos] + o * n + c * draw(st.sampled_from([0, n])) + text[pos:]
        else:
            text = text[:pos] + draw(st.text(max_size=20)) + text[pos:]
    return text


@_seeded
@FUZZ
@given(text=malformed_texts())
def test_fuzz_malformed_text(worker, text):
    worker.run("parse_text", {"text": text})


steps = st.lists(st.tuples(st.integers(0, len(PRIMITIVES) - 1), st.integers(0, 5), st.integers(0, 5),
                           st.integers(0, 600)), max_size=5)


@_seeded
@FUZZ
@given(program=st.sampled_from(["mm_relu", "softmax", "two_sums_3_8", "two_sums_5_8", "two_sums_9_24",
                                 "layer_norm_3_8"]),
       steps=steps)
@example(program="softmax", steps=[(7, 1, 1, 128)])  # a refused compute_at once left sch.mod re-emitted
# both sums rfactored, their rows unrolled: One-Shot Bufferize once shared their zero tensor
@example(program="two_sums_3_8", steps=[(14, 0, 2, 5), (14, 1, 2, 5)])
def test_fuzz_schedule_against_numpy_and_replay(worker, program, steps):
    worker.run("schedule", {"program": program, "steps": [list(s) for s in steps]})


@_seeded
@FUZZ
@given(program=st.sampled_from(["mm_relu", "softmax", "two_sums_3_8", "two_sums_6_8", "two_sums_12_64",
                                 "layer_norm_3_8", "layer_norm_16_96"]),
       picks=st.lists(st.integers(0, 7), max_size=8), cores=st.sampled_from([1, 2]))
def test_fuzz_default_rules_with_random_decisions(worker, program, picks, cores):
    worker.run("rules", {"program": program, "picks": picks, "cores": cores})


@_seeded
@FUZZ
@given(ops=st.lists(st.integers(0, len(GRAPH_OPS) - 1), min_size=1, max_size=5), opt_level=st.integers(0, 3))
def test_fuzz_graph_every_opt_level(worker, ops, opt_level):
    worker.run("graph", {"ops": ops, "opt_level": opt_level})


@_seeded
@FUZZ
@given(layers=st.lists(st.integers(0, len(TORCH_LAYERS) - 1), min_size=1, max_size=4), batch=st.integers(1, 9),
       width=st.sampled_from([8, 12, 32]), opt_level=st.integers(0, 3), frontend=st.sampled_from(["fx", "export"]))
# LayerNorm(8) at a small batch: wrong rows once at the default opt_level
@example(layers=[3], batch=3, width=8, opt_level=2, frontend="fx")
def test_fuzz_torch_models_against_eager(worker, layers, batch, width, opt_level, frontend):
    pytest.importorskip("torch")
    worker.run("torch_model", {"layers": layers, "batch": batch, "width": width, "opt_level": opt_level,
                               "frontend": frontend})


@_seeded
@FUZZ
@given(kind=st.sampled_from(MISUSES), rows=st.integers(1, 5))
def test_fuzz_runtime_misuse(worker, kind, rows):
    worker.run("runtime_misuse", {"kind": kind, "rows": rows})
