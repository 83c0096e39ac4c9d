"""The build's stages as ``mlc-opt`` passes (``--mlc-memref-abi``, ``--mlc-lower-to-llvm``)."""

from __future__ import annotations

from ..context import mlc_context
from ..ir import Module
from ..passes import register_pass
from .abi import to_memref_abi
from .pipeline import cpu_stages, run_stages, uses_parallel_loops
from .vector_opt import optimize_vectors

__all__ = ["memref_abi", "lower_to_llvm", "vector_opt"]


@register_pass("memref-abi", "rewrite public tensor programs to the memref calling convention")
def memref_abi(mod: Module) -> Module:
    """Rewrite public tensor-form functions to memref arguments (see build/abi.py)."""
    with mlc_context():
        to_memref_abi(mod.mlir_module)
    return mod


@register_pass("lower-to-llvm", "memref ABI, bufferization and the CPU pipeline down to the LLVM dialect")
def lower_to_llvm(mod: Module) -> Module:
    """Run the whole CPU build pipeline of ``mlc.build`` (without the JIT)."""
    with mlc_context():
        signatures = to_memref_abi(mod.mlir_module)
        run_stages(mod.mlir_module, cpu_stages(parallel=uses_parallel_loops(mod.mlir_module),
                                               signatures=signatures))
    return mod


@register_pass("vector-opt", "the build's vector-opt stage on bufferized code: accumulators hoisted, "
                             "contractions lowered to FMAs")
def vector_opt(mod: Module) -> Module:
    """Run the ``vector-opt`` build stage (see build/vector_opt.py) on a bufferized module."""
    with mlc_context():
        optimize_vectors(mod.mlir_module)
    return mod
