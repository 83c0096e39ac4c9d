// RUN: mlir-opt %s --convert-to-llvm | FileCheck %s
// RUN: mlir-opt %s -convert-to-llvm -reconcile-unrealized-casts -canonicalize | FileCheck %s

// CHECK-LABEL: llvm.func @add
//  CHECK-SAME:   (%[[A:.*]]: i32, %[[B:.*]]: i32) -> i32
//       CHECK:   %[[S:.*]] = llvm.add %[[A]], %[[B]] : i32
//       CHECK:   llvm.return %[[S]] : i32
func.func @add(%a: i32, %b: i32) -> i32 {
  %s = arith.addi %a, %b : i32
  return %s : i32
}

// CHECK-LABEL: llvm.func @select
//       CHECK:   llvm.icmp "slt"
//       CHECK:   llvm.select
func.func @select(%a: i64, %b: i64) -> i64 {
  %lt = arith.cmpi slt, %a, %b : i64
  %m = arith.select %lt, %a, %b : i64
  return %m : i64
}
