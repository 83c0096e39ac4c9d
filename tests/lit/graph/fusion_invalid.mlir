// RUN: mlc-opt %s --split-input-file --verify-diagnostics --mlc-fuse-tir

// FuseTIR merges tensor programs: graph ops must be legalized first.
func.func private @fused_add_relu(%x: tensor<4xf32>) -> tensor<4xf32> attributes {mlc.graph, mlc.primitive} {
  // expected-error @+1 {{'mlc.add' op FuseTIR: @fused_add_relu still has graph op mlc.add; run LegalizeOps first (FuseOps -> LegalizeOps -> FuseTIR)}}
  %0 = "mlc.add"(%x, %x) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %1 = "mlc.relu"(%0) : (tensor<4xf32>) -> tensor<4xf32>
  return %1 : tensor<4xf32>
}

// -----

// An environment function is Python code, not a tensor program: it cannot be merged.
func.func private @fused_env(%x: tensor<4xf32>) -> tensor<4xf32> attributes {mlc.graph, mlc.primitive} {
  // expected-error @+1 {{FuseTIR: @fused_env calls an environment function; only call_tir of tensor programs can be fused}}
  %0 = "mlc.call_dps"(%x) {callee = "env.relu", operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
