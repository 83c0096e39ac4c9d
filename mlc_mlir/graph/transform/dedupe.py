"""``DedupeKernels``: tensor programs that are identical up to their name become one.

A model that repeats a layer shape (ResNet-18's basic blocks, a transformer's layers)
legalizes to one tensor program per op call, many of them the same code under another
name (``conv2d``, ``conv2d1``, ``conv2d2``...). Every later stage (the default schedules,
code generation) costs time per function, so the build keeps the first of each group and
points the ``mlc.call_tir`` ops of the others at it.

Before::

    func.func @relu(%a: tensor<1x64xf32>, %out: tensor<1x64xf32>) -> tensor<1x64xf32> {...}
    func.func @relu1(%a: tensor<1x64xf32>, %out: tensor<1x64xf32>) -> tensor<1x64xf32> {...}
    %0 = "mlc.call_tir"(%x) {callee = @relu, ...}
    %1 = "mlc.call_tir"(%0) {callee = @relu1, ...}

After: ``@relu1`` is gone and both calls name ``@relu``.

Two functions are the same when their printed forms are equal but for the function's
name and its arguments' names (``mlc.name``); locations are not printed, so where a
kernel came from does not matter.
"""

from __future__ import annotations

import logging
import re

from mlir import ir

from ...context import mlc_context
from ...ir import Module
from ...irutil import sym_name
from ..ir.analysis import graph_functions, walk_ops

__all__ = ["dedupe_kernels", "kernel_key"]

log = logging.getLogger("mlc_mlir.graph.dedupe")

_PRIM_FUNC = "mlc.prim_func"
#: the argument names a kernel was made with (``{mlc.name = "lv1"}``): not part of its code
_ARG_NAME = re.compile(r' ?\{mlc\.name = "[^"]*"\}')


def kernel_key(fop: ir.Operation) -> str:
    """The text of tensor program ``fop`` without its name (equal keys: the same kernel)."""
    name = sym_name(fop)
    text = fop.get_asm(print_generic_op_form=False, enable_debug_info=False)
    return _ARG_NAME.sub("", text.replace(f"@{name}(", "@_(", 1))


def dedupe_kernels(mod: Module) -> Module:
    """Merge the tensor programs of ``mod`` that are identical up to their name (in place).

    Only private or public tensor programs (``mlc.prim_func``) called by ``mlc.call_tir``
    from graph functions are merged; a program called any other way (``func.call``, a
    symbol use elsewhere) is left alone.
    """
    with mlc_context():
        module = mod.mlir_module
        graphs = graph_functions(module)
        calls = [o for g in graphs for o in walk_ops(g) if o.name == "mlc.call_tir"]
        called = {ir.FlatSymbolRefAttr(c.attributes["callee"]).value for c in calls}
        other_uses = _other_symbol_uses(module, graphs)
        kept: dict[str, str] = {}
        rename: dict[str, str] = {}
        doomed: list[ir.Operation] = []
        for op in list(module.body.operations):
            fop = op.operation
            if fop.name != "func.func" or _PRIM_FUNC not in fop.attributes:
                continue
            name = sym_name(fop)
            if name not in called or name in other_uses:
                continue
            key = kernel_key(fop)
            if key in kept:
                rename[name] = kept[key]
                doomed.append(fop)
            else:
                kept[key] = name
        for c in calls:
            callee = ir.FlatSymbolRefAttr(c.attributes["callee"]).value
            if callee in rename:
                c.attributes["callee"] = ir.FlatSymbolRefAttr.get(rename[callee])
        for fop in doomed:
            fop.erase()
        if rename:
            log.info("dedupe-kernels: %d tensor programs were copies of others (%d kept)", len(rename),
                     len(kept))
    return mod


def _other_symbol_uses(module: ir.Module, graphs: list) -> set[str]:
    """Symbols referenced other than by ``mlc.call_tir`` callees (``func.call``...)."""
    used: set[str] = set()

    def visit(op: ir.Operation) -> ir.WalkResult:
        if op.name == "mlc.call_tir":
            return ir.WalkResult.ADVANCE
        for key in op.attributes:
            attr = op.attributes[key]
            if isinstance(attr, ir.FlatSymbolRefAttr):
                used.add(attr.value)
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    return used
