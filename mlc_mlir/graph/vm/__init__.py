"""Running graphs: lowering, the build pipeline of graph modules, and the virtual machine.

==========================  ================================================================
module                      what
==========================  ================================================================
:mod:`.pipeline`            ``graph_stages``: the graph stages of the one build pipeline
                            (lowering itself: :mod:`..transform.lower`)
:mod:`.vm_build`            ``mlc.graph.build`` -> ``Executable`` (CPU)
:mod:`.cuda`                ``mlc.graph.build(target="cuda")`` and its functions
:mod:`mlc_mlir.runtime.vm`  ``VirtualMachine``: checked calls of the compiled functions (no MLIR)
==========================  ================================================================

This package is also the module ``mlc_mlir.graph.vm`` of earlier versions (``build``,
``Executable``, ``VirtualMachine``, ``GraphFunction``).
"""

from ...runtime.vm import Executable, GraphFunction, VirtualMachine
from .vm_build import build, static_extent_checks

__all__ = ["build", "Executable", "VirtualMachine", "GraphFunction"]
