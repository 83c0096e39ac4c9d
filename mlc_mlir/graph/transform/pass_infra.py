"""User graph passes: ``@module_pass`` and ``Sequential`` (course ``tvm.ir.transform``).

    @mlc.graph.transform.module_pass(opt_level=2, name="MatmulAddFuse")
    class FuseDenseAddPass:
        def transform_module(self, mod, ctx):
            return my_rewrite(mod)           # a Module (or None: mod was changed in place)

    fused = FuseDenseAddPass()(mod)          # mod itself is left untouched

A pass gets a copy of the module (value names kept) and a :class:`PassContext`;
``Sequential`` runs passes in order, skipping those above its ``opt_level``.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ...errors import GraphError
from ...ir import Module
from ..ir.analysis import clone_module

__all__ = ["PassInfo", "PassContext", "ModulePass", "module_pass", "Sequential"]


@dataclass(frozen=True)
class PassInfo:
    """A pass's name and the optimisation level from which :class:`Sequential` runs it."""

    name: str
    opt_level: int = 0


@dataclass(frozen=True)
class PassContext:
    """What a pass is told about the pipeline running it."""

    opt_level: int = 2


def _run(info: PassInfo, fn: Callable[[Module, PassContext], Any], mod: Module,
         ctx: PassContext | None) -> Module:
    if not isinstance(mod, Module):
        raise GraphError(f"pass {info.name}: expects an mlc.Module, got {type(mod).__name__}")
    work = clone_module(mod)
    out = fn(work, ctx or PassContext())
    if out is None:
        return work
    if not isinstance(out, Module):
        raise GraphError(f"pass {info.name} returned {type(out).__name__}; a module pass returns an "
                         "mlc.Module (or None after changing its argument in place)")
    return out


class ModulePass:
    """A function ``fn(mod, ctx) -> Module | None`` as a pass: ``pass_(mod) -> Module``."""

    def __init__(self, fn: Callable[[Module, PassContext], Any], info: PassInfo):
        self.fn = fn
        self.info = info
        self.__doc__ = fn.__doc__

    def __call__(self, mod: Module, ctx: PassContext | None = None) -> Module:
        return _run(self.info, self.fn, mod, ctx)

    def __repr__(self) -> str:
        return f"<module_pass {self.info.name} opt_level={self.info.opt_level}>"


def module_pass(pass_obj: Any = None, *, opt_level: int = 0, name: str | None = None) -> Any:
    """Decorator making a module pass of a class or a function (course ``module_pass``).

    Args:
        pass_obj: a class with ``transform_module(self, mod, ctx)``, or a function
            ``fn(mod, ctx)``; each returns the new module (or None: the copy it got was
            changed in place).
        opt_level: the level from which :class:`Sequential` runs it.
        name: the pass name (default: the class or function name).

    Returns:
        For a class, the class, whose instances are callable on a module; for a function,
        a :class:`ModulePass`.

    Raises:
        GraphError: a class without ``transform_module``, or something not callable.
    """

    def wrap(obj: Any) -> Any:
        info = PassInfo(name or getattr(obj, "__name__", "pass"), int(opt_level))
        if inspect.isclass(obj):
            if not callable(getattr(obj, "transform_module", None)):
                raise GraphError(f"module_pass: class {obj.__name__} needs a transform_module(self, mod, ctx) "
                                 "method")

            def __call__(self: Any, mod: Module, ctx: PassContext | None = None) -> Module:
                return _run(info, self.transform_module, mod, ctx)

            obj.__call__ = __call__
            obj.info = info
            return obj
        if callable(obj):
            return ModulePass(obj, info)
        raise GraphError(f"module_pass expects a class or a function, got {obj!r}")

    return wrap(pass_obj) if pass_obj is not None else wrap


class Sequential:
    """Run passes in order: ``Sequential([FuseOps(), LegalizeOps(), FuseTIR()])(mod)``.

    Args:
        passes: callables ``Module -> Module``.
        opt_level: passes whose ``info.opt_level`` is above it are skipped.
    """

    def __init__(self, passes: Sequence[Callable[[Module], Module]], *, opt_level: int = 2):
        self.passes = list(passes)
        for p in self.passes:
            if not callable(p):
                raise GraphError(f"Sequential: {p!r} is not a pass (a callable on a module)")
        self.opt_level = opt_level

    def __call__(self, mod: Module) -> Module:
        for p in self.passes:
            info = getattr(p, "info", None)
            if isinstance(info, PassInfo) and info.opt_level > self.opt_level:
                continue
            out = p(mod)
            if not isinstance(out, Module):
                raise GraphError(f"Sequential: pass {p!r} returned {type(out).__name__}, not an mlc.Module")
            mod = out
        return mod
