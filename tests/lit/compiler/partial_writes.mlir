// RUN: mlc-opt %s --mlc-partial-writes | filecheck %s
// RUN: mlc-opt %s --mlc-partial-writes --one-shot-bufferize="bufferize-function-boundaries=1" | filecheck %s --check-prefix=BUF

// Two row chains from one zero tensor (two rfactor-ed row sums whose rows are unrolled,
// topi.nn.layer_norm's sum and sum of squares). Upstream's bufferization model of
// vector.transfer_write compares tensor<3x8xf32> with vector<8xf32> pairwise (3 <= 8) and
// takes the write of row 0 for a write of the whole tensor: without this stage the second
// chain reuses the first chain's buffer without a copy and reads its rows 1 and 2.
// CHECK-LABEL: func.func @two_chains
// CHECK: %[[Z:.+]] = arith.index_cast %{{.+}} : i64 to index
// CHECK: vector.transfer_write %{{.+}}, %{{.+}}[%[[Z]], %{{.+}}] {{.*}} : vector<8xf32>, tensor<3x8xf32>
// CHECK: vector.transfer_write %{{.+}}, %{{.+}}[%c1, %c0] {{.*}} : vector<8xf32>, tensor<3x8xf32>
// BUF-LABEL: func.func @two_chains
// BUF: %[[Z0:.+]] = memref.alloc() {{.*}} : memref<3x8xf32>
// BUF: %[[COPY:.+]] = memref.alloc() {{.*}} : memref<3x8xf32>
// BUF: memref.copy %[[Z0]], %[[COPY]]
func.func @two_chains(%v: vector<8xf32>, %w: vector<8xf32>) -> (tensor<3x8xf32>, tensor<3x8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zeros = arith.constant dense<0.0> : vector<3x8xf32>
  %e = tensor.empty() : tensor<3x8xf32>
  %z = vector.transfer_write %zeros, %e[%c0, %c0] {in_bounds = [true, true]} : vector<3x8xf32>, tensor<3x8xf32>
  %a0 = vector.transfer_write %v, %z[%c0, %c0] {in_bounds = [true]} : vector<8xf32>, tensor<3x8xf32>
  %a1 = vector.transfer_write %v, %a0[%c1, %c0] {in_bounds = [true]} : vector<8xf32>, tensor<3x8xf32>
  %b0 = vector.transfer_write %w, %z[%c0, %c0] {in_bounds = [true]} : vector<8xf32>, tensor<3x8xf32>
  return %a1, %b0 : tensor<3x8xf32>, tensor<3x8xf32>
}

// A write that covers its whole destination keeps its constant indices (no copy needed).
// CHECK-LABEL: func.func @whole
// CHECK-NOT: arith.index_cast
// CHECK: vector.transfer_write %{{.+}}, %{{.+}}[%c0, %c0] {{.*}} : vector<3x8xf32>, tensor<3x8xf32>
func.func @whole(%t: tensor<3x8xf32>, %v: vector<3x8xf32>) -> tensor<3x8xf32> {
  %c0 = arith.constant 0 : index
  %r = vector.transfer_write %v, %t[%c0, %c0] {in_bounds = [true, true]} : vector<3x8xf32>, tensor<3x8xf32>
  return %r : tensor<3x8xf32>
}
