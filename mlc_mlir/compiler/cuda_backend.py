"""The CUDA backend of the driver: the GPU stages (:func:`.gpu_pipeline.cuda_stages`) and the
host JIT with the kernels embedded (see :mod:`.cuda` for the module type and how calls run)."""

from __future__ import annotations

import ctypes
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from mlir import ir

from ..errors import BuildError
from ..runtime.mgpu import KernelRuntime
from ..toolchain import mlir_lib
from .cuda import SNAPSHOTS, CudaModule, unavailable_reason, device_arch, jit_host
from .gpu_pipeline import ARCH_PTX_FEATURES, CudaTarget, cuda_stages, parse_cuda_target
from .pipeline import INLINE, Compilation, ModuleStage, Stage

__all__ = ["CudaBackend"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class CudaBackend:
    """``"cuda"``: bound tensor programs -> NVVM kernels + host code -> the host JIT."""

    cuda: CudaTarget
    opt_level: int = 3
    #: the IR after the stages ``get_source`` shows ("map-to-gpu", "outline", "device")
    snapshots: dict[str, str] = field(default_factory=dict, compare=False)

    @classmethod
    def of(cls, target: str, *, arch: str | None = None, opt_level: int = 3) -> CudaBackend:
        """``"cuda"`` or ``"cuda -arch=sm_XX"``; default chip: ``arch``, else GPU 0's when one is
        present and supported, else sm_90."""
        if arch is None and "-arch=" not in target and device_arch() in ARCH_PTX_FEATURES:
            arch = device_arch()
        return cls(parse_cuda_target(target, arch=arch), opt_level)

    def graph_options(self) -> dict[str, Any]:
        """How the graph layer's stages schedule for this target (the default GPU rules)."""
        return {"gpu_target": str(self.cuda)}

    def prepare(self, state: Compilation) -> None:
        """Nothing of the CPU options applies to the GPU stages."""

    def stages(self, state: Compilation) -> list[Stage]:
        # state.signatures: filled by memref-abi before the GPU stages read them
        return [INLINE, ModuleStage("memref-abi", state.memref_abi),
                *cuda_stages(self.cuda, state.signatures, opt_level=self.opt_level)]

    def after_stage(self, stage: Stage, mod: Any) -> None:
        if stage.name in SNAPSHOTS.values():
            self.snapshots[stage.name] = str(mod.mlir_module)

    def load(self, lowered: ir.Module, state: Compilation, *, source: str,
             callbacks: Mapping[str, Any] | None = None,
             after_call: Callable[[], None] | None = None) -> CudaModule:
        """JIT the host code and load the kernels on GPU 0; compile-only without a usable GPU."""
        if callbacks:
            raise BuildError("environment functions (Python callbacks) cannot run in a CUDA build")
        unavailable = unavailable_reason(self.cuda)
        engine, runtime = None, KernelRuntime(0)
        if unavailable is None:
            engine = jit_host(lowered, opt_level=self.opt_level, shared_libs=[mlir_lib("libmlir_c_runner_utils.so")])
            for name, callback in runtime.callbacks.items():
                engine.raw_register_runtime(name, ctypes.cast(callback, ctypes.c_void_p))
            engine.initialize()  # loads the kernels (mgpuModuleLoad)
            runtime.check()
        else:
            log.info("cuda module compiled only, not loaded: %s", unavailable)
        return CudaModule(engine=engine, signatures=state.signatures, lowered=lowered, source=state.source or source,
                          cuda=self.cuda, snapshots=dict(self.snapshots), unavailable=unavailable, runtime=runtime)
