"""Running graphs: lowering, the build pipeline of graph modules, and the virtual machine.

==========================  ================================================================
module                      what
==========================  ================================================================
:mod:`.pipeline`            ``graph_stages``: the graph stages of the one build pipeline
                            (lowering itself: :mod:`..transform.lower`)
:mod:`.vm_build`            ``mlc.graph.build`` -> ``Executable`` (CPU)
:mod:`.cuda`                ``mlc.graph.build(target="cuda")`` and its functions
:mod:`.virtual_machine`     ``VirtualMachine``: checked calls of the compiled functions
==========================  ================================================================

This package is also the module ``mlc_mlir.graph.vm`` of earlier versions (``build``,
``Executable``, ``VirtualMachine``, ``GraphFunction``).
"""

from .virtual_machine import GraphFunction, VirtualMachine
from .vm_build import Executable, _CallbackErrors, build, static_extent_checks  # noqa: F401 - old vm.py names

__all__ = ["build", "Executable", "VirtualMachine", "GraphFunction"]
