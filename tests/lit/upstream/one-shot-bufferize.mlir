// RUN: mlir-opt %s -one-shot-bufferize="bufferize-function-boundaries" -split-input-file | FileCheck %s
// RUN: mlir-opt %s -one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map" -split-input-file | FileCheck %s --check-prefix=IDENTITY

// The original tensor is read after the insert: the insert must write into a copy.
// CHECK-LABEL: func @insert_copy
//  CHECK-SAME:   (%[[T:[a-z0-9]+]]: memref<?xf32, strided<[?], offset: ?>>
//       CHECK:   %[[ALLOC:.*]] = memref.alloc
//       CHECK:   memref.copy %[[T]], %[[ALLOC]]
//       CHECK:   memref.store %{{.*}}, %[[ALLOC]]
//       CHECK:   %[[F:.*]] = memref.load %[[T]]
//       CHECK:   return %[[F]], %[[ALLOC]]
// IDENTITY-LABEL: func @insert_copy
//  IDENTITY-SAME:   (%{{.*}}: memref<?xf32>
func.func @insert_copy(%t: tensor<?xf32>, %i: index) -> (f32, tensor<?xf32>) {
  %cst = arith.constant 0.0 : f32
  %w = tensor.insert %cst into %t[%i] : tensor<?xf32>
  %f = tensor.extract %t[%i] : tensor<?xf32>
  return %f, %w : f32, tensor<?xf32>
}

// -----

// CHECK-LABEL: func @in_place
//   CHECK-NOT:   memref.alloc
//       CHECK:   memref.store
func.func @in_place(%t: tensor<?xf32> {bufferization.writable = true}, %i: index) -> tensor<?xf32> {
  %cst = arith.constant 1.0 : f32
  %w = tensor.insert %cst into %t[%i] : tensor<?xf32>
  return %w : tensor<?xf32>
}
