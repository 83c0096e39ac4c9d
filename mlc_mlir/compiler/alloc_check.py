"""Checked heap allocation in compiled code: a failed ``malloc`` raises, never writes through NULL.

An intermediate buffer too large for the machine (a 100000 x 100000 te intermediate, or a
symbolic one whose size is only known at call time) makes ``malloc`` return NULL, and
code lowered by upstream MLIR would write through that pointer (a segfault that kills
the interpreter). The build stage :func:`check_allocations` runs on the LLVM dialect
(after the to-LLVM stage) and rewrites each ``llvm.call @malloc`` / ``@aligned_alloc``
at the top level of a function body as::

    %p = llvm.call @malloc(%size)
    %null = llvm.mlir.zero : !llvm.ptr
    %failed = llvm.icmp "eq" %p, %null
    llvm.cond_br %failed, ^fail, ^rest
  ^fail:                                   // remember the size, leave the function
    llvm.store %size, @__mlc_alloc_failed_bytes
    llvm.return                            // (poison results if it has any)
  ^rest:
    ... the rest of the original block ...

After each call from Python, :func:`alloc_failure_check`'s hook reads
``__mlc_alloc_failed_bytes`` (its address comes from ``__mlc_alloc_flag_address()``), resets it and raises :class:`AllocationError` (an
``mlc.RuntimeError_`` and a ``MemoryError``) naming the size. Buffers allocated before
the failure are not freed (a leak on an error path); outputs are left partly written.
Allocations inside nested regions (OpenMP parallel bodies) are not checked: a return
cannot leave them. The flag is process-wide: calls running in several threads at once
may report a failure on the wrong call.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable

from mlir import ir
from mlir.dialects import llvm
from mlir.execution_engine import ExecutionEngine

from ..irutil import symbol_ops
from ..errors import AllocationError

__all__ = ["AllocationError", "check_allocations", "alloc_failure_check", "FLAG_SYMBOL", "GETTER_SYMBOL"]

FLAG_SYMBOL = "__mlc_alloc_failed_bytes"
GETTER_SYMBOL = "__mlc_alloc_flag_address"
_ALLOCATORS = ("malloc", "aligned_alloc")


def _allocation_calls(module: ir.Module) -> list[ir.Operation]:
    calls = []
    for fn in symbol_ops(module, "llvm.func", defined=True).values():
        for block in fn.regions[0].blocks:
            for op in block.operations:
                op = op.operation
                if op.name == "llvm.call" and "callee" in op.attributes and \
                        ir.FlatSymbolRefAttr(op.attributes["callee"]).value in _ALLOCATORS:
                    calls.append(op)
    return calls


def _split_after(op: ir.Operation) -> ir.Block:
    """Move the operations after ``op`` into a new block right after ``op``'s block."""
    block = op.block
    rest = block.create_after()
    following, seen = [], False
    for o in block.operations:
        if seen:
            following.append(o.operation)
        seen = seen or o.operation == op
    with ir.InsertionPoint(rest):
        anchor = llvm.UnreachableOp()
    for o in following:
        o.move_before(anchor.operation)
    anchor.operation.erase()
    return rest


def _result_type(fn: ir.Operation) -> ir.Type | None:
    for block in fn.regions[0].blocks:
        for op in block.operations:
            if op.operation.name == "llvm.return":
                return op.operation.operands[0].type if len(op.operation.operands) else None
    return None


def _guard(call: ir.Operation, fn: ir.Operation) -> None:
    ptr = call.results[0]
    size = call.operands[-1]
    rest = _split_after(call)
    fail = rest.create_before()
    with ir.Location.unknown(), ir.InsertionPoint(call.block):
        null = llvm.ZeroOp(ptr.type).result
        failed = llvm.ICmpOp(llvm.ICmpPredicate.eq, ptr, null).result
        llvm.CondBrOp(failed, [], [], fail, rest)
    with ir.Location.unknown(), ir.InsertionPoint(fail):
        flag = llvm.AddressOfOp(ir.Type.parse("!llvm.ptr"), FLAG_SYMBOL).result
        llvm.StoreOp(size, flag)
        result = _result_type(fn)
        llvm.ReturnOp(arg=None if result is None else llvm.PoisonOp(result).result)


def check_allocations(module: ir.Module) -> None:
    """Build stage: guard every top-level ``malloc`` of compiled code (see the module doc)."""
    calls = _allocation_calls(module)
    if not calls:
        return
    with ir.Location.unknown(), ir.InsertionPoint.at_block_begin(module.body):
        i64, ptr = ir.IntegerType.get_signless(64), ir.Type.parse("!llvm.ptr")
        llvm.GlobalOp(i64, FLAG_SYMBOL, ir.Attribute.parse("#llvm.linkage<internal>"),
                      value=ir.IntegerAttr.get(i64, 0))
        # the JIT's lookup finds functions only: a getter gives Python the flag's address
        getter = llvm.LLVMFuncOp(GETTER_SYMBOL, ir.TypeAttr.get(ir.Type.parse("!llvm.func<ptr ()>")))
    with ir.Location.unknown(), ir.InsertionPoint(getter.body.blocks.append()):
        llvm.ReturnOp(arg=llvm.AddressOfOp(ptr, FLAG_SYMBOL).result)
    for call in calls:
        fn = call.parent
        _guard(call, fn)


def alloc_failure_check(engine: ExecutionEngine,
                        after_call: Callable[[], None] | None = None) -> Callable[[], None] | None:
    """The hook run after each call of a compiled function: raise :class:`AllocationError` if
    an allocation failed during the call (then ``after_call``, the caller's own hook)."""
    getter = engine.raw_lookup(GETTER_SYMBOL)
    if not getter:
        return after_call
    # raw_lookup gives the packed wrapper: void(void **args), the result slot last
    address = ctypes.c_void_p()
    slots = (ctypes.c_void_p * 1)(ctypes.cast(ctypes.pointer(address), ctypes.c_void_p))
    ctypes.CFUNCTYPE(None, ctypes.c_void_p)(getter)(ctypes.addressof(slots))
    flag = ctypes.c_int64.from_address(address.value)

    def check() -> None:
        failed, flag.value = flag.value, 0
        if after_call is not None:
            after_call()
        if failed:
            raise AllocationError(f"compiled code could not allocate an intermediate buffer of {failed} bytes "
                                  f"({failed / 2**30:.1f} GiB): out of memory")

    return check
