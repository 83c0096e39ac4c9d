// RUN: mlc-opt %s --split-input-file --mlc-transpose-conv-weights | filecheck %s

// A 3x3 convolution whose output has 10 x 10 = 100 pixels per image (no multiple of the
// 16-column register tile) gets its constant weight stored (C, KH, KW, F) behind a
// permute_dims back to OIHW (graph/transform/conv_weights.py): the convolution's gemm then
// takes the pixels as rows, and the transpose, fused into the kernel, is never computed.
// CHECK-LABEL: func.func @main
// CHECK: %[[WT:.+]] = "mlc.constant"() {value = dense_resource<[[BLOB:.+]]> : tensor<2x3x3x8xf32>} : () -> tensor<2x3x3x8xf32>
// CHECK-NEXT: %[[W:.+]] = "mlc.permute_dims"(%[[WT]]) {axes = array<i64: 3, 0, 1, 2>} : (tensor<2x3x3x8xf32>) -> tensor<8x2x3x3xf32>
// CHECK-NEXT: "mlc.conv2d"(%arg0, %[[W]])
// CHECK-NOT: tensor<8x2x3x3xf32>} : () ->
// Its data: wt[c, y, x, f] = w[f, c, y, x], eight 1.0 (all f at c = y = x = 0), then eight 2.0.
// CHECK: [[BLOB]]: "0x080000000000803F0000803F0000803F0000803F0000803F0000803F0000803F0000803F0000004000000040000000400000004000000040000000400000004000000040
func.func @main(%x: tensor<1x2x10x10xf32>) -> tensor<1x8x10x10xf32> attributes {mlc.graph} {
  %0 = "mlc.dataflow"() ({
    %1 = "mlc.constant"() {value = dense<[[[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]], [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]]], [[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]], [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]]], [[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]], [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]]], [[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]], [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]]], [[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]], [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]]], [[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]], [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]]], [[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]], [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]]], [[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]], [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]]]]> : tensor<8x2x3x3xf32>} : () -> tensor<8x2x3x3xf32>
    %2 = "mlc.conv2d"(%x, %1) {dilation = array<i64: 1, 1>, groups = 1 : i64, padding = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<1x2x10x10xf32>, tensor<8x2x3x3xf32>) -> tensor<1x8x10x10xf32>
    "mlc.output"(%2) {operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<1x8x10x10xf32>) -> ()
    omp.terminator
  }) {resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : () -> tensor<1x8x10x10xf32>
  return %0 : tensor<1x8x10x10xf32>
}

// -----

// Left alone: 8 x 8 = 64 pixels (MIN_PIXELS), 16 x 16 (a multiple of the tile), a 1x1
// kernel, a weight that is no constant.
// CHECK-LABEL: func.func @few_pixels
// CHECK-NOT: mlc.permute_dims
// CHECK: return
func.func @few_pixels(%x: tensor<1x2x8x8xf32>) -> tensor<1x8x8x8xf32> attributes {mlc.graph} {
  %0 = "mlc.dataflow"() ({
    %1 = "mlc.constant"() {value = dense<1.0> : tensor<8x2x3x3xf32>} : () -> tensor<8x2x3x3xf32>
    %2 = "mlc.conv2d"(%x, %1) {dilation = array<i64: 1, 1>, groups = 1 : i64, padding = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<1x2x8x8xf32>, tensor<8x2x3x3xf32>) -> tensor<1x8x8x8xf32>
    "mlc.output"(%2) {operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<1x8x8x8xf32>) -> ()
    omp.terminator
  }) {resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : () -> tensor<1x8x8x8xf32>
  return %0 : tensor<1x8x8x8xf32>
}

// CHECK-LABEL: func.func @whole_tiles
// CHECK-NOT: mlc.permute_dims
// CHECK: return
func.func @whole_tiles(%x: tensor<1x2x16x16xf32>) -> tensor<1x8x16x16xf32> attributes {mlc.graph} {
  %0 = "mlc.dataflow"() ({
    %1 = "mlc.constant"() {value = dense<1.0> : tensor<8x2x3x3xf32>} : () -> tensor<8x2x3x3xf32>
    %2 = "mlc.conv2d"(%x, %1) {dilation = array<i64: 1, 1>, groups = 1 : i64, padding = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<1x2x16x16xf32>, tensor<8x2x3x3xf32>) -> tensor<1x8x16x16xf32>
    "mlc.output"(%2) {operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<1x8x16x16xf32>) -> ()
    omp.terminator
  }) {resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : () -> tensor<1x8x16x16xf32>
  return %0 : tensor<1x8x16x16xf32>
}

// CHECK-LABEL: func.func @one_by_one
// CHECK-NOT: mlc.permute_dims
// CHECK: return
func.func @one_by_one(%x: tensor<1x2x10x10xf32>) -> tensor<1x8x10x10xf32> attributes {mlc.graph} {
  %0 = "mlc.dataflow"() ({
    %1 = "mlc.constant"() {value = dense<1.0> : tensor<8x2x1x1xf32>} : () -> tensor<8x2x1x1xf32>
    %2 = "mlc.conv2d"(%x, %1) {dilation = array<i64: 1, 1>, groups = 1 : i64, padding = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x2x10x10xf32>, tensor<8x2x1x1xf32>) -> tensor<1x8x10x10xf32>
    "mlc.output"(%2) {operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<1x8x10x10xf32>) -> ()
    omp.terminator
  }) {resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : () -> tensor<1x8x10x10xf32>
  return %0 : tensor<1x8x10x10xf32>
}

// CHECK-LABEL: func.func @argument_weight
// CHECK-NOT: mlc.permute_dims
// CHECK: return
func.func @argument_weight(%x: tensor<1x2x10x10xf32>, %1: tensor<8x2x3x3xf32>) -> tensor<1x8x10x10xf32> attributes {mlc.graph} {
  %0 = "mlc.dataflow"() ({
    %2 = "mlc.conv2d"(%x, %1) {dilation = array<i64: 1, 1>, groups = 1 : i64, padding = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<1x2x10x10xf32>, tensor<8x2x3x3xf32>) -> tensor<1x8x10x10xf32>
    "mlc.output"(%2) {operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<1x8x10x10xf32>) -> ()
    omp.terminator
  }) {resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : () -> tensor<1x8x10x10xf32>
  return %0 : tensor<1x8x10x10xf32>
}
