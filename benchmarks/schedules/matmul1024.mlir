// matmul NxNxN f32 (N = 1024 in the benchmark): a hand-written schedule as a transform script,
// the structure of a BLAS kernel (a template: benchmarks/matmul_schedules.py renders it for the
// target; Target.register_tile gives MR x NR, e.g. AVX2 f32 6x16 = 12 ymm accumulators + 2 B
// loads + 1 broadcast, AVX-512 14x32):
//   rows [0, @SPLIT@) (a multiple of MR x threads) in full MR x NR tiles, the other @REST@ rows
//     in @MR2@ x NR tiles (a partial tile would not be vectorized);
//   scf.forall over blocks of @ROWS@ rows (one per core; OpenMP threads);
//   NC = @NC@ columns, then KC = @KC@ of k (L2 blocking: the B panel KC x NC, packed);
//   MR x NR register tiles, rows outer, columns inner: the MR x KC micro-panel of A stays in
//     L1 while the packed B panel streams from L2;
//   B packed: the KC x NR tile of each column tile padded with a nofold pad, hoisted out of the
//     two register-tile loops (hoist_pad): one contiguous [NC/NR][KC][NR] buffer per (NC, KC) block;
//   k by 1, vectorized: per k step MR broadcasts of A, 2 loads of packed B, MR x NR/lanes FMAs;
//     the accumulators hoisted out of the k loop (registers), stored once per KC block.
// Applied to the memref-ABI form (the script bufferizes); mlc.build finishes the lowering.
// Used by benchmarks/bench_matmul.py and tests/python/test_bench_schedules.py.
module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.consumed}) {
    %mm = transform.structured.match ops{["linalg.matmul"]} in %root : (!transform.any_op) -> !transform.any_op
    %fill = transform.structured.match ops{["linalg.fill"]} in %root : (!transform.any_op) -> !transform.any_op
    %parts = transform.structured.split %mm after @SPLIT@ {dimension = 0} : !transform.any_op
    %main, %rest = transform.split_handle %parts : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    %m1, %forall = transform.structured.tile_using_forall %main tile_sizes [@ROWS@, 0]
        : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    %m2, %ljc = transform.structured.tile_using_for %m1 tile_sizes [0, @NC@, 0]
        : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    %m3, %lpc = transform.structured.tile_using_for %m2 tile_sizes [0, 0, @KC@]
        : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    %m6, %lir, %ljr = transform.structured.tile_using_for %m3 tile_sizes [@MR@, @NR@, 0]
        : (!transform.any_op) -> (!transform.any_op, !transform.any_op, !transform.any_op)
    %m6p, %pad, %cpy = transform.structured.pad %m6 {padding_values = [0.0 : f32, 0.0 : f32, 0.0 : f32], padding_dimensions = [0, 1, 2], nofold_flags = [0, 1, 0], copy_back_op = "none"} : (!transform.any_op) -> (!transform.any_op, !transform.any_op, !transform.any_op)
    %p_b = transform.get_producer_of_operand %m6p[1] : (!transform.any_op) -> !transform.any_op
    %h_b = transform.structured.hoist_pad %p_b by 2 loops : (!transform.any_op) -> !transform.any_op
    %m7, %lkr = transform.structured.tile_using_for %m6p tile_sizes [0, 0, 1]
        : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    %r1, %lri, %lrj = transform.structured.tile_using_for %rest tile_sizes [@MR2@, @NR@, 0]
        : (!transform.any_op) -> (!transform.any_op, !transform.any_op, !transform.any_op)
    %r2, %lrk = transform.structured.tile_using_for %r1 tile_sizes [0, 0, 1]
        : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    // the init: 1 x NR vector stores (divides any N that NR divides)
    %fill2, %lfi, %lfj = transform.structured.tile_using_for %fill tile_sizes [1, @NR@]
        : (!transform.any_op) -> (!transform.any_op, !transform.any_op, !transform.any_op)
    %func = transform.structured.match ops{["func.func"]} in %root : (!transform.any_op) -> !transform.any_op
    %vfunc = transform.structured.vectorize_children_and_apply_patterns %func {vectorize_padding}
        : (!transform.any_op) -> !transform.any_op
    %broot = transform.bufferization.one_shot_bufferize %root
        : (!transform.any_op) -> !transform.any_op
    %bfunc = transform.structured.match ops{["func.func"]} in %broot : (!transform.any_op) -> !transform.any_op
    transform.apply_patterns to %bfunc {
      transform.apply_patterns.canonicalization
      transform.apply_patterns.memref.fold_memref_alias_ops
    } : !transform.any_op
    transform.apply_cse to %bfunc : !transform.any_op
    transform.apply_patterns to %bfunc {
      transform.apply_patterns.canonicalization
    } : !transform.any_op
    %bloops = transform.structured.match ops{["scf.for"]} in %bfunc : (!transform.any_op) -> !transform.any_op
    transform.apply_licm to %bloops : !transform.any_op
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
