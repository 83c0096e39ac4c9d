// RUN: mlc-opt %s --mlc-legalize-ops | filecheck %s
// RUN: mlc-opt %s --mlc-legalize-ops --mlc-lower-graph | filecheck %s --check-prefix=LOWER

// LegalizeOps: each graph op becomes a call_tir of a tensor program built with te, one
// linalg op per te.compute, named after the op; symbolic sizes stay symbolic.
// CHECK-LABEL: func.func @main
// CHECK: "mlc.dataflow"
// CHECK: %[[T:.+]] = "mlc.call_tir"(%{{.+}}) {callee = @permute_dims
// CHECK-SAME: (tensor<8x4xf32>) -> tensor<4x8xf32>
// CHECK: %[[MM:.+]] = "mlc.call_tir"(%{{.+}}, %[[T]]) {callee = @matmul, mlc.shape = ["n", 8]
// CHECK: %[[ADD:.+]] = "mlc.call_tir"(%[[MM]], %{{.+}}) {callee = @add, mlc.shape = ["n", 8]
// CHECK: %[[RELU:.+]] = "mlc.call_tir"(%[[ADD]]) {callee = @relu, mlc.shape = ["n", 8]
// CHECK: "mlc.output"(%[[RELU]])
// CHECK-NOT: "mlc.matmul"
// CHECK-LABEL: func.func @permute_dims
// CHECK-SAME: mlc.prim_func
// CHECK: linalg.generic
// CHECK-SAME: mlc.block = "permute_dims"
// CHECK-LABEL: func.func @matmul
// CHECK: linalg.fill {mlc.block_init = "matmul"}
// CHECK: linalg.generic
// CHECK-SAME: iterator_types = ["parallel", "parallel", "reduction"]
// CHECK-LABEL: func.func @add
// CHECK-LABEL: func.func @relu
// CHECK: arith.maximumf

// lower-graph: the dataflow region is inlined, each call_tir allocates its output with
// tensor.empty (the symbolic size from tensor.dim of the parameter that carries it) and
// calls the now private tensor program; the result becomes an output parameter.
// LOWER-LABEL: func.func @main
// LOWER-SAME: %[[X:[^:]+]]: tensor<?x4xf32> {mlc.name = "x", mlc.shape = ["n", 4]}
// LOWER-SAME: {mlc.name = "out0", mlc.shape = ["n", 8]}) -> tensor<?x8xf32> attributes {mlc.lowered_graph}
// LOWER: %[[N:.+]] = tensor.dim %[[X]], %c0
// LOWER: %[[E:.+]] = tensor.empty() : tensor<4x8xf32>
// LOWER: %[[T:.+]] = call @permute_dims(%{{.+}}, %[[E]])
// LOWER: %[[E2:.+]] = tensor.empty(%[[N]]) : tensor<?x8xf32>
// LOWER: call @matmul(%[[X]], %[[T]], %[[E2]])
// LOWER-NOT: mlc.
// LOWER-LABEL: func.func private @permute_dims
func.func @main(%x: tensor<?x4xf32> {mlc.name = "x", mlc.shape = ["n", 4]},
                %w: tensor<8x4xf32> {mlc.name = "w"}, %b: tensor<8xf32> {mlc.name = "b"})
    -> tensor<?x8xf32> attributes {mlc.graph} {
  %gv = "mlc.dataflow"() ({
    %wt = "mlc.permute_dims"(%w) {axes = array<i64: 1, 0>} : (tensor<8x4xf32>) -> tensor<4x8xf32>
    %lv0 = "mlc.matmul"(%x, %wt) {mlc.shape = ["n", 8]} : (tensor<?x4xf32>, tensor<4x8xf32>) -> tensor<?x8xf32>
    %lv1 = "mlc.add"(%lv0, %b) {mlc.shape = ["n", 8]} : (tensor<?x8xf32>, tensor<8xf32>) -> tensor<?x8xf32>
    %lv2 = "mlc.relu"(%lv1) {mlc.shape = ["n", 8]} : (tensor<?x8xf32>) -> tensor<?x8xf32>
    "mlc.output"(%lv2) {operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?x8xf32>) -> ()
    "omp.terminator"() : () -> ()
  }) {resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : () -> tensor<?x8xf32>
  return %gv : tensor<?x8xf32>
}
