// RUN: mlc-opt %s --split-input-file --mlc-fuse-ops | filecheck %s
// RUN: mlc-opt %s --split-input-file --mlc-fuse-ops --mlc-inline-graph-calls | filecheck %s --check-prefix=INLINE

// matmul (OUT_EWISE) + add + relu (elementwise epilogue): one primitive function.
// CHECK-LABEL: func.func private @fused_matmul_add_relu
// CHECK-SAME: (%[[X:[^:]+]]: tensor<2x4xf32> {mlc.name = "x"}, %[[W:[^:]+]]: tensor<4x8xf32> {mlc.name = "w"}, %[[B:[^:]+]]: tensor<8xf32> {mlc.name = "b"}) -> tensor<2x8xf32>
// CHECK-SAME: attributes {mlc.graph, mlc.primitive}
// CHECK: %[[MM:.+]] = "mlc.matmul"(%[[X]], %[[W]])
// CHECK: %[[ADD:.+]] = "mlc.add"(%[[MM]], %[[B]])
// CHECK: %[[RELU:.+]] = "mlc.relu"(%[[ADD]])
// CHECK: return %[[RELU]]
// CHECK-LABEL: func.func @main
// CHECK: %[[CALL:.+]] = func.call @fused_matmul_add_relu(%arg0, %arg1, %arg2)
// CHECK-NOT: "mlc.matmul"
// CHECK: "mlc.output"(%[[CALL]])
// inline-graph-calls undoes it (what graph.build does with primitive functions left).
// INLINE-NOT: mlc.primitive
// INLINE-LABEL: func.func @main
// INLINE: %[[MM:.+]] = "mlc.matmul"(%arg0, %arg1)
// INLINE: %[[ADD:.+]] = "mlc.add"(%[[MM]], %arg2)
// INLINE: %[[RELU:.+]] = "mlc.relu"(%[[ADD]])
// INLINE: "mlc.output"(%[[RELU]])
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

// The MLP on a symbolic batch: permute_dims (data movement) joins the matmul after it
// as a prologue; two groups, the second taking the first's result. Symbolic shapes
// carry over to the parameters (mlc.shape) and the calls.
// CHECK-LABEL: func.func private @fused_permute_dims_matmul_add_relu
// CHECK-SAME: {mlc.name = "x", mlc.shape = ["n", 4]}
// CHECK: "mlc.permute_dims"
// CHECK: "mlc.relu"
// CHECK-LABEL: func.func private @fused_permute_dims_matmul_add(
// CHECK-NOT: "mlc.relu"
// CHECK-LABEL: func.func @mlp
// CHECK: %[[H:.+]] = func.call @fused_permute_dims_matmul_add_relu(%{{.+}}) {mlc.shape = ["n", 8]}
// CHECK: %[[Y:.+]] = func.call @fused_permute_dims_matmul_add(%{{.+}}, %[[H]], %{{.+}}) {mlc.shape = ["n", 2]}
// CHECK: "mlc.output"(%[[Y]])
func.func @mlp(%x: tensor<?x4xf32> {mlc.name = "x", mlc.shape = ["n", 4]}, %w0: tensor<8x4xf32> {mlc.name = "w0"}, %b0: tensor<8xf32> {mlc.name = "b0"},
               %w1: tensor<2x8xf32> {mlc.name = "w1"}, %b1: tensor<2xf32> {mlc.name = "b1"}) -> tensor<?x2xf32> attributes {mlc.graph} {
  %gv = "mlc.dataflow"() ({
    %t0 = "mlc.permute_dims"(%w0) {axes = array<i64: 1, 0>} : (tensor<8x4xf32>) -> tensor<4x8xf32>
    %lv0 = "mlc.matmul"(%x, %t0) {mlc.shape = ["n", 8]} : (tensor<?x4xf32>, tensor<4x8xf32>) -> tensor<?x8xf32>
    %lv1 = "mlc.add"(%lv0, %b0) {mlc.shape = ["n", 8]} : (tensor<?x8xf32>, tensor<8xf32>) -> tensor<?x8xf32>
    %lv2 = "mlc.relu"(%lv1) {mlc.shape = ["n", 8]} : (tensor<?x8xf32>) -> tensor<?x8xf32>
    %t1 = "mlc.permute_dims"(%w1) {axes = array<i64: 1, 0>} : (tensor<2x8xf32>) -> tensor<8x2xf32>
    %lv3 = "mlc.matmul"(%lv2, %t1) {mlc.shape = ["n", 2]} : (tensor<?x8xf32>, tensor<8x2xf32>) -> tensor<?x2xf32>
    %lv4 = "mlc.add"(%lv3, %b1) {mlc.shape = ["n", 2]} : (tensor<?x2xf32>, tensor<2xf32>) -> tensor<?x2xf32>
    "mlc.output"(%lv4) {operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?x2xf32>) -> ()
    "omp.terminator"() : () -> ()
  }) {resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : () -> tensor<?x2xf32>
  return %gv : tensor<?x2xf32>
}

// -----

// A shared producer is fused into neither consumer: %a (two users) stays in the graph,
// the relu joins the multiply after it (its only user).
// CHECK-LABEL: func.func private @fused_relu_multiply
// CHECK-SAME: (%[[A:[^:]+]]: tensor<4xf32> {mlc.name = "add"}) -> tensor<4xf32>
// CHECK: %[[R:.+]] = "mlc.relu"(%[[A]])
// CHECK: "mlc.multiply"(%[[A]], %[[R]])
// CHECK-NOT: "mlc.add"
// CHECK-LABEL: func.func @shared
// CHECK: %[[SUM:.+]] = "mlc.add"(%arg0, %arg1)
// CHECK: func.call @fused_relu_multiply(%[[SUM]])
func.func @shared(%x: tensor<4xf32>, %y: tensor<4xf32>) -> tensor<4xf32> {
  %gv = "mlc.dataflow"() ({
    %a = "mlc.add"(%x, %y) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %r = "mlc.relu"(%a) : (tensor<4xf32>) -> tensor<4xf32>
    %m = "mlc.multiply"(%a, %r) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    "mlc.output"(%m) {operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<4xf32>) -> ()
    "omp.terminator"() : () -> ()
  }) {resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : () -> tensor<4xf32>
  return %gv : tensor<4xf32>
}

// -----

// Dataflow boundaries: the add (an output of the first block) is not fused with the
// relu of the second block; the chain inside the second block is. Ops outside dataflow
// blocks are never fused.
// CHECK-LABEL: func.func private @fused_relu_subtract
// CHECK-LABEL: func.func @boundary
// CHECK: %[[GV0:.+]] = "mlc.dataflow"
// CHECK: "mlc.add"
// CHECK: "mlc.dataflow"
// CHECK: func.call @fused_relu_subtract(%[[GV0]],
// CHECK: %[[O:.+]] = "mlc.relu"
// CHECK: "mlc.multiply"(%[[O]],
func.func @boundary(%x: tensor<4xf32>) -> tensor<4xf32> {
  %gv0 = "mlc.dataflow"() ({
    %a = "mlc.add"(%x, %x) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    "mlc.output"(%a) {operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<4xf32>) -> ()
    "omp.terminator"() : () -> ()
  }) {resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : () -> tensor<4xf32>
  %gv1 = "mlc.dataflow"() ({
    %r = "mlc.relu"(%gv0) : (tensor<4xf32>) -> tensor<4xf32>
    %s = "mlc.subtract"(%r, %x) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    "mlc.output"(%s) {operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<4xf32>) -> ()
    "omp.terminator"() : () -> ()
  }) {resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : () -> tensor<4xf32>
  %o = "mlc.relu"(%gv1) : (tensor<4xf32>) -> tensor<4xf32>
  %p = "mlc.multiply"(%o, %x) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %p : tensor<4xf32>
}

// -----

// Kinds that do not fuse: an elementwise op before a matmul (only data movement may
// precede one), a matmul after a matmul, softmax (opaque), call_dps (opaque).
// CHECK-NOT: mlc.primitive
// CHECK-LABEL: func.func @unfusable
// CHECK-NOT: func.call
func.func @unfusable(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %gv = "mlc.dataflow"() ({
    %r = "mlc.relu"(%x) : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %m0 = "mlc.matmul"(%r, %x) : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    %m1 = "mlc.matmul"(%m0, %x) : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    %s = "mlc.softmax"(%m1) {axis = 1 : i64} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %e = "mlc.call_dps"(%s) {callee = "env.relu", operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %a = "mlc.add"(%e, %x) : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    "mlc.output"(%a) {operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<4x4xf32>) -> ()
    "omp.terminator"() : () -> ()
  }) {resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : () -> tensor<4x4xf32>
  return %gv : tensor<4x4xf32>
}
