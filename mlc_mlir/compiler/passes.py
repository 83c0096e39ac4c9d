"""The build's stages as ``mlc-opt`` passes (``--mlc-memref-abi``, ``--mlc-lower-to-llvm``,
``--mlc-unroll-jam``, ``--mlc-vector-opt``, ``--mlc-partial-writes``, ``--mlc-memory-plan``)."""

from __future__ import annotations

from collections.abc import Callable

from mlir import ir

from ..context import mlc_context
from ..ir import Module
from ..passes import register_pass
from .abi import to_memref_abi
from .partial_writes import guard_partial_writes
from .driver import lower
from .unroll_jam import unroll_and_jam
from .exp_approx import approximate_exp
from .memory_plan import plan_memory
from .vector_opt import optimize_vectors

__all__ = ["memref_abi", "lower_to_llvm", "vector_opt", "unroll_jam", "partial_writes", "memory_plan"]


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


def _stage_pass(name: str, help_text: str, stage: Callable[[ir.Module], object]) -> Callable[[Module], Module]:
    """Register build stage ``stage`` (a rewrite of the MLIR module in place) as ``--mlc-NAME``."""

    def run(mod: Module) -> Module:
        with mlc_context():
            stage(mod.mlir_module)
        return mod

    run.__name__ = name.replace("-", "_")
    run.__doc__ = f"Run the ``{name}`` build stage on a module (see mlc_mlir/compiler/{run.__name__}.py)."
    return register_pass(name, help_text)(run)


vector_opt = _stage_pass("vector-opt", "the build's vector-opt stage on bufferized code: accumulators hoisted, "
                                       "contractions lowered to FMAs", optimize_vectors)
unroll_jam = _stage_pass("unroll-jam", "the build's unroll-jam stage on bufferized code (host target): a parallel "
                                       "loop around a reduction with a small accumulator unrolled and jammed, its "
                                       "ops vectorized", unroll_and_jam)
exp_approx = _stage_pass("exp-approx", "the build's exp-approx stage: math.exp on f32 vectors as a polynomial "
                                       "(within 2 ulp) instead of one libm call per lane", approximate_exp)
partial_writes = _stage_pass("partial-writes", "the build's partial-writes stage: vector writes of part of a tensor "
                                               "that upstream bufferization would take for whole ones keep their "
                                               "destination", guard_partial_writes)


memory_plan = _stage_pass("memory-plan", "the build's memory-plan stage on bufferized code: a lowered graph "
                                         "function's intermediates share buffers (TVM's static memory planning)",
                          plan_memory)
