// RUN: mlc-opt %s --mlc-verify-graph | filecheck %s
// RUN: mlc-opt %s --mlc-verify-graph --mlir-print-op-generic | mlc-opt --mlc-verify-graph | filecheck %s

// The course's MLP (ch.3) in the mlc dialect's generic form: a dataflow region ending in
// mlc.output + omp.terminator, call_tir of a tensor program, call_dps of an environment
// function, and graph ops. It parses, verifies and round-trips.

// CHECK-LABEL: func.func private @linear0
func.func private @linear0(tensor<?x64xf32>, tensor<128x64xf32>, tensor<128xf32>, tensor<?x128xf32>) -> tensor<?x128xf32>

// CHECK-LABEL: func.func @main
// CHECK-SAME: mlc.shape = ["n", 64]
// CHECK: %[[DF:.+]] = "mlc.dataflow"() ({
// CHECK: %[[LV0:.+]] = "mlc.call_tir"(%{{.+}}, %{{.+}}, %{{.+}}) {callee = @linear0, mlc.shape = ["n", 128]
// CHECK: %[[LV1:.+]] = "mlc.call_dps"(%[[LV0]]) {callee = "env.relu"
// CHECK: %[[W1T:.+]] = "mlc.permute_dims"(%{{.+}}) {axes = array<i64: 1, 0>}
// CHECK: %[[LV2:.+]] = "mlc.matmul"(%[[LV1]], %[[W1T]])
// CHECK: %[[B1:.+]] = "mlc.constant"() {value = dense<{{.+}}> : tensor<10xf32>}
// CHECK: %[[LV3:.+]] = "mlc.add"(%[[LV2]], %[[B1]])
// CHECK: %[[LV4:.+]] = "mlc.softmax"(%[[LV3]]) {axis = 1 : i64
// CHECK: "mlc.output"(%[[LV4]])
// CHECK-NEXT: omp.terminator
// CHECK: return %[[DF]] : tensor<?x10xf32>
func.func @main(%x: tensor<?x64xf32> {mlc.name = "x", mlc.shape = ["n", 64]},
                %w0: tensor<128x64xf32> {mlc.name = "w0"}, %b0: tensor<128xf32> {mlc.name = "b0"},
                %w1: tensor<10x128xf32> {mlc.name = "w1"}) -> tensor<?x10xf32> attributes {mlc.graph} {
  %gv = "mlc.dataflow"() ({
    %lv0 = "mlc.call_tir"(%x, %w0, %b0) {callee = @linear0, mlc.shape = ["n", 128],
        operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>}
        : (tensor<?x64xf32>, tensor<128x64xf32>, tensor<128xf32>) -> tensor<?x128xf32>
    %lv1 = "mlc.call_dps"(%lv0) {callee = "env.relu", mlc.shape = ["n", 128],
        operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>}
        : (tensor<?x128xf32>) -> tensor<?x128xf32>
    %w1t = "mlc.permute_dims"(%w1) {axes = array<i64: 1, 0>} : (tensor<10x128xf32>) -> tensor<128x10xf32>
    %lv2 = "mlc.matmul"(%lv1, %w1t) {mlc.shape = ["n", 10]} : (tensor<?x128xf32>, tensor<128x10xf32>) -> tensor<?x10xf32>
    %b1 = "mlc.constant"() {value = dense<0.5> : tensor<10xf32>} : () -> tensor<10xf32>
    %lv3 = "mlc.add"(%lv2, %b1) {mlc.shape = ["n", 10]} : (tensor<?x10xf32>, tensor<10xf32>) -> tensor<?x10xf32>
    %lv4 = "mlc.softmax"(%lv3) {axis = 1 : i64, mlc.shape = ["n", 10]} : (tensor<?x10xf32>) -> tensor<?x10xf32>
    "mlc.output"(%lv4) {operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?x10xf32>) -> ()
    "omp.terminator"() : () -> ()
  }) {resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : () -> tensor<?x10xf32>
  return %gv : tensor<?x10xf32>
}

// Side effects go between dataflow blocks (course ch.3): alloc_tensor outside them.
// CHECK-LABEL: func.func @two_blocks
// CHECK: "mlc.dataflow"
// CHECK: %[[A:.+]] = "mlc.alloc_tensor"() : () -> tensor<4xf32>
// CHECK: "mlc.dataflow"
// CHECK: "mlc.add"(%{{.+}}, %[[A]])
func.func @two_blocks(%x: tensor<4xf32>) -> tensor<4xf32> {
  %gv0 = "mlc.dataflow"() ({
    %lv0 = "mlc.relu"(%x) : (tensor<4xf32>) -> tensor<4xf32>
    "mlc.output"(%lv0) {operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<4xf32>) -> ()
    "omp.terminator"() : () -> ()
  }) {resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : () -> tensor<4xf32>
  %gv1 = "mlc.alloc_tensor"() : () -> tensor<4xf32>
  %out = "mlc.dataflow"() ({
    %lv1 = "mlc.add"(%gv0, %gv1) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    "mlc.output"(%lv1) {operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<4xf32>) -> ()
    "omp.terminator"() : () -> ()
  }) {resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : () -> tensor<4xf32>
  return %out : tensor<4xf32>
}
