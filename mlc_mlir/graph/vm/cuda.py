"""``mlc.graph.build(mod, target="cuda")`` and ``VirtualMachine(ex, mlc.cuda(0))``.

The graph is optimized, legalized and fused exactly as for the CPU; then every tensor
program is bound to the GPU by the default rules (:mod:`mlc_mlir.schedule.gpu_rules`:
one kernel per block, spatial loops on ``blockIdx``/``threadIdx``, reductions serial per
thread), the graph functions are lowered to calls and the whole module is built with
:func:`mlc_mlir.compiler.compile` (tensor programs inlined into the graph function:
one host function that launches one kernel per block; intermediates in device memory).

The virtual machine takes CUDA arrays (or ``torch.cuda`` tensors) and returns CUDA
arrays; NumPy inputs are copied to the device first.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...compiler import compile
from ...errors import ArgumentError
from ...ir import Module
from ...runtime import Device
from ...runtime import cuda_device as cu
from ...runtime.vm import CallbackErrors, Executable
from ...runtime import as_numpy

__all__ = ["build_graph_cuda"]

def build_graph_cuda(mod: Module, target: str, *, opt_level: int = 2, op_map: dict | None = None,
                     llvm_opt_level: int = 3, print_after_all: bool = False) -> Any:
    """The cuda branch of :func:`mlc_mlir.graph.build` (same arguments).

    Raises:
        GraphError: environment functions (``call_dps_packed``: Python on the host) in the
            graph, or no graph function.
        ScheduleError: a tensor program the GPU rules cannot bind.
    """
    built = compile(mod, str(target), opt_level=llvm_opt_level, graph_opt_level=opt_level, op_map=op_map,
                    print_after_all=print_after_all)
    state = built.state
    return Executable(built.runtime, state.graph_signatures, [], CallbackErrors(), mod, state.optimized)
