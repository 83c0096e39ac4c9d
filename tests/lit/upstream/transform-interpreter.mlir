// RUN: mlir-opt %s --transform-interpreter -split-input-file -verify-diagnostics | FileCheck %s
// RUN: mlir-opt %s -transform-interpreter -canonicalize -cse -split-input-file -verify-diagnostics | FileCheck %s --check-prefix=CANON

// CHECK-LABEL: func @tile_matmul
//       CHECK:   scf.for
//       CHECK:     scf.for
//       CHECK:       linalg.matmul {{.*}} tensor<4x4xf32>
// CANON-LABEL: func @tile_matmul
//       CANON:   arith.constant 4 : index
func.func @tile_matmul(%a: tensor<8x8xf32>, %b: tensor<8x8xf32>, %c: tensor<8x8xf32>) -> tensor<8x8xf32> {
  // expected-remark @below {{tiling this matmul}}
  %r = linalg.matmul ins(%a, %b : tensor<8x8xf32>, tensor<8x8xf32>) outs(%c : tensor<8x8xf32>) -> tensor<8x8xf32>
  return %r : tensor<8x8xf32>
}

module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %mm = transform.structured.match ops{["linalg.matmul"]} in %root : (!transform.any_op) -> !transform.any_op
    transform.debug.emit_remark_at %mm, "tiling this matmul" : !transform.any_op
    %t, %l0, %l1 = transform.structured.tile_using_for %mm tile_sizes [4, 4]
      : (!transform.any_op) -> (!transform.any_op, !transform.any_op, !transform.any_op)
    transform.yield
  }
}

// -----

func.func @wrong_tile_count(%a: tensor<8x8xf32>, %b: tensor<8x8xf32>, %c: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %r = linalg.matmul ins(%a, %b : tensor<8x8xf32>, tensor<8x8xf32>) outs(%c : tensor<8x8xf32>) -> tensor<8x8xf32>
  return %r : tensor<8x8xf32>
}

module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %mm = transform.structured.match ops{["linalg.matmul"]} in %root : (!transform.any_op) -> !transform.any_op
    // expected-error @below {{expected number of loops to tile (2) to match number of `loops` results (1)}}
    %t, %l = transform.structured.tile_using_for %mm tile_sizes [4, 4]
      : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    transform.yield
  }
}
