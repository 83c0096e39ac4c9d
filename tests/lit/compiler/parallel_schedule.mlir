// RUN: mlc-opt %s --mlc-lower-to-llvm | filecheck %s

// A parallel loop becomes an OpenMP loop whose iterations go to the threads in shrinking
// chunks (schedule guided: a core that finishes early takes what is left), not in one
// contiguous share per thread.
// CHECK-LABEL: llvm.func @double_rows
// CHECK: omp.parallel
// CHECK: omp.wsloop schedule(guided)
// CHECK-NOT: scf.forall
func.func @double_rows(%a: tensor<64x16xf32>, %b: tensor<64x16xf32>) -> tensor<64x16xf32> {
  %r = scf.forall (%i) in (64) shared_outs(%o = %b) -> (tensor<64x16xf32>) {
    %row = tensor.extract_slice %a[%i, 0] [1, 16] [1, 1] : tensor<64x16xf32> to tensor<1x16xf32>
    %out = tensor.extract_slice %o[%i, 0] [1, 16] [1, 1] : tensor<64x16xf32> to tensor<1x16xf32>
    %d = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
                         iterator_types = ["parallel", "parallel"]}
        ins(%row : tensor<1x16xf32>) outs(%out : tensor<1x16xf32>) {
    ^bb0(%x: f32, %y: f32):
      %s = arith.addf %x, %x : f32
      linalg.yield %s : f32
    } -> tensor<1x16xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %d into %o[%i, 0] [1, 16] [1, 1] : tensor<1x16xf32> into tensor<64x16xf32>
    }
  }
  return %r : tensor<64x16xf32>
}
