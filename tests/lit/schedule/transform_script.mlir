// A transform script is a schedule: mlc-opt applies it to the tensor program.
// RUN: mlc-opt %s --transform-script=%S/Inputs/tile_relu_fuse_mm.mlir | filecheck %s

// CHECK-LABEL: func.func @mm_relu
// CHECK: scf.for %[[I:.+]] = %{{.+}} to %{{.+}} step %c8
// CHECK: scf.for %[[J:.+]] = %{{.+}} to %{{.+}} step %c32
// CHECK: linalg.fill {mlc.block_init = "Y"} {{.*}} -> tensor<8x32xf32>
// CHECK: linalg.matmul {mlc.block = "Y"} ins({{.+}} : tensor<8x128xf32>, tensor<128x32xf32>) outs({{.+}} : tensor<8x32xf32>)
// CHECK: linalg.generic
// CHECK-SAME: ins(%{{.+}} : tensor<8x32xf32>)
// CHECK-SAME: mlc.block = "C"
func.func @mm_relu(%A: tensor<128x128xf32>, %B: tensor<128x128xf32>, %C: tensor<128x128xf32>)
    -> tensor<128x128xf32> attributes {mlc.prim_func} {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<128x128xf32>
  %y0 = linalg.fill {mlc.block_init = "Y"} ins(%zero : f32) outs(%e : tensor<128x128xf32>) -> tensor<128x128xf32>
  %y = linalg.matmul {mlc.block = "Y"} ins(%A, %B : tensor<128x128xf32>, tensor<128x128xf32>)
       outs(%y0 : tensor<128x128xf32>) -> tensor<128x128xf32>
  %c = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
                       iterator_types = ["parallel", "parallel"]}
       ins(%y : tensor<128x128xf32>) outs(%C : tensor<128x128xf32>) attrs = {mlc.block = "C"} {
  ^bb0(%v: f32, %o: f32):
    %r = arith.maximumf %v, %zero : f32
    linalg.yield %r : f32
  } -> tensor<128x128xf32>
  return %c : tensor<128x128xf32>
}
