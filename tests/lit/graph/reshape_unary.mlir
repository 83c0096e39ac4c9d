// RUN: mlc-opt %s --split-input-file --mlc-rewrite-reshape-unary --mlc-remove-unused | filecheck %s

// A linear layer on a 3-D input leaves its activation between a reshape and its inverse
// (torch: view -> addmm -> view); the activation moves onto the reshape's input, where
// FuseOps then fuses it with the matmul + bias. The clip keeps its bounds; the reshapes
// go with remove-unused.
// CHECK-LABEL: func.func @main
// CHECK: %[[B:.+]] = "mlc.add"
// CHECK-NEXT: %[[C:.+]] = "mlc.clip"(%[[B]]) {max = 6.000000e+00 : f64, min = 0.000000e+00 : f64} : (tensor<6x16xf32>) -> tensor<6x16xf32>
// CHECK-NOT: "mlc.reshape"
// CHECK: "mlc.matmul"(%[[C]], %arg2)
func.func @main(%x: tensor<6x8xf32>, %w: tensor<8x16xf32>, %w2: tensor<16x8xf32>, %b: tensor<16xf32>) -> tensor<6x8xf32> attributes {mlc.graph} {
  %0 = "mlc.dataflow"() ({
    %3 = "mlc.matmul"(%x, %w) : (tensor<6x8xf32>, tensor<8x16xf32>) -> tensor<6x16xf32>
    %5 = "mlc.add"(%3, %b) : (tensor<6x16xf32>, tensor<16xf32>) -> tensor<6x16xf32>
    %6 = "mlc.reshape"(%5) : (tensor<6x16xf32>) -> tensor<2x3x16xf32>
    %7 = "mlc.clip"(%6) {max = 6.000000e+00 : f64, min = 0.000000e+00 : f64} : (tensor<2x3x16xf32>) -> tensor<2x3x16xf32>
    %8 = "mlc.reshape"(%7) : (tensor<2x3x16xf32>) -> tensor<6x16xf32>
    %10 = "mlc.matmul"(%8, %w2) : (tensor<6x16xf32>, tensor<16x8xf32>) -> tensor<6x8xf32>
    "mlc.output"(%10) {operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<6x8xf32>) -> ()
    omp.terminator
  }) {resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : () -> tensor<6x8xf32>
  return %0 : tensor<6x8xf32>
}

// -----

// Left alone: the activation has another user (its 3-D result is returned too), or the
// second reshape does not restore the first one's input shape.
// CHECK-LABEL: func.func @kept
// CHECK: "mlc.reshape"(%arg0) : (tensor<6x16xf32>) -> tensor<2x3x16xf32>
// CHECK: "mlc.relu"(%{{.+}}) : (tensor<2x3x16xf32>)
// CHECK: "mlc.reshape"(%{{.+}}) : (tensor<2x3x16xf32>) -> tensor<6x16xf32>
// CHECK: "mlc.gelu"(%{{.+}}) : (tensor<2x3x16xf32>)
// CHECK: "mlc.reshape"(%{{.+}}) : (tensor<2x3x16xf32>) -> tensor<3x32xf32>
func.func @kept(%x: tensor<6x16xf32>) -> (tensor<6x16xf32>, tensor<2x3x16xf32>, tensor<3x32xf32>) {
  %0:3 = "mlc.dataflow"() ({
    %1 = "mlc.reshape"(%x) : (tensor<6x16xf32>) -> tensor<2x3x16xf32>
    %2 = "mlc.relu"(%1) : (tensor<2x3x16xf32>) -> tensor<2x3x16xf32>
    %3 = "mlc.reshape"(%2) : (tensor<2x3x16xf32>) -> tensor<6x16xf32>
    %4 = "mlc.gelu"(%1) : (tensor<2x3x16xf32>) -> tensor<2x3x16xf32>
    %5 = "mlc.reshape"(%4) : (tensor<2x3x16xf32>) -> tensor<3x32xf32>
    "mlc.output"(%3, %2, %5) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>} : (tensor<6x16xf32>, tensor<2x3x16xf32>, tensor<3x32xf32>) -> ()
    omp.terminator
  }) {resultSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>} : () -> (tensor<6x16xf32>, tensor<2x3x16xf32>, tensor<3x32xf32>)
  return %0#0, %0#1, %0#2 : tensor<6x16xf32>, tensor<2x3x16xf32>, tensor<3x32xf32>
}
