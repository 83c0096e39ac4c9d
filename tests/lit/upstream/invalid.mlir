// RUN: mlir-opt %s -split-input-file -verify-diagnostics
// RUN: mlir-opt %s --split-input-file --verify-diagnostics=only-expected

func.func @wrong_return(%a: tensor<4xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{type of return operand 0 ('tensor<4xf32>') doesn't match function result type ('tensor<8xf32>')}}
  return %a : tensor<4xf32>
}

// -----

func.func @cast(%a: i32) -> i64 {
  // expected-note @below {{prior use here}}
  %0 = arith.extsi %a : i32 to i16
  return %0 : i64
  // expected-error @above {{use of value '%0' expects different type than prior uses: 'i64' vs 'i16'}}
}

// -----

func.func @regex(%a: i32) {
  // expected-error-re @+1 {{'arith.addi' op requires the same type for all operands and results{{$}}}}
  %0 = "arith.addi"(%a, %a) : (i32, i32) -> i64
  return
}

// -----

// expected-error @+1 {{expected non-function type}}
func.func @unclosed( {

// -----

func.func @undefined_value() {
  // expected-error-re @+1 {{use of undeclared SSA {{[a-z]+}} name}}
  %0 = arith.addi %x, %x : i32
  return
}
