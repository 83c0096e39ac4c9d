// RUN: mlc-opt %s --split-input-file --mlc-fuse-ops --mlc-legalize-ops --mlc-fuse-tir | filecheck %s
// RUN: mlc-opt %s --split-input-file --mlc-fuse-dense-add --mlc-legalize-ops --mlc-fuse-tir | filecheck %s --check-prefix=COURSE
// RUN: mlc-opt %s --split-input-file --mlc-legalize-ops --mlc-fuse-ops --mlc-fuse-tir | filecheck %s --check-prefix=TIR
// RUN: mlc-opt %s --split-input-file --mlc-optimize-graph | filecheck %s

// FuseOps -> LegalizeOps -> FuseTIR: the group becomes one tensor program. The matmul
// initialises a tensor.empty intermediate; the add is merged into the relu (one
// linalg.generic named after the consumer), which writes into the output argument. The
// per-op programs (@matmul, @add, @relu) are gone; main makes one call_tir.
// CHECK-LABEL: func.func @fused_matmul_add_relu
// CHECK-SAME: (%[[X:[^:]+]]: tensor<2x4xf32> {mlc.name = "x"}, %[[W:[^:]+]]: tensor<4x8xf32> {mlc.name = "w"}, %[[B:[^:]+]]: tensor<8xf32> {mlc.name = "b"}, %[[OUT:[^:]+]]: tensor<2x8xf32> {mlc.name = "out0"}) -> tensor<2x8xf32> attributes {mlc.prim_func}
// CHECK: %[[E:.+]] = tensor.empty() : tensor<2x8xf32>
// CHECK: %[[F:.+]] = linalg.fill {mlc.block_init = "matmul"} ins(%{{.+}} : f32) outs(%[[E]] : tensor<2x8xf32>)
// CHECK: %[[MM:.+]] = linalg.generic
// CHECK-SAME: iterator_types = ["parallel", "parallel", "reduction"]
// CHECK-SAME: ins(%[[X]], %[[W]] : {{.+}}) outs(%[[F]] : tensor<2x8xf32>) attrs = {mlc.block = "matmul"}
// CHECK: %[[R:.+]] = linalg.generic
// CHECK-SAME: ins(%[[MM]], %[[B]] : {{.+}}) outs(%[[OUT]] : tensor<2x8xf32>) attrs = {mlc.block = "relu"}
// CHECK: arith.addf
// CHECK: arith.maximumf
// CHECK: return %[[R]]
// CHECK-NOT: func.func @matmul
// CHECK-LABEL: func.func @main
// CHECK: %[[C:.+]] = "mlc.call_tir"(%arg0, %arg1, %arg2) {callee = @fused_matmul_add_relu
// CHECK: "mlc.output"(%[[C]])
// CHECK-NOT: func.func @add

// The course's order: FuseDenseAddPass -> LegalizeOps -> FuseTIR. The relu stays a
// program of its own (3 kernels -> 2).
// COURSE-LABEL: func.func @fused_matmul_add0
// COURSE-SAME: {mlc.name = "x"}
// COURSE: mlc.block = "matmul"
// COURSE: mlc.block = "add"
// COURSE-LABEL: func.func @main
// COURSE: %[[FMA:.+]] = "mlc.call_tir"(%arg0, %arg1, %arg2) {callee = @fused_matmul_add0
// COURSE: "mlc.call_tir"(%[[FMA]]) {callee = @relu
// COURSE-LABEL: func.func @relu
func.func @main(%x: tensor<2x4xf32> {mlc.name = "x"}, %w: tensor<4x8xf32> {mlc.name = "w"}, %b: tensor<8xf32> {mlc.name = "b"}) -> tensor<2x8xf32> attributes {mlc.graph} {
  %gv = "mlc.dataflow"() ({
    %lv0 = "mlc.matmul"(%x, %w) : (tensor<2x4xf32>, tensor<4x8xf32>) -> tensor<2x8xf32>
    %lv1 = "mlc.add"(%lv0, %b) : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
    %lv2 = "mlc.relu"(%lv1) : (tensor<2x8xf32>) -> tensor<2x8xf32>
    "mlc.output"(%lv2) {operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<2x8xf32>) -> ()
    "omp.terminator"() : () -> ()
  }) {resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : () -> tensor<2x8xf32>
  return %gv : tensor<2x8xf32>
}

// -----

// A symbolic batch: the intermediate's size comes from tensor.dim of the parameter that
// carries "n"; the call keeps mlc.shape.
// CHECK-LABEL: func.func @fused_matmul_add_relu
// CHECK-SAME: (%[[X:[^:]+]]: tensor<?x4xf32> {mlc.name = "x", mlc.shape = ["n", 4]}
// CHECK: %[[N:.+]] = tensor.dim %[[X]], %c0
// CHECK: %[[E:.+]] = tensor.empty(%[[N]]) : tensor<?x8xf32>
// CHECK: linalg.fill {mlc.block_init = "matmul"} {{.+}} outs(%[[E]] : tensor<?x8xf32>)
// CHECK: mlc.block = "relu"
// CHECK-LABEL: func.func @dyn
// CHECK: "mlc.call_tir"(%arg0, %arg1, %arg2) {callee = @fused_matmul_add_relu, mlc.shape = ["n", 8]

// LegalizeOps first, then FuseOps on call_tir's: the kinds come from the tensor programs
// (one reduction, then elementwise ones), so the same group forms.
// TIR-LABEL: func.func @fused_matmul_add_relu
// TIR: mlc.block = "matmul"
// TIR: mlc.block = "relu"
// TIR-LABEL: func.func @dyn
// TIR: "mlc.call_tir"(%arg0, %arg1, %arg2) {callee = @fused_matmul_add_relu, mlc.shape = ["n", 8]
// TIR-NOT: func.func @relu
func.func @dyn(%x: tensor<?x4xf32> {mlc.name = "x", mlc.shape = ["n", 4]}, %w: tensor<4x8xf32> {mlc.name = "w"}, %b: tensor<8xf32> {mlc.name = "b"}) -> tensor<?x8xf32> attributes {mlc.graph} {
  %gv = "mlc.dataflow"() ({
    %lv0 = "mlc.matmul"(%x, %w) {mlc.shape = ["n", 8]} : (tensor<?x4xf32>, tensor<4x8xf32>) -> tensor<?x8xf32>
    %lv1 = "mlc.add"(%lv0, %b) {mlc.shape = ["n", 8]} : (tensor<?x8xf32>, tensor<8xf32>) -> tensor<?x8xf32>
    %lv2 = "mlc.relu"(%lv1) {mlc.shape = ["n", 8]} : (tensor<?x8xf32>) -> tensor<?x8xf32>
    "mlc.output"(%lv2) {operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?x8xf32>) -> ()
    "omp.terminator"() : () -> ()
  }) {resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : () -> tensor<?x8xf32>
  return %gv : tensor<?x8xf32>
}

// -----

// FuseOps on graph ops keeps a reshape out of a matmul (only a transpose becomes its
// operand's indexing map: a reshape would make the matmul read at constant or div/mod
// indices, which the contraction rules cannot vectorize): no group forms here.
// CHECK-NOT: func.func @fused_reshape_reshape_matmul
// CHECK-LABEL: func.func @names
func.func @names(%x: tensor<2x6xf32> {mlc.name = "x"}, %w: tensor<12xf32> {mlc.name = "w"}) -> tensor<3x3xf32> attributes {mlc.graph} {
  %gv = "mlc.dataflow"() ({
    %a = "mlc.reshape"(%x) : (tensor<2x6xf32>) -> tensor<3x4xf32>
    %b = "mlc.reshape"(%w) : (tensor<12xf32>) -> tensor<4x3xf32>
    %c = "mlc.matmul"(%a, %b) : (tensor<3x4xf32>, tensor<4x3xf32>) -> tensor<3x3xf32>
    "mlc.output"(%c) {operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<3x3xf32>) -> ()
    "omp.terminator"() : () -> ()
  }) {resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : () -> tensor<3x3xf32>
  return %gv : tensor<3x3xf32>
}
