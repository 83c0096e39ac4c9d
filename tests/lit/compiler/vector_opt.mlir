// RUN: mlc-opt %s --mlc-vector-opt | filecheck %s

// The build's vector-opt stage on a bufferized 1x32 register tile (one row of a scheduled
// 8x32 matmul tile): the accumulator row is read before the k loop, carried in a register
// and written after it; the contraction becomes a broadcast of A's element and one FMA
// on vector<32xf32>.
// CHECK-LABEL: func.func @row_tile
// CHECK: %[[ACC0:.+]] = vector.load %{{.+}}[%{{.+}}, %{{.+}}] : memref<8x32xf32>, vector<32xf32>
// CHECK: %[[ACC:.+]] = scf.for %{{.+}} = %{{.+}} to %{{.+}} step %{{.+}} iter_args(%[[IT:.+]] = %{{.+}})
// CHECK-NOT: vector.transfer_read %{{.+}}memref<8x32xf32>
// CHECK: %[[A:.+]] = vector.broadcast %{{.+}} : f32 to vector<32xf32>
// CHECK: vector.fma %[[A]], %{{.+}}, %{{.+}} : vector<32xf32>
// CHECK: scf.yield
// CHECK: vector.store %{{.+}}, %{{.+}} : memref<8x32xf32>, vector<32xf32>
// CHECK-NOT: vector.contract
func.func @row_tile(%A: memref<8x64xf32>, %B: memref<64x32xf32>, %C: memref<8x32xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %pad = ub.poison : f32
  scf.for %k = %c0 to %c64 step %c1 {
    %a = vector.transfer_read %A[%c0, %k], %pad {in_bounds = [true, true]} : memref<8x64xf32>, vector<1x1xf32>
    %b = vector.transfer_read %B[%k, %c0], %pad {in_bounds = [true, true]} : memref<64x32xf32>, vector<1x32xf32>
    %c = vector.transfer_read %C[%c0, %c0], %pad {in_bounds = [true, true]} : memref<8x32xf32>, vector<1x32xf32>
    %r = vector.contract {indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (k, n)>,
                                           affine_map<(m, n, k) -> (m, n)>],
                          iterator_types = ["parallel", "parallel", "reduction"], kind = #vector.kind<add>}
         %a, %b, %c : vector<1x1xf32>, vector<1x32xf32> into vector<1x32xf32>
    vector.transfer_write %r, %C[%c0, %c0] {in_bounds = [true, true]} : vector<1x32xf32>, memref<8x32xf32>
  }
  return
}
