"""Fast calls from Python: each compiled function as a JIT-compiled CPython builtin.

``rt["f"](a, b, c)`` through ctypes costs tens of microseconds (a descriptor per argument,
``arr.ctypes``, Python checks). Here, after the CPU pipeline has lowered a module to the
LLVM dialect, :func:`add_entries` appends for every public function ``@f`` whose
arguments all have the identity layout an LLVM function

    PyObject *mlc_pyfn_f(PyObject *self, PyObject *const *args, i64 nargs)   // METH_FASTCALL

that makes every check of the Python path (:meth:`CompiledFunction._prepare`) in compiled
code, once per signature: arity; each argument an exact ``numpy.ndarray`` whose dtype is
the builtin descriptor (an exact ``mlc.runtime.NDArray`` counts as the array it owns, read
from its slot); rank; C-contiguous and aligned (outputs also writeable); static
dimensions; one value per shape symbol; no output overlapping another argument. Then it
calls the expanded memref ABI of ``@f`` with the arrays' data pointers (releasing the GIL
when the arguments span more than :data:`GIL_RELEASE_BYTES`), runs ``self[1]()`` unless
it is None (the module's after-call hook) and returns ``None``. On any mismatch it
returns ``self[0](*args)``: the Python path, which converts what it can
(DLPack objects, non-contiguous inputs, subclasses) and raises the
:class:`ArgumentError` with the message users know. :func:`make_builtin` turns the
entry's address into a builtin function object (``PyCFunction_NewEx``), so a call costs a
builtin call and no ctypes marshalling.

The entries are built with the ``llvm`` dialect's builders (``mlir.dialects.llvm``) at the
end of the lowered module. For ``@add`` on three ``memref<10xf32>`` (``mlc-opt
--mlc-lower-to-llvm``; twin lit test ``tests/lit/compiler/fastcall.mlir``)::

    llvm.func @mlc_pyfn_add(%self: !llvm.ptr, %args: !llvm.ptr, %nargs: i64) -> !llvm.ptr {
      %c3 = llvm.mlir.constant(3 : i64) : i64
      %arity = llvm.icmp "eq" %nargs, %c3 : i64
      llvm.cond_br %arity, ^bb1, ^fallback
    ^bb1:       // per argument: an NDArray's slot read through llvm.select (no branch), then
                // ob_type == numpy.ndarray, then nd, descr, flags, then dims == 10
      ...
      llvm.cond_br %overlap, ^fallback, ^checked
    ^checked:   // above GIL_RELEASE_BYTES, PyEval_SaveThread/RestoreThread around the call
      llvm.call @add(%a, %a, %c0, %c10, %c1, %b, ...) : (...) -> ()
      ...       // self[1]() unless it is None; return None
    ^fallback:  // self[0](*args)
      %r = llvm.call %vectorcall(%slow, %args, %nargs, %null) : !llvm.ptr, (...) -> !llvm.ptr
      llvm.return %r : !llvm.ptr
    }
    llvm.func @mlc_pyfn_addr_add() -> !llvm.ptr   // returns llvm.mlir.addressof @mlc_pyfn_add

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

import numpy as np
from mlir import ir
from mlir.dialects import llvm

from ..runtime.fastcall import FastPlan, ndarray_layout, wrapper_layout
from ..runtime.ndarray import NDArray

__all__ = ["GIL_RELEASE_BYTES", "add_entries", "build_address_getter", "build_entry"]

#: arguments spanning more bytes than this run with the GIL released
GIL_RELEASE_BYTES = 1 << 16

_C_CONTIGUOUS, _ALIGNED, _WRITEABLE = 0x0001, 0x0100, 0x0400  # numpy/ndarraytypes.h
_VP = ctypes.c_void_p


def _capi(name: str) -> int:
    return ctypes.cast(getattr(ctypes.pythonapi, name), _VP).value


class _Emitter:
    """Builds one ``llvm.func`` body with the ``llvm`` dialect's builders: blocks in creation
    order, loads at byte offsets, integer ops, C-API calls through their addresses."""

    def __init__(self, func: llvm.LLVMFuncOp, arg_types: list[ir.Type]) -> None:
        self.ptr = llvm.PointerType.get()
        self.i8, self.i32, self.i64 = (ir.IntegerType.get_signless(w) for w in (8, 32, 64))
        entry = func.body.blocks.append(*arg_types)
        #: the last block: every other block is created before it (:meth:`block`)
        self.fallback = func.body.blocks.append()
        self.args = list(entry.arguments)
        self.ip = ir.InsertionPoint(entry)

    def block(self) -> ir.Block:
        """A new block, after every block made so far and before the fallback."""
        return self.fallback.create_before()

    def at(self, block: ir.Block) -> None:
        """Emit the next ops at the end of ``block``."""
        self.ip = ir.InsertionPoint(block)

    def const(self, val: int, t: ir.Type | None = None) -> ir.Value:
        t = t or self.i64
        return llvm.ConstantOp(t, ir.IntegerAttr.get(t, val), ip=self.ip).result

    def load(self, base: ir.Value, off: int, t: ir.Type, elem: ir.Type | None = None) -> ir.Value:
        """``t`` at ``base + off`` elements of ``elem`` (default: bytes)."""
        p = llvm.GEPOp(self.ptr, base, [], [off], ir.TypeAttr.get(elem or self.i8), None, ip=self.ip).result
        return llvm.LoadOp(t, p, ip=self.ip).result

    def op(self, name: str, a: ir.Value, b: ir.Value) -> ir.Value:
        """``llvm.<name> a, b`` (``and``, ``or``; ``add``, ``sub``, ``mul`` without overflow flags)."""
        if name in ("add", "sub", "mul"):
            return _WRAPPING[name](a, b, None, ip=self.ip).result
        return (llvm.AndOp if name == "and" else llvm.OrOp)(a, b, ip=self.ip).result

    def cmp(self, pred: str, a: ir.Value, b: ir.Value) -> ir.Value:
        return llvm.ICmpOp(getattr(llvm.ICmpPredicate, pred), a, b, ip=self.ip).result

    def reduce(self, name: str, conds: list[ir.Value]) -> ir.Value:
        acc = conds[0]
        for c in conds[1:]:
            acc = self.op(name, acc, c)
        return acc

    def pointer(self, addr: int) -> ir.Value:
        return llvm.IntToPtrOp(self.ptr, self.const(addr), ip=self.ip).result

    def address(self, ptr: ir.Value) -> ir.Value:
        return llvm.PtrToIntOp(self.i64, ptr, ip=self.ip).result

    def null(self) -> ir.Value:
        return llvm.ZeroOp(self.ptr, ip=self.ip).result

    def call(self, callee: str, args: list[ir.Value]) -> None:
        """A direct call of ``@callee`` returning nothing."""
        llvm.CallOp(None, args, [], [], callee=ir.FlatSymbolRefAttr.get(callee), ip=self.ip)

    def capi_call(self, name: str, args: list[ir.Value], result: ir.Type | None) -> ir.Value | None:
        """An indirect call of the C-API function ``name`` at its address in this process."""
        fn = self.pointer(_capi(name))
        call = llvm.CallOp(result, [fn, *args], [], [], ip=self.ip)
        return call.result if result is not None else None

    def cond_br(self, cond: ir.Value, true: ir.Block, false: ir.Block) -> None:
        llvm.CondBrOp(cond, [], [], true, false, ip=self.ip)

    def br(self, dest: ir.Block) -> None:
        llvm.BrOp([], dest, ip=self.ip)

    def ret(self, value: ir.Value) -> None:
        llvm.ReturnOp(arg=value, ip=self.ip)


#: builders of the wrapping integer ops (their overflow flags, a property, stay ``none``)
_WRAPPING = {"add": llvm.AddOp, "sub": llvm.SubOp, "mul": llvm.MulOp}


def _unwrapped(e: _Emitter, k: int, obj: ir.Value, lay: dict[str, int]) -> ir.Value:
    """Argument ``k``, or for an exact ``mlc.runtime.NDArray`` the NumPy array in its slot.

    Without branches: the address read is the slot's for an NDArray, else ``&args[k]``
    (``obj`` itself); an empty slot gives ``obj`` back (then declined as not an ndarray)."""
    off = wrapper_layout()
    if off is None:
        return obj
    is_wrapper = e.cmp("eq", e.load(obj, lay["ob_type"], e.i64), e.const(id(NDArray)))
    slot = llvm.GEPOp(e.ptr, obj, [], [off], ir.TypeAttr.get(e.i8), None, ip=e.ip).result
    own = llvm.GEPOp(e.ptr, e.args[1], [], [k], ir.TypeAttr.get(e.ptr), None, ip=e.ip).result
    inner = llvm.LoadOp(e.ptr, llvm.SelectOp(is_wrapper, slot, own, ip=e.ip).result, ip=e.ip).result
    return llvm.SelectOp(e.cmp("eq", inner, e.null()), obj, inner, ip=e.ip).result


def _check_argument(e: _Emitter, k: int, obj: ir.Value, plan: FastPlan, lay: dict[str, int],
                    symbols: dict[str, ir.Value]) -> tuple[ir.Value, list[ir.Value]]:
    """Type, dtype, rank, flags and dims of argument ``k``; returns (data pointer, sizes)."""
    obj = _unwrapped(e, k, obj, lay)
    ob_type = e.load(obj, lay["ob_type"], e.i64)
    exact = e.block()  # an exact ndarray: its fields can be read
    e.cond_br(e.cmp("eq", ob_type, e.const(id(np.ndarray))), exact, e.fallback)
    e.at(exact)
    rank = len(plan.dims[k])
    data = e.load(obj, lay["data"], e.ptr)
    mask = _C_CONTIGUOUS | _ALIGNED | (_WRITEABLE if plan.outputs[k] else 0)
    flags = e.op("and", e.load(obj, lay["flags"], e.i32), e.const(mask, e.i32))
    conds = [e.cmp("eq", e.load(obj, lay["nd"], e.i32), e.const(rank, e.i32)),
             e.cmp("eq", e.load(obj, lay["descr"], e.i64), e.const(id(plan.dtypes[k]))),
             e.cmp("eq", flags, e.const(mask, e.i32))]
    ranked = e.block()  # rank known: the dims can be read
    e.cond_br(e.reduce("and", conds), ranked, e.fallback)
    e.at(ranked)
    sizes, conds = [], []
    dims_ptr = e.load(obj, lay["dims"], e.ptr) if rank else None
    for j, want in enumerate(plan.dims[k]):
        got = e.load(dims_ptr, j, e.i64, e.i64)
        sizes.append(got)
        if isinstance(want, int):
            conds.append(e.cmp("eq", got, e.const(want)))
        elif want in symbols:
            conds.append(e.cmp("eq", got, symbols[want]))
        elif not want.startswith("?"):
            symbols[want] = got
    checked = e.block()
    if conds:
        e.cond_br(e.reduce("and", conds), checked, e.fallback)
    else:
        e.br(checked)
    e.at(checked)
    return data, sizes


def _byte_ranges(e: _Emitter, plan: FastPlan, data: list[ir.Value],
                 sizes: list[list[ir.Value]]) -> tuple[list[ir.Value], list[ir.Value]]:
    lo, hi = [], []
    for k, dt in enumerate(plan.dtypes):
        nbytes = e.const(dt.itemsize)
        for s in sizes[k]:
            nbytes = e.op("mul", nbytes, s)
        start = e.address(data[k])
        lo.append(start)
        hi.append(e.op("add", start, nbytes))
    return lo, hi


def _call_kernel(e: _Emitter, plan: FastPlan, data: list[ir.Value], sizes: list[list[ir.Value]]) -> None:
    """``@name`` with the memref ABI expanded: per argument data twice, offset 0, sizes, strides."""
    zero, one = e.const(0), e.const(1)
    args = []
    for k, row in enumerate(sizes):
        strides = [one] * len(row)
        for d in range(len(row) - 2, -1, -1):
            strides[d] = e.op("mul", strides[d + 1], row[d + 1])
        args += [data[k], data[k], zero, *row, *strides]
    e.call(plan.name, args)


def _run(e: _Emitter, plan: FastPlan, data: list[ir.Value], sizes: list[list[ir.Value]], lo: list[ir.Value],
         hi: list[ir.Value]) -> None:
    """The kernel call (without the GIL above GIL_RELEASE_BYTES), the hook ``self[1]``, return None."""
    total = e.const(0)
    for k in range(len(data)):
        total = e.op("add", total, e.op("sub", hi[k], lo[k]))
    gil, nogil, done = e.block(), e.block(), e.block()
    e.cond_br(e.cmp("ugt", total, e.const(GIL_RELEASE_BYTES)), nogil, gil)
    e.at(gil)
    _call_kernel(e, plan, data, sizes)
    e.br(done)
    e.at(nogil)
    state = e.capi_call("PyEval_SaveThread", [], e.ptr)
    _call_kernel(e, plan, data, sizes)
    e.capi_call("PyEval_RestoreThread", [state], None)
    e.br(done)
    e.at(done)  # then self[1]() unless it is None: the module's after-call hook
    none = e.pointer(id(None))
    after = e.load(e.args[0], tuple.__basicsize__ + 8, e.ptr)
    hook, raised, dropped, ok = e.block(), e.block(), e.block(), e.block()
    e.cond_br(e.cmp("eq", after, none), ok, hook)
    e.at(hook)
    null = e.null()
    res = e.capi_call("PyObject_VectorcallDict", [after, null, e.const(0), null], e.ptr)
    e.cond_br(e.cmp("eq", res, null), raised, dropped)
    e.at(raised)  # the hook raised: return NULL with its exception set
    e.ret(null)
    e.at(dropped)
    e.capi_call("Py_DecRef", [res], None)
    e.br(ok)
    e.at(ok)
    e.capi_call("Py_IncRef", [none], None)
    e.ret(none)


def _llvm_func(name: str, result: str, params: str) -> llvm.LLVMFuncOp:
    """Emit an empty ``llvm.func @name`` (with the attributes the parser gives one)."""
    # the bindings have no builder for !llvm.func types: this type (only) is parsed
    ftype = ir.Type.parse(f"!llvm.func<{result} ({params})>")
    return llvm.LLVMFuncOp(name, ir.TypeAttr.get(ftype), unnamed_addr=llvm.UnnamedAddr.None_)


def build_entry(plan: FastPlan, lay: dict[str, int]) -> llvm.LLVMFuncOp:
    """Emit ``llvm.func @mlc_pyfn_<name>`` at the current insertion point (see the module docstring)."""
    func = _llvm_func(plan.entry, "ptr", "ptr, ptr, i64")
    e = _Emitter(func, [llvm.PointerType.get(), llvm.PointerType.get(), ir.IntegerType.get_signless(64)])
    self_, args, nargs = e.args
    n = len(plan.dims)
    have_args = e.block()
    e.cond_br(e.cmp("eq", nargs, e.const(n)), have_args, e.fallback)
    e.at(have_args)
    symbols: dict[str, ir.Value] = {}
    data, sizes = [], []
    for k in range(n):
        obj = e.load(args, k, e.ptr, e.ptr)
        ptr, row = _check_argument(e, k, obj, plan, lay, symbols)
        data.append(ptr)
        sizes.append(row)
    lo, hi = _byte_ranges(e, plan, data, sizes)
    overlaps = [e.op("and", e.cmp("ult", lo[o], hi[k]), e.cmp("ult", lo[k], hi[o]))
                for o in range(n) if plan.outputs[o] for k in range(n) if k != o]
    checked = e.block()
    if overlaps:
        e.cond_br(e.reduce("or", overlaps), e.fallback, checked)
    else:
        e.br(checked)
    e.at(checked)
    _run(e, plan, data, sizes, lo, hi)
    e.at(e.fallback)  # return self[0](*args): the Python path with its conversions and errors
    slow = e.load(self_, tuple.__basicsize__, e.ptr)
    null = e.null()
    e.ret(e.capi_call("PyObject_VectorcallDict", [slow, args, nargs, null], e.ptr))
    return func


def build_address_getter(plan: FastPlan) -> llvm.LLVMFuncOp:
    """Emit ``llvm.func @mlc_pyfn_addr_<name>() -> !llvm.ptr`` returning the entry's address."""
    func = _llvm_func(plan.address_getter, "ptr", "")
    with ir.InsertionPoint(func.body.blocks.append()):
        llvm.ReturnOp(arg=llvm.AddressOfOp(llvm.PointerType.get(), plan.entry).result)
    return func


def add_entries(module: ir.Module, plans: dict[str, FastPlan]) -> dict[str, FastPlan]:
    """Append the entry of every plan to ``module`` (lowered to the LLVM dialect, inside its context),
    then their address getters.

    Returns the plans that got an entry: none when :func:`ndarray_layout` fails.
    """
    lay = ndarray_layout()
    if lay is None or not plans:
        return {}
    with ir.InsertionPoint(module.body), ir.Location.unknown():
        for p in plans.values():
            build_entry(p, lay)
        for p in plans.values():
            build_address_getter(p)
    return dict(plans)
