// RUN: mlc-opt %s --split-input-file --verify-diagnostics --mlc-verify-graph

// IRDL checks: operand kinds and required attributes.
func.func @not_a_tensor(%x: i32) -> tensor<4xf32> {
  // expected-error @+1 {{expected base type 'builtin.tensor' but got 'builtin.integer'}}
  %0 = "mlc.relu"(%x) : (i32) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @softmax_without_axis(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{attribute "axis" is expected but not provided}}
  %0 = "mlc.softmax"(%x) : (tensor<2x4xf32>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----

func.func @env_callee_is_a_string(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{expected base attribute 'builtin.string'}}
  %0 = "mlc.call_dps"(%x) {callee = @f, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// verify_graph: shape rules.
func.func @matmul_inner_dims(%x: tensor<1x64xf32>, %w: tensor<128x32xf32>) -> tensor<1x32xf32> {
  // expected-error @+1 {{'mlc.matmul' op matmul: inner dimensions differ: lhs (1, 64) @ rhs (128, 32) (64 vs 128)}}
  %0 = "mlc.matmul"(%x, %w) : (tensor<1x64xf32>, tensor<128x32xf32>) -> tensor<1x32xf32>
  return %0 : tensor<1x32xf32>
}

// -----

func.func @no_broadcast(%a: tensor<2x3xf32>, %b: tensor<4xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{'mlc.add' op add: shapes (2, 3) and (4,) do not broadcast}}
  %0 = "mlc.add"(%a, %b) : (tensor<2x3xf32>, tensor<4xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @symbolic_inner_dim(%x: tensor<?x?xf32> {mlc.shape = ["n", "m"]}, %w: tensor<64x8xf32>) -> tensor<?x8xf32> {
  // expected-error @+1 {{inner dimensions differ: lhs (n, m) @ rhs (64, 8) (m vs 64)}}
  %0 = "mlc.matmul"(%x, %w) {mlc.shape = ["n", 8]} : (tensor<?x?xf32>, tensor<64x8xf32>) -> tensor<?x8xf32>
  return %0 : tensor<?x8xf32>
}

// -----

func.func @wrong_result_type(%x: tensor<1x64xf32>, %w: tensor<64x128xf32>) -> tensor<1x64xf32> {
  // expected-error @+1 {{'mlc.matmul' op inferred shape (1, 128) does not match the result type tensor<1x64xf32>}}
  %0 = "mlc.matmul"(%x, %w) : (tensor<1x64xf32>, tensor<64x128xf32>) -> tensor<1x64xf32>
  return %0 : tensor<1x64xf32>
}

// -----

func.func @bad_axes(%x: tensor<2x3xf32>) -> tensor<3x2xf32> {
  // expected-error @+1 {{axes (0, 0) are not a permutation}}
  %0 = "mlc.permute_dims"(%x) {axes = array<i64: 0, 0>} : (tensor<2x3xf32>) -> tensor<3x2xf32>
  return %0 : tensor<3x2xf32>
}

// -----

func.func @reshape_size(%x: tensor<2x3xf32>) -> tensor<7xf32> {
  // expected-error @+1 {{cannot reshape (2, 3) (6 elements) to (7,) (7 elements)}}
  %0 = "mlc.reshape"(%x) : (tensor<2x3xf32>) -> tensor<7xf32>
  return %0 : tensor<7xf32>
}

// -----

func.func @constant_type(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{value type tensor<2xf32> differs from the result type tensor<4xf32>}}
  %0 = "mlc.constant"() {value = dense<1.0> : tensor<2xf32>} : () -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// verify_graph: callees.
func.func @unknown_callee(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'mlc.call_tir' op calls @nowhere, which is not a function of the module}}
  %0 = "mlc.call_tir"(%x) {callee = @nowhere, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func private @two_args(tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
func.func @callee_arity(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{passes 1 argument(s) + 1 output to @two_args, which takes 3 parameter(s)}}
  %0 = "mlc.call_tir"(%x) {callee = @two_args, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func private @vec8(tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
func.func @callee_types(%x: tensor<4xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{argument 0 has type tensor<4xf32>, incompatible with parameter 0 of @vec8 (tensor<8xf32>)}}
  %0 = "mlc.call_tir"(%x) {callee = @vec8, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (tensor<4xf32>) -> tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

// verify_graph: dataflow blocks hold pure ops only and end in mlc.output + omp.terminator.
func.func @alloc_in_dataflow() -> tensor<4xf32> {
  %0 = "mlc.dataflow"() ({
    // expected-error @+1 {{'mlc.alloc_tensor' op has side effects and is not allowed inside an mlc.dataflow block}}
    %1 = "mlc.alloc_tensor"() : () -> tensor<4xf32>
    "mlc.output"(%1) {operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<4xf32>) -> ()
    "omp.terminator"() : () -> ()
  }) {resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : () -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @memref_in_dataflow(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "mlc.dataflow"() ({
    // expected-error @+1 {{'memref.alloc' op may have side effects and is not allowed inside an mlc.dataflow block}}
    %m = memref.alloc() : memref<4xf32>
    "mlc.output"(%x) {operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<4xf32>) -> ()
    "omp.terminator"() : () -> ()
  }) {resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : () -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func private @impure(tensor<4xf32>) -> tensor<4xf32>
func.func @call_in_dataflow(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "mlc.dataflow"() ({
    // expected-error @+1 {{'func.call' op calls @impure, which is not a graph function}}
    %1 = func.call @impure(%x) : (tensor<4xf32>) -> tensor<4xf32>
    "mlc.output"(%1) {operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<4xf32>) -> ()
    "omp.terminator"() : () -> ()
  }) {resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : () -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @no_output(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'mlc.dataflow' op region must end with "mlc.output"(...) followed by "omp.terminator"()}}
  %0 = "mlc.dataflow"() ({
    %1 = "mlc.relu"(%x) : (tensor<4xf32>) -> tensor<4xf32>
    "omp.terminator"() : () -> ()
  }) {resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : () -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @output_types(%x: tensor<4xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{result types (tensor<8xf32>) differ from the mlc.output operand types (tensor<4xf32>)}}
  %0 = "mlc.dataflow"() ({
    %1 = "mlc.relu"(%x) : (tensor<4xf32>) -> tensor<4xf32>
    "mlc.output"(%1) {operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<4xf32>) -> ()
    "omp.terminator"() : () -> ()
  }) {resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : () -> tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

func.func @output_outside(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'mlc.output' op must be the end of an mlc.dataflow region}}
  "mlc.output"(%x) {operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<4xf32>) -> ()
  return %x : tensor<4xf32>
}

// -----

func.func @nested(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "mlc.dataflow"() ({
    // expected-error @+1 {{'mlc.dataflow' op dataflow blocks cannot be nested}}
    %1 = "mlc.dataflow"() ({
      "mlc.output"(%x) {operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<4xf32>) -> ()
      "omp.terminator"() : () -> ()
    }) {resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : () -> tensor<4xf32>
    "mlc.output"(%1) {operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<4xf32>) -> ()
    "omp.terminator"() : () -> ()
  }) {resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : () -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
