"""``mlc.build(mod, target="cuda")``: bound tensor programs -> CUDA kernels + host code
(built by the driver with :class:`.targets.cuda.CudaBackend`; this module: the loaded module).

The host function of each tensor program keeps the CPU build's memref ABI with device
pointers: ``rt["name"](*cuda_arrays)`` launches the kernels (grid/block sizes from the
bound loops) on the arrays in place; called with NumPy arrays it copies them to the GPU
and the outputs back (:mod:`.cuda_call`). The kernels are compiled to a cubin
with the ``nvidia-cuda-nvcc`` wheel's ``ptxas`` (PTX JIT-compiled by the driver when no
``ptxas`` is found); ``rt.get_source("ptx")`` shows the PTX either way.

Without a CUDA driver (no ``libcuda``) the build still compiles everything; calling a
function then raises :class:`~mlc_mlir.runtime.cuda_device.CudaUnavailable`. The host code's
``mgpu*`` calls go to :class:`~mlc_mlir.runtime.mgpu.KernelRuntime` (NVIDIA's
``cuda-python``), which turns every CUDA error into an exception.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
from collections.abc import Callable, Sequence
from typing import Any

from mlir import ir
from mlir.dialects import gpu
from mlir.execution_engine import ExecutionEngine

from ..irutil import symbol_ops
from ..context import mlc_context
from ..errors import BuildError, MlcError
from ..runtime import cuda_device as cu
from ..runtime.mgpu import KernelRuntime
from ..runtime.signature import FuncSignature
from ..runtime.cuda_call import CudaFunction, cuda_time_evaluator
from ..runtime.module import ProfileResult
from .executable import JitModule
from .gpu_pipeline import CudaTarget
from .pipeline import run_pipeline

__all__ = ["CudaModule", "DeviceCode", "cuda_driver", "device_arch", "jit_host", "unavailable_reason", "NO_DRIVER",
           "SNAPSHOTS"]


NO_DRIVER = ("no CUDA driver (libcuda) found: CUDA functions can be compiled (get_source('ptx')) "
             "but not run here")
# get_source format -> the stage after which the IR is kept
SNAPSHOTS = {"gpu": "map-to-gpu", "gpu-outlined": "outline", "nvvm": "device"}


@functools.cache
def cuda_driver() -> ctypes.CDLL | None:
    """The CUDA driver library (``libcuda``) if it can be loaded, else ``None``."""
    for name in ("libcuda.so.1", ctypes.util.find_library("cuda")):
        if not name:
            continue
        try:
            return ctypes.CDLL(name)
        except OSError:
            continue
    return None


def device_arch(index: int = 0) -> str | None:
    """``"sm_XY"`` of CUDA device ``index``, or ``None`` without a driver, binding or device."""
    try:
        cu.activate(index)
        drv = cu.driver()
        dev = cu.call("cuDeviceGet", index)
        attr = drv.CUdevice_attribute
        major = cu.call("cuDeviceGetAttribute", attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev)
        minor = cu.call("cuDeviceGetAttribute", attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev)
    except MlcError:
        return None
    return f"sm_{int(major)}{int(minor)}"


def _runs_on(arch: str, fmt: str, device: str) -> bool:
    """Whether code for ``arch`` in format ``fmt`` runs on a ``device`` chip."""
    want, have = int(arch[3:].rstrip("a")), int(device[3:])
    if arch.endswith("a"):
        return want == have
    if fmt == "isa":
        return have >= want  # PTX is compiled for the device by the driver
    return have // 10 == want // 10 and have >= want  # cubin: same major, minor at least


class CudaModule(JitModule):
    """A module built for CUDA: host functions (JIT) plus kernels in ``gpu.binary`` ops.

    ``rt["f"](*args)`` takes CUDA arrays (``mlc.runtime.array(x, device=mlc.cuda(0))``,
    ``torch.cuda`` tensors) without copies, or host arrays through copies
    (:mod:`.cuda_call`); ``time_evaluator`` uses CUDA events. ``get_source`` adds
    ``"ptx"`` (the kernels' PTX), ``"gpu"`` (the IR after mapping to ``gpu.launch``),
    ``"gpu-outlined"`` (``gpu.func`` kernels, ``gpu.launch_func`` calls) and ``"nvvm"``
    (the kernels in the NVVM/LLVM dialect).
    """

    def __init__(self, *, engine: ExecutionEngine | None, signatures: dict[str, FuncSignature],
                 lowered: ir.Module, source: str, cuda: CudaTarget, snapshots: dict[str, str],
                 unavailable: str | None, runtime: KernelRuntime | None = None):
        super().__init__(engine=engine, signatures=signatures, lowered=lowered, source=source,  # type: ignore[arg-type]
                         target=str(cuda))
        self.cuda = cuda
        self.runtime = runtime or KernelRuntime(0)
        self._snapshots = snapshots
        self._unavailable = unavailable
        self._ptx: str | None = None
        self._cuda_funcs: dict[str, CudaFunction] = {}

    def __getitem__(self, name: str) -> CudaFunction:
        if name not in self.signatures:
            raise MlcError(f"the built module has no public function {name!r}; it has {self.functions}")
        if name not in self._cuda_funcs:
            fn = None
            if self._unavailable is None and self.engine is not None:
                raw = self.engine.raw_lookup("_mlir_ciface_" + name)
                if not raw:
                    raise BuildError(f"compiled code has no symbol for @{name}")
                fn = ctypes.CFUNCTYPE(None, ctypes.c_void_p)(raw)
            self._cuda_funcs[name] = CudaFunction(self, self.signatures[name], fn, self._unavailable)
        return self._cuda_funcs[name]

    @property
    def imported_modules(self) -> list[DeviceCode]:
        """The device code as the course reads it: ``rt_mod.imported_modules[0].get_source()``
        (TVM's CUDA module imported by the host module; here the kernels' PTX)."""
        return [DeviceCode(self)]

    def time_evaluator(self, name: str, dev: Any = None, *, number: int = 10, repeat: int = 1,
                       min_repeat_ms: float = 0.0) -> Callable[..., ProfileResult]:
        """A function timing ``name`` on the GPU with CUDA events (seconds per call)."""
        return cuda_time_evaluator(self[name], number=number, repeat=repeat, min_repeat_ms=min_repeat_ms)

    def get_source(self, fmt: str = "ptx") -> str:
        """``"ptx"``, ``"gpu"``, ``"gpu-outlined"``, ``"nvvm"``, or the host code:
        ``"mlir"`` (input), ``"llvm-dialect"``, ``"llvm"``, ``"asm"``."""
        if fmt == "ptx":
            if self._ptx is None:
                self._ptx = _ptx_of(self._snapshots["device"], self.cuda)
            return self._ptx
        if fmt in SNAPSHOTS:
            return self._snapshots[SNAPSHOTS[fmt]]
        if fmt not in ("mlir", "llvm-dialect", "llvm", "ll", "asm", "s"):
            raise MlcError(f"get_source: unknown format {fmt!r}; use 'ptx', {', '.join(map(repr, SNAPSHOTS))}, "
                           "'mlir', 'llvm-dialect', 'llvm' or 'asm'")
        return super().get_source(fmt)


class DeviceCode:
    """The kernels of a :class:`CudaModule` (``type_key`` ``"cuda"``, as TVM's device module)."""

    type_key = "cuda"

    def __init__(self, host: CudaModule):
        self._host = host

    def get_source(self, fmt: str = "ptx") -> str:
        """The kernels' PTX (``"ptx"``, TVM's default ``""`` and ``"cuda"`` give it too)."""
        if fmt not in ("", "ptx", "cuda"):
            raise MlcError(f"get_source: the device module has its PTX only ('ptx'), not {fmt!r}")
        return self._host.get_source("ptx")

    def __repr__(self) -> str:
        return f"<mlc.DeviceCode of {self._host.cuda.arch}>"


def _ptx_of(device_ir: str, cuda: CudaTarget) -> str:
    """Run ``gpu-module-to-binary{format=isa}`` on a copy of the lowered module; join the PTX."""
    with mlc_context():
        module = ir.Module.parse(device_ir)
        run_pipeline(module, f"gpu-module-to-binary{{{cuda.binary_options('isa')}}}", stage="ptx")
        parts = []
        for name, op in symbol_ops(module, "gpu.binary").items():
            for obj in ir.ArrayAttr(op.attributes["objects"]):
                text = bytes(gpu.ObjectAttr(obj).object).decode()
                parts.append(f"// gpu.binary @{name}\n{text}")
    return "\n".join(parts)


def unavailable_reason(cuda: CudaTarget) -> str | None:
    """Why kernels built for ``cuda`` cannot run here (no driver, no GPU, another chip), or None."""
    try:
        cu.activate(0)
    except MlcError as exc:
        return f"{exc}: CUDA functions can be compiled (get_source('ptx')) but not run here"
    device = device_arch()
    if device is None:
        return "the CUDA driver found no usable GPU: CUDA functions can be compiled (get_source('ptx')) " \
               "but not run here"
    if not _runs_on(cuda.arch, cuda.format, device):
        return (f"the kernels were compiled for {cuda.arch} but GPU 0 is {device}: build with "
                f"target='cuda -arch={device}'")
    return None


def jit_host(lowered: ir.Module, *, opt_level: int, shared_libs: Sequence[str]) -> ExecutionEngine:
    """JIT the lowered host module (kernels embedded as ``gpu.binary``); not initialized.

    Raises:
        BuildError: LLVM translation or JIT compilation failed.
    """
    with mlc_context():
        try:
            return ExecutionEngine(lowered, opt_level=opt_level, shared_libs=list(shared_libs))
        except (RuntimeError, ir.MLIRError) as exc:
            raise BuildError(f"JIT compilation of the CUDA host code failed: {exc}") from None
