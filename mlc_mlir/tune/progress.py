"""What a person sees while tuning: a tqdm bar (trials, best time, ETA), log lines through
``logging.getLogger("mlc_mlir.tune")``, and a summary table per task at the end."""

from __future__ import annotations

import logging
import sys
from typing import Any

__all__ = ["Progress", "summary_table"]

log = logging.getLogger("mlc_mlir.tune")


class Progress:
    """A progress bar over the trial budget (silent when ``enabled`` is False or tqdm is missing)."""

    def __init__(self, total: int, initial: int = 0, *, enabled: bool = True, desc: str = "tuning"):
        self.bar = None
        self.postfix: dict[str, str] = {}
        if enabled:
            try:
                from tqdm import tqdm
            except ImportError:
                log.info("tqdm is not installed: no progress bar")
            else:
                self.bar = tqdm(total=total, initial=initial, desc=desc, unit="trial", file=sys.stderr,
                                dynamic_ncols=True, leave=True)

    def update(self, task: str, best_secs: float, gflops: float | None) -> None:
        if self.bar is None:
            return
        best = f"{best_secs * 1e3:.4g} ms" if best_secs < float("inf") else "-"
        post = {"task": task, "best": best}
        if gflops:
            post["GFLOP/s"] = f"{gflops:.1f}"
        self.postfix = post
        self.bar.set_postfix(post, refresh=False)
        self.bar.update(1)

    def stopped(self, why: str) -> None:
        """Say on the bar why it stops short of its total (``space exhausted: 5 distinct candidates``)."""
        if self.bar is None:
            return
        self.postfix = {**self.postfix, "stopped": why}
        self.bar.set_postfix(self.postfix, refresh=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def summary_table(rows: list[dict[str, Any]]) -> str:
    """A text table: one row per task (name, weight, trials, failed, best ms, GFLOP/s, speedup)."""
    head = ["task", "weight", "trials", "failed", "best ms", "GFLOP/s", "vs first"]
    lines = []
    for r in rows:
        best = r["best_secs"]
        ok = best < float("inf")
        lines.append([r["task"], str(r["weight"]), str(r["trials"]), str(r["failed"]),
                      f"{best * 1e3:.4f}" if ok else "-",
                      f"{r['flops'] / best / 1e9:.2f}" if ok and r["flops"] else "-",
                      f"{r['first_secs'] / best:.2f}x" if ok and r["first_secs"] < float("inf") else "-"])
    widths = [max(len(h), *(len(l[i]) for l in lines)) if lines else len(h) for i, h in enumerate(head)]
    fmt = "  ".join(f"{{:>{w}}}" if i else f"{{:<{w}}}" for i, w in enumerate(widths))
    out = [fmt.format(*head), fmt.format(*("-" * w for w in widths))]
    out += [fmt.format(*l) for l in lines]
    return "\n".join(out)
