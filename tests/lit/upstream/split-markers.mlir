// RUN: mlir-opt %S/Inputs/split-plus.mlir -split-input-file='// +++' -output-split-marker='// =====' | FileCheck %s
// RUN: mlir-opt %S/Inputs/split-plus.mlir -split-input-file | FileCheck %s --check-prefix=DEFAULT

// CHECK:      func.func @first
// CHECK:      // =====
// CHECK-NEXT: module {
// CHECK-NEXT:   func.func @second

// DEFAULT:     func.func @first
// DEFAULT-NOT: module {
// DEFAULT:     func.func @second
