"""User graph passes: ``@module_pass`` and ``Sequential`` (course ``tvm.ir.transform``).

    @mlc.graph.transform.module_pass(opt_level=2, name="MatmulAddFuse")
    class FuseDenseAddPass:
        def transform_module(self, mod, ctx):
            return my_rewrite(mod)           # a Module (or None: mod was changed in place)

    fused = FuseDenseAddPass()(mod)          # mod itself is left untouched

A pass gets a copy of the module (value names kept) and a :class:`PassContext`;
``Sequential`` runs passes in order, skipping those above its ``opt_level``. The classes
are those of :mod:`mlc_mlir.passes` (one ``ModulePass`` type, one registry); this module
is the name the course reaches them by (``mlc.ir.transform``).
"""

from __future__ import annotations

from ...passes import ModulePass, PassContext, PassInfo, Sequential, module_pass

__all__ = ["PassInfo", "PassContext", "ModulePass", "module_pass", "Sequential"]
