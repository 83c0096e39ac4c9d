// RUN: mlc-opt %s --split-input-file --mlc-lower-to-llvm | filecheck %s
// The fast entries of compiled functions (compiler/fastcall.py), built with the llvm dialect's
// builders after the lowering: per public function an entry `mlc_pyfn_<f>(self, args, nargs)`
// that checks arity and each array (exact ndarray or NDArray, rank, dtype, flags, dims), calls `@f` with or
// without the GIL, and returns `self[0](*args)` (the Python path) on any mismatch; and a getter
// `mlc_pyfn_addr_<f>` of its address. Twin of the example in the module docstring.

// CHECK-LABEL: llvm.func @mlc_pyfn_add(
// CHECK-SAME: %[[SELF:[^:]+]]: !llvm.ptr, %[[ARGS:[^:]+]]: !llvm.ptr, %[[NARGS:[^:]+]]: i64) -> !llvm.ptr
// CHECK: %[[THREE:.+]] = llvm.mlir.constant(3 : i64) : i64
// CHECK: %[[ARITY:.+]] = llvm.icmp "eq" %[[NARGS]], %[[THREE]] : i64
// CHECK: llvm.cond_br %[[ARITY]], ^{{bb[0-9]+}}, ^[[FALLBACK:bb[0-9]+]]
// CHECK: %[[SLOT:.+]] = llvm.getelementptr %[[ARGS]][0] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr
// CHECK: %[[A:.+]] = llvm.load %[[SLOT]] : !llvm.ptr -> !llvm.ptr
// an exact mlc NDArray counts as the NumPy array in its slot (read without a branch)
// CHECK: %[[WRAPPED:.+]] = llvm.select %{{.+}}, %{{.+}}, %{{.+}} : i1, !llvm.ptr
// CHECK: %[[INNER:.+]] = llvm.load %[[WRAPPED]] : !llvm.ptr -> !llvm.ptr
// CHECK: llvm.select %{{.+}}, %[[A]], %[[INNER]] : i1, !llvm.ptr
// CHECK: llvm.cond_br %{{.+}}, ^{{bb[0-9]+}}, ^[[FALLBACK]]
// CHECK: llvm.mlir.constant(257 : i32) : i32
// CHECK: %[[TEN:.+]] = llvm.mlir.constant(10 : i64) : i64
// CHECK: llvm.icmp "eq" %{{.+}}, %[[TEN]] : i64
// an output is also writeable
// CHECK: llvm.mlir.constant(1281 : i32) : i32
// CHECK: llvm.icmp "ult"
// CHECK: llvm.cond_br %{{.+}}, ^[[FALLBACK]], ^{{bb[0-9]+}}
// CHECK: llvm.icmp "ugt"
// CHECK: llvm.call @add(
// CHECK: llvm.call @add(
// CHECK: ^[[FALLBACK]]:
// CHECK: llvm.call %{{.+}}(%{{.+}}, %[[ARGS]], %[[NARGS]], %{{.+}}) : !llvm.ptr, (!llvm.ptr, !llvm.ptr, i64, !llvm.ptr) -> !llvm.ptr
// CHECK-LABEL: llvm.func @mlc_pyfn_addr_add() -> !llvm.ptr
// CHECK: %[[ADDR:.+]] = llvm.mlir.addressof @mlc_pyfn_add : !llvm.ptr
// CHECK: llvm.return %[[ADDR]] : !llvm.ptr
func.func @add(%a: tensor<10xf32>, %b: tensor<10xf32>, %c: tensor<10xf32>) -> tensor<10xf32> {
  %r = linalg.add ins(%a, %b : tensor<10xf32>, tensor<10xf32>) outs(%c : tensor<10xf32>) -> tensor<10xf32>
  return %r : tensor<10xf32>
}

// -----

// A shape symbol: the second array's length is compared with the first one's.
// CHECK-LABEL: llvm.func @mlc_pyfn_scale(
// CHECK: %[[P:.+]] = llvm.getelementptr %{{.+}}[0] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK: %[[N:.+]] = llvm.load %[[P]] : !llvm.ptr -> i64
// CHECK: %[[Q:.+]] = llvm.getelementptr %{{.+}}[0] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK: %[[M:.+]] = llvm.load %[[Q]] : !llvm.ptr -> i64
// CHECK: llvm.icmp "eq" %[[M]], %[[N]] : i64
// CHECK: llvm.call @scale(
// CHECK-LABEL: llvm.func @mlc_pyfn_addr_scale()
func.func @scale(%a: tensor<?xf32> {mlc.shape = ["n"]}, %b: tensor<?xf32> {mlc.shape = ["n"]}) -> tensor<?xf32> {
  %two = arith.constant 2.0 : f32
  %r = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]}
      ins(%a : tensor<?xf32>) outs(%b : tensor<?xf32>) {
  ^bb0(%x: f32, %o: f32):
    %m = arith.mulf %x, %two : f32
    linalg.yield %m : f32
  } -> tensor<?xf32>
  return %r : tensor<?xf32>
}
