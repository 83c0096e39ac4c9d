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
from .vm_build import Executable, _CallbackErrors
from ...runtime import as_numpy

__all__ = ["build_graph_cuda", "CudaGraphFunction"]

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
    return Executable(built.runtime, state.graph_signatures, [], _CallbackErrors(), mod, state.optimized)


class CudaGraphFunction:
    """A graph function on a CUDA device: ``f(*inputs) -> CudaNDArray(s)``."""

    def __init__(self, ex: Any, sig: Any, device: Device):
        self.signature = sig
        self._compiled = ex.rt[sig.name]
        self._device = device

    def __call__(self, *args: Any) -> Any:
        sig = self.signature
        if len(args) != len(sig.inputs):
            names = ", ".join(s.name for s in sig.inputs)
            raise ArgumentError(f"@{sig.name} takes {len(sig.inputs)} input(s) ({names}), got {len(args)}")

        views = [(a if isinstance(a, cu.CudaNDArray) else cu.from_dlpack(a)) if cu.is_cuda_array(a)
                 else as_numpy(a) for a in args]
        # dtypes and shapes checked before a host array is copied: a wrong call never pays
        # for the copy (a huge zero-stride view would be NumPy's MemoryError)
        self._compiled._check([v.shape for v in views], [v.dtype for v in views])
        arrays = [v if isinstance(v, cu.CudaNDArray) else self._to_device(i, v) for i, v in enumerate(views)]
        symbols: dict[str, int] = {}
        for spec, arr in zip(sig.inputs, arrays):
            for want, got in zip(spec.shape, arr.shape):
                if not isinstance(want, int):
                    symbols.setdefault(want, got)
        outs = [cu.cuda_empty(tuple(d if isinstance(d, int) else symbols.get(d, -1) for d in spec.shape),
                              np.dtype(spec.dtype), self._device) for spec in sig.outputs]
        self._compiled(*arrays, *outs)  # checks shapes and dtypes against the signature
        return outs[0] if len(outs) == 1 else tuple(outs)

    def _to_device(self, i: int, host: np.ndarray) -> cu.CudaNDArray:
        try:
            return cu.cuda_array(np.ascontiguousarray(host), self._device)
        except MemoryError:
            raise ArgumentError(f"@{self.signature.name} input {i} ({self.signature.inputs[i].name}): a "
                                f"contiguous copy of this {host.dtype} array of shape {host.shape} cannot be "
                                "allocated; pass a C-contiguous array") from None
