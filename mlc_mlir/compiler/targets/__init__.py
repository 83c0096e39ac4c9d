"""The targets of the compile driver (:mod:`..driver`): each gives its stage list and its loader.

=====================  ===================================================================
:class:`.CpuBackend`    ``"llvm"`` / ``"cpu"`` (host CPU): codegen stages, then the JIT
:class:`.CudaBackend`   ``"cuda"`` / ``"cuda -arch=sm_XX"``: GPU stages, then the host JIT
                        with the kernels embedded (compile-only without a driver)
=====================  ===================================================================
"""

from __future__ import annotations

from typing import Any

from ...errors import BuildError
from ...target import Target
from .cpu import CpuBackend, host_target
from .cuda import CudaBackend

__all__ = ["Backend", "CpuBackend", "CudaBackend", "backend_for", "host_target"]

Backend = CpuBackend | CudaBackend


def backend_for(target: str | Target | Any, *, opt_level: int = 3, fastmath: str = "contract",
                arch: str | None = None) -> Backend:
    """The backend of ``target`` (a string or :class:`~mlc_mlir.target.Target`).

    Raises:
        BuildError: an unknown target kind, a CPU target this machine cannot run (the JIT
            runs code here), a CUDA option (``arch``) on a CPU target.
    """
    if isinstance(target, Target):
        kind = target.kind
    else:
        text = str(target)
        kind = text.split()[0] if text.strip() else text
    if kind == "cuda":
        return CudaBackend.of(str(target), arch=arch, opt_level=opt_level)
    if kind not in ("llvm", "cpu"):
        raise BuildError(f"unknown target {target!r}; supported: 'llvm', 'cuda' ('cuda -arch=sm_90')")
    if arch is not None:
        raise BuildError(f"arch={arch!r} is a CUDA option; target {str(target)!r} is the host CPU")
    return CpuBackend(host_target(target), fastmath=fastmath, opt_level=opt_level)
