"""Argument checks of the call paths: arity, dtype, shape and symbols of the arrays passed in."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..errors import ArgumentError

__all__ = ["check_arity", "check_array"]


def check_arity(func: str, names: Sequence[str], args: Sequence[Any], noun: str = "arguments") -> None:
    """:class:`ArgumentError` unless ``len(args) == len(names)`` (``@f takes 2 arguments (a, b), got 3``)."""
    if len(args) != len(names):
        raise ArgumentError(f"@{func} takes {len(names)} {noun} ({', '.join(names)}), got {len(args)}")


def check_array(where: str, arr: Any, dtype: Any, shape: Sequence[int | None], shape_text: str, *,
                symbols: Sequence[str | None] | None = None, bound: dict[str, tuple[int, str]] | None = None,
                owner: str = "") -> None:
    """Check one NumPy argument against its declared dtype and shape; bind its symbols.

    ``shape`` holds ints (static) or None (any size); ``symbols`` (optional) names the
    symbol of each dimension, bound in ``bound`` (symbol -> ``(size, owner)``, updated).
    Raises :class:`ArgumentError` naming ``where``, the expected and the actual value.
    """
    if str(arr.dtype) != str(dtype):
        raise ArgumentError(f"{where}: expected dtype {dtype}, got {arr.dtype}")
    if arr.ndim != len(shape):
        raise ArgumentError(f"{where}: expected rank {len(shape)} (shape {shape_text}), got shape {arr.shape}")
    for d, (want, got) in enumerate(zip(shape, arr.shape)):
        if want is not None and want != got:
            raise ArgumentError(f"{where}: expected shape {shape_text}, got {arr.shape} "
                                f"(dimension {d} is {got}, not {want})")
        sym = symbols[d] if symbols is not None else None
        if sym is not None and bound is not None:
            if sym in bound and bound[sym][0] != got:
                raise ArgumentError(f"{where}: dimension {d} is {got} but symbol {sym!r} was "
                                    f"bound to {bound[sym][0]} by {bound[sym][1]}")
            bound.setdefault(sym, (got, owner))
