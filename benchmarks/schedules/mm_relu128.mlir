// mm_relu 128x128x128 f32: a hand-written schedule as a transform script.
// Tile the consumer C (relu) 8x32, fuse the producer Y (matmul) and its init into that tile
// (the course's reverse_compute_at, inverted), tile k by 1, vectorize the tiles, then
// bufferize and hoist the 8x32 accumulator into registers across the k loop.
// Applied to the memref-ABI form; mlc.build finishes the lowering.
module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.consumed}) {
    %relu = transform.structured.match attributes {mlc.block = "C"} in %root : (!transform.any_op) -> !transform.any_op
    %mm = transform.structured.match attributes {mlc.block = "Y"} in %root : (!transform.any_op) -> !transform.any_op
    %fill = transform.structured.match attributes {mlc.block_init = "Y"} in %root : (!transform.any_op) -> !transform.any_op
    %relu1, %li, %lj = transform.structured.tile_using_for %relu tile_sizes [8, 32]
        : (!transform.any_op) -> (!transform.any_op, !transform.any_op, !transform.any_op)
    %mm1, %lj2 = transform.structured.fuse_into_containing_op %mm into %lj
        : (!transform.any_op, !transform.any_op) -> (!transform.any_op, !transform.any_op)
    %fill1, %lj3 = transform.structured.fuse_into_containing_op %fill into %lj2
        : (!transform.any_op, !transform.any_op) -> (!transform.any_op, !transform.any_op)
    %mm2, %lk = transform.structured.tile_using_for %mm1 tile_sizes [0, 0, 1]
        : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    %func = transform.structured.match ops{["func.func"]} in %root : (!transform.any_op) -> !transform.any_op
    %vfunc = transform.structured.vectorize_children_and_apply_patterns %func
        : (!transform.any_op) -> !transform.any_op
    %broot = transform.bufferization.one_shot_bufferize %root
        : (!transform.any_op) -> !transform.any_op
    %bfunc = transform.structured.match ops{["func.func"]} in %broot : (!transform.any_op) -> !transform.any_op
    transform.apply_patterns to %bfunc {
      transform.apply_patterns.canonicalization
    } : !transform.any_op
    transform.apply_cse to %bfunc : !transform.any_op
    %loops = transform.structured.match ops{["scf.for"]} in %bfunc : (!transform.any_op) -> !transform.any_op
    transform.apply_licm to %loops : !transform.any_op
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
    transform.yield
  }
}
