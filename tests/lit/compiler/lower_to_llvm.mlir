// RUN: mlc-opt %s --mlc-memref-abi | filecheck %s --check-prefix=ABI
// RUN: mlc-opt %s --mlc-lower-to-llvm | filecheck %s --check-prefix=LLVM

// The public tensor program takes memrefs and writes its result into the last one.
// ABI-LABEL: func.func @scale
// ABI-SAME: (%[[A:.+]]: memref<?xf32> {mlc.shape = ["n"]}, %[[B:.+]]: memref<?xf32> {mlc.shape = ["n"]})
// ABI-SAME: llvm.emit_c_interface
// ABI: %[[TA:.+]] = bufferization.to_tensor %[[A]] restrict :
// ABI: %[[TB:.+]] = bufferization.to_tensor %[[B]] restrict writable :
// ABI: %[[R:.+]] = linalg.generic
// ABI-SAME: ins(%[[TA]] : tensor<?xf32>) outs(%[[TB]] : tensor<?xf32>)
// ABI: bufferization.materialize_in_destination %[[R]] in restrict writable %[[B]]
// ABI-NEXT: return{{$}}

// LLVM-LABEL: llvm.func @scale
// LLVM-SAME: !llvm.ptr {llvm.noalias}
// LLVM: llvm.fmul {{.*}} {fastmathFlags = #llvm.fastmath<contract>}
// LLVM-LABEL: llvm.func @_mlir_ciface_scale
// LLVM-NOT: linalg.
func.func @scale(%a: tensor<?xf32> {mlc.shape = ["n"]}, %b: tensor<?xf32> {mlc.shape = ["n"]}) -> tensor<?xf32> {
  %two = arith.constant 2.0 : f32
  %r = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]}
      ins(%a : tensor<?xf32>) outs(%b : tensor<?xf32>) attrs = {mlc.block = "B"} {
  ^bb0(%x: f32, %o: f32):
    %m = arith.mulf %x, %two : f32
    linalg.yield %m : f32
  } -> tensor<?xf32>
  return %r : tensor<?xf32>
}
