"""Registry of the project's own module passes (``mlc-opt --mlc-NAME``).

A pass is a Python function ``fn(module: mlc.Module) -> mlc.Module | None`` that rewrites
the module in place (or returns a new one). Layers register theirs on import; the
registry imports those layers lazily so ``mlc-opt --help`` lists every pass.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass

from .errors import MlcError

__all__ = ["ModulePass", "register_pass", "get_pass", "list_passes"]

#: modules whose import registers passes (each must exist: a failing import is an error)
_PASS_PROVIDERS = ("mlc_mlir.compiler.passes", "mlc_mlir.graph.transform.passes")


@dataclass(frozen=True)
class ModulePass:
    name: str
    run: Callable[..., object]
    help: str


_PASSES: dict[str, ModulePass] = {}
_loaded = False


def register_pass(name: str, help: str = "") -> Callable[[Callable[..., object]], Callable[..., object]]:
    """Decorator: register ``fn`` as project pass ``name`` (``mlc-opt --mlc-NAME``)."""

    def wrap(fn: Callable[..., object]) -> Callable[..., object]:
        if name in _PASSES and _PASSES[name].run is not fn:
            raise MlcError(f"pass {name!r} is registered twice")
        _PASSES[name] = ModulePass(name, fn, help or (fn.__doc__ or "").strip().splitlines()[0:1] and
                                   (fn.__doc__ or "").strip().splitlines()[0])
        return fn

    return wrap


def _load_providers() -> None:
    global _loaded
    if _loaded:
        return
    _loaded = True
    for mod in _PASS_PROVIDERS:
        importlib.import_module(mod)


def get_pass(name: str) -> ModulePass:
    """The pass registered as ``name``; :class:`MlcError` listing the known ones otherwise."""
    _load_providers()
    if name not in _PASSES:
        raise MlcError(f"unknown pass --mlc-{name}; known: {', '.join('--mlc-' + n for n in sorted(_PASSES))}")
    return _PASSES[name]


def list_passes() -> list[ModulePass]:
    _load_providers()
    return [_PASSES[n] for n in sorted(_PASSES)]
