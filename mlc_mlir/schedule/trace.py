"""Random variables (block, loop and value handles) and the trace of a schedule.

A trace is a list of frozen :class:`Instruction` records, one per primitive call, with the
sampling decisions. It prints like the course's ``print(sch.trace)``::

    b0 = sch.get_block(name="C", func_name="main")
    l1, l2, l3 = sch.get_loops(block=b0)
    v4, v5 = sch.sample_perfect_tile(loop=l2, n=2, max_innermost_factor=16, decision=[32, 4])
    l6, l7 = sch.split(loop=l2, factors=[v4, v5])

and replays on a module (``trace.apply(mod)`` or ``Schedule(mod).replay(trace)``),
optionally with other decisions (``trace.with_decisions({...})``). A trace is data:
``trace.as_json()`` gives plain lists and dicts (what the tuning database stores) and
``Trace.from_json(obj)`` reads them back; every instruction kind is a typed
:class:`InstructionKind` in one registry (:data:`INSTRUCTION_KINDS`), which replay uses.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from ..errors import ScheduleError

__all__ = ["BlockRV", "LoopRV", "ExprRV", "Instruction", "InstructionKind", "INSTRUCTION_KINDS",
           "register_instruction_kind", "Trace", "SAMPLING_KINDS"]

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


@dataclass(frozen=True)
class InstructionKind:
    """A kind of trace instruction: how replay calls it and what its record holds.

    Attributes:
        name: the primitive's name (``"split"``), as printed (``sch.split(...)``).
        apply: ``apply(sch, *positional, **keywords)`` calls the primitive on a schedule and
            returns its result (an RV, a list of RVs, or None).
        positional: the argument ``"loops"`` is passed as ``*loops`` (reorder, fuse).
        sampling: the instruction carries a decision (passed back as ``decision=``).
        outputs: the RV types it returns, as prefixes (``"l"``, ``"b"``, ``"v"``); ``"*"``
            after one means any number.
    """

    name: str
    apply: Callable[..., Any]
    positional: bool = False
    sampling: bool = False
    outputs: str = ""


INSTRUCTION_KINDS: dict[str, InstructionKind] = {}


def register_instruction_kind(kind: InstructionKind) -> InstructionKind:
    """Add ``kind`` to the registry (one per name; the schedule registers its primitives)."""
    if not isinstance(kind, InstructionKind):
        raise TypeError(f"register_instruction_kind expects an InstructionKind, got {type(kind).__name__}")
    INSTRUCTION_KINDS[kind.name] = kind
    return kind


def instruction_kind(name: str) -> InstructionKind:
    """The registered kind called ``name`` (ScheduleError if unknown)."""
    if name not in INSTRUCTION_KINDS:
        raise ScheduleError(f"unknown trace instruction kind {name!r}; known kinds are {sorted(INSTRUCTION_KINDS)}")
    return INSTRUCTION_KINDS[name]


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

    def show(self) -> None:
        """Print the trace (course: ``sch.trace.show()``)."""
        print(self)

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
        new :class:`~mlc_mlir.schedule.Schedule` (its ``.mod`` is the result).

        Same as ``Schedule(mod, seed=seed).replay(trace)``.
        """
        from .schedule import Schedule  # here, not at the top: schedule.schedule imports this module

        mod = mod if mod is not None else self._module
        if mod is None:
            raise ScheduleError("Trace.apply needs a module: this trace has none attached")
        return Schedule(mod, seed=seed).replay(self)

    def replay_into(self, sch: Any) -> None:
        """Call every instruction on schedule ``sch`` through the kind registry (what
        ``Schedule.replay`` runs); RVs of this trace are mapped to the new ones."""
        rvs: dict[int, Any] = {}
        for inst in self.instructions:
            kind = instruction_kind(inst.kind)
            kwargs = {k: _substitute(v, rvs) for k, v in inst.args if not k.startswith("_")}
            if kind.sampling:
                kwargs["decision"] = inst.decision
            args = tuple(kwargs.pop("loops")) if kind.positional else ()
            result = kind.apply(sch, *args, **kwargs)
            outs = result if isinstance(result, (list, tuple)) else ([] if result is None else [result])
            for old, new in zip(inst.outputs, outs):
                rvs[old.id] = new

    # -- serialization -----------------------------------------------------------------
    def as_json(self) -> dict[str, Any]:
        """The trace as plain JSON data: ``{"version": 1, "insts": [[kind, args, outputs,
        decision], ...]}``; an RV argument is ``{"rv": k}``, the k-th output of the trace."""
        index: dict[int, int] = {}
        insts = []
        for inst in self.instructions:
            instruction_kind(inst.kind)
            args = {k: _encode(v, index) for k, v in inst.args}
            outs = []
            for rv in inst.outputs:
                index[rv.id] = len(index)
                outs.append(_encode_output(rv))
            insts.append([inst.kind, args, outs, inst.decision])
        return {"version": 1, "insts": insts}

    def to_json_str(self) -> str:
        """:meth:`as_json` as compact text."""
        return json.dumps(self.as_json(), separators=(",", ":"))

    @classmethod
    def from_json(cls, obj: dict[str, Any] | str, module=None) -> Trace:
        """Read a trace written by :meth:`as_json` (data or its text); ``module`` is the
        module it replays on by default.

        Raises:
            ScheduleError: not a trace, an unknown instruction kind, or a bad RV reference.
        """
        if isinstance(obj, str):
            try:
                obj = json.loads(obj)
            except json.JSONDecodeError as exc:
                raise ScheduleError(f"Trace.from_json: not JSON ({exc})") from None
        if not isinstance(obj, dict) or obj.get("version") != 1 or not isinstance(obj.get("insts"), list):
            raise ScheduleError(f"Trace.from_json: expected {{'version': 1, 'insts': [...]}}, got {str(obj)[:80]!r}")
        rvs: list[Any] = []
        insts = []
        for entry in obj["insts"]:
            if not isinstance(entry, list) or len(entry) != 4 or not isinstance(entry[1], dict):
                raise ScheduleError(f"Trace.from_json: bad instruction record {entry!r}")
            kind, args, outs, decision = entry
            instruction_kind(kind)
            decoded = tuple((k, _decode(v, rvs, kind)) for k, v in args.items())
            outputs = tuple(_decode_output(o, kind) for o in outs)
            rvs.extend(outputs)
            if isinstance(decision, list):
                decision = [int(v) for v in decision]
            insts.append(Instruction(kind, decoded, outputs, decision))
        return cls(insts, module)

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


def _encode(value: Any, index: dict[int, int]) -> Any:
    if isinstance(value, RV):
        if value.id not in index:
            raise ScheduleError(f"Trace.as_json: {value!r} is used before any instruction returns it")
        return {"rv": index[value.id]}
    if isinstance(value, (list, tuple)):
        return [_encode(v, index) for v in value]
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise ScheduleError(f"Trace.as_json: cannot serialize argument {value!r} ({type(value).__name__})")


def _encode_output(rv: Any) -> list[Any]:
    if isinstance(rv, BlockRV):
        return ["b", rv.name, rv.func]
    if isinstance(rv, LoopRV):
        return ["l", rv.name]
    return ["v", rv.value]


def _decode(value: Any, rvs: list[Any], kind: str) -> Any:
    if isinstance(value, dict):
        k = value.get("rv")
        if not isinstance(k, int) or not 0 <= k < len(rvs):
            raise ScheduleError(f"Trace.from_json: instruction {kind!r} refers to {value!r}, not an earlier output")
        return rvs[k]
    if isinstance(value, list):
        return [_decode(v, rvs, kind) for v in value]
    return value


def _decode_output(out: Any, kind: str) -> Any:
    if not isinstance(out, list) or not out or out[0] not in ("b", "l", "v"):
        raise ScheduleError(f"Trace.from_json: bad output {out!r} of instruction {kind!r}")
    if out[0] == "b":
        return BlockRV(str(out[1]), str(out[2]))
    if out[0] == "l":
        return LoopRV(-1, str(out[1]))
    return ExprRV(int(out[1]))
