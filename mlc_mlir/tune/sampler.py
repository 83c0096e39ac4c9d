"""Crash isolation of the search space: candidates are sampled in a child process.

A space's ``generate(mod, seed)`` runs user code (a :class:`ScheduleFn`) and may apply
the schedule with MLIR (the auto-scheduling rules read ``sch.mod``); in this build an
MLIR assertion kills the interpreter. :class:`IsolatedSpace` runs ``generate`` in a
spawned sampler process (with a memory limit and a deadline) and gets back only the
candidate's trace as JSON data and its recorded loop-nest state (plain Python data); the
parent restores that state on a fresh schedule (or replays the trace, which records and
checks primitives in Python without running MLIR). The trace is applied to the module
only in the builder processes (:mod:`.measure`). A sampler that dies or
hangs costs that one sample: the task records a failed ``sample:`` record in the
database and the search goes on with a fresh sampler.

The rule for a user's function (how the space reaches the child):

* a function defined at the top level of an importable module is sent by reference;
* a lambda, a closure or a function of the ``__main__`` script (course code in a
  notebook) is sent by value through ``cloudpickle`` when it is installed (it comes
  with the test extra, Ray and joblib);
* otherwise the space is sampled in the tuning process itself (logged once): the
  function's own Python code then runs unprotected; the schedule is still applied only
  in the builders.
"""

from __future__ import annotations

import logging
import multiprocessing as mp
import os
import pickle
import random
import time
from collections.abc import Callable
from multiprocessing.connection import wait
from typing import Any

from ..errors import MlcError, TuneError
from ..ir import Module
from ..schedule import Schedule, Trace
from .database import workload_key
from .local import _die_with_parent, _main_hidden, _death
from .mutator import mutate_decision
from .space_generator import ScheduleFn, SpaceGenerator

__all__ = ["Sampler", "IsolatedSpace", "dumps_space"]

log = logging.getLogger("mlc_mlir.tune")


#: Schedule attributes that hold MLIR objects or rollback snapshots: not sent back
_NOT_SENT = ("_orig", "_mod", "_script", "_pending")


def _payload(sch: Schedule) -> tuple[dict[str, Any], bytes | None]:
    """A sampled schedule as the parent needs it: its trace (JSON data) and its recorded
    loop-nest state pickled (``None`` if that does not pickle: the parent replays)."""
    try:
        state = pickle.dumps({k: v for k, v in vars(sch).items() if k not in _NOT_SENT})
    except Exception:  # noqa: BLE001 - an attribute that does not pickle: replay instead
        state = None
    return sch.trace.as_json(), state


def _call(space: Any, method: str, mod: Module, args: tuple) -> Any:
    """Child side of one request: ``space.<method>``'s schedule(s) as :func:`_payload`."""
    if method == "generate":
        return _payload(space.generate(mod, args[0]))
    if method == "initial":
        return [_payload(sch) for sch in space.initial(mod)]
    sch = space.mutate(mod, Trace.from_json(args[0], mod), random.Random(args[1]))
    return None if sch is None else _payload(sch)


def _sampler_main(conn: Any, mem_limit: int | None) -> None:
    """Child process: unpickle spaces, generate candidates, send their traces back."""
    _die_with_parent()
    if mem_limit:
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (mem_limit, mem_limit))
    spaces: dict[int, Any] = {}
    mods: dict[str, Module] = {}
    while True:
        msg = conn.recv()
        if msg is None:
            return
        if msg[0] == "space":
            _, sid, blob = msg
            try:
                spaces[sid] = pickle.loads(blob)
                conn.send(("ok", None))
            except Exception as exc:  # noqa: BLE001 - reported to the parent, which falls back
                conn.send(("unpickle", f"{type(exc).__name__}: {exc}"))
            continue
        _, sid, key, mod_text, method, args = msg
        try:
            if key not in mods:
                mods[key] = Module.parse(mod_text)
            conn.send(("ok", _call(spaces[sid], method, mods[key], args)))
        except MlcError as exc:
            conn.send(("invalid", f"{type(exc).__name__}: {str(exc)[:800]}"))
        except Exception as exc:  # noqa: BLE001 - a bug in the user's space: reported, not fatal
            conn.send(("error", f"{type(exc).__name__}: {str(exc)[:800]}"))


def dumps_space(space: SpaceGenerator) -> bytes | None:
    """The space pickled for the sampler, or ``None`` when it cannot travel (see the
    module docstring for the rule)."""
    fn = getattr(space, "fn", None) if isinstance(space, ScheduleFn) else None
    by_value = type(space).__module__ == "__main__" or (
        fn is not None and (getattr(fn, "__module__", None) == "__main__" or "<" in getattr(fn, "__qualname__", "<")))
    if by_value:
        try:
            import cloudpickle
        except ImportError:
            return None
        try:
            return cloudpickle.dumps(space)
        except Exception:  # noqa: BLE001 - not picklable: sampled in this process
            return None
    try:
        return pickle.dumps(space)
    except Exception:  # noqa: BLE001
        return None


class Sampler:
    """One sampler process shared by the spaces of a tuning run (respawned after a crash).

    Args:
        timeout: seconds one sample may take before the process is killed.
        mem_limit_gb: address-space limit of the process (``None``: none).
    """

    def __init__(self, *, timeout: float = 60.0, mem_limit_gb: float | None = 8.0):
        self.timeout = float(timeout)
        self.mem_limit = int(mem_limit_gb * 2 ** 30) if mem_limit_gb else None
        self._ctx = mp.get_context("spawn")
        self._proc: Any = None
        self._conn: Any = None
        self._blobs: dict[int, bytes] = {}
        self._sent: set[int] = set()
        self.crashes = 0

    def _start(self) -> None:
        self._conn, child = self._ctx.Pipe()
        self._proc = self._ctx.Process(target=_sampler_main, args=(child, self.mem_limit), daemon=True,
                                       name="mlc-tune-sampler")
        with _main_hidden():
            self._proc.start()
        child.close()
        self._sent = set()

    def _kill(self) -> None:
        if self._proc is not None:
            if self._proc.is_alive():
                self._proc.kill()
            self._proc.join(5)
            self._conn.close()
        self._proc = self._conn = None

    def _ask(self, msg: tuple, timeout: float) -> tuple[str, Any]:
        """Send ``msg``, wait for the answer; ``("died", why)`` if the process died or hung."""
        if self._proc is None or not self._proc.is_alive():
            self._kill()
            self._start()
        try:
            self._conn.send(msg)
        except OSError:
            pass
        deadline = time.monotonic() + timeout
        while True:
            ready = wait([self._conn, self._proc.sentinel], timeout=max(0.0, deadline - time.monotonic()))
            if self._conn in ready or (ready and self._conn.poll()):
                try:
                    return self._conn.recv()
                except (EOFError, OSError):
                    pass
            if ready or time.monotonic() >= deadline:
                hung = not ready
                if not hung:
                    self._proc.join(1)
                why = f"timed out after {timeout:g} s" if hung else f"the sampler process {_death(self._proc)}"
                self._kill()
                self.crashes += 1
                return "died", why

    def register(self, space: SpaceGenerator) -> int | None:
        """Send ``space`` to the sampler; its id, or ``None`` if it must be sampled here."""
        blob = dumps_space(space)
        if blob is None:
            return None
        sid = len(self._blobs)
        self._blobs[sid] = blob
        tag, why = self._ask(("space", sid, blob), max(self.timeout, 120.0))
        if tag != "ok":
            log.info("space %r cannot be unpickled in the sampler process (%s): sampled in this process",
                     space, why)
            del self._blobs[sid]
            return None
        self._sent.add(sid)
        return sid

    def call(self, sid: int, key: str, mod_text: str, method: str, args: tuple) -> tuple[str, Any]:
        """Run ``space.<method>`` (``generate``, ``initial``, ``mutate``) in the sampler:
        ``("ok", trace json | list | None)``, ``("invalid" | "error", message)`` or
        ``("died", why)``."""
        if self._proc is None or not self._proc.is_alive() or sid not in self._sent:
            tag, why = self._ask(("space", sid, self._blobs[sid]), max(self.timeout, 120.0))
            if tag != "ok":
                return ("died", why) if tag == "died" else ("error", why)
            self._sent.add(sid)
        return self._ask(("call", sid, key, mod_text, method, args), self.timeout)

    def close(self) -> None:
        """Stop the sampler process."""
        if self._proc is not None and self._proc.is_alive():
            try:
                self._conn.send(None)
                self._proc.join(2)
            except OSError:
                pass
        self._kill()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # noqa: BLE001
            pass


def _overrides(space: Any, method: str) -> bool:
    """Whether ``space``'s class defines its own ``method`` (not SpaceGenerator's default)."""
    mine = getattr(type(space), method, None)
    return mine is not None and mine is not getattr(SpaceGenerator, method, None)


class IsolatedSpace(SpaceGenerator):
    """``space`` sampled in a :class:`Sampler` process; ``generate`` returns a schedule
    holding the candidate's trace (recorded here, not applied).

    Args:
        space: the space generator to isolate.
        sampler: a shared sampler (default: one of its own).
        on_crash: ``on_crash(seed, why)`` when the sampler died or hung on a sample.
    """

    def __init__(self, space: SpaceGenerator, sampler: Sampler | None = None,
                 on_crash: Callable[[int, str], None] | None = None):
        self.space = space
        self.sampler = sampler if sampler is not None else Sampler()
        self.on_crash = on_crash
        self.sid = self.sampler.register(space)
        if self.sid is None:
            log.info("space %r does not pickle (a lambda or closure without cloudpickle): its function runs in "
                     "this process; candidates are still applied and built in the builders", space)
        self._texts: dict[int, tuple[Module, str, str]] = {}

    @property
    def isolated(self) -> bool:
        """Whether candidates are sampled in the sampler process."""
        return self.sid is not None

    def _ask(self, mod: Module, method: str, args: tuple, seed: int) -> Any:
        if id(mod) not in self._texts:
            self._texts[id(mod)] = (mod, workload_key(mod), str(mod))
        _, key, text = self._texts[id(mod)]
        tag, value = self.sampler.call(self.sid, key, text, method, args)
        if tag == "died" and self.on_crash is not None:
            self.on_crash(seed, value)
        if tag != "ok":
            raise TuneError(f"sampling ({method}, seed {seed}) of {self.space!r}: {value}")
        return value

    @staticmethod
    def _replayed(mod: Module, obj: dict[str, Any], seed: int | None = None) -> Schedule:
        """A schedule of ``mod`` holding the trace ``obj`` (recorded and checked, not applied)."""
        sch = Schedule(mod, seed=seed)
        Trace.from_json(obj, mod).replay_into(sch)
        return sch

    @classmethod
    def _restored(cls, mod: Module, payload: tuple[dict[str, Any], bytes | None],
                  seed: int | None = None) -> Schedule:
        """The child's schedule rebuilt here: its recorded state restored on a fresh
        schedule of ``mod`` (the schedule is applied when ``.mod`` is read), or its trace
        replayed when the state did not travel (a replay costs a state copy per primitive)."""
        obj, state = payload
        if state is not None:
            try:
                sch = Schedule(mod, seed=seed)
                vars(sch).update(pickle.loads(state))
            except Exception:  # noqa: BLE001 - fall back to replaying the trace
                pass
            else:
                sch._pending, sch._script, sch._dirty = [], None, bool(sch._insts)
                return sch
        return cls._replayed(mod, obj, seed)

    def generate(self, mod: Module, seed: int) -> Schedule:
        if self.sid is None:
            return self.space.generate(mod, seed)
        return self._restored(mod, self._ask(mod, "generate", (seed,), seed), seed)

    def initial(self, mod: Module) -> list[Schedule]:
        """The space's first candidates (``space.initial``), sampled in the child."""
        if not _overrides(self.space, "initial"):
            return []
        if self.sid is None:
            return self.space.initial(mod)
        return [self._restored(mod, p) for p in self._ask(mod, "initial", (), -1)]

    def mutate(self, mod: Module, trace: Trace, rng: random.Random) -> Schedule | None:
        """A neighbour of ``trace``: the space's own ``mutate`` runs in the child (it may
        re-run rules that apply MLIR); the default one (a decision changed, replayed without
        MLIR) runs here."""
        if self.sid is None or not _overrides(self.space, "mutate"):
            base = getattr(self.space, "mutate", None)
            if base is not None:
                return base(mod, trace, rng)

            child = mutate_decision(trace, rng)
            return None if child is None else self._replayed(mod, child.as_json())
        seed = rng.randrange(2 ** 31)
        payload = self._ask(mod, "mutate", (trace.as_json(), seed), seed)
        return None if payload is None else self._restored(mod, payload)

    def __repr__(self) -> str:
        return repr(self.space)
