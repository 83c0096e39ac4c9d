"""Module passes: the one ``ModulePass`` type and the one registry of the project's passes.

A pass is a :class:`ModulePass`: a function ``fn(mod, ctx) -> Module | None`` with a
:class:`PassInfo` (name, ``opt_level``). It runs two ways:

    new = pass_(mod)          # on a copy, mod left untouched (course ``tvm.ir.transform``)
    mod = pass_.run(mod)      # in place: what a pipeline stage and ``mlc-opt`` run

User passes are made with ``@module_pass`` (``mlc.graph.transform.module_pass``) and chained
with :class:`Sequential`. The project's own passes are registered by name with
``@register_pass`` (``mlc-opt --mlc-NAME``, and the stages of ``mlc.graph.build``'s
optimization take them from here: :func:`get_pass`). The registry imports the modules
that register passes lazily, so ``mlc-opt --help`` lists every pass.
"""

from __future__ import annotations

import functools
import importlib
import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from .errors import GraphError, MlcError

__all__ = ["PassInfo", "PassContext", "ModulePass", "module_pass", "Sequential", "register_pass",
           "get_pass", "list_passes"]

#: modules whose import registers passes (each must exist: a failing import is an error)
_PASS_PROVIDERS = ("mlc_mlir.compiler.passes", "mlc_mlir.graph.transform.passes")


@dataclass(frozen=True)
class PassInfo:
    """A pass's name and the optimisation level from which :class:`Sequential` runs it."""

    name: str
    opt_level: int = 0


@dataclass(frozen=True)
class PassContext:
    """What a pass is told about the pipeline running it."""

    opt_level: int = 2


def _module_type() -> type:
    from .ir import Module  # here, not at the top: mlc-opt's hand-off loads this module, not the bindings

    return Module


def _run(info: PassInfo, fn: Callable[[Any, PassContext], Any], mod: Any, ctx: PassContext | None) -> Any:
    """``fn`` on a copy of ``mod`` (value names kept); the copy or the module ``fn`` returned."""
    module_type = _module_type()
    if not isinstance(mod, module_type):
        raise GraphError(f"pass {info.name}: expects an mlc.Module, got {type(mod).__name__}")
    work = mod.clone()
    out = fn(work, ctx or PassContext())
    if out is None:
        return work
    if not isinstance(out, module_type):
        raise GraphError(f"pass {info.name} returned {type(out).__name__}; a module pass returns an "
                         "mlc.Module (or None after changing its argument in place)")
    return out


class ModulePass:
    """A function ``fn(mod, ctx) -> Module | None`` as a pass (the one pass type of the project).

    ``pass_(mod)`` runs it on a copy and returns the new module; ``pass_.run(mod)`` runs it
    on ``mod`` itself (pipeline stages, ``mlc-opt``). ``name``, ``info`` and ``help`` describe it.
    """

    def __init__(self, fn: Callable[[Any, PassContext], Any], info: PassInfo, help: str = ""):
        self.fn = fn
        self.info = info
        self.__doc__ = fn.__doc__
        self.help = help or ((fn.__doc__ or "").strip().splitlines() or [""])[0]

    @property
    def name(self) -> str:
        return self.info.name

    def __call__(self, mod: Any, ctx: PassContext | None = None) -> Any:
        return _run(self.info, self.fn, mod, ctx)

    def run(self, mod: Any, ctx: PassContext | None = None) -> Any:
        """Run on ``mod`` itself; return the module after the pass (``mod`` or a new one)."""
        out = self.fn(mod, ctx or PassContext())
        return mod if out is None else out

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

            def __call__(self: Any, mod: Any, ctx: PassContext | None = None) -> Any:
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

    def __init__(self, passes: Sequence[Callable[[Any], Any]], *, opt_level: int = 2):
        self.passes = list(passes)
        for p in self.passes:
            if not callable(p):
                raise GraphError(f"Sequential: {p!r} is not a pass (a callable on a module)")
        self.opt_level = opt_level

    def __call__(self, mod: Any) -> Any:
        module_type = _module_type()
        for p in self.passes:
            info = getattr(p, "info", None)
            if isinstance(info, PassInfo) and info.opt_level > self.opt_level:
                continue
            out = p(mod)
            if not isinstance(out, module_type):
                raise GraphError(f"Sequential: pass {p!r} returned {type(out).__name__}, not an mlc.Module")
            mod = out
        return mod


# -- the registry (mlc-opt --mlc-NAME, the graph optimization stages) ---------------------------
_PASSES: dict[str, ModulePass] = {}
_FUNCS: dict[str, Callable[..., object]] = {}
_loaded = False


def register_pass(name: str, help: str = "") -> Callable[[Callable[..., object]], Callable[..., object]]:
    """Decorator: register ``fn(mod, **options) -> Module | None`` as pass ``name`` (``mlc-opt --mlc-NAME``).

    ``fn`` rewrites the module in place (or returns a new one) and is returned unchanged;
    :func:`get_pass` gives the :class:`ModulePass`, with keyword ``options`` bound if asked.
    """

    def wrap(fn: Callable[..., object]) -> Callable[..., object]:
        if name in _PASSES and _FUNCS[name] is not fn:
            raise MlcError(f"pass {name!r} is registered twice")
        _FUNCS[name] = fn
        _PASSES[name] = ModulePass(_ignoring_ctx(fn), PassInfo(name), help)
        return fn

    return wrap


def _ignoring_ctx(fn: Callable[..., object]) -> Callable[[Any, PassContext], object]:
    @functools.wraps(fn)
    def run(mod: Any, ctx: PassContext) -> object:
        return fn(mod)

    return run


def _load_providers() -> None:
    global _loaded
    if _loaded:
        return
    _loaded = True
    for mod in _PASS_PROVIDERS:
        importlib.import_module(mod)


def get_pass(name: str, **options: Any) -> ModulePass:
    """The pass registered as ``name``, with ``options`` bound (keyword arguments of its function).

    Raises:
        MlcError: an unknown name (the message lists the known ones) or an option the pass
            does not take.
    """
    _load_providers()
    if name not in _PASSES:
        raise MlcError(f"unknown pass --mlc-{name}; known: {', '.join('--mlc-' + n for n in sorted(_PASSES))}")
    if not options:
        return _PASSES[name]
    fn = _FUNCS[name]
    try:
        inspect.signature(fn).bind_partial(None, **options)
    except TypeError as exc:
        raise MlcError(f"pass --mlc-{name}: bad options {sorted(options)}: {exc}") from None
    return ModulePass(_ignoring_ctx(functools.partial(fn, **options)), _PASSES[name].info, _PASSES[name].help)


def list_passes() -> list[ModulePass]:
    """Every registered pass, by name."""
    _load_providers()
    return [_PASSES[n] for n in sorted(_PASSES)]
