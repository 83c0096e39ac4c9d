// RUN: mlc-opt %s --mlc-fold-constant | filecheck %s
// RUN: mlc-opt %s --mlc-optimize-graph | filecheck %s --check-prefix=BUILT
// RUN: mlc-opt %s --mlc-fuse-ops --mlc-legalize-ops --mlc-fuse-tir | filecheck %s --check-prefix=NOFOLD

// FoldConstant: permute_dims of a constant weight (a dense_resource blob, w[i][j] = 6i + j)
// becomes a constant laid out as the matmul reads it (the new blob starts with w[:, 0] =
// 0, 6, 12, 18, then 1.0); add of two small dense constants folds too; ops of a
// non-constant operand stay.
// CHECK-LABEL: func.func @main
// CHECK-NOT: "mlc.permute_dims"
// CHECK: %[[WT:.+]] = "mlc.constant"() {value = dense_resource<w_permute_dims> : tensor<6x4xf32>}
// CHECK: %[[MM:.+]] = "mlc.matmul"(%arg0, %[[WT]])
// CHECK: %[[B:.+]] = "mlc.constant"() {value = dense<[1.500000e+00, 3.000000e+00, 4.500000e+00, 6.000000e+00]> : tensor<4xf32>}
// CHECK: %[[ADD:.+]] = "mlc.add"(%[[MM]], %[[B]])
// CHECK: "mlc.relu"(%[[ADD]])
// CHECK: w_permute_dims: "0x08000000000000000000C04000004041000090410000803F
// The default graph pipeline folds first: the kernel takes the weight as the matmul reads it
// (6x4), where without folding the transpose is fused into the kernel (it takes w as 4x6).
// BUILT-LABEL: func.func @fused_matmul_add_relu(
// BUILT-SAME: %{{.+}}: tensor<6x4xf32> {mlc.name = "constant"}
// BUILT-NOT: "mlc.permute_dims"
// NOFOLD-LABEL: func.func @fused_permute_dims_matmul_add_add_relu(
// NOFOLD-SAME: %{{.+}}: tensor<4x6xf32>
func.func @main(%x: tensor<2x6xf32> {mlc.name = "x"}) -> tensor<2x4xf32> attributes {mlc.graph} {
  %gv = "mlc.dataflow"() ({
    %w = "mlc.constant"() {value = dense_resource<w> : tensor<4x6xf32>} : () -> tensor<4x6xf32>
    %wt = "mlc.permute_dims"(%w) {axes = array<i64: 1, 0>} : (tensor<4x6xf32>) -> tensor<6x4xf32>
    %mm = "mlc.matmul"(%x, %wt) : (tensor<2x6xf32>, tensor<6x4xf32>) -> tensor<2x4xf32>
    %b0 = "mlc.constant"() {value = dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>} : () -> tensor<4xf32>
    %b1 = "mlc.constant"() {value = dense<[0.5, 1.0, 1.5, 2.0]> : tensor<4xf32>} : () -> tensor<4xf32>
    %b = "mlc.add"(%b0, %b1) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %y = "mlc.add"(%mm, %b) : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
    %r = "mlc.relu"(%y) : (tensor<2x4xf32>) -> tensor<2x4xf32>
    "mlc.output"(%r) {operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<2x4xf32>) -> ()
    "omp.terminator"() : () -> ()
  }) {resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : () -> tensor<2x4xf32>
  return %gv : tensor<2x4xf32>
}

{-#
  dialect_resources: {
    builtin: {
      w: "0x08000000000000000000803F0000004000004040000080400000A0400000C0400000E0400000004100001041000020410000304100004041000050410000604100007041000080410000884100009041000098410000A0410000A8410000B0410000B841"
    }
  }
#-}
