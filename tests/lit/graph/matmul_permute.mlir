// RUN: mlc-opt %s --split-input-file --mlc-rewrite-matmul-permute --mlc-remove-unused | filecheck %s

// A transpose that keeps the last dim, before a matmul by a matrix (nn.MultiheadAttention
// with batch_first=True: its input seq-first before the q/k/v projection), moves after the
// matmul: the projection runs on the batch-first input, its rows as one dim (the reshapes
// are views once built).
// CHECK-LABEL: func.func @main
// CHECK: %[[X:.+]] = "mlc.reshape"(%arg0) : (tensor<2x5x8xf32>) -> tensor<10x8xf32>
// CHECK-NEXT: %[[M:.+]] = "mlc.matmul"(%[[X]], %arg1) : (tensor<10x8xf32>, tensor<8x12xf32>) -> tensor<10x12xf32>
// CHECK-NEXT: %[[R:.+]] = "mlc.reshape"(%[[M]]) : (tensor<10x12xf32>) -> tensor<2x5x12xf32>
// CHECK-NEXT: %[[T:.+]] = "mlc.permute_dims"(%[[R]]) {axes = array<i64: 1, 0, 2>} : (tensor<2x5x12xf32>) -> tensor<5x2x12xf32>
// CHECK-NEXT: "mlc.add"(%[[T]], %arg2)
func.func @main(%x: tensor<2x5x8xf32>, %w: tensor<8x12xf32>, %b: tensor<12xf32>) -> tensor<5x2x12xf32> attributes {mlc.graph} {
  %0 = "mlc.dataflow"() ({
    %1 = "mlc.permute_dims"(%x) {axes = array<i64: 1, 0, 2>} : (tensor<2x5x8xf32>) -> tensor<5x2x8xf32>
    %2 = "mlc.matmul"(%1, %w) : (tensor<5x2x8xf32>, tensor<8x12xf32>) -> tensor<5x2x12xf32>
    %3 = "mlc.add"(%2, %b) : (tensor<5x2x12xf32>, tensor<12xf32>) -> tensor<5x2x12xf32>
    "mlc.output"(%3) {operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<5x2x12xf32>) -> ()
    omp.terminator
  }) {resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : () -> tensor<5x2x12xf32>
  return %0 : tensor<5x2x12xf32>
}

// -----

// Left alone: the transpose moves the last dim (the matmul reads its columns)...
// CHECK-LABEL: func.func @kept_last_dim
// CHECK: "mlc.permute_dims"(%arg0) {axes = array<i64: 0, 2, 1>}
// CHECK-NEXT: "mlc.matmul"
func.func @kept_last_dim(%x: tensor<2x8x8xf32>, %w: tensor<8x12xf32>) -> tensor<2x8x12xf32> attributes {mlc.graph} {
  %0 = "mlc.dataflow"() ({
    %1 = "mlc.permute_dims"(%x) {axes = array<i64: 0, 2, 1>} : (tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
    %2 = "mlc.matmul"(%1, %w) : (tensor<2x8x8xf32>, tensor<8x12xf32>) -> tensor<2x8x12xf32>
    "mlc.output"(%2) {operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<2x8x12xf32>) -> ()
    omp.terminator
  }) {resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : () -> tensor<2x8x12xf32>
  return %0 : tensor<2x8x12xf32>
}

// -----

// ...or the right side is batched.
// CHECK-LABEL: func.func @kept_batched
// CHECK: "mlc.permute_dims"(%arg0) {axes = array<i64: 1, 0, 2>}
// CHECK-NEXT: "mlc.matmul"
func.func @kept_batched(%x: tensor<2x8x8xf32>, %wb: tensor<8x8x12xf32>) -> tensor<8x2x12xf32> attributes {mlc.graph} {
  %0 = "mlc.dataflow"() ({
    %1 = "mlc.permute_dims"(%x) {axes = array<i64: 1, 0, 2>} : (tensor<2x8x8xf32>) -> tensor<8x2x8xf32>
    %2 = "mlc.matmul"(%1, %wb) : (tensor<8x2x8xf32>, tensor<8x8x12xf32>) -> tensor<8x2x12xf32>
    "mlc.output"(%2) {operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<8x2x12xf32>) -> ()
    omp.terminator
  }) {resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : () -> tensor<8x2x12xf32>
  return %0 : tensor<8x2x12xf32>
}

// -----

// A symbolic batch: the transpose moves after the matmul, which stays batched.
// CHECK-LABEL: func.func @symbolic
// CHECK: %[[M:.+]] = "mlc.matmul"(%arg0, %arg1) {{.*}}(tensor<?x5x8xf32>, tensor<8x12xf32>) -> tensor<?x5x12xf32>
// CHECK-NEXT: "mlc.permute_dims"(%[[M]]) {axes = array<i64: 1, 0, 2>
func.func @symbolic(%x: tensor<?x5x8xf32> {mlc.shape = ["n", 5, 8]}, %w: tensor<8x12xf32>) -> tensor<5x?x12xf32> attributes {mlc.graph} {
  %0 = "mlc.dataflow"() ({
    %1 = "mlc.permute_dims"(%x) {axes = array<i64: 1, 0, 2>, mlc.shape = [5, "n", 8]} : (tensor<?x5x8xf32>) -> tensor<5x?x8xf32>
    %2 = "mlc.matmul"(%1, %w) {mlc.shape = [5, "n", 12]} : (tensor<5x?x8xf32>, tensor<8x12xf32>) -> tensor<5x?x12xf32>
    "mlc.output"(%2) {operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<5x?x12xf32>) -> ()
    omp.terminator
  }) {resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : () -> tensor<5x?x12xf32>
  return %0 : tensor<5x?x12xf32>
}
