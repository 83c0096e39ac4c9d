"""The ``kernel-results`` build stage: kernels kept as functions of their own write their
results into their output arguments and return nothing.

``mlc.graph.build`` keeps each tensor program a function of its own (``no_inline`` calls
from the lowered graph function), so that the vector stages and LLVM work one kernel at a
time. After bufferization, a kernel whose result One-Shot Bufferize proved equivalent to
its output argument returns nothing (``drop-equivalent-buffer-results``); any other kernel
(a result that is a reshaped view of the output, or a buffer of its own) still returns a
memref, and a returned memref makes the deallocation pipeline track its ownership at run
time (a helper function over ``memref<?xi1>`` flags, which this LLVM cannot lower).
Destination passing says the result belongs in the output argument, so this stage copies
it there when it is another buffer, drops the result and points the callers' uses of it at
the output argument they passed.

Before::

    func.func private @mean(%a: memref<1x8x4x4xf32>, %out: memref<1x8x1x1xf32>) -> memref<1x8x1x1xf32> {
      ...
      return %r : memref<1x8x1x1xf32>
    }
    %0 = call @mean(%x, %buf) : (...) -> memref<1x8x1x1xf32>

After::

    func.func private @mean(%a: memref<1x8x4x4xf32>, %out: memref<1x8x1x1xf32>) {
      ...
      memref.copy %r, %out : memref<1x8x1x1xf32> to memref<1x8x1x1xf32>
      return
    }
    call @mean(%x, %buf) : (...) -> ()       // uses of %0 now use %buf
"""

from __future__ import annotations

from mlir import ir
from mlir.dialects import func

from ..irutil import symbol_ops

__all__ = ["kernel_results_to_outputs"]

_KERNEL = "mlc.prim_func"


def kernel_results_to_outputs(module: ir.Module) -> None:
    """Rewrite the private kernels of ``module`` that return memrefs (call inside the context)."""
    funcs = symbol_ops(module, defined=True)
    rewritten: dict[str, int] = {}
    for name, fop in funcs.items():
        if _KERNEL not in fop.attributes or "sym_visibility" not in fop.attributes:
            continue
        ftype = ir.FunctionType(ir.TypeAttr(fop.attributes["function_type"]).value)
        results = list(ftype.results)
        inputs = list(ftype.inputs)
        if not results or len(results) > len(inputs) or not all(isinstance(t, ir.MemRefType) for t in results):
            continue
        outs = fop.regions[0].blocks[0].arguments[len(inputs) - len(results):]
        if [a.type for a in outs] != results:
            continue
        for block in fop.regions[0].blocks:
            ret = block.operations[len(block.operations) - 1]
            if ret.name != "func.return":
                continue
            with ir.InsertionPoint(ret), ret.location:
                for value, out in zip(ret.operands, outs):
                    if value != out:
                        ir.Operation.create("memref.copy", operands=[value, out])
                func.ReturnOp([])
            ret.erase()
        fop.attributes["function_type"] = ir.TypeAttr.get(ir.FunctionType.get(inputs, []))
        rewritten[name] = len(results)
    if not rewritten:
        return
    calls: list[ir.Operation] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        if op.name == "func.call" and ir.FlatSymbolRefAttr(op.attributes["callee"]).value in rewritten:
            calls.append(op)
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    for call in calls:
        n = rewritten[ir.FlatSymbolRefAttr(call.attributes["callee"]).value]
        args = list(call.operands)
        outs = args[len(args) - n:]
        with ir.InsertionPoint(call), call.location:
            new = func.CallOp([], ir.FlatSymbolRefAttr.get(ir.FlatSymbolRefAttr(call.attributes["callee"]).value),
                              args)
            for key in ("no_inline",):
                if key in call.attributes:
                    new.attributes[key] = call.attributes[key]
        for res, out in zip(call.results, outs):
            res.replace_all_uses_with(out)
        call.erase()
