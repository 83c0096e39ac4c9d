// Stages run in command-line order: ABI first, then canonicalize sees the memref form.
// RUN: mlc-opt %s --mlc-memref-abi --pass-pipeline='builtin.module(canonicalize)' | filecheck %s
// RUN: mlc-opt %s --split-input-file | filecheck %s --check-prefix=SPLIT

// CHECK-LABEL: func.func @id
// CHECK-SAME: memref<4xf32>
// CHECK-NOT: arith.constant
// SPLIT-LABEL: func.func @id
// SPLIT: // -----
// SPLIT-LABEL: func.func @second
func.func @id(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %unused = arith.constant 1.0 : f32
  %r = linalg.copy ins(%a : tensor<4xf32>) outs(%b : tensor<4xf32>) -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

func.func @second() {
  return
}
