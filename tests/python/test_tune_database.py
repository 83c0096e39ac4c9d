"""The tuning database (``mlc_mlir.tune.database``): records and workloads written as JSON
lines and read back, the ranking of candidates, bad work dirs and damaged lines. Fast (no
MLIR): the mutation run of ``make mutate`` uses these tests for the module."""

from __future__ import annotations

import dataclasses
import json
import logging
import os

import pytest

from mlc_mlir.errors import TuneError
from mlc_mlir.tune.database import DB_FILE, JSONDatabase, TuningRecord, workload_key


def rec(decisions: str, *secs: float, key: str = "k", task: str = "main", **kw) -> TuningRecord:
    return TuningRecord(key, task, {"insts": [decisions]}, decisions, tuple(secs) if secs else None, **kw)


def test_record_properties():
    ok = rec("a", 1.0, 3.0)
    assert ok.ok and ok.mean_secs == 2.0
    failed = rec("b", 1.0, error="boom")
    assert not failed.ok and failed.mean_secs == float("inf")
    assert not rec("c").ok and rec("c").mean_secs == float("inf")
    assert not rec("d", error=None).ok
    plain = TuningRecord("k", "t", {}, "d", (1.0,))
    assert (plain.error, plain.target, plain.build_secs, plain.extra) == (None, "llvm", 0.0, {})
    with pytest.raises(dataclasses.FrozenInstanceError):
        plain.key = "other"  # records are values (the database's list is shared with its readers)


def test_record_json_round_trip_keeps_extra_fields():
    r = rec("a", 0.5, 0.25, target="llvm -mcpu=haswell", build_secs=1.5, extra={"stage": "validate", "w": 3})
    obj = r.as_json()
    assert obj["kind"] == "record" and obj["run_secs"] == [0.5, 0.25] and obj["stage"] == "validate"
    assert TuningRecord.from_json(json.loads(json.dumps(obj))) == r
    bare = TuningRecord.from_json({"key": "k", "task": "t", "trace": {}, "decisions": "x"})
    assert bare.run_secs is None and bare.error is None and bare.target == "llvm" and bare.build_secs == 0.0
    assert bare.extra == {} and rec("f").as_json()["run_secs"] is None


def test_workload_key_is_stable_and_short():
    assert workload_key("module {}") == workload_key("module {}") != workload_key("module { }")
    assert len(workload_key("x")) == 20


def test_records_survive_reopening(tmp_path):
    db = JSONDatabase(tmp_path)
    assert db.path == tmp_path / DB_FILE and len(db) == 0 and db.records() == []
    db.commit_workload("k", "main", "module {}", 1e6)
    db.commit_workload("k", "main", "module { other }", 5.0)  # a workload is recorded once
    db.commit(rec("a", 2e-3))
    db.commit(rec("b", 1e-3, key="k2", task="other"))
    db.commit(rec("c", error="crash"))
    lines = db.path.read_text().splitlines()
    assert len(lines) == 4 and all(line.startswith("{") for line in lines)
    again = JSONDatabase(str(tmp_path))
    assert [r.decisions for r in again.records()] == ["a", "b", "c"]
    assert again.workloads["k"]["mod"] == "module {}" and again.flops("k") == 1e6
    assert again.flops("missing") == 0.0
    assert [r.decisions for r in again.records("k")] == ["a", "c"]
    assert [r.decisions for r in again.records(task="other")] == ["b"]
    assert [r.decisions for r in again.records("k", task="other")] == []
    assert repr(again).endswith("records=3 workloads=1>") and str(tmp_path) in repr(again)


def test_best_ranks_by_the_median_of_a_candidates_measurements(tmp_path):
    db = JSONDatabase(tmp_path)
    db.commit(rec("a", 3.0))
    db.commit(rec("b", 2.0))
    db.commit(rec("c", 2.5))
    db.commit(rec("x", 0.1, error="wrong result"))
    db.commit(rec("z", 0.1, key="other"))
    # the validation re-measures a and b: a was slow once, b fast once
    db.commit(rec("a", 1.0, extra={"stage": "validate"}))
    db.commit(rec("a", 1.2, extra={"stage": "validate"}))
    db.commit(rec("b", 2.2, extra={"stage": "validate"}))
    assert len(db) == 5 and len(db.records(with_validation=True)) == 8
    assert [r.decisions for r in db.best("k", 3)] == ["a", "b", "c"]
    assert db.best("k")[0].decisions == "a" and len(db.best("k")) == 1
    assert db.best("k")[0].run_secs == (3.0,) and db.best("k")[0].extra == {}  # the trial's record
    assert db.secs(db.best("k")[0]) == pytest.approx(1.2)
    assert db.secs(rec("never")) == float("inf")  # a candidate with no measurement
    assert db.secs(db.best("k", 2)[1]) == pytest.approx(2.1)
    assert db.best("nothing") == []


def test_best_breaks_ties_by_the_first_measurement(tmp_path):
    db = JSONDatabase(tmp_path)
    db.commit(rec("a", 2.0))
    db.commit(rec("b", 1.0))
    db.commit(rec("a", 1.0, extra={"stage": "validate"}))
    db.commit(rec("b", 2.0, extra={"stage": "validate"}))
    assert [r.decisions for r in db.best("k", 2)] == ["b", "a"]


def test_work_dir_errors(tmp_path):
    with pytest.raises(TuneError, match="work_dir must be a path, got int"):
        JSONDatabase(3)
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(TuneError, match="cannot be created"):
        JSONDatabase(blocker / "sub")
    nested = tmp_path / "a" / "b"
    JSONDatabase(nested)
    assert nested.is_dir()


def test_invalid_lines_are_skipped_with_a_warning(tmp_path, caplog):
    db = JSONDatabase(tmp_path)
    db.commit(rec("a", 1.0))
    with open(db.path, "a") as f:
        f.write("\n   \n")                                    # blank lines: ignored silently
        f.write('{"kind": "record", "key": "k"}\n')          # a field missing
        f.write('[1, 2]\n')                                  # not an object
        f.write('{"kind": "record", "key": "k", "task": "t", "trace": {}, "decisions": "d", '
                '"run_secs": ["x"]}\n')                      # a time that is no number
        f.write('{"kind": "workload", "task": "t"}\n')       # a workload without its key
    db.commit(rec("b", 2.0))
    with caplog.at_level(logging.WARNING, logger="mlc_mlir.tune"):
        again = JSONDatabase(tmp_path)
    assert [r.decisions for r in again.records()] == ["a", "b"] and again.workloads == {}
    skipped = [r.getMessage() for r in caplog.records]
    assert len(skipped) == 4 and all("skipped (torn or invalid" in m for m in skipped)
    assert [m.split(" line ")[1].split(" ")[0] for m in skipped] == ["4", "5", "6", "7"]


def test_appends_are_whole_lines_on_disk(tmp_path):
    db = JSONDatabase(tmp_path)
    db.commit(rec("a", 1.0))
    raw = db.path.read_bytes()
    assert raw.endswith(b"\n") and raw.count(b"\n") == 1 and b": " not in raw  # compact separators
    assert os.stat(db.path).st_mode & 0o777 == 0o644 & ~_umask()
    db.path.write_bytes(raw + b'{"kind": "rec')                 # a torn tail
    db.commit(rec("b", 2.0))
    assert db.path.read_bytes().endswith(b'{"kind": "rec\n' + json.dumps(
        rec("b", 2.0).as_json(), separators=(",", ":")).encode() + b"\n")


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
