// Diagnostics print as file:line:col with the source line and a caret; with
// -split-input-file, lines are counted in the whole file, and a chunk that fails
// still gets its split marker in the output.
// RUN: not mlir-opt %s -split-input-file 2>&1 | FileCheck %s
// RUN: not mlir-opt %s -split-input-file 2>/dev/null | FileCheck %s --check-prefix=OUT
// RUN: not mlir-opt %s -split-input-file -verify-diagnostics 2>&1 | FileCheck %s --check-prefix=VERIFY

// OUT:      func.func @first
// OUT-NEXT:   return
// OUT:      // -----
// OUT-NEXT: // -----
// OUT-NOT:  func.func
func.func @first() {
  return
}

// -----

func.func @second(%x: i32) {
  %0 = arith.addi %x, %y : i32
  return
}
// CHECK: diagnostics.mlir:[[# @LINE - 3]]:23: error: use of undeclared SSA value name
// CHECK-NEXT: {{^}}  %0 = arith.addi %x, %y : i32
// CHECK-NEXT: {{^}}                      ^

// VERIFY: diagnostics.mlir:[[# @LINE - 7]]:23: error: unexpected error: use of undeclared SSA value name
// VERIFY: diagnostics.mlir:[[# @LINE + 6]]:3: error: unexpected error: type of return operand 0
// VERIFY-NOT: see current operation

// -----

func.func @third(%a: i32) -> i64 {
  return %a : i32
}
// CHECK: diagnostics.mlir:[[# @LINE - 2]]:3: error: type of return operand 0 ('i32') doesn't match function result type ('i64') in function @third
// CHECK-NEXT: {{^}}  return %a : i32
// CHECK-NEXT: {{^}}  ^
// CHECK-NEXT: diagnostics.mlir:[[# @LINE - 5]]:3: note: see current operation: "func.return"(%arg0) : (i32) -> ()
