# RUN: %PYTHON %s | filecheck %s
# The build's unroll-jam stage (compiler/unroll_jam.py) on bufferized loop nests: the course's
# ch.2 schedule of mm_relu (a 1 x 32 accumulator per k loop) gets its row loop unrolled and
# jammed by the factor the target's registers allow (AVX2: 2 rows = 8 ymm accumulators + 4
# for B's row + 1 broadcast; AVX-512: 8 rows = 16 zmm + 2 + 1), the jammed ops vectorized;
# a trip count the factor does not divide is split (jammed part + remainder loop); loops
# whose iterations write the same elements are left alone.
from mlir import ir

from mlc_mlir.compiler.unroll_jam import jam_plan, unroll_and_jam
from mlc_mlir.context import mlc_context

CH2 = """
func.func @ch2(%A: memref<ROWSx16xf32>, %B: memref<16x64xf32>, %C: memref<ROWSx64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %c32 = arith.constant 32 : index
  %c64 = arith.constant 64 : index
  %cR = arith.constant ROWS : index
  %zero = arith.constant 0.0 : f32
  %Y = memref.alloc() : memref<ROWSx64xf32>
  scf.for %i = %c0 to %cR step %c1 {
    %crow = memref.subview %C[%i, 0] [1, 64] [1, 1] : memref<ROWSx64xf32> to memref<1x64xf32, strided<[64, 1], offset: ?>>
    scf.for %j0 = %c0 to %c64 step %c32 {
      %arow = memref.subview %A[%i, 0] [1, 16] [1, 1] : memref<ROWSx16xf32> to memref<1x16xf32, strided<[16, 1], offset: ?>>
      %bcol = memref.subview %B[0, %j0] [16, 32] [1, 1] : memref<16x64xf32> to memref<16x32xf32, strided<[64, 1], offset: ?>>
      %y = memref.subview %Y[%i, %j0] [1, 32] [1, 1] : memref<ROWSx64xf32> to memref<1x32xf32, strided<[64, 1], offset: ?>>
      linalg.fill ins(%zero : f32) outs(%y : memref<1x32xf32, strided<[64, 1], offset: ?>>)
      scf.for %k = %c0 to %c16 step %c1 {
        %a = memref.subview %arow[0, %k] [1, 1] [1, 1] : memref<1x16xf32, strided<[16, 1], offset: ?>> to memref<1x1xf32, strided<[16, 1], offset: ?>>
        %b = memref.subview %bcol[%k, 0] [1, 32] [1, 1] : memref<16x32xf32, strided<[64, 1], offset: ?>> to memref<1x32xf32, strided<[64, 1], offset: ?>>
        linalg.matmul ins(%a, %b : memref<1x1xf32, strided<[16, 1], offset: ?>>, memref<1x32xf32, strided<[64, 1], offset: ?>>)
                      outs(%y : memref<1x32xf32, strided<[64, 1], offset: ?>>)
      }
      %c = memref.subview %crow[0, %j0] [1, 32] [1, 1] : memref<1x64xf32, strided<[64, 1], offset: ?>> to memref<1x32xf32, strided<[64, 1], offset: ?>>
      linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>],
                      iterator_types = ["parallel", "parallel"]}
          ins(%y : memref<1x32xf32, strided<[64, 1], offset: ?>>) outs(%c : memref<1x32xf32, strided<[64, 1], offset: ?>>) {
      ^bb0(%in: f32, %out: f32):
        %r = arith.maximumf %in, %zero : f32
        linalg.yield %r : f32
      }
    }
  }
  memref.dealloc %Y : memref<ROWSx64xf32>
  return
}
"""

# Every i accumulates into the same row of C: the i loop is not parallel, nothing is jammed.
SHARED_ROW = """
func.func @shared_row(%A: memref<8x16xf32>, %B: memref<16x32xf32>, %C: memref<1x32xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  scf.for %i = %c0 to %c8 step %c1 {
    scf.for %k = %c0 to %c16 step %c1 {
      %a = memref.subview %A[%i, %k] [1, 1] [1, 1] : memref<8x16xf32> to memref<1x1xf32, strided<[16, 1], offset: ?>>
      %b = memref.subview %B[%k, 0] [1, 32] [1, 1] : memref<16x32xf32> to memref<1x32xf32, strided<[32, 1], offset: ?>>
      linalg.matmul ins(%a, %b : memref<1x1xf32, strided<[16, 1], offset: ?>>, memref<1x32xf32, strided<[32, 1], offset: ?>>)
                    outs(%C : memref<1x32xf32>)
    }
  }
  return
}
"""


def run(title, text, target):
    print(title)
    with mlc_context():
        module = ir.Module.parse(text)
        print("plan:", [(op.name, f) for op, f in jam_plan(module, target)])
        unroll_and_jam(module, target)
        module.operation.verify()
        print(module)


# CHECK-LABEL: AVX2, 8 rows
# CHECK: plan: [('scf.for', 2)]
# CHECK: scf.for %[[I:.+]] = %{{.+}} to %{{.+}} step %[[C2:.+]] {
# CHECK: scf.for %{{.+}} = %{{.+}} to %{{.+}} step %{{.+}} {
# CHECK-COUNT-2: vector.transfer_write %{{.+}} : vector<1x32xf32>
# CHECK: scf.for %{{.+}} = %{{.+}} to %{{.+}} step %{{.+}} {
# CHECK-COUNT-2: vector.contract
# CHECK-NOT: vector.contract
# CHECK: }
# CHECK-COUNT-2: arith.maximumf %{{.+}} : vector<1x32xf32>
# CHECK-NOT: linalg.
run("AVX2, 8 rows", CH2.replace("ROWS", "8"), "llvm -mcpu=haswell")

# All 8 rows in one iteration (the row loop folds away): the j0 loop and the k loop remain.
# CHECK-LABEL: AVX-512, 8 rows
# CHECK: plan: [('scf.for', 8)]
# CHECK: scf.for %{{.+}} = %{{.+}} to %{{.+}} step %{{.+}} {
# CHECK-COUNT-8: vector.transfer_write %{{.+}} : vector<1x32xf32>
# CHECK: scf.for %{{.+}} = %{{.+}} to %{{.+}} step %{{.+}} {
# CHECK-COUNT-8: vector.contract
# CHECK-NOT: vector.contract
run("AVX-512, 8 rows", CH2.replace("ROWS", "8"), "llvm -mcpu=skylake-avx512")

# 7 rows on AVX2: rows [0, 6) jammed by 2, row 6 in the original loop (one iteration: its
# body, unvectorized, after the jammed loop).
# CHECK-LABEL: AVX2, 7 rows
# CHECK: plan: [('scf.for', 2)]
# CHECK: %[[C6:.+]] = arith.constant 6 : index
# CHECK: scf.for %{{.+}} = %{{.+}} to %[[C6]] step
# CHECK-COUNT-2: vector.contract
# CHECK-NOT: vector.contract
# CHECK: linalg.matmul
run("AVX2, 7 rows", CH2.replace("ROWS", "7"), "llvm -mcpu=haswell")

# CHECK-LABEL: not parallel
# CHECK: plan: []
# CHECK-NOT: vector.
# CHECK: linalg.matmul
run("not parallel", SHARED_ROW, "llvm -mcpu=haswell")
