// RUN: mlc-opt %s --split-input-file --verify-diagnostics

func.func @wrong_return(%a: tensor<4xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{type of return operand 0 ('tensor<4xf32>') doesn't match function result type ('tensor<8xf32>')}}
  return %a : tensor<4xf32>
}

// -----

// expected-error @+1 {{expected non-function type}}
func.func @unclosed( {

// -----

func.func @matmul_bad_shapes(%a: tensor<4x3xf32>, %b: tensor<5x6xf32>, %c: tensor<4x6xf32>) -> tensor<4x6xf32> {
  // expected-error @+1 {{inferred input/output operand #1 has shape's dimension #0 to be 3, but found 5}}
  %r = linalg.matmul ins(%a, %b : tensor<4x3xf32>, tensor<5x6xf32>) outs(%c : tensor<4x6xf32>) -> tensor<4x6xf32>
  return %r : tensor<4x6xf32>
}
