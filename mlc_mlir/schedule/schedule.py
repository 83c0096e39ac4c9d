"""``mlc.Schedule``: the course's ``tvm.tir.Schedule`` on linalg tensor programs.

Record, then emit: every primitive checks its request against the abstract loop nest
(:mod:`.state`), edits it, and appends a frozen record to the trace (:mod:`.trace`).
``sch.mod`` is computed lazily, when it is read: the whole schedule is emitted as one
transform script (:mod:`.emit`) and applied to a copy of the original module with the
upstream transform interpreter, once for any number of primitives (building a schedule
of n primitives costs one application, not n). A failed request raises
:class:`~mlc_mlir.errors.ScheduleError` and leaves the schedule as it was: checks on the
loop nest fail in the primitive itself; a script the interpreter rejects fails when the
module is next read (``sch.mod``), which finds the first failing primitive, rolls the
schedule back to just before it and names it.
"""

from __future__ import annotations

import contextlib
import copy
import random
from collections.abc import Iterator
from typing import Any

from mlir import ir

from ..context import mlc_context
from ..errors import ScheduleError
from ..ir import Module
from .annotate import ROOT_BLOCK, AnnotationPrimitives
from .apply import run_transform
from .blocks import BlockPrimitives
from .cache import CachePrimitives
from .emit import Knob, build_script
from .loops import LoopPrimitives
from .payload import read_blocks
from .peel import PeelPrimitives
from .rfactor import RFactorPrimitives
from .sampling import SamplingPrimitives
from .state import BlockState, FuncState
from .trace import (SAMPLING_KINDS, BlockRV, Instruction, InstructionKind, LoopRV, Trace,
                    register_instruction_kind)

__all__ = ["Schedule"]


class Schedule(LoopPrimitives, BlockPrimitives, CachePrimitives, SamplingPrimitives, AnnotationPrimitives,
               PeelPrimitives, RFactorPrimitives):
    """A schedule of the tensor programs of ``mod`` (course: ``tvm.tir.Schedule``).

    Args:
        mod: an :class:`mlc.Module` of tensor programs (docs/conventions.md form); it is
            not modified.
        seed: seed of the sampling primitives (``None``: a fresh random seed).

    Example::

        sch = mlc.Schedule(mod)
        block_Y = sch.get_block("Y", func_name="mm_relu")
        i, j, k = sch.get_loops(block_Y)
        j0, j1 = sch.split(j, factors=[None, 4])
        sch.reorder(j0, k, j1)
        print(sch.mod)
        print(sch.trace)
    """

    def __init__(self, mod: Module, *, seed: int | None = None):
        if isinstance(mod, ir.Module):
            mod = Module(mod)
        if not isinstance(mod, Module):
            raise ScheduleError(f"Schedule expects an mlc.Module, got {type(mod).__name__}")
        self._orig = mod.clone()
        self._uid = 0
        with mlc_context():
            infos = read_blocks(self._orig.mlir_module)
        self._funcs: dict[str, FuncState] = {}
        for (fname, _), info in sorted(infos.items(), key=lambda kv: (kv[0][0], kv[1].order)):
            self._funcs.setdefault(fname, FuncState(fname)).add_block(info, self._new_uid)
        self._insts: list[Instruction] = []
        self._seed = seed
        self._rng = random.Random(seed)
        self._mod = self._orig.clone()
        self._script: str | None = None
        self._deferred = 0
        self._dirty = False
        # (instruction count, loop-nest state) before each IR-changing primitive not yet applied
        self._pending: list[tuple[int, dict[str, FuncState]]] = []
        # the functions the primitive being run resolved (its edit snapshots only those) and
        # those snapshotted so far by the edit; the depth of nested edits
        self._targets: set[str] = set()
        self._snapped: dict[str, FuncState] | None = None
        self._depth = 0

    # -- results ---------------------------------------------------------------------
    @property
    def mod(self) -> Module:
        """The scheduled module (a fresh copy of the original with the schedule applied)."""
        if self._dirty:
            self._refresh()
        return self._mod

    @property
    def trace(self) -> Trace:
        """The record of the primitive calls so far (``print(sch.trace)``)."""
        return Trace(self._insts, self._orig, self._script if not self._dirty else None)

    def transform_script(self) -> str:
        """The schedule as a transform script (text of a module with ``@__transform_main``)."""
        with mlc_context():
            return str(self._build())

    def copy(self) -> Schedule:
        """An independent copy (same module, state, trace and random state)."""
        return copy.copy(self)._copied()

    def _copied(self) -> Schedule:
        self._funcs = copy.deepcopy(self._funcs)
        self._targets, self._snapped, self._depth = set(), None, 0
        self._ann = copy.deepcopy(getattr(self, "_ann", {}))  # annotations (annotate.py)
        self._insts = list(self._insts)
        self._pending = list(self._pending)
        rng = random.Random()
        rng.setstate(self._rng.getstate())
        self._rng = rng
        return self

    def show(self) -> None:
        """Print the scheduled module."""
        print(self.mod)

    @contextlib.contextmanager
    def deferred(self) -> Iterator[Schedule]:
        """Apply the script once at the end of the block (and check it there).

        Primitives are always applied lazily; this only forces the application (and its
        errors) at the end of the ``with`` block instead of at the next ``sch.mod``.
        """
        self._deferred += 1
        try:
            yield self
        finally:
            self._deferred -= 1
        if not self._deferred and self._dirty:
            self._refresh()

    def replay(self, trace: Trace) -> Schedule:
        """Call every instruction of ``trace`` on this schedule, with the trace's decisions
        (course: replaying ``sch.trace``); returns ``self``.

        Example::

            best = mlc.Schedule(mod).replay(mlc.schedule.Trace.from_json(record["trace"]))

        Raises:
            ScheduleError: an instruction does not apply to this module.
        """
        if not isinstance(trace, Trace):
            raise ScheduleError(f"replay expects a Trace, got {type(trace).__name__}")
        with self.deferred():
            trace.replay_into(self)
        return self

    # -- emission --------------------------------------------------------------------
    def _knobs(self) -> list[Knob]:
        names = Trace(self._insts).names()
        knobs = []
        for inst in self._insts:
            if inst.kind in SAMPLING_KINDS:
                label = "_".join(names[rv.id] for rv in inst.outputs)
                knobs.append(Knob(f"{inst.kind}.{label}", inst.arg("_options"), inst.arg("_selected")))
        return knobs

    def _build(self) -> ir.Module:
        return build_script([self._funcs[f] for f in sorted(self._funcs)], self._knobs())

    def _apply_state(self) -> tuple[Module, str]:
        out = self._orig.clone()
        with mlc_context():
            tmod = self._build()
            script = str(tmod)
            run_transform(out.mlir_module, tmod)
        return out, script

    def _refresh(self) -> None:
        try:
            self._mod, self._script = self._apply_state()
        except ScheduleError as exc:
            self._roll_back_to_failure(exc)
        self._dirty = False
        self._pending = []

    def _roll_back_to_failure(self, exc: ScheduleError) -> None:
        """Find the first pending primitive whose script fails, restore the state before
        it, and raise ``exc`` naming that primitive."""
        pending, current = self._pending, (len(self._insts), self._funcs)
        states = [*pending[1:], current]  # states[i]: the state right after pending[i]'s primitive
        good, bad = -1, len(pending) - 1  # invariant: states[bad] fails; states[good] (or pending[0]) applies
        while bad - good > 1:
            mid = (good + bad) // 2
            self._funcs = states[mid][1]
            try:
                self._apply_state()
                good = mid
            except ScheduleError:
                bad = mid
        count, funcs = pending[bad]
        failed = self._insts[count]
        self._funcs = funcs
        del self._insts[count:]
        self._mod, self._script = self._apply_state()
        self._dirty, self._pending = False, []
        names = Trace(self._insts + [failed]).names()
        line = Trace([]).format_instruction(failed, names)
        raise ScheduleError(f"{line}: {exc}; the schedule was rolled back to before this primitive") from None

    @contextlib.contextmanager
    def _edit(self, *, changes_ir: bool = True) -> Iterator[None]:
        """Run one primitive: roll the state back if it raises; mark the module stale if it
        succeeds (it is re-emitted when next read).

        The state saved is a copy of the functions the primitive resolves (a block or loop
        handle names its function: :meth:`_target`), the others shared: deep-copying every
        function's state at every primitive took 9 of the 12 s of ResNet-18's default
        schedule. A lookup (``changes_ir=False``) changes no state: nothing is copied."""
        self._depth += 1
        outer = self._depth == 1
        if not outer or not changes_ir:
            try:
                yield
            finally:
                self._depth -= 1
                if outer:
                    self._targets = set()
            return
        saved = dict(self._funcs)
        self._snapped = saved
        for func in self._targets:
            self._snapshot(func)
        count = len(self._insts)
        before = (self._mod, self._script, self._dirty, list(self._pending))
        try:
            yield
            for func in self._targets:
                self._funcs[func].validate()
        except BaseException:
            self._funcs = saved
            del self._insts[count:]
            # the state is the one before the call: so is its module (a re-emission would
            # print the same program differently from a replay of the trace)
            self._mod, self._script, self._dirty, self._pending = before
            raise
        finally:
            self._depth -= 1
            self._targets, self._snapped = set(), None
        self._pending.append((count, saved))
        self._dirty = True

    def _target(self, func: str) -> None:
        """The primitive being run may change ``func``'s state (it resolved a handle of it)."""
        if func in self._funcs and func not in self._targets:
            self._targets.add(func)
            if self._snapped is not None:
                self._snapshot(func)

    def _snapshot(self, func: str) -> None:
        """Save ``func``'s state before the running primitive changes it: a copy in this
        edit's saved state and in the earlier pending states that share the live one."""
        live = self._funcs[func]
        saved = copy.deepcopy(live)
        for _, state in self._pending:
            if state.get(func) is live:
                state[func] = saved
        self._snapped[func] = saved

    def _record(self, kind: str, args: list[tuple[str, Any]], outputs: tuple = (), decision: Any = None) -> None:
        self._insts.append(Instruction(kind, tuple(args), tuple(outputs), decision))

    def _new_uid(self) -> int:
        self._uid += 1
        return self._uid

    # -- handle resolution -----------------------------------------------------------
    def _resolve_block(self, block: Any, what: str) -> tuple[FuncState, BlockState]:
        if isinstance(block, str):
            block = self.get_block(block)
        if not isinstance(block, BlockRV):
            raise ScheduleError(f"{what}: expected a block (BlockRV or block name), got {type(block).__name__}")
        fstate = self._funcs.get(block.func)
        if fstate is None:
            raise ScheduleError(f"{what}: unknown function {block.func!r}")
        self._target(block.func)
        name = block.name
        if name in fstate.aliases:
            kind, target = fstate.aliases[name]
            if kind == "init":
                raise ScheduleError(f"{what}: block {name!r} is the init of {target!r} after decompose_reduction; "
                                    "scheduling an init block is not supported")
            name = target
        if name not in fstate.blocks:
            if name == ROOT_BLOCK:
                raise ScheduleError(f"{what}: the root block of @{block.func} is not a computation (it has no "
                                    "loops); use get_child_blocks(root) for the blocks under it")
            raise ScheduleError(f"{what}: block {block.name!r} no longer exists in @{block.func}")
        return fstate, fstate.blocks[name]

    def _resolve_loop(self, loop: Any, what: str) -> tuple[FuncState, int]:
        if not isinstance(loop, LoopRV):
            raise ScheduleError(f"{what}: expected a loop (LoopRV from get_loops/split/fuse), got "
                                f"{type(loop).__name__}")
        for fstate in self._funcs.values():
            if loop.uid in fstate.loops:
                self._target(fstate.func)
                return fstate, loop.uid
        raise ScheduleError(f"{what}: loop {loop.name} is stale: it was split, fused or replaced by an earlier "
                            "primitive; get the loops again with get_loops")

    def _loop_rv(self, fstate: FuncState, uid: int) -> LoopRV:
        return LoopRV(uid, fstate.loops[uid].name)

    # -- lookup ----------------------------------------------------------------------
    def get_block(self, name: str, func_name: str | None = None) -> BlockRV:
        """The block called ``name`` (course: ``sch.get_block("Y", func_name="mm_relu")``).

        Raises:
            ScheduleError: unknown function or block, or a name found in several functions
                while ``func_name`` is not given.
        """
        if not isinstance(name, str):
            raise ScheduleError(f"get_block: name must be a str, got {type(name).__name__}")
        if name == ROOT_BLOCK and not any(ROOT_BLOCK in f.blocks for f in self._funcs.values()):
            return self._root_block(func_name)
        if func_name is not None and func_name not in self._funcs:
            raise ScheduleError(f"get_block: unknown function {func_name!r}; the module's tensor programs are "
                                f"{sorted(self._funcs)}")
        funcs = [func_name] if func_name is not None else sorted(self._funcs)
        found = [f for f in funcs if name in self._funcs[f].blocks or name in self._funcs[f].aliases]
        if not found:
            known = sorted(b for f in funcs for b in self._funcs[f].blocks)
            raise ScheduleError(f"get_block: no block named {name!r}"
                                + (f" in @{func_name}" if func_name else "") + f"; blocks are {known}")
        if len(found) > 1:
            raise ScheduleError(f"get_block: block {name!r} is in several functions {found}; pass func_name")
        rv = BlockRV(name, found[0])
        with self._edit(changes_ir=False):
            self._record("get_block", [("name", name), ("func_name", found[0])], (rv,))
        return rv

    def get_loops(self, block: BlockRV | str) -> list[LoopRV]:
        """The loops around ``block``, outermost first (course: ``i, j, k = sch.get_loops(b)``)."""
        fstate, bstate = self._resolve_block(block, "get_loops")
        rvs = [self._loop_rv(fstate, uid) for uid in bstate.path]
        with self._edit(changes_ir=False):
            self._record("get_loops", [("block", block)], tuple(rvs))
        return rvs

    def get_producers(self, block: BlockRV | str) -> list[BlockRV]:
        """The blocks whose results ``block`` reads."""
        fstate, bstate = self._resolve_block(block, "get_producers")
        names = [s.name for s in bstate.info.sources[:bstate.info.n_inputs] if s.kind == "block"]
        rvs = [BlockRV(n, fstate.func) for n in dict.fromkeys(names)]
        with self._edit(changes_ir=False):
            self._record("get_producers", [("block", block)], tuple(rvs))
        return rvs

    def get_consumers(self, block: BlockRV | str) -> list[BlockRV]:
        """The blocks that read the result of ``block``."""
        fstate, bstate = self._resolve_block(block, "get_consumers")
        rvs = [BlockRV(b.name, fstate.func) for b in fstate.blocks.values()
               if any(s.kind == "block" and s.name == bstate.name for s in b.info.sources[:b.info.n_inputs])]
        with self._edit(changes_ir=False):
            self._record("get_consumers", [("block", block)], tuple(rvs))
        return rvs


def _register_kinds() -> None:
    prims = {
        "get_block": (Schedule.get_block, "b"), "get_loops": (Schedule.get_loops, "l*"),
        "get_producers": (Schedule.get_producers, "b*"), "get_consumers": (Schedule.get_consumers, "b*"),
        "split": (Schedule.split, "l*"), "reorder": (Schedule.reorder, ""), "fuse": (Schedule.fuse, "l"),
        "parallel": (Schedule.parallel, ""), "vectorize": (Schedule.vectorize, ""),
        "unroll": (Schedule.unroll, ""), "bind": (Schedule.bind, ""), "peel": (Schedule.peel, ""),
        "rfactor": (Schedule.rfactor, "b"),
        "compute_at": (Schedule.compute_at, ""), "reverse_compute_at": (Schedule.reverse_compute_at, ""),
        "decompose_reduction": (Schedule.decompose_reduction, "b"), "blockize": (Schedule.blockize, "b"),
        "tensorize": (Schedule.tensorize, ""), "cache_read": (Schedule.cache_read, "b"),
        "cache_write": (Schedule.cache_write, "b"),
        "sample_perfect_tile": (Schedule.sample_perfect_tile, "v*"),
        "sample_categorical": (Schedule.sample_categorical, "v"),
        "annotate": (Schedule.annotate, ""), "unannotate": (Schedule.unannotate, ""),
        "get_child_blocks": (Schedule.get_child_blocks, "b*"), "enter_postproc": (Schedule.enter_postproc, ""),
    }
    for name, (fn, outputs) in prims.items():
        register_instruction_kind(InstructionKind(name, fn, positional=name in ("reorder", "fuse"),
                                                  sampling=name in SAMPLING_KINDS, outputs=outputs))


_register_kinds()
