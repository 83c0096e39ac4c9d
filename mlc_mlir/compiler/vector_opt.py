"""The ``vector-opt`` build stage: register-level cleanup of vectorized code after bufferization.

A schedule vectorizes tiles on tensors; what makes the vectors fast only works on buffers:
the accumulator of a reduction loop (a ``vector.transfer_read`` / ``transfer_write`` pair
on the same memref slice in every iteration) is hoisted out of the loop so that it stays
in registers, and ``vector.contract`` is lowered to outer products (broadcast + FMA rows)
instead of being unrolled element by element by the generic vector-to-LLVM lowering.

The stage applies one transform sequence (:data:`VECTOR_OPT_SCRIPT`) to every function of
a module that has vector ops (modules without any are left alone)::

    remaining linalg ops -> scf loops        no memref.subview of an accumulator's buffer is
                                             left (hoisting refuses buffers with views)
    canonicalize + fold-memref-alias-ops     subviews folded into the transfers' indices
    cse, canonicalize                        identical index computations / self copies go
    licm on every scf.for                    loop-invariant indices and reads leave loops
    hoist_redundant_vector_transfers         accumulators read before, written after the loop
    vector.contract -> outer products, transfers with permutation maps -> broadcasts,
      multi_reduction / transfer / shape_cast lowering (1-D transfers -> vector.load/store)
    outer products -> broadcast + vector.fma, canonicalize
    leading unit dims dropped (vector<1x32xf32> -> vector<32xf32>), canonicalize

Accumulator hoisting does nothing unless the canonicalize/CSE/canonicalize/LICM steps ran
first. Hand-written schedules that already did all of this (``benchmarks/schedules/*.mlir``)
go through the stage unchanged but for loop-invariant code motion.

IR before (one row of a bufferized 8x32 register tile; ``mlc-opt --mlc-vector-opt``, twin
test ``tests/lit/compiler/vector_opt.mlir``)::

    scf.for %k = %c0 to %c64 step %c1 {
      %a = vector.transfer_read %A[%c0, %k], %pad : memref<8x64xf32>, vector<1x1xf32>
      %b = vector.transfer_read %B[%k, %c0], %pad : memref<64x32xf32>, vector<1x32xf32>
      %c = vector.transfer_read %C[%c0, %c0], %pad : memref<8x32xf32>, vector<1x32xf32>
      %r = vector.contract {...} %a, %b, %c : vector<1x1xf32>, vector<1x32xf32> into vector<1x32xf32>
      vector.transfer_write %r, %C[%c0, %c0] : vector<1x32xf32>, memref<8x32xf32>
    }

IR after::

    %0 = vector.load %C[%c0, %c0] : memref<8x32xf32>, vector<32xf32>
    %1 = vector.broadcast %0 : vector<32xf32> to vector<1x32xf32>
    %2 = scf.for %k = %c0 to %c64 step %c1 iter_args(%acc = %1) -> (vector<1x32xf32>) {
      %4 = vector.load %A[%c0, %k] : memref<8x64xf32>, vector<1xf32>
      %5 = vector.load %B[%k, %c0] : memref<64x32xf32>, vector<32xf32>
      %7 = vector.broadcast %(A's element) : f32 to vector<32xf32>
      %9 = vector.fma %7, %5, %(row of %acc) : vector<32xf32>
      scf.yield ...
    }
    vector.store %(row of %2), %C[%c0, %c0] : memref<8x32xf32>, vector<32xf32>
"""

from __future__ import annotations

from mlir import ir

from ..irutil import symbol_ops
from ..errors import LoweringError
from ..irbuild import apply_transform

__all__ = ["VECTOR_OPT_SCRIPT", "has_vector_ops", "optimize_vectors"]

VECTOR_OPT_SCRIPT = """
module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %funcs = transform.structured.match ops{["func.func"]} in %root
        : (!transform.any_op) -> !transform.any_op
    %linalg = transform.structured.match interface{LinalgOp} in %root
        : (!transform.any_op) -> !transform.any_op
    %scalar_loops = transform.structured.convert_to_loops %linalg
        : (!transform.any_op) -> !transform.any_op
    transform.apply_patterns to %funcs {
      transform.apply_patterns.canonicalization
      transform.apply_patterns.memref.fold_memref_alias_ops
    } : !transform.any_op
    transform.apply_cse to %funcs : !transform.any_op
    transform.apply_patterns to %funcs {
      transform.apply_patterns.canonicalization
    } : !transform.any_op
    %loops = transform.structured.match ops{["scf.for"]} in %funcs
        : (!transform.any_op) -> !transform.any_op
    transform.apply_licm to %loops : !transform.any_op
    %hoisted = transform.structured.hoist_redundant_vector_transfers %funcs
        : (!transform.any_op) -> !transform.any_op
    transform.apply_patterns to %hoisted {
      transform.apply_patterns.vector.lower_contraction lowering_strategy = "outerproduct"
      transform.apply_patterns.vector.transfer_permutation_patterns
      transform.apply_patterns.vector.lower_multi_reduction lowering_strategy = "innerparallel"
      transform.apply_patterns.vector.transfer_to_scf max_transfer_rank = 1 full_unroll = true
      transform.apply_patterns.vector.lower_transfer max_transfer_rank = 1
      transform.apply_patterns.vector.lower_shape_cast
      transform.apply_patterns.vector.lower_transpose lowering_strategy = "shuffle_1d"
    } : !transform.any_op
    transform.apply_patterns to %hoisted {
      transform.apply_patterns.vector.lower_outerproduct
      transform.apply_patterns.canonicalization
    } : !transform.any_op
    transform.apply_patterns to %hoisted {
      transform.apply_patterns.vector.cast_away_vector_leading_one_dim
      transform.apply_patterns.canonicalization
    } : !transform.any_op
    transform.yield
  }
}
"""


def has_vector_ops(module: ir.Module) -> bool:
    """Whether any op of ``module`` is in the ``vector`` dialect."""
    return _op_has_vectors(module.operation)


def optimize_vectors(module: ir.Module) -> None:
    """Apply :data:`VECTOR_OPT_SCRIPT` to ``module`` (bufferized) in place, if it has vector ops.

    Must be called inside the shared context. Raises LoweringError when the sequence fails.
    """
    if not has_vector_ops(module):
        return
    script = ir.Module.parse(VECTOR_OPT_SCRIPT)
    # one function at a time: hoisting takes exactly one function handle
    funcs = [fn for fn in symbol_ops(module, defined=True).values() if _op_has_vectors(fn)]
    for fn in funcs:
        apply_transform(fn, script, error=LoweringError, message="stage 'vector-opt' failed")


def _op_has_vectors(root: ir.Operation) -> bool:
    found = False

    def visit(op: ir.Operation) -> ir.WalkResult:
        nonlocal found
        if op.name.startswith("vector."):
            found = True
            return ir.WalkResult.INTERRUPT
        return ir.WalkResult.ADVANCE

    root.walk(visit)
    return found
