"""The CUDA lowering pipeline: one list of named stages, from bound tensor programs to
NVVM kernels in a ``gpu.binary`` and host code calling the CUDA runtime wrappers.

Stages (names as shown by ``build(..., print_after_all=True)``):

====================  ==========================================================
``bufferize``         one-shot bufferization (the CPU stage, imported)
``simplify``          canonicalize + CSE (the CPU stage)
``map-to-gpu``        checks, nested-forall merging, ``map_forall_to_blocks`` +
                      ``map_nested_forall_to_threads`` (:mod:`.gpu_mapping`)
``device-memory``     host buffers -> ``gpu.alloc`` (arguments are device pointers)
``loops``/``vectors`` linalg/vector ops inside kernels to loops (the CPU stages)
``fp-contract``       ``fastmath<contract>`` on kernel mulf/addf (FMAs, as nvcc)
``outline``           ``gpu-launch-sink-index-computations``, ``gpu-kernel-outlining``,
                      ``gpu-async-region`` (host gpu ops ordered on one stream)
``drop-host-shared``  shared-memory globals removed from the host module (outlining
                      copied them into the kernels' ``gpu.module``)
``common``            the common part of upstream ``gpu-lower-to-nvvm-pipeline``
                      (``nvvm-attach-target{chip, features, O}``)
``device``            ``gpu.module(convert-gpu-to-nvvm)``
``host``              ``gpu-to-llvm`` (``gpu.launch_func`` -> ``mgpu*`` calls)
``binary``            ``gpu-module-to-binary{format, toolkit}``: cubin or PTX
``finalize``          math to LLVM, canonicalize, reconcile casts
====================  ==========================================================

The stages mirror upstream ``gpu-lower-to-nvvm-pipeline`` (GPUToNVVMPipeline.cpp) but
spell it out so that ``gpu-module-to-binary`` gets ``toolkit=``: ``ptxas`` and libdevice
then come from the ``nvidia-cuda-nvcc`` wheel rather than from whatever is on the machine.
"""

from __future__ import annotations

import importlib.util
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from mlir import ir
from mlir.dialects import gpu

from ..irutil import has_identity_layout, sym_name
from ..errors import BuildError
from ..runtime.signature import FuncSignature
from .abi import public_functions
from .gpu_mapping import (drop_self_copies, find_kernels, map_kernels, merge_bound_loops, place_kernel_buffers,
                          trip_counts)
from .gpu_shared import drop_host_shared_globals, promote_shared_copies
from .pipeline import BUFFERIZE, LOOPS, PARTIAL_WRITES, SIMPLIFY, VECTORS, ModuleStage, PassStage, Stage

__all__ = ["CudaTarget", "ARCH_PTX_FEATURES", "parse_cuda_target", "cuda_toolkit", "cuda_stages",
           "map_to_gpu", "device_buffers"]

# Chips this build targets, with the PTX ISA version passed as `features`: sm_90 needs
# +ptx80 (the pipeline's default, PTX 6.0, aborts for it). ptxas of CUDA 13 compiles sm_75+.
ARCH_PTX_FEATURES = {
    "sm_75": "+ptx80", "sm_80": "+ptx80", "sm_86": "+ptx80", "sm_87": "+ptx80", "sm_89": "+ptx80",
    "sm_90": "+ptx80", "sm_90a": "+ptx80",
    "sm_100": "+ptx86", "sm_100a": "+ptx86", "sm_120": "+ptx87", "sm_120a": "+ptx87",
}
DEFAULT_ARCH = "sm_90"
FORMATS = ("isa", "bin", "fatbin")


@dataclass(frozen=True)
class CudaTarget:
    """A CUDA target: chip, PTX features, binary format and the toolkit that provides ptxas.

    ``format`` is ``"bin"`` (cubin, needs ``ptxas``) when a toolkit is found, else
    ``"isa"``: PTX that the driver compiles when the module is loaded.
    """

    arch: str = DEFAULT_ARCH
    features: str = ARCH_PTX_FEATURES[DEFAULT_ARCH]
    format: str = "isa"
    toolkit: str | None = None

    def __str__(self) -> str:
        return f"cuda -arch={self.arch}"

    def binary_options(self, fmt: str | None = None) -> str:
        """Options of ``gpu-module-to-binary``: the format and the (quoted) toolkit path."""
        toolkit = f' toolkit="{self.toolkit}"' if self.toolkit else ""
        return f"format={fmt or self.format}{toolkit}"


def cuda_toolkit() -> str | None:
    """The CUDA toolkit directory holding ``bin/ptxas`` and ``nvvm/libdevice``.

    ``$MLC_CUDA_TOOLKIT`` first, then the ``nvidia-cuda-nvcc`` wheel (``nvidia/cu13``,
    ``nvidia/cuda_nvcc``); ``None`` when neither has ``ptxas``.
    """
    candidates = [Path(os.environ["MLC_CUDA_TOOLKIT"])] if os.environ.get("MLC_CUDA_TOOLKIT") else []
    spec = importlib.util.find_spec("nvidia")
    for base in (spec.submodule_search_locations or []) if spec else []:
        candidates += sorted(Path(base).glob("cu[0-9]*"), reverse=True) + [Path(base) / "cuda_nvcc"]
    for cand in candidates:
        if os.access(cand / "bin" / "ptxas", os.X_OK):
            return str(cand)
    return None


def parse_cuda_target(target: str, *, arch: str | None = None) -> CudaTarget:
    """Parse ``"cuda"``, ``"cuda -arch=sm_90"`` (TVM's spelling) plus an optional ``arch=``.

    Raises:
        BuildError: an unknown option or chip, or two different chips.
    """
    words = target.split()
    if not words or words[0] != "cuda":
        raise BuildError(f"not a cuda target: {target!r}")
    chip = None
    for word in words[1:]:
        match = re.fullmatch(r"-(?:arch|mcpu)=(\S+)", word)
        if not match:
            raise BuildError(f"unknown cuda target option {word!r} in {target!r}; supported: -arch=sm_XX")
        chip = match.group(1)
    if arch is not None and chip is not None and arch != chip:
        raise BuildError(f"target {target!r} says {chip} but arch={arch!r}")
    chip = arch or chip or DEFAULT_ARCH
    if chip not in ARCH_PTX_FEATURES:
        raise BuildError(f"unknown CUDA architecture {chip!r}; supported: {', '.join(ARCH_PTX_FEATURES)}")
    toolkit = cuda_toolkit()
    return CudaTarget(chip, ARCH_PTX_FEATURES[chip], "bin" if toolkit else "isa", toolkit)


def map_to_gpu(module: ir.Module) -> None:
    """Check the bound loop nests of every public function and map them to ``gpu.launch``."""
    drop_self_copies(module)
    kernels = merge_bound_loops(find_kernels(public_functions(module)))
    promote_shared_copies(module, kernels, trip_counts)
    place_kernel_buffers(kernels)
    map_kernels(module, kernels)


def _host_buffers(block: ir.Block, name: str) -> list[ir.Value]:
    """Host ``memref.alloc`` -> ``gpu.alloc`` (``memref.dealloc`` dropped: all device buffers
    are freed before the return); host ``memref.copy`` -> ``gpu.memcpy``; a constant
    (``memref.get_global``) is copied into a ``gpu.alloc`` buffer."""
    buffers = []
    for op in [o.operation for o in block.operations]:
        if op.name == "memref.alloc":
            mtype = ir.MemRefType(op.results[0].type)
            if not has_identity_layout(mtype) or mtype.memory_space is not None:
                raise BuildError(f"@{name}: buffer of type {mtype} cannot be placed in GPU memory")
            with ir.InsertionPoint(op):
                new = gpu.AllocOp(mtype, None, [], list(op.operands), [])
            op.results[0].replace_all_uses_with(new.memref)
            op.erase()
            buffers.append(new.memref)
        elif op.name == "memref.get_global":  # a constant (bound weights): a device copy per call
            mtype = ir.MemRefType(op.results[0].type)
            if not has_identity_layout(mtype) or mtype.memory_space is not None or not mtype.has_static_shape:
                raise BuildError(f"@{name}: constant {op.attributes['name']} of type {mtype} cannot be copied to "
                                 "GPU memory")
            with ir.InsertionPoint.after(op):
                new = gpu.AllocOp(mtype, None, [], [], [])
                copy = gpu.MemcpyOp(None, [], new.memref, op.results[0])
            op.results[0].replace_all_uses_except(new.memref, copy.operation)
            buffers.append(new.memref)
        elif op.name == "memref.dealloc":
            op.erase()  # every device buffer is freed before the return
        elif op.name == "memref.copy":
            src, dst = op.operands[0], op.operands[1]
            for v in (src, dst):
                if not has_identity_layout(ir.MemRefType(v.type)):
                    raise BuildError(f"@{name}: a copy of the strided view {v.type} runs outside every GPU "
                                     "kernel; bind the loops of the computation that writes it instead")
            with ir.InsertionPoint(op):
                gpu.MemcpyOp(None, [], dst, src)
            op.erase()
    return buffers


def device_buffers(module: ir.Module, signatures: Mapping[str, FuncSignature]) -> None:
    """Host code of every public function works on device memory.

    Its memref arguments are device pointers (the caller passes CUDA arrays, or copies
    host arrays in and out: :mod:`.cuda_call`); host buffers (``memref.alloc``) become
    ``gpu.alloc`` buffers, freed before the return; host copies become ``gpu.memcpy``.
    """
    for fn in public_functions(module):
        name = sym_name(fn)
        if name not in signatures:
            raise BuildError(f"internal: no signature for public function @{name}")
        block = fn.regions[0].blocks[0]
        ret = block.operations[len(block.operations) - 1].operation
        buffers = _host_buffers(block, name)
        with ir.InsertionPoint(ret):
            for buf in buffers:
                gpu.DeallocOp(None, [], buf)


_CONTRACTIBLE = ("arith.mulf", "arith.addf", "arith.subf")


def contract_kernel_math(module: ir.Module) -> None:
    """``#arith.fastmath<contract>`` on float multiply/add/sub inside the kernels, so that
    the NVPTX backend fuses them into ``fma.rn`` (nvcc's default, ``--fmad=true``)."""
    contract = ir.Attribute.parse("#arith.fastmath<contract>")

    def visit(op: ir.Operation) -> ir.WalkResult:
        if op.name == "gpu.launch":
            def inner(o: ir.Operation) -> ir.WalkResult:
                if o.name in _CONTRACTIBLE:
                    o.attributes["fastmath"] = contract
                return ir.WalkResult.ADVANCE

            op.walk(inner)
            return ir.WalkResult.SKIP
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit, ir.WalkOrder.PRE_ORDER)


def cuda_stages(target: CudaTarget, signatures: Mapping[str, FuncSignature], *,
                opt_level: int = 3) -> list[Stage]:
    """The stages from tensor programs (after the ABI rewrite) to the LLVM dialect + binary."""
    if target.format not in FORMATS:
        raise BuildError(f"unknown binary format {target.format!r}; use one of {FORMATS}")
    return [
        PARTIAL_WRITES,
        BUFFERIZE,
        SIMPLIFY,
        ModuleStage("map-to-gpu", map_to_gpu),
        ModuleStage("device-memory", lambda module: device_buffers(module, signatures)),
        LOOPS,
        VECTORS,
        ModuleStage("fp-contract", contract_kernel_math),
        PassStage("outline", "canonicalize,cse,gpu-launch-sink-index-computations,gpu-kernel-outlining,"
                         "func.func(gpu-async-region)"),
        ModuleStage("drop-host-shared", drop_host_shared_globals),
        PassStage("common", ",".join([
            "convert-nvgpu-to-nvvm", "convert-vector-to-scf", "convert-scf-to-cf", "convert-nvvm-to-llvm",
            "convert-func-to-llvm", "expand-strided-metadata",
            f"nvvm-attach-target{{chip={target.arch} features={target.features} O={opt_level}}}",
            "lower-affine", "convert-arith-to-llvm", "convert-index-to-llvm", "canonicalize", "cse"])),
        PassStage("device", "gpu.module(strip-debuginfo,convert-gpu-to-nvvm,canonicalize,cse,"
                        "reconcile-unrealized-casts)"),
        PassStage("host", "gpu-to-llvm"),
        PassStage("binary", f"gpu-module-to-binary{{{target.binary_options()}}}"),
        PassStage("finalize", "convert-math-to-llvm,canonicalize,cse,reconcile-unrealized-casts"),
    ]
