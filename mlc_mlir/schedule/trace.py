"""Random variables (block, loop and value handles) and the trace of a schedule.

A trace is a list of frozen :class:`Instruction` records, one per primitive call, with the
sampling decisions. It prints like the course's ``print(sch.trace)``::

    b0 = sch.get_block(name="C", func_name="main")
    l1, l2, l3 = sch.get_loops(block=b0)
    v4, v5 = sch.sample_perfect_tile(loop=l2, n=2, max_innermost_factor=16, decision=[32, 4])
    l6, l7 = sch.split(loop=l2, factors=[v4, v5])

and replays on a module (``trace.apply(mod)``), optionally with other decisions
(``trace.with_decisions({...})``).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

__all__ = ["BlockRV", "LoopRV", "ExprRV", "Instruction", "Trace", "SAMPLING_KINDS"]

_ids = itertools.count()
SAMPLING_KINDS = ("sample_perfect_tile", "sample_categorical")
_POSITIONAL = ("reorder", "fuse")


@dataclass(frozen=True)
class BlockRV:
    """A handle to a block (a linalg op marked ``mlc.block``) of a schedule."""

    name: str
    func: str
    id: int = field(default_factory=lambda: next(_ids), compare=False)

    def __repr__(self) -> str:
        return f"BlockRV({self.name!r})"


@dataclass(frozen=True, eq=False)
class LoopRV:
    """A handle to a loop of a schedule; stale once the loop is split or fused away."""

    uid: int
    name: str
    id: int = field(default_factory=lambda: next(_ids))

    def __repr__(self) -> str:
        return f"LoopRV({self.name})"


@dataclass(frozen=True, eq=False)
class ExprRV:
    """A sampled integer (usable wherever an int is)."""

    value: int
    id: int = field(default_factory=lambda: next(_ids))

    def __int__(self) -> int:
        return self.value

    def __index__(self) -> int:
        return self.value

    def __repr__(self) -> str:
        return f"ExprRV({self.value})"


RV = (BlockRV, LoopRV, ExprRV)


@dataclass(frozen=True)
class Instruction:
    """One primitive call: its keyword arguments, its outputs and its decision."""

    kind: str
    args: tuple[tuple[str, Any], ...]
    outputs: tuple[Any, ...] = ()
    decision: Any = None

    def arg(self, name: str, default: Any = None) -> Any:
        return dict(self.args).get(name, default)


def _prefix(rv: Any) -> str:
    return {"BlockRV": "b", "LoopRV": "l", "ExprRV": "v"}[type(rv).__name__]


class Trace:
    """The record of a schedule's primitive calls (course: ``sch.trace``)."""

    def __init__(self, instructions: list[Instruction], module=None, script: str | None = None):
        self.instructions = tuple(instructions)
        self._module = module
        self._script = script

    # -- naming and printing -----------------------------------------------------------
    def names(self) -> dict[int, str]:
        """Printed names (b0, l1, v4...) of every output, keyed by RV id."""
        names: dict[int, str] = {}
        counter = 0
        for inst in self.instructions:
            for rv in inst.outputs:
                if rv.id not in names:
                    names[rv.id] = f"{_prefix(rv)}{counter}"
                    counter += 1
        return names

    def _fmt(self, value: Any, names: dict[int, str]) -> str:
        if isinstance(value, RV):
            return names.get(value.id, repr(value))
        if isinstance(value, (list, tuple)):
            return "[" + ", ".join(self._fmt(v, names) for v in value) + "]"
        if isinstance(value, str):
            return '"' + value + '"'
        return repr(value)

    def format_instruction(self, inst: Instruction, names: dict[int, str]) -> str:
        if inst.kind in _POSITIONAL:
            args = ", ".join(self._fmt(v, names) for v in inst.arg("loops"))
        else:
            items = [(k, v) for k, v in inst.args if not k.startswith("_") and (v is not None or k == "func_name")]
            if inst.kind in SAMPLING_KINDS:
                items.append(("decision", inst.decision))
            args = ", ".join(f"{k}={self._fmt(v, names)}" for k, v in items)
        call = f"sch.{inst.kind}({args})"
        if not inst.outputs:
            return call
        return ", ".join(names[rv.id] for rv in inst.outputs) + " = " + call

    def __str__(self) -> str:
        names = self.names()
        return "\n".join(self.format_instruction(i, names) for i in self.instructions)

    def __repr__(self) -> str:
        return f"<Trace of {len(self.instructions)} instructions>"

    def __len__(self) -> int:
        return len(self.instructions)

    # -- decisions -------------------------------------------------------------------
    @property
    def decisions(self) -> dict[int, Any]:
        """``{instruction index: decision}`` for every sampling instruction."""
        return {i: inst.decision for i, inst in enumerate(self.instructions) if inst.kind in SAMPLING_KINDS}

    def _position(self, key: Any) -> int:
        """The index of the instruction ``key`` names: its line in ``print(trace)`` (an int,
        from 0), a printed output name (``"v4"``) or the :class:`Instruction` itself."""
        if isinstance(key, Instruction):
            return next((i for i, inst in enumerate(self.instructions) if inst is key), -1)
        if isinstance(key, str):
            names = self.names()
            return next((i for i, inst in enumerate(self.instructions)
                         if any(names.get(rv.id) == key for rv in inst.outputs)), -1)
        return key

    def with_decisions(self, decisions: dict[int | str | Instruction, Any]) -> Trace:
        """A copy whose sampling instructions take new decisions.

        Keys address an instruction as ``print(trace)`` shows it: its line number (0 for
        the first line), one of its printed outputs (``"v4"``), or the :class:`Instruction`.
        """
        from ..errors import ScheduleError

        insts = list(self.instructions)
        decisions = {self._position(key): d for key, d in decisions.items()}
        for index, decision in decisions.items():
            if not 0 <= index < len(insts) or insts[index].kind not in SAMPLING_KINDS:
                raise ScheduleError(f"with_decisions: instruction {index} is not a sampling instruction; "
                                    f"sampling instructions are at {sorted(self.decisions)}")
            insts[index] = Instruction(insts[index].kind, insts[index].args, insts[index].outputs, decision)
        return Trace(insts, self._module)

    # -- replay ----------------------------------------------------------------------
    def apply(self, mod=None, *, seed: int | None = None):
        """Replay on ``mod`` (default: the module the schedule started from); returns the
        new :class:`~mlc_mlir.schedule.Schedule` (its ``.mod`` is the result)."""
        from ..errors import ScheduleError
        from .schedule import Schedule

        mod = mod if mod is not None else self._module
        if mod is None:
            raise ScheduleError("Trace.apply needs a module: this trace has none attached")
        sch = Schedule(mod, seed=seed)
        with sch.deferred():
            rvs: dict[int, Any] = {}
            for inst in self.instructions:
                kwargs = {k: _substitute(v, rvs) for k, v in inst.args if not k.startswith("_")}
                if inst.kind in SAMPLING_KINDS:
                    kwargs["decision"] = inst.decision
                if inst.kind in _POSITIONAL:
                    result = getattr(sch, inst.kind)(*kwargs.pop("loops"), **kwargs)
                else:
                    result = getattr(sch, inst.kind)(**kwargs)
                outs = result if isinstance(result, (list, tuple)) else ([] if result is None else [result])
                for old, new in zip(inst.outputs, outs):
                    rvs[old.id] = new
        return sch

    def transform_script(self) -> str:
        """The equivalent transform-dialect script (a module with ``@__transform_main``)."""
        if self._script is None:
            self._script = self.apply().transform_script()
        return self._script


def _substitute(value: Any, rvs: dict[int, Any]) -> Any:
    if isinstance(value, RV):
        return rvs.get(value.id, value)
    if isinstance(value, list):
        return [_substitute(v, rvs) for v in value]
    if isinstance(value, tuple):
        return tuple(_substitute(v, rvs) for v in value)
    return value
