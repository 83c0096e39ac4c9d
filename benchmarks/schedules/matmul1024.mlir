// matmul 1024x1024x1024 f32: a hand-written schedule as a transform script.
// Cache blocking 256x256 (scf.forall -> OpenMP threads), k blocking 256, @MR@x@NR@ register tile
// (a template: benchmarks/matmul_schedules.py renders the target's tile, e.g. 4x16 on AVX2),
// B packed (nofold pad + hoist_pad), vectorized, accumulators hoisted, outer-product FMAs.
// Applied to the memref-ABI form (the script bufferizes); mlc.build finishes the lowering.
// Used by benchmarks/bench_matmul.py and tests/python/test_bench_schedules.py.
module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.consumed}) {
    %mm = transform.structured.match ops{["linalg.matmul"]} in %root : (!transform.any_op) -> !transform.any_op
    %fill = transform.structured.match ops{["linalg.fill"]} in %root : (!transform.any_op) -> !transform.any_op
    // L1 (threads / L2 cache): MCxNC = 256x256 output blocks in an scf.forall (OpenMP threads)
    %mm1, %forall = transform.structured.tile_using_forall %mm tile_sizes [256, 256]
        : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    %fill1, %forall1 = transform.structured.fuse_into_containing_op %fill into %forall
        : (!transform.any_op, !transform.any_op) -> (!transform.any_op, !transform.any_op)
    // L2 (k blocking): KC
    %mm2, %lk = transform.structured.tile_using_for %mm1 tile_sizes [0, 0, 256]
        : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    // register tile MRxNR from the target (AVX2 f32: 4x16 = 8 ymm accumulators; AVX-512: 8x32), then k by 1
    %mm3, %li, %lj = transform.structured.tile_using_for %mm2 tile_sizes [@MR@, @NR@, 0] : (!transform.any_op) -> (!transform.any_op, !transform.any_op, !transform.any_op)
    %mm3p, %pad, %cpy = transform.structured.pad %mm3 {padding_values = [0.0 : f32, 0.0 : f32, 0.0 : f32], padding_dimensions = [0, 1, 2], nofold_flags = [0, 1, 0], copy_back_op = "none"} : (!transform.any_op) -> (!transform.any_op, !transform.any_op, !transform.any_op)
    %p_b = transform.get_producer_of_operand %mm3p[1] : (!transform.any_op) -> !transform.any_op
    %h_b = transform.structured.hoist_pad %p_b by 2 loops : (!transform.any_op) -> !transform.any_op

    %mm4, %lkr = transform.structured.tile_using_for %mm3p tile_sizes [0, 0, 1]
        : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    %fill2, %lfi, %lfj = transform.structured.tile_using_for %fill1 tile_sizes [@MR@, @NR@]
        : (!transform.any_op) -> (!transform.any_op, !transform.any_op, !transform.any_op)
    // vectorize (matmul tile -> vector.contract, fill tile -> vector.transfer_write)
    %func = transform.structured.match ops{["func.func"]} in %root : (!transform.any_op) -> !transform.any_op
    %vfunc = transform.structured.vectorize_children_and_apply_patterns %func {vectorize_padding}
        : (!transform.any_op) -> !transform.any_op
    // bufferize the whole module (consumes %root)
    %broot = transform.bufferization.one_shot_bufferize %root
        : (!transform.any_op) -> !transform.any_op
    %bfunc = transform.structured.match ops{["func.func"]} in %broot : (!transform.any_op) -> !transform.any_op
    transform.apply_patterns to %bfunc {
      transform.apply_patterns.canonicalization
      transform.apply_patterns.memref.fold_memref_alias_ops
    } : !transform.any_op
    transform.apply_cse to %bfunc : !transform.any_op
    // 2nd canonicalization after CSE folds the self `memref.copy %sv, %sv` left by bufferizing
    // scf.forall/parallel_insert_slice (its subview blocks the hoisting below)
    transform.apply_patterns to %bfunc {
      transform.apply_patterns.canonicalization
    } : !transform.any_op
    %bloops = transform.structured.match ops{["scf.for"]} in %bfunc : (!transform.any_op) -> !transform.any_op
    transform.apply_licm to %bloops : !transform.any_op
    // keep the MRxNR accumulator in registers across the k loops
    %hfunc = transform.structured.hoist_redundant_vector_transfers %bfunc
        : (!transform.any_op) -> !transform.any_op
    transform.apply_patterns to %hfunc {
      transform.apply_patterns.vector.lower_contraction lowering_strategy = "outerproduct"
      transform.apply_patterns.vector.transfer_permutation_patterns
      transform.apply_patterns.vector.lower_multi_reduction lowering_strategy = "innerparallel"
      transform.apply_patterns.vector.split_transfer_full_partial split_transfer_strategy = "linalg-copy"
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
