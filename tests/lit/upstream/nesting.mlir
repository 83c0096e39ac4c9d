// A pass restricted to func.func given as a flag runs nested under the module, as in mlir-opt.
// RUN: mlir-opt %s -canonicalize --buffer-hoisting -promote-buffers-to-stack -cse --dump-pass-pipeline 2>&1 | FileCheck %s --check-prefix=PIPE
// RUN: mlir-opt %s -promote-buffers-to-stack | FileCheck %s

// PIPE:      Pass Manager with 4 passes:
// PIPE-NEXT: builtin.module(
// PIPE-NEXT:   canonicalize{{.*}},
// PIPE-NEXT:   func.func(
// PIPE-NEXT:     buffer-hoisting
// PIPE-NEXT:   ),
// PIPE-NEXT:   func.func(
// PIPE-NEXT:     promote-buffers-to-stack{max-alloc-size-in-bytes=1024 max-rank-of-allocated-memref=1}
// PIPE-NEXT:   ),
// PIPE-NEXT:   cse
// PIPE-NEXT: )

// CHECK-LABEL: func @small_alloc
//       CHECK:   memref.alloca() : memref<4xf32>
//   CHECK-NOT:   memref.alloc(
func.func @small_alloc(%v: f32, %i: index) -> f32 {
  %m = memref.alloc() : memref<4xf32>
  memref.store %v, %m[%i] : memref<4xf32>
  %r = memref.load %m[%i] : memref<4xf32>
  return %r : f32
}
