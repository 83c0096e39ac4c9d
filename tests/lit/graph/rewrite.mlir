// RUN: mlc-opt %s --split-input-file --mlc-rewrite-ewise-fma | filecheck %s
// RUN: mlc-opt %s --split-input-file --mlc-rewrite-ewise-fma --mlc-remove-unused | filecheck %s --check-prefix=DCE

// The course's EwiseFMARewriter: add(multiply(x, y), y) -> ewise_fma(x, y, y). The
// multiply stays (IRDL ops are never erased by MLIR's own DCE) until remove-unused.
// CHECK-LABEL: func.func @main
// CHECK-SAME: (%[[X:[^:]+]]: tensor<3x4xf32> {mlc.name = "x"}, %[[Y:[^:]+]]: tensor<3x4xf32>
// CHECK: "mlc.multiply"(%[[X]], %[[Y]])
// CHECK: %[[FMA:.+]] = "mlc.ewise_fma"(%[[X]], %[[Y]], %[[Y]])
// CHECK-NOT: "mlc.add"
// CHECK: "mlc.output"(%[[FMA]])
// DCE-LABEL: func.func @main
// DCE-NOT: "mlc.multiply"
// DCE: "mlc.ewise_fma"
func.func @main(%x: tensor<3x4xf32> {mlc.name = "x"}, %y: tensor<3x4xf32> {mlc.name = "y"}) -> tensor<3x4xf32> attributes {mlc.graph} {
  %gv0 = "mlc.dataflow"() ({
    %lv0 = "mlc.multiply"(%x, %y) : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
    %lv1 = "mlc.add"(%lv0, %y) : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
    "mlc.output"(%lv1) {operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<3x4xf32>) -> ()
    "omp.terminator"() : () -> ()
  }) {resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : () -> tensor<3x4xf32>
  return %gv0 : tensor<3x4xf32>
}

// -----

// The multiply may be either operand of the add. A multiply with another user is
// rewritten too, and kept by remove-unused.
// CHECK-LABEL: func.func @commuted
// CHECK-SAME: (%[[X:[^:]+]]: tensor<3x4xf32>, %[[Y:[^:]+]]: tensor<3x4xf32>, %[[Z:[^:]+]]: tensor<3x4xf32>)
// CHECK: %[[MUL:.+]] = "mlc.multiply"(%[[X]], %[[Y]])
// CHECK: "mlc.ewise_fma"(%[[X]], %[[Y]], %[[Z]])
// CHECK: "mlc.relu"(%[[MUL]])
// DCE-LABEL: func.func @commuted
// DCE: "mlc.multiply"
func.func @commuted(%x: tensor<3x4xf32>, %y: tensor<3x4xf32>, %z: tensor<3x4xf32>) -> (tensor<3x4xf32>, tensor<3x4xf32>) {
  %gv:2 = "mlc.dataflow"() ({
    %lv0 = "mlc.multiply"(%x, %y) : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
    %lv1 = "mlc.add"(%z, %lv0) : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
    %lv2 = "mlc.relu"(%lv0) : (tensor<3x4xf32>) -> tensor<3x4xf32>
    "mlc.output"(%lv1, %lv2) {operandSegmentSizes = array<i32: 1, 1, 0, 0, 0, 0, 0, 0>} : (tensor<3x4xf32>, tensor<3x4xf32>) -> ()
    "omp.terminator"() : () -> ()
  }) {resultSegmentSizes = array<i32: 1, 1, 0, 0, 0, 0, 0, 0>} : () -> (tensor<3x4xf32>, tensor<3x4xf32>)
  return %gv#0, %gv#1 : tensor<3x4xf32>, tensor<3x4xf32>
}

// -----

// No rewrite: the add broadcasts (ewise_fma does not), or the multiply is in another
// dataflow block (only its block's output is visible).
// CHECK-LABEL: func.func @no_match
// CHECK-NOT: "mlc.ewise_fma"
// CHECK: "mlc.add"
// CHECK: "mlc.add"
// CHECK-NOT: "mlc.ewise_fma"
func.func @no_match(%x: tensor<3x4xf32>, %b: tensor<4xf32>) -> tensor<3x4xf32> {
  %gv0 = "mlc.dataflow"() ({
    %lv0 = "mlc.multiply"(%x, %x) : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
    %lv1 = "mlc.add"(%lv0, %b) : (tensor<3x4xf32>, tensor<4xf32>) -> tensor<3x4xf32>
    %lv2 = "mlc.multiply"(%lv1, %x) : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
    "mlc.output"(%lv2) {operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<3x4xf32>) -> ()
    "omp.terminator"() : () -> ()
  }) {resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : () -> tensor<3x4xf32>
  %gv1 = "mlc.dataflow"() ({
    %lv3 = "mlc.add"(%gv0, %x) : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
    "mlc.output"(%lv3) {operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<3x4xf32>) -> ()
    "omp.terminator"() : () -> ()
  }) {resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : () -> tensor<3x4xf32>
  return %gv1 : tensor<3x4xf32>
}
