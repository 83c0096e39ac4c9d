"""The tuning database: one JSON-lines file per work_dir (MetaSchedule's JSONDatabase).

Each line is one JSON object, appended with a single ``write`` on a file opened with
``O_APPEND`` and flushed to disk, so a killed run leaves whole lines. A line torn
anyway (a crash mid-write, junk bytes after it) is skipped on reading, and the next append
starts a new line after it, so a resumed run's first record is not glued to it. Two kinds
of line:

* ``{"kind": "workload", "key": ..., "task": ..., "mod": text, "flops": n}``
* ``{"kind": "record", "key": ..., "task": ..., "trace": trace-json, "decisions": ...,
  "run_secs": [...] | null, "error": text | null, "target": ..., "build_secs": s}``
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import TuneError

__all__ = ["TuningRecord", "JSONDatabase", "workload_key"]

log = logging.getLogger("mlc_mlir.tune")
DB_FILE = "database.jsonl"


def workload_key(mod: Any) -> str:
    """A stable key of a module's text (the workload a record belongs to)."""
    return hashlib.sha256(str(mod).encode()).hexdigest()[:20]


@dataclass(frozen=True)
class TuningRecord:
    """One measured (or failed) candidate."""

    key: str
    task: str
    trace: dict[str, Any]
    decisions: str
    run_secs: tuple[float, ...] | None
    error: str | None = None
    target: str = "llvm"
    build_secs: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.error is None and bool(self.run_secs)

    @property
    def mean_secs(self) -> float:
        """Mean run time, ``inf`` for a failed candidate."""
        return sum(self.run_secs) / len(self.run_secs) if self.ok else float("inf")

    def as_json(self) -> dict[str, Any]:
        return {"kind": "record", "key": self.key, "task": self.task, "trace": self.trace,
                "decisions": self.decisions, "run_secs": list(self.run_secs) if self.run_secs else None,
                "error": self.error, "target": self.target, "build_secs": self.build_secs, **self.extra}

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> TuningRecord:
        known = {"kind", "key", "task", "trace", "decisions", "run_secs", "error", "target", "build_secs"}
        secs = obj.get("run_secs")
        return cls(obj["key"], obj["task"], obj["trace"], obj["decisions"],
                   tuple(float(s) for s in secs) if secs else None, obj.get("error"),
                   obj.get("target", "llvm"), float(obj.get("build_secs", 0.0)),
                   {k: v for k, v in obj.items() if k not in known})


class JSONDatabase:
    """Records of a tuning run, kept in ``work_dir/database.jsonl``.

    Args:
        work_dir: the directory (created if missing). Opening an existing one loads its
            records: a killed run resumes from them, and ``compile_tir`` reads them.
    """

    def __init__(self, work_dir: str | os.PathLike):
        if not isinstance(work_dir, (str, os.PathLike)):
            raise TuneError(f"work_dir must be a path, got {type(work_dir).__name__}")
        self.work_dir = Path(work_dir)
        try:
            self.work_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise TuneError(f"work_dir {str(work_dir)!r} cannot be created: {exc}") from None
        self.path = self.work_dir / DB_FILE
        self.workloads: dict[str, dict[str, Any]] = {}
        self._records: list[TuningRecord] = []
        self._load()

    def _load(self) -> None:
        if not self.path.exists():
            return
        for n, raw in enumerate(self.path.read_bytes().splitlines(), 1):
            if not raw.strip():
                continue
            try:
                obj = json.loads(raw.decode())
                if obj["kind"] == "workload":
                    self.workloads[obj["key"]] = obj
                else:
                    self._records.append(TuningRecord.from_json(obj))
            except (UnicodeDecodeError, json.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
                log.warning("%s line %d skipped (torn or invalid: %s)", self.path, n, exc)

    def _append(self, obj: dict[str, Any]) -> None:
        data = (json.dumps(obj, separators=(",", ":")) + "\n").encode()
        fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            size = os.fstat(fd).st_size
            if size and os.pread(fd, 1, size - 1) != b"\n":
                data = b"\n" + data  # after a torn last line: start a line of our own
            os.write(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)

    # -- writing -----------------------------------------------------------------------
    def commit_workload(self, key: str, task: str, mod_text: str, flops: float) -> None:
        """Record the module of a task once (what ``compile_tir`` replays on)."""
        if key not in self.workloads:
            obj = {"kind": "workload", "key": key, "task": task, "mod": mod_text, "flops": flops}
            self._append(obj)
            self.workloads[key] = obj

    def commit(self, record: TuningRecord) -> None:
        """Append one record (atomically, flushed to disk)."""
        self._append(record.as_json())
        self._records.append(record)

    # -- reading -----------------------------------------------------------------------
    def records(self, key: str | None = None, task: str | None = None, *,
                with_validation: bool = False) -> list[TuningRecord]:
        """The trials' records in commit order, optionally of one workload key or task name;
        ``with_validation`` adds the validation's re-measurements (``extra["stage"] == "validate"``)."""
        return [r for r in self._records if (key is None or r.key == key) and (task is None or r.task == task)
                and (with_validation or r.extra.get("stage") != "validate")]

    def best(self, key: str, k: int = 1) -> list[TuningRecord]:
        """The ``k`` fastest distinct candidates of workload ``key`` (one record each).

        A candidate measured several times (the tuner's validation re-measures the fastest
        few: :meth:`TaskScheduler.validate <mlc_mlir.tune.task_scheduler.TaskScheduler.validate>`)
        is ranked by the median of its measurements' mean times, so that one measurement
        taken in a quiet or a loaded moment does not decide alone.
        """
        by_candidate: dict[str, list[TuningRecord]] = {}
        for r in self.records(key, with_validation=True):
            if r.ok:
                by_candidate.setdefault(r.decisions, []).append(r)
        ranked = sorted(by_candidate.values(), key=lambda rs: (statistics.median(r.mean_secs for r in rs),
                                                               rs[0].mean_secs))
        return [rs[0] for rs in ranked[:k]]

    def secs(self, record: TuningRecord) -> float:
        """The time :meth:`best` ranks ``record``'s candidate by (median over its measurements)."""
        same = [r.mean_secs for r in self.records(record.key, with_validation=True)
                if r.ok and r.decisions == record.decisions]
        return statistics.median(same) if same else float("inf")

    def flops(self, key: str) -> float:
        return float(self.workloads.get(key, {}).get("flops", 0.0))

    def __len__(self) -> int:
        """The trials: records less the validation's re-measurements of candidates already tried."""
        return len(self.records())

    def __repr__(self) -> str:
        return f"<JSONDatabase {self.path} records={len(self._records)} workloads={len(self.workloads)}>"
