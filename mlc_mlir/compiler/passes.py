"""The build's stages as ``mlc-opt`` passes (``--mlc-memref-abi``, ``--mlc-lower-to-llvm``,
``--mlc-unroll-jam``, ``--mlc-vector-opt``, ``--mlc-partial-writes``)."""

from __future__ import annotations

from ..context import mlc_context
from ..ir import Module
from ..passes import register_pass
from .abi import to_memref_abi
from .partial_writes import guard_partial_writes
from .driver import lower
from .unroll_jam import unroll_and_jam
from .vector_opt import optimize_vectors

__all__ = ["memref_abi", "lower_to_llvm", "vector_opt", "unroll_jam", "partial_writes"]


@register_pass("memref-abi", "rewrite public tensor programs to the memref calling convention")
def memref_abi(mod: Module) -> Module:
    """Rewrite public tensor-form functions to memref arguments (see compiler/abi.py)."""
    with mlc_context():
        to_memref_abi(mod.mlir_module)
    return mod


@register_pass("lower-to-llvm", "the stages of mlc.build (and of mlc.graph.build for graph functions): "
                                "inline, memref ABI, the CPU pipeline down to the LLVM dialect, fast entries")
def lower_to_llvm(mod: Module) -> Module:
    """Run exactly the stages of ``mlc.build`` (the driver's stage list for the host CPU), without the JIT."""
    return lower(mod, "llvm")


@register_pass("vector-opt", "the build's vector-opt stage on bufferized code: accumulators hoisted, "
                             "contractions lowered to FMAs")
def vector_opt(mod: Module) -> Module:
    """Run the ``vector-opt`` build stage (see compiler/vector_opt.py) on a bufferized module."""
    with mlc_context():
        optimize_vectors(mod.mlir_module)
    return mod


@register_pass("unroll-jam", "the build's unroll-jam stage on bufferized code (host target): a parallel loop "
                             "around a reduction with a small accumulator unrolled and jammed, its ops vectorized")
def unroll_jam(mod: Module) -> Module:
    """Run the ``unroll-jam`` build stage (see compiler/unroll_jam.py) for the host target."""
    with mlc_context():
        unroll_and_jam(mod.mlir_module)
    return mod


@register_pass("partial-writes", "the build's partial-writes stage: vector writes of part of a tensor that "
                                 "upstream bufferization would take for whole ones keep their destination")
def partial_writes(mod: Module) -> Module:
    """Run the ``partial-writes`` build stage (see compiler/partial_writes.py) on tensor code."""
    with mlc_context():
        guard_partial_writes(mod.mlir_module)
    return mod
