"""Graph passes (``mlc.graph.transform``): module -> new module, the input left untouched.

- :class:`BindParams` turns parameters into constants (course ch.3).
- :class:`FoldConstant` folds ops of constants into constants (TVM FoldConstant).
- :class:`FoldBatchNorm` folds inference batch norms into the convolutions before them.
- :class:`LegalizeOps` replaces graph ops by calls of tensor programs (course ch.7).
- :class:`FuseDenseAddPass` outlines matmul + add into primitive functions (course ch.7).
- :class:`FuseOps` groups ops by pattern kind into primitive functions (TVM FuseOps).
- :class:`FuseTIR` turns each primitive function into one tensor program.
- :func:`remove_all_unused` drops dead bindings; :func:`module_pass` and
  :class:`Sequential` make and chain user passes.

The course's order: ``FuseOps -> LegalizeOps -> FuseTIR`` (``mlc.graph.build`` runs it
from ``opt_level=1``).

Where they live (each pass a module of this package unless noted):

==========================  ================================================================
module                      what
==========================  ================================================================
:mod:`.pass_infra`          ``module_pass``, ``Sequential``, ``PassContext``: user passes
:mod:`.passes`              the graph passes registered for ``mlc-opt --mlc-NAME`` (the one
                            registry, :mod:`mlc_mlir.passes`)
:mod:`.optimize`            the default optimization stages of ``mlc.graph.build(opt_level=)``
:mod:`.bind_params`         ``BindParams``
:mod:`.fold_constant`       ``FoldConstant``
:mod:`.fold_batch_norm`     ``FoldBatchNorm``
:mod:`.dedupe`              the build's ``dedupe-kernels`` stage (identical tensor programs)
:mod:`.rewrite`             pattern rewriting (``@rewrite.pattern``, ``ewise_fma``)
:mod:`.fusion`              ``FuseDenseAddPass``, ``FuseOps``, ``FuseTIR`` (the pass objects)
:mod:`.fuse_ops`            FuseOps's grouping by pattern kind
:mod:`.fuse_tir`            FuseTIR's merge of a primitive function into one tensor program
:mod:`.outline`             outline op groups into primitive functions; inline calls back
:mod:`.lower`               graph functions -> destination-passing functions of calls (the
                            build's ``lower-graph``; FuseTIR lowers a primitive function)
:mod:`.dps_packed`          ``call_dps_packed`` of the module's own programs -> ``call_tir``
:mod:`..legalize`           ``LegalizeOps`` and the default op map (its own package)
:mod:`..ir.analysis`        ``remove_all_unused`` (course ``relax.analysis``)
==========================  ================================================================
"""

from __future__ import annotations

from ..ir.analysis import remove_all_unused
from ..legalize import LegalizeOps
from .bind_params import BindParams
from .fold_batch_norm import FoldBatchNorm
from .fold_constant import FoldConstant
from .fusion import FuseDenseAddPass, FuseOps, FuseTIR
from .pass_infra import ModulePass, PassContext, PassInfo, Sequential, module_pass

__all__ = ["BindParams", "FoldBatchNorm", "FoldConstant", "LegalizeOps", "FuseOps", "FuseTIR", "FuseDenseAddPass", "remove_all_unused",
           "module_pass", "Sequential", "PassContext", "PassInfo", "ModulePass"]
