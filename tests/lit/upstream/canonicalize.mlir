// RUN: mlir-opt %s -canonicalize | FileCheck %s
// RUN: mlir-opt %s --canonicalize="max-iterations=1 region-simplify=disabled" | FileCheck %s
// RUN: mlir-opt %s -pass-pipeline='builtin.module(func.func(canonicalize{top-down=false}))' | FileCheck %s
// RUN: mlir-opt %s -p 'builtin.module(canonicalize)' | FileCheck %s

// CHECK-LABEL: func @fold_add_zero
//  CHECK-SAME:   (%[[A:.*]]: i32)
//  CHECK-NEXT:   return %[[A]] : i32
func.func @fold_add_zero(%a: i32) -> i32 {
  %c0 = arith.constant 0 : i32
  %r = arith.addi %a, %c0 : i32
  return %r : i32
}

// CHECK-LABEL: func @fold_constants
//  CHECK-NEXT:   %[[C:.*]] = arith.constant 42 : index
//  CHECK-NEXT:   return %[[C]]
func.func @fold_constants() -> index {
  %c40 = arith.constant 40 : index
  %c2 = arith.constant 2 : index
  %r = arith.addi %c40, %c2 : index
  return %r : index
}

// CHECK-LABEL: func @dead_op
//   CHECK-NOT:   arith.muli
func.func @dead_op(%a: i32) {
  %unused = arith.muli %a, %a : i32
  return
}
