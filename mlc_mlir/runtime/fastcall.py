"""The fast call path's run-time half: a compiled ``METH_FASTCALL`` entry made a builtin.

The compiler (``mlc_mlir.compiler.fastcall``) writes, per public function, an entry that
checks NumPy arrays in native code against a :class:`FastPlan` and calls the kernel;
here the entry's address becomes a builtin function (``PyCFunction_NewEx``) whose
declined calls go to a Python fallback. Needs no MLIR: only ctypes and NumPy.
"""

from __future__ import annotations

import ctypes
import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from .memref import MLIR_TO_NUMPY
from .ndarray import NDArray, cpu
from .signature import FuncSignature

__all__ = ["FastPlan", "plan_of", "fast_plans", "ndarray_layout", "wrapper_layout", "entry_address",
           "make_builtin"]

_METH_FASTCALL = 0x0080
_VP = ctypes.c_void_p


@functools.lru_cache(maxsize=1)
def ndarray_layout() -> dict[str, int] | None:
    """Byte offsets of ``PyArrayObject_fields`` in this process, or None if they do not read back."""
    head = object.__basicsize__  # sizeof(PyObject): the fields follow PyObject_HEAD
    lay = {"ob_type": head - ctypes.sizeof(_VP), "data": head, "nd": head + 8, "dims": head + 16,
           "descr": head + 40, "flags": head + 48}
    if ctypes.sizeof(_VP) != 8:
        return None
    samples = (np.zeros((3, 5), np.float32), np.ones(9, np.int64)[::2], np.ones((), np.float64),
               np.zeros((2, 3), np.float32).T, np.zeros((4, 1, 2), np.bool_))
    samples[4].flags.writeable = False
    for arr in samples:
        def read(off: int, ctype: type = ctypes.c_int64, _a: np.ndarray = arr) -> int:
            return ctype.from_address(id(_a) + off).value

        dims = read(lay["dims"])
        ok = (read(lay["ob_type"]) == id(np.ndarray) and read(lay["data"]) == arr.ctypes.data
              and read(lay["nd"], ctypes.c_int32) == arr.ndim and read(lay["descr"]) == id(arr.dtype)
              and read(lay["flags"], ctypes.c_int32) == arr.flags.num
              and all(ctypes.c_int64.from_address(dims + 8 * d).value == n for d, n in enumerate(arr.shape)))
        if not ok:
            return None
    return lay


@functools.lru_cache(maxsize=1)
def wrapper_layout() -> int | None:
    """Byte offset of the NumPy array in an exact :class:`~.ndarray.NDArray` (its ``_data``
    slot), or None when it does not read back: the fast entries then decline NDArrays."""
    arr = np.zeros(3, np.float32)
    nd = NDArray._wrap(arr, cpu())
    found = [off for off in range(object.__basicsize__, type(nd).__basicsize__, ctypes.sizeof(_VP))
             if ctypes.c_void_p.from_address(id(nd) + off).value == id(arr)]
    return found[0] if len(found) == 1 else None


@dataclass(frozen=True)
class FastPlan:
    """What the entry of one function checks: per argument rank, dims, dtype, output flag."""

    name: str
    dims: tuple[tuple[int | str, ...], ...]  # static size or symbol name
    dtypes: tuple[np.dtype, ...]
    outputs: tuple[bool, ...]

    @property
    def entry(self) -> str:
        return f"mlc_pyfn_{self.name}"

    @property
    def address_getter(self) -> str:
        """A function returning the entry's address (the engine's lookup gives packed wrappers only)."""
        return f"mlc_pyfn_addr_{self.name}"


def plan_of(sig: FuncSignature) -> FastPlan | None:
    """The plan of ``sig``; None when an argument has a non-identity layout or no NumPy dtype."""
    if any(spec.strides is not None or spec.elem not in MLIR_TO_NUMPY for spec in sig.args):
        return None
    dims = tuple(tuple(int(w) if w is not None else (s or f"?{k}.{d}")
                       for d, (w, s) in enumerate(zip(spec.shape, spec.symbols)))
                 for k, spec in enumerate(sig.args))
    return FastPlan(sig.name, dims, tuple(MLIR_TO_NUMPY[a.elem] for a in sig.args),
                    tuple(a.is_output for a in sig.args))


def fast_plans(signatures: dict[str, FuncSignature]) -> dict[str, FastPlan]:
    """The plan of every function that can have a fast entry (see :func:`plan_of`)."""
    plans = {name: plan_of(sig) for name, sig in signatures.items()}
    return {name: p for name, p in plans.items() if p is not None}


class _PyMethodDef(ctypes.Structure):
    _fields_ = [("ml_name", ctypes.c_char_p), ("ml_meth", _VP), ("ml_flags", ctypes.c_int),
                ("ml_doc", ctypes.c_char_p)]


_new_builtin = ctypes.pythonapi.PyCFunction_NewEx
_new_builtin.restype = ctypes.py_object
_new_builtin.argtypes = [_VP, ctypes.py_object, ctypes.py_object]


def entry_address(lookup: Callable[[str], int], plan: FastPlan) -> int:
    """Address of the entry of ``plan`` (through its packed address getter, found by ``lookup``:
    symbol name -> address of the packed ``_mlir_`` wrapper, 0 when absent)."""
    getter = lookup(plan.address_getter)  # _mlir_<getter>(void **args): args[0] = &result
    if not getter:
        return 0
    out = _VP()
    slot = (_VP * 1)(ctypes.addressof(out))
    ctypes.CFUNCTYPE(None, _VP)(getter)(ctypes.addressof(slot))
    return out.value or 0


def make_builtin(address: int, name: str, fallback: Callable[..., Any], keep_alive: tuple,
                 after: Callable[[], Any] | None = None) -> Any:
    """A builtin function calling the entry at ``address``; ``fallback`` gets every call it declines.

    ``after`` (if not None) runs after each compiled call the entry makes itself (an
    exception it raises propagates). ``keep_alive`` (the ExecutionEngine and what else the
    code needs) lives as long as the builtin.
    """
    method = _PyMethodDef(name.encode(), address, _METH_FASTCALL, None)
    # ``self`` of the builtin: the entry reads the fallback from slot 0, the hook from slot 1
    return _new_builtin(ctypes.addressof(method), (fallback, after, method, *keep_alive), None)
