// mm_relu 128x128x128 f32 (Y = A @ B, C = max(Y, 0), fused), on threads: a hand-written transform script.
// Like mm_relu128.mlir on threads: rows [0, @SPLIT@) in @MR@x@NR@ tiles inside an scf.forall
// over blocks of @ROWS@ rows (one per thread), the other rows in @MR2@x@NR@ tiles after it on
// the calling thread (one fork/join per call; split inside the forall instead, bufferization
// copied each block through a private buffer: 3 strided copies per call).
// A template: @MR@ x @NR@ is the register tile of the target (benchmarks/matmul_schedules.py
// renders it from mlc_mlir.target.Target.register_tile: AVX2 f32 6x16 = 12 ymm accumulators
// + 2 B loads + 1 broadcast); the rows are split at @SPLIT@ so that every tile is full (partial
// tiles are not vectorized): rows [0, @SPLIT@) in @MR@x@NR@ tiles, the rest in @MR2@x@NR@ tiles.
// The matmul and its init are fused into each tile of C (reverse_compute_at inverted), k tiled
// by 1, the tiles vectorized, and the loop-invariant Y tile hoisted ON TENSORS: it becomes a
// vector iter_arg of the k loop (registers), relu runs on the registers and stores to C.
// Applied to the memref-ABI form; mlc.build finishes the lowering.
module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.consumed}) {
    %relu_all = transform.structured.match attributes {mlc.block = "C"} in %root : (!transform.any_op) -> !transform.any_op
    // rows [0, @SPLIT@) in one block per thread (scf.forall -> OpenMP), the other rows after it
    %parts = transform.structured.split %relu_all after @SPLIT@ {dimension = 0} : !transform.any_op
    %p0, %p1 = transform.split_handle %parts : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    %relu0, %fa = transform.structured.tile_using_forall %p0 tile_sizes [@ROWS@, 0]
        : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    // register tiles in each block
    %r0, %la, %lb = transform.structured.tile_using_for %relu0 tile_sizes [@MR@, @NR@]
        : (!transform.any_op) -> (!transform.any_op, !transform.any_op, !transform.any_op)
    %r1, %lc, %ld = transform.structured.tile_using_for %p1 tile_sizes [@MR2@, @NR@]
        : (!transform.any_op) -> (!transform.any_op, !transform.any_op, !transform.any_op)
    // slices of slices of Y composed: the matmul becomes the direct producer of each tile
    %fn = transform.structured.match ops{["func.func"]} in %root : (!transform.any_op) -> !transform.any_op
    transform.apply_patterns to %fn {
      transform.apply_patterns.tensor.merge_consecutive_insert_extract_slice
      transform.apply_patterns.canonicalization
    } : !transform.any_op
    // the matmul and its init fused into each tile of C (a copy into the first loop nest)
    %mmA = transform.structured.match attributes {mlc.block = "Y"} in %root : (!transform.any_op) -> !transform.any_op
    %fillA = transform.structured.match attributes {mlc.block_init = "Y"} in %root : (!transform.any_op) -> !transform.any_op
    %m0, %lb2 = transform.structured.fuse_into_containing_op %mmA into %lb
        : (!transform.any_op, !transform.any_op) -> (!transform.any_op, !transform.any_op)
    %f0, %lb3 = transform.structured.fuse_into_containing_op %fillA into %lb2
        : (!transform.any_op, !transform.any_op) -> (!transform.any_op, !transform.any_op)
    %mmsB = transform.structured.match attributes {mlc.block = "Y"} in %root : (!transform.any_op) -> !transform.any_op
    %mmB, %mmB2 = transform.split_handle %mmsB : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    %fillsB = transform.structured.match attributes {mlc.block_init = "Y"} in %root : (!transform.any_op) -> !transform.any_op
    %fillB, %fillB2 = transform.split_handle %fillsB : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    %m1, %ld2 = transform.structured.fuse_into_containing_op %mmB into %ld
        : (!transform.any_op, !transform.any_op) -> (!transform.any_op, !transform.any_op)
    %f1, %ld3 = transform.structured.fuse_into_containing_op %fillB into %ld2
        : (!transform.any_op, !transform.any_op) -> (!transform.any_op, !transform.any_op)
    %func0 = transform.structured.match ops{["func.func"]} in %root : (!transform.any_op) -> !transform.any_op
    transform.apply_patterns to %func0 {
      transform.apply_patterns.canonicalization
    } : !transform.any_op
    transform.apply_cse to %func0 : !transform.any_op
    %mms = transform.structured.match ops{["linalg.matmul"]} in %root : (!transform.any_op) -> !transform.any_op
    %mm2, %lk = transform.structured.tile_using_for %mms tile_sizes [0, 0, 1]
        : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    %func = transform.structured.match ops{["func.func"]} in %root : (!transform.any_op) -> !transform.any_op
    %lops = transform.structured.match interface{LinalgOp} in %func : (!transform.any_op) -> !transform.any_op
    transform.structured.vectorize %lops : !transform.any_op
    %vfunc = transform.structured.match ops{["func.func"]} in %root : (!transform.any_op) -> !transform.any_op
    transform.apply_patterns to %vfunc {
      transform.apply_patterns.vector.reduction_to_contract
      transform.apply_patterns.vector.transfer_permutation_patterns
      transform.apply_patterns.tensor.fold_tensor_subset_ops_into_vector_transfers
      transform.apply_patterns.canonicalization
    } : !transform.any_op
    transform.apply_cse to %vfunc : !transform.any_op
    // the Y tile, read and written in every k iteration, becomes a loop-carried vector
    %vloops = transform.structured.match ops{["scf.for"]} in %vfunc : (!transform.any_op) -> !transform.any_op
    transform.loop.hoist_loop_invariant_subsets %vloops : !transform.any_op
    transform.apply_patterns to %vfunc {
      transform.apply_patterns.canonicalization
    } : !transform.any_op
    transform.apply_cse to %vfunc : !transform.any_op
    %broot = transform.bufferization.one_shot_bufferize %root
        : (!transform.any_op) -> !transform.any_op
    %bfunc = transform.structured.match ops{["func.func"]} in %broot : (!transform.any_op) -> !transform.any_op
    transform.apply_patterns to %bfunc {
      transform.apply_patterns.canonicalization
    } : !transform.any_op
    transform.apply_cse to %bfunc : !transform.any_op
    %bloops = transform.structured.match ops{["scf.for"]} in %bfunc : (!transform.any_op) -> !transform.any_op
    transform.apply_licm to %bloops : !transform.any_op
    %hfunc = transform.structured.hoist_redundant_vector_transfers %bfunc
        : (!transform.any_op) -> !transform.any_op
    transform.apply_patterns to %hfunc {
      transform.apply_patterns.vector.lower_contraction lowering_strategy = "outerproduct"
      transform.apply_patterns.vector.transfer_permutation_patterns
      transform.apply_patterns.vector.lower_multi_reduction lowering_strategy = "innerparallel"
      transform.apply_patterns.vector.transfer_to_scf max_transfer_rank = 1 full_unroll = true
      transform.apply_patterns.vector.lower_transfer max_transfer_rank = 1
      transform.apply_patterns.vector.lower_shape_cast
      transform.apply_patterns.vector.lower_transpose lowering_strategy = "shuffle_1d"
    } : !transform.any_op
    transform.apply_patterns to %hfunc {
      transform.apply_patterns.vector.lower_outerproduct
      transform.apply_patterns.vector.lower_broadcast
      transform.apply_patterns.canonicalization
    } : !transform.any_op
    transform.apply_patterns to %hfunc {
      transform.apply_patterns.vector.cast_away_vector_leading_one_dim
      transform.apply_patterns.canonicalization
    } : !transform.any_op
    transform.yield
  }
}
