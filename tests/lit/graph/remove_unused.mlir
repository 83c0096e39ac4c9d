// RUN: mlc-opt %s --split-input-file --mlc-remove-unused | filecheck %s

// remove_all_unused: dead pure bindings go, chains of them too; what is used stays.
// CHECK-LABEL: func.func @main
// CHECK-SAME: (%[[X:[^:]+]]: tensor<3x4xf32>
// CHECK-NOT: "mlc.multiply"
// CHECK-NOT: "mlc.relu"
// CHECK-NOT: "mlc.constant"
// CHECK: %[[ADD:.+]] = "mlc.add"(%[[X]], %[[X]])
// CHECK: "mlc.output"(%[[ADD]])
func.func @main(%x: tensor<3x4xf32> {mlc.name = "x"}) -> tensor<3x4xf32> attributes {mlc.graph} {
  %gv0 = "mlc.dataflow"() ({
    %c = "mlc.constant"() {value = dense<1.0> : tensor<4xf32>} : () -> tensor<4xf32>
    %lv0 = "mlc.multiply"(%x, %c) : (tensor<3x4xf32>, tensor<4xf32>) -> tensor<3x4xf32>
    %lv1 = "mlc.relu"(%lv0) : (tensor<3x4xf32>) -> tensor<3x4xf32>
    %lv2 = "mlc.add"(%x, %x) : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
    "mlc.output"(%lv2) {operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<3x4xf32>) -> ()
    "omp.terminator"() : () -> ()
  }) {resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : () -> tensor<3x4xf32>
  return %gv0 : tensor<3x4xf32>
}

// -----

// Outside dataflow blocks: a dead call_tir goes, mlc.alloc_tensor (side effects) and
// the dataflow structure stay.
// CHECK-LABEL: func.func @outside
// CHECK-NOT: "mlc.call_tir"
// CHECK: "mlc.alloc_tensor"
// CHECK: "mlc.dataflow"
func.func @outside(%x: tensor<2xf32>) -> tensor<2xf32> attributes {mlc.graph} {
  %a = "mlc.alloc_tensor"() : () -> tensor<2xf32>
  %t = "mlc.call_tir"(%x) {callee = @copy, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (tensor<2xf32>) -> tensor<2xf32>
  %gv = "mlc.dataflow"() ({
    "mlc.output"(%x) {operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<2xf32>) -> ()
    "omp.terminator"() : () -> ()
  }) {resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : () -> tensor<2xf32>
  return %gv : tensor<2xf32>
}
func.func @copy(%a: tensor<2xf32>, %out: tensor<2xf32>) -> tensor<2xf32> attributes {mlc.prim_func} {
  return %a : tensor<2xf32>
}
