"""``mlc.tune.plot(db, path)``: the tuning curve (best GFLOP/s against trials) as a PNG."""

from __future__ import annotations

import os
from typing import Any

from ..errors import TuneError
from .tune import _database

__all__ = ["plot", "tuning_curve"]


def tuning_curve(db: Any, task: str | None = None) -> dict[str, list[float]]:
    """``{task: [best GFLOP/s after trial 1, 2, ...]}`` (0 before the first success);
    samples whose space crashed (``sample:`` records) are not trials."""
    db = _database(db)
    curves: dict[str, list[float]] = {}
    best: dict[str, float] = {}
    for rec in db.records():
        if (task is not None and rec.task != task) or rec.extra.get("stage") == "sample":
            continue
        flops = db.flops(rec.key)
        if rec.ok and flops:
            best[rec.task] = max(best.get(rec.task, 0.0), flops / rec.mean_secs / 1e9)
        curves.setdefault(rec.task, []).append(best.get(rec.task, 0.0))
    return curves


def plot(db: Any, path: str | os.PathLike, *, task: str | None = None, title: str | None = None) -> str:
    """Write the tuning curve of ``db`` (a database or work_dir) to ``path`` (PNG); returns it.

    Raises:
        TuneError: matplotlib is missing (``pip install 'mlc-mlir[tune]'``) or no records.
    """
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise TuneError("mlc.tune.plot needs matplotlib: pip install 'mlc-mlir[tune]'") from None
    curves = tuning_curve(db, task)
    if not curves:
        raise TuneError("mlc.tune.plot: the database has no records" + (f" of task {task!r}" if task else ""))
    fig, ax = plt.subplots(figsize=(6, 3.6), dpi=100)
    for name, ys in curves.items():
        ax.step(range(1, len(ys) + 1), ys, where="post", label=name)
    ax.set_xlabel("trials")
    ax.set_ylabel("best GFLOP/s")
    ax.set_title(title or "tuning curve")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return str(path)
