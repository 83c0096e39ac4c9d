"""Tuning targets: ``"llvm"``, ``"llvm --num-cores=1"`` (the course's spelling) or
``"llvm -num-cores=1 -mcpu=..."`` (``mlc_mlir.target``'s), and ``"cuda"`` /
``"cuda -arch=sm_90"`` (GPU 0; one candidate runs on it at a time); ``text`` is the
normalized single-dash form that the build and the schedule rules read."""

from __future__ import annotations

import os
from dataclasses import dataclass

from ..errors import TuneError
from ..target import TargetError, resolve_tag

__all__ = ["TuneTarget", "parse_target"]


@dataclass(frozen=True)
class TuneTarget:
    """A parsed target: ``kind`` (``"llvm"``), the cores one measurement may use, and
    ``text``, the target with options in single-dash form (``llvm -num-cores=1``)."""

    text: str
    kind: str
    num_cores: int

    def core_sets(self) -> list[tuple[int, ...]]:
        """Disjoint sets of ``num_cores`` cores of this process's affinity mask; one runner
        measures at a time on each."""
        cores = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else list(range(os.cpu_count() or 1))
        if self.kind == "cuda":  # one runner at a time on the GPU
            return [tuple(cores)]
        n = max(1, min(self.num_cores, len(cores)))
        return [tuple(cores[i:i + n]) for i in range(0, len(cores) - n + 1, n)]


def parse_target(target: object) -> TuneTarget:
    """Parse ``target`` (a string, or anything whose ``str`` is one).

    Raises:
        TuneError: not a CPU or CUDA target, or a malformed option.
    """
    if isinstance(target, TuneTarget):
        return target
    text = str(target if target is not None else "llvm").strip() or "llvm"
    try:
        text = resolve_tag(text)  # TVM's tags: "nvidia/tesla-p100" tunes on the GPU present
    except TargetError as exc:
        raise TuneError(str(exc)) from None
    words = text.split()
    if words[0] not in ("llvm", "cpu", "cuda"):
        raise TuneError(f"target {text!r}: tuning measures on the host CPU ('llvm', 'llvm --num-cores=N') "
                        "or a CUDA GPU ('cuda', 'cuda -arch=sm_90')")
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    options = []
    for word in words[1:]:
        option = word.lstrip("-")
        if not word.startswith("-") or "=" not in option:
            raise TuneError(f"target {text!r}: cannot parse {word!r} (expected -name=value or --name=value)")
        name, value = option.split("=", 1)
        if name == "num-cores" and words[0] != "cuda":
            if not value.isdigit() or int(value) < 1:
                raise TuneError(f"target {text!r}: --num-cores must be a positive int, got {value!r}")
            cores = int(value)
        options.append(f"-{name}={value}")
    if words[0] == "cuda":
        return TuneTarget(" ".join(["cuda", *options]), "cuda", 1)
    return TuneTarget(" ".join(["llvm", *options]), "llvm", cores)
