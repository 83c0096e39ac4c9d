// RUN: mlc-opt %s --mlc-verify-graph | filecheck %s --check-prefix=VERIFY
// RUN: mlc-opt %s --mlc-optimize-graph | filecheck %s --check-prefix=FUSED
// RUN: mlc-opt %s --mlc-optimize-graph --mlc-lower-graph --mlc-lower-to-llvm | filecheck %s --check-prefix=LLVM

// Run by tests/package/check_wheel.py with the mlc-opt of a wheel installed in a clean venv,
// from outside the checkout: the graph dialect (IRDL file in the wheel) parses and verifies,
// the default graph optimization fuses the layer into one tensor program, which lowers to LLVM.

// VERIFY-LABEL: func.func @main
// VERIFY: "mlc.matmul"
// VERIFY: "mlc.relu"

// FUSED-LABEL: func.func @fused_permute_dims_matmul_add_relu
// FUSED-SAME: attributes {mlc.prim_func}
// FUSED: linalg.generic
// FUSED: arith.maximumf
// FUSED-LABEL: func.func @main
// FUSED: "mlc.call_tir"({{.*}}) {callee = @fused_permute_dims_matmul_add_relu
// FUSED-NOT: "mlc.matmul"

// LLVM: llvm.func @main
func.func @main(%x: tensor<?x16xf32> {mlc.name = "x", mlc.shape = ["n", 16]}, %w: tensor<32x16xf32> {mlc.name = "w"},
                %b: tensor<32xf32> {mlc.name = "b"}) -> tensor<?x32xf32> attributes {mlc.graph} {
  %0 = "mlc.dataflow"() ({
    %1 = "mlc.permute_dims"(%w) {axes = array<i64: 1, 0>} : (tensor<32x16xf32>) -> tensor<16x32xf32>
    %2 = "mlc.matmul"(%x, %1) {mlc.shape = ["n", 32]} : (tensor<?x16xf32>, tensor<16x32xf32>) -> tensor<?x32xf32>
    %3 = "mlc.add"(%2, %b) {mlc.shape = ["n", 32]} : (tensor<?x32xf32>, tensor<32xf32>) -> tensor<?x32xf32>
    %4 = "mlc.relu"(%3) {mlc.shape = ["n", 32]} : (tensor<?x32xf32>) -> tensor<?x32xf32>
    "mlc.output"(%4) {operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?x32xf32>) -> ()
    omp.terminator
  }) {resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : () -> tensor<?x32xf32>
  return %0 : tensor<?x32xf32>
}
