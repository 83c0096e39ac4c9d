"""The default rules' schedules pinned: for the programs of ``_rules_programs.py`` (mm_relu
128, matmul 1024 and 1000, 127^3, the course MLP's kernels, ``x @ w.T``, softmax, layer_norm,
...) on AVX2 with one and two cores (and AVX-512), the scheduled module, the trace and the
tunable trace (the decisions' labels left out) hash as recorded in ``rules_golden.json``.

Traces are compared without the lookups whose handle nothing uses: the rules once looked
up a consumer block, then tried to fuse it and swallowed the error (the course MLP's batch-1
kernels, two sums read by one block); now they check first, and look up only what they
schedule.

The record was made before the rules' decisions had names and before the rule files were
split by concept (and ``_try`` replaced by preconditions): those changes kept every
schedule. A deliberate change of the rules (or of how a schedule is emitted) changes the
hashes: look at the traces, then record again with
``python tests/python/test_rules_golden.py --record``.
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
from pathlib import Path

import pytest

from mlc_mlir.schedule import Schedule, Trace
from mlc_mlir.schedule.rules import DECISIONS, apply_rules

from _rules_programs import PROGRAMS, TARGETS

GOLDEN = Path(__file__).with_name("rules_golden.json")
ALL_TARGETS = (*TARGETS, "llvm -mcpu=skylake-avx512 -num-cores=2")


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _unlabelled(trace: Trace) -> str:
    """The trace as printed, without decision labels and unused block lookups."""
    used: set[int] = set()

    def visit(value) -> None:
        if isinstance(value, (list, tuple)):
            for v in value:
                visit(v)
        elif hasattr(value, "id"):
            used.add(value.id)

    for inst in trace.instructions:
        visit([v for _, v in inst.args])
    kept = [i for i in trace.instructions if i.kind != "get_block" or any(o.id in used for o in i.outputs)]
    return re.sub(r', label="[^"]*"', "", str(Trace(kept)))


def schedules(name: str, target: str) -> tuple[Schedule, Schedule]:
    """The rules' schedule of program ``name`` for ``target``, plain and tunable."""
    mod = PROGRAMS[name]()
    return apply_rules(Schedule(mod), target), apply_rules(Schedule(mod), target, tunable=True)


def digests(plain: Schedule, tunable: Schedule) -> dict[str, str]:
    return {"mod": _digest(str(plain.mod)), "trace": _digest(_unlabelled(plain.trace)),
            "tunable_trace": _digest(_unlabelled(tunable.trace))}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_rules_schedules_as_recorded(name):
    golden = json.loads(GOLDEN.read_text())
    for target in ALL_TARGETS:
        plain, tunable = schedules(name, target)
        assert str(tunable.mod) == str(plain.mod)
        assert digests(plain, tunable) == golden[f"{name} | {target}"], f"{name} on {target}:\n{tunable.trace}"
        labels = [i.arg("label") for i in tunable.trace.instructions if i.kind.startswith("sample_")]
        assert all(label and label.split(".")[-1] in DECISIONS for label in labels), tunable.trace
        replayed = Schedule(PROGRAMS[name]()).replay(Trace.from_json(tunable.trace.to_json_str()))
        assert str(replayed.trace) == str(tunable.trace) and str(replayed.mod) == str(plain.mod)


def record() -> None:
    """Write ``rules_golden.json`` from the current rules."""
    out = {}
    for name in sorted(PROGRAMS):
        for target in ALL_TARGETS:
            out[f"{name} | {target}"] = digests(*schedules(name, target))
    GOLDEN.write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    if sys.argv[1:] != ["--record"]:
        sys.exit("usage: python test_rules_golden.py --record")
    record()
