"""Fast calls from Python: each compiled function as a JIT-compiled CPython builtin.

``rt["f"](a, b, c)`` through ctypes costs tens of microseconds (a descriptor per argument,
``arr.ctypes``, Python checks). Here, after the CPU pipeline has lowered a module to the
LLVM dialect, :func:`add_entries` appends for every public function ``@f`` whose
arguments all have the identity layout an LLVM function

    PyObject *mlc_pyfn_f(PyObject *self, PyObject *const *args, i64 nargs)   // METH_FASTCALL

that makes every check of the Python path (:meth:`CompiledFunction._prepare`) in compiled
code, once per signature: arity; each argument an exact ``numpy.ndarray`` whose dtype is
the builtin descriptor; rank; C-contiguous and aligned (outputs also writeable); static
dimensions; one value per shape symbol; no output overlapping another argument. Then it
calls the expanded memref ABI of ``@f`` with the arrays' data pointers (releasing the GIL
when the arguments span more than :data:`GIL_RELEASE_BYTES`), runs ``self[1]()`` unless
it is None (the module's after-call hook) and returns ``None``. On any mismatch it
returns ``self[0](*args)``: the Python path, which converts what it can
(NDArray, DLPack objects, non-contiguous inputs, subclasses) and raises the
:class:`ArgumentError` with the message users know. :func:`make_builtin` turns the
entry's address into a builtin function object (``PyCFunction_NewEx``), so a call costs a
builtin call and no ctypes marshalling.

The entries read NumPy's ``PyArrayObject_fields`` (public C API) at fixed offsets;
:func:`ndarray_layout` verifies them on real arrays once per process and, when they do
not read back, no entry is emitted (every call takes the Python path). The code embeds
addresses of this process (``numpy.ndarray``, dtype singletons, ``None``, C-API
functions): a built module belongs to the process that built it. The builtin's ``self``
tuple holds the fallback, the hook, its ``PyMethodDef``, the ``ExecutionEngine`` and the
RuntimeModule (with the callbacks compiled code calls), so the code outlives every
builtin made from it. Entries keep no state: threads may call one builtin
concurrently.
"""

from __future__ import annotations

import ctypes
import functools
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from mlir import ir

from ..runtime.memref import MLIR_TO_NUMPY
from .abi import FuncSignature

__all__ = ["FastPlan", "GIL_RELEASE_BYTES", "add_entries", "entry_address", "fast_plans", "make_builtin",
           "ndarray_layout", "plan_of"]

#: arguments spanning more bytes than this run with the GIL released
GIL_RELEASE_BYTES = 1 << 16

_C_CONTIGUOUS, _ALIGNED, _WRITEABLE = 0x0001, 0x0100, 0x0400  # numpy/ndarraytypes.h
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


def _sym(name: str) -> str:
    """A symbol reference that parses whatever characters the name has."""
    return "@" + json.dumps(name)


def _capi(name: str) -> int:
    return ctypes.cast(getattr(ctypes.pythonapi, name), _VP).value


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

    def callee_types(self) -> list[str]:
        """Parameter types of ``@name`` after the memref ABI is expanded by the LLVM lowering."""
        return sum((["!llvm.ptr", "!llvm.ptr", "i64"] + ["i64"] * (2 * len(d)) for d in self.dims), [])


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


class _Emitter:
    """LLVM-dialect text of one function body: SSA names, blocks, loads at byte offsets."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.count = 0

    def __call__(self, line: str) -> None:
        self.lines.append("  " + line)

    def value(self, rhs: str) -> str:
        self.count += 1
        self(f"%v{self.count} = {rhs}")
        return f"%v{self.count}"

    def label(self, name: str) -> None:
        self.lines.append(f"^{name}:")

    def const(self, val: int, t: str = "i64") -> str:
        return self.value(f"llvm.mlir.constant({val} : {t}) : {t}")

    def load(self, base: str, off: int | str, t: str, elem: str = "i8") -> str:
        p = self.value(f"llvm.getelementptr {base}[{off}] : (!llvm.ptr) -> !llvm.ptr, {elem}")
        return self.value(f"llvm.load {p} : !llvm.ptr -> {t}")

    def op(self, name: str, a: str, b: str, t: str = "i64") -> str:
        return self.value(f"llvm.{name} {a}, {b} : {t}")

    def cmp(self, pred: str, a: str, b: str, t: str = "i64") -> str:
        return self.value(f'llvm.icmp "{pred}" {a}, {b} : {t}')

    def reduce(self, name: str, conds: list[str]) -> str:
        acc = conds[0]
        for c in conds[1:]:
            acc = self.op(name, acc, c, "i1")
        return acc

    def pointer(self, addr: int) -> str:
        return self.value(f"llvm.inttoptr {self.const(addr)} : i64 to !llvm.ptr")

    def capi_call(self, name: str, args: list[str], params: list[str], result: str | None) -> str | None:
        fn = self.pointer(_capi(name))
        sig = f"!llvm.ptr, ({', '.join(params)}) -> {result or '()'}"
        text = f"llvm.call {fn}({', '.join(args)}) : {sig}"
        if result is None:
            self(text)
            return None
        return self.value(text)


def _check_argument(e: _Emitter, k: int, obj: str, plan: FastPlan, lay: dict[str, int],
                    symbols: dict[str, str]) -> tuple[str, list[str]]:
    """Type, dtype, rank, flags and dims of argument ``k``; returns (data pointer, sizes)."""
    ob_type = e.load(obj, lay["ob_type"], "i64")
    e(f"llvm.cond_br {e.cmp('eq', ob_type, e.const(id(np.ndarray)))}, ^t{k}, ^fallback")
    e.label(f"t{k}")  # an exact ndarray: its fields can be read
    rank = len(plan.dims[k])
    data = e.load(obj, lay["data"], "!llvm.ptr")
    mask = _C_CONTIGUOUS | _ALIGNED | (_WRITEABLE if plan.outputs[k] else 0)
    flags = e.op("and", e.load(obj, lay["flags"], "i32"), e.const(mask, "i32"), "i32")
    conds = [e.cmp("eq", e.load(obj, lay["nd"], "i32"), e.const(rank, "i32"), "i32"),
             e.cmp("eq", e.load(obj, lay["descr"], "i64"), e.const(id(plan.dtypes[k]))),
             e.cmp("eq", flags, e.const(mask, "i32"), "i32")]
    e(f"llvm.cond_br {e.reduce('and', conds)}, ^r{k}, ^fallback")
    e.label(f"r{k}")  # rank known: the dims can be read
    sizes, conds = [], []
    dims_ptr = e.load(obj, lay["dims"], "!llvm.ptr") if rank else None
    for j, want in enumerate(plan.dims[k]):
        got = e.load(dims_ptr, j, "i64", "i64")
        sizes.append(got)
        if isinstance(want, int):
            conds.append(e.cmp("eq", got, e.const(want)))
        elif want in symbols:
            conds.append(e.cmp("eq", got, symbols[want]))
        elif not want.startswith("?"):
            symbols[want] = got
    if conds:
        e(f"llvm.cond_br {e.reduce('and', conds)}, ^d{k}, ^fallback")
    else:
        e(f"llvm.br ^d{k}")
    e.label(f"d{k}")
    return data, sizes


def _byte_ranges(e: _Emitter, plan: FastPlan, data: list[str], sizes: list[list[str]]) -> tuple[list, list]:
    lo, hi = [], []
    for k, dt in enumerate(plan.dtypes):
        nbytes = e.const(dt.itemsize)
        for s in sizes[k]:
            nbytes = e.op("mul", nbytes, s)
        start = e.value(f"llvm.ptrtoint {data[k]} : !llvm.ptr to i64")
        lo.append(start)
        hi.append(e.op("add", start, nbytes))
    return lo, hi


def _call_kernel(e: _Emitter, plan: FastPlan, data: list[str], sizes: list[list[str]]) -> None:
    zero, one = e.const(0), e.const(1)
    args = []
    for k, row in enumerate(sizes):
        strides = [one] * len(row)
        for d in range(len(row) - 2, -1, -1):
            strides[d] = e.op("mul", strides[d + 1], row[d + 1])
        args += [data[k], data[k], zero, *row, *strides]
    e(f"llvm.call {_sym(plan.name)}({', '.join(args)}) : ({', '.join(plan.callee_types())}) -> ()")


def _run(e: _Emitter, plan: FastPlan, data: list[str], sizes: list[list[str]], lo: list[str],
         hi: list[str]) -> None:
    """The kernel call (without the GIL above GIL_RELEASE_BYTES), the hook ``self[1]``, return None."""
    total = e.const(0)
    for k in range(len(data)):
        total = e.op("add", total, e.op("sub", hi[k], lo[k]))
    e(f"llvm.cond_br {e.cmp('ugt', total, e.const(GIL_RELEASE_BYTES))}, ^nogil, ^gil")
    e.label("gil")
    _call_kernel(e, plan, data, sizes)
    e("llvm.br ^done")
    e.label("nogil")
    state = e.capi_call("PyEval_SaveThread", [], [], "!llvm.ptr")
    _call_kernel(e, plan, data, sizes)
    e.capi_call("PyEval_RestoreThread", [state], ["!llvm.ptr"], None)
    e("llvm.br ^done")
    e.label("done")  # then self[1]() unless it is None: the module's after-call hook
    none = e.pointer(id(None))
    after = e.load("%self", tuple.__basicsize__ + 8, "!llvm.ptr")
    e(f"llvm.cond_br {e.cmp('eq', after, none, '!llvm.ptr')}, ^ok, ^after")
    e.label("after")
    null = e.value("llvm.mlir.zero : !llvm.ptr")
    res = e.capi_call("PyObject_VectorcallDict", [after, null, e.const(0), null],
                      ["!llvm.ptr", "!llvm.ptr", "i64", "!llvm.ptr"], "!llvm.ptr")
    e(f"llvm.cond_br {e.cmp('eq', res, null, '!llvm.ptr')}, ^raised, ^dropped")
    e.label("raised")  # the hook raised: return NULL with its exception set
    e(f"llvm.return {null} : !llvm.ptr")
    e.label("dropped")
    e.capi_call("Py_DecRef", [res], ["!llvm.ptr"], None)
    e("llvm.br ^ok")
    e.label("ok")
    e.capi_call("Py_IncRef", [none], ["!llvm.ptr"], None)
    e(f"llvm.return {none} : !llvm.ptr")


def entry_text(plan: FastPlan, lay: dict[str, int]) -> str:
    """LLVM-dialect text of ``mlc_pyfn_<name>`` (see the module docstring)."""
    e = _Emitter()
    n = len(plan.dims)
    e(f"llvm.cond_br {e.cmp('eq', '%nargs', e.const(n))}, ^args, ^fallback")
    e.label("args")
    symbols: dict[str, str] = {}
    data, sizes = [], []
    for k in range(n):
        obj = e.load("%args", k, "!llvm.ptr", "!llvm.ptr")
        ptr, row = _check_argument(e, k, obj, plan, lay, symbols)
        data.append(ptr)
        sizes.append(row)
    lo, hi = _byte_ranges(e, plan, data, sizes)
    overlaps = [e.op("and", e.cmp("ult", lo[o], hi[k]), e.cmp("ult", lo[k], hi[o]), "i1")
                for o in range(n) if plan.outputs[o] for k in range(n) if k != o]
    e(f"llvm.cond_br {e.reduce('or', overlaps)}, ^fallback, ^checked" if overlaps else "llvm.br ^checked")
    e.label("checked")
    _run(e, plan, data, sizes, lo, hi)
    e.label("fallback")  # return self[0](*args): the Python path with its conversions and errors
    slow = e.load("%self", tuple.__basicsize__, "!llvm.ptr")
    null = e.value("llvm.mlir.zero : !llvm.ptr")
    res = e.capi_call("PyObject_VectorcallDict", [slow, "%args", "%nargs", null],
                      ["!llvm.ptr", "!llvm.ptr", "i64", "!llvm.ptr"], "!llvm.ptr")
    e(f"llvm.return {res} : !llvm.ptr")
    head = f"llvm.func {_sym(plan.entry)}(%self: !llvm.ptr, %args: !llvm.ptr, %nargs: i64) -> !llvm.ptr {{"
    return "\n".join([head, *e.lines, "}"])


def add_entries(module: ir.Module, plans: dict[str, FastPlan]) -> dict[str, FastPlan]:
    """Append the entry of every plan to ``module`` (lowered to the LLVM dialect, inside its context).

    Returns the plans that got an entry: none when :func:`ndarray_layout` fails.
    """
    lay = ndarray_layout()
    if lay is None or not plans:
        return {}
    decls = [f"llvm.func {_sym(p.name)}({', '.join(p.callee_types())})" for p in plans.values()]
    bodies = [entry_text(p, lay) for p in plans.values()]
    bodies += [f"llvm.func {_sym(p.address_getter)}() -> !llvm.ptr {{\n  %0 = llvm.mlir.addressof {_sym(p.entry)} : "
               "!llvm.ptr\n  llvm.return %0 : !llvm.ptr\n}" for p in plans.values()]
    snippet = ir.Module.parse("\n".join(decls + bodies))
    for op in list(snippet.body.operations):
        if op.operation.regions[0].blocks:  # the entries; the declarations stay behind
            op.operation.detach_from_parent()
            module.body.append(op.operation)
    return dict(plans)


class _PyMethodDef(ctypes.Structure):
    _fields_ = [("ml_name", ctypes.c_char_p), ("ml_meth", _VP), ("ml_flags", ctypes.c_int),
                ("ml_doc", ctypes.c_char_p)]


_new_builtin = ctypes.pythonapi.PyCFunction_NewEx
_new_builtin.restype = ctypes.py_object
_new_builtin.argtypes = [_VP, ctypes.py_object, ctypes.py_object]


def entry_address(engine: Any, plan: FastPlan) -> int:
    """Address of the entry of ``plan`` in ``engine`` (through its packed address getter)."""
    getter = engine.raw_lookup(plan.address_getter)  # _mlir_<getter>(void **args): args[0] = &result
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
