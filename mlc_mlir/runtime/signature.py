"""The signature of a compiled function, as the runtime checks and calls it (pure data).

Recorded by the compiler's ABI rewrite (``mlc_mlir.compiler.abi``), read by the call paths
(:mod:`.module`, :mod:`.fastcall`, :mod:`.cuda_call`).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ArgSpec", "FuncSignature"]


@dataclass(frozen=True)
class ArgSpec:
    """One argument of a compiled function: element type, shape (None = dynamic), symbols.

    ``strides`` (in elements, None = dynamic) and ``offset`` describe a memref argument
    with a non-identity layout (``memref<2x3xf32, strided<[1, 2]>>``); both are None for
    the identity layout (C-contiguous arrays), which every tensor argument has.
    """

    name: str
    elem: str
    shape: tuple[int | None, ...]
    symbols: tuple[str | None, ...]
    is_output: bool
    strides: tuple[int | None, ...] | None = None
    offset: int | None = None


@dataclass(frozen=True)
class FuncSignature:
    name: str
    args: tuple[ArgSpec, ...]
