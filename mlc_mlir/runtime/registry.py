"""The environment-function registry (the course's ``tvm.register_func``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..errors import MlcError

__all__ = ["register_func", "get_func", "list_funcs"]

_FUNCS: dict[str, Callable[..., Any]] = {}


def register_func(name: str, func: Callable[..., Any] | None = None, *, override: bool = False):
    """Register ``func`` under ``name`` so graphs can call it (``call_dps_packed``).

    Usable as ``@register_func("env.linear")`` or ``register_func("env.linear", fn)``. The
    function is called destination-passing style: inputs..., output, with zero-copy arrays.

    Raises:
        MlcError: ``name`` is already registered and ``override`` is false.
    """
    if not isinstance(name, str) or not name:
        raise MlcError(f"register_func: the name must be a non-empty string, got {name!r}")

    def register(fn: Callable[..., Any]) -> Callable[..., Any]:
        if not callable(fn):
            raise MlcError(f"register_func({name!r}): {fn!r} is not callable")
        if name in _FUNCS and not override:
            raise MlcError(f"register_func: {name!r} is already registered (pass override=True)")
        _FUNCS[name] = fn
        return fn

    return register if func is None else register(func)


def get_func(name: str) -> Callable[..., Any]:
    """The function registered under ``name``; :class:`MlcError` if none is."""
    try:
        return _FUNCS[name]
    except KeyError:
        raise MlcError(f"no environment function registered as {name!r} "
                       f"(registered: {sorted(_FUNCS)})") from None


def list_funcs() -> list[str]:
    """Names of every registered function."""
    return sorted(_FUNCS)
