// RUN: mlc-opt %s --split-input-file --mlc-fuse-dense-add | filecheck %s

// The course's FuseDenseAddPass on MLPModel: each matmul + add moves into a primitive
// function fused_matmul_add<k> (params x, w, b) called with func.call; the permute_dims
// and the relu stay in main, and the dead matmuls are removed.
// CHECK-LABEL: func.func private @fused_matmul_add0
// CHECK-SAME: (%[[X:[^:]+]]: tensor<1x8xf32> {mlc.name = "x"}, %[[W:[^:]+]]: tensor<8x16xf32> {mlc.name = "w"}, %[[B:[^:]+]]: tensor<16xf32> {mlc.name = "b"}) -> tensor<1x16xf32>
// CHECK-SAME: attributes {mlc.graph, mlc.primitive}
// CHECK: %[[MM:.+]] = "mlc.matmul"(%[[X]], %[[W]])
// CHECK: %[[ADD:.+]] = "mlc.add"(%[[MM]], %[[B]])
// CHECK: return %[[ADD]]
// CHECK-LABEL: func.func private @fused_matmul_add1
// CHECK-SAME: -> tensor<1x4xf32> attributes {mlc.graph, mlc.primitive}
// CHECK-LABEL: func.func @main
// CHECK-SAME: (%[[IN:[^:]+]]: tensor<1x8xf32>
// CHECK: %[[T0:.+]] = "mlc.permute_dims"
// CHECK: %[[F0:.+]] = func.call @fused_matmul_add0(%[[IN]], %[[T0]], %{{.+}}) : (tensor<1x8xf32>, tensor<8x16xf32>, tensor<16xf32>) -> tensor<1x16xf32>
// CHECK: %[[R:.+]] = "mlc.relu"(%[[F0]])
// CHECK: %[[F1:.+]] = func.call @fused_matmul_add1(%[[R]],
// CHECK-NOT: "mlc.matmul"
// CHECK: "mlc.output"(%[[F1]])
func.func @main(%x: tensor<1x8xf32> {mlc.name = "x"}, %w0: tensor<16x8xf32> {mlc.name = "w0"}, %b0: tensor<16xf32> {mlc.name = "b0"},
                %w1: tensor<4x16xf32> {mlc.name = "w1"}, %b1: tensor<4xf32> {mlc.name = "b1"}) -> tensor<1x4xf32> attributes {mlc.graph} {
  %gv = "mlc.dataflow"() ({
    %lv0 = "mlc.permute_dims"(%w0) {axes = array<i64: 1, 0>} : (tensor<16x8xf32>) -> tensor<8x16xf32>
    %lv1 = "mlc.matmul"(%x, %lv0) : (tensor<1x8xf32>, tensor<8x16xf32>) -> tensor<1x16xf32>
    %lv2 = "mlc.add"(%lv1, %b0) : (tensor<1x16xf32>, tensor<16xf32>) -> tensor<1x16xf32>
    %lv3 = "mlc.relu"(%lv2) : (tensor<1x16xf32>) -> tensor<1x16xf32>
    %lv4 = "mlc.permute_dims"(%w1) {axes = array<i64: 1, 0>} : (tensor<4x16xf32>) -> tensor<16x4xf32>
    %lv5 = "mlc.matmul"(%lv3, %lv4) : (tensor<1x16xf32>, tensor<16x4xf32>) -> tensor<1x4xf32>
    %lv6 = "mlc.add"(%lv5, %b1) : (tensor<1x4xf32>, tensor<4xf32>) -> tensor<1x4xf32>
    "mlc.output"(%lv6) {operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<1x4xf32>) -> ()
    "omp.terminator"() : () -> ()
  }) {resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : () -> tensor<1x4xf32>
  return %gv : tensor<1x4xf32>
}

// -----

// Not fused (the course's warning): a matmul with two users (fusing it into both adds
// would compute it twice), and a matmul from another dataflow block.
// CHECK-NOT: mlc.primitive
// CHECK-LABEL: func.func @shared
// CHECK-NOT: func.call
// CHECK: %[[MM:.+]] = "mlc.matmul"
// CHECK: "mlc.add"(%[[MM]],
// CHECK: "mlc.add"(%[[MM]],
// CHECK: %[[MM2:.+]] = "mlc.matmul"
// CHECK: "mlc.dataflow"
// CHECK: "mlc.add"(%{{.+}}, %{{.+}})
// CHECK-NOT: func.call
func.func @shared(%x: tensor<2x3xf32>, %w: tensor<3x3xf32>, %b: tensor<3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>) {
  %gv:3 = "mlc.dataflow"() ({
    %lv0 = "mlc.matmul"(%x, %w) : (tensor<2x3xf32>, tensor<3x3xf32>) -> tensor<2x3xf32>
    %lv1 = "mlc.add"(%lv0, %b) : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
    %lv2 = "mlc.add"(%lv0, %x) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
    %lv3 = "mlc.matmul"(%x, %w) : (tensor<2x3xf32>, tensor<3x3xf32>) -> tensor<2x3xf32>
    "mlc.output"(%lv1, %lv2, %lv3) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>} : (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>) -> ()
    "omp.terminator"() : () -> ()
  }) {resultSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>} : () -> (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>)
  %gv3 = "mlc.dataflow"() ({
    %lv4 = "mlc.add"(%gv#2, %b) : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
    "mlc.output"(%lv4) {operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<2x3xf32>) -> ()
    "omp.terminator"() : () -> ()
  }) {resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : () -> tensor<2x3xf32>
  return %gv#0, %gv#1, %gv3 : tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>
}
