// RUN: mlir-opt %s -allow-unregistered-dialect -cse | FileCheck %s
// RUN: mlir-opt %s --allow-unregistered-dialect --pass-pipeline='builtin.module(func.func(cse))' | FileCheck %s
// RUN: mlir-opt %s -allow-unregistered-dialect -split-input-file -cse | FileCheck %s --check-prefix=SPLIT

// CHECK-LABEL: func @simple_constant
//  CHECK-NEXT:   %[[C:.*]] = arith.constant 1 : i32
//  CHECK-NEXT:   return %[[C]], %[[C]] : i32, i32
func.func @simple_constant() -> (i32, i32) {
  %0 = arith.constant 1 : i32
  %1 = arith.constant 1 : i32
  return %0, %1 : i32, i32
}

// CHECK-LABEL: func @same_ops
//       CHECK:   %[[M:.*]] = arith.muli
//   CHECK-NOT:   arith.muli
//       CHECK:   return %[[M]], %[[M]]
func.func @same_ops(%a: i32, %b: i32) -> (i32, i32) {
  %0 = arith.muli %a, %b : i32
  %1 = arith.muli %a, %b : i32
  return %0, %1 : i32, i32
}

// -----

// Side-effecting (unregistered) ops are not merged.
// SPLIT-LABEL: func @side_effects
//       SPLIT:   "foo.op"
//       SPLIT:   "foo.op"
func.func @side_effects() {
  "foo.op"() : () -> ()
  "foo.op"() : () -> ()
  return
}
