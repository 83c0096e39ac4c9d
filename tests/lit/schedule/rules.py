# RUN: %PYTHON %s | filecheck %s
# The default schedule rules (mlc_mlir/schedule/rules.py) size the register tile from the
# target: AVX2 (16 x 256-bit registers) f32 6 x 16, AVX-512 (32 x 512-bit) 14 x 32; B read
# transposed (x @ w.T) gets one vector of columns and more rows. Only Schedule primitives
# are used: the trace is printable and, with tunable=True, every choice is a decision.
import mlc_mlir as mlc
from mlc_mlir import te
from mlc_mlir.schedule.rules import apply_rules
from mlc_mlir.target import Target
from mlc_mlir.testing import run


def matmul_relu(m, n, k, transposed=False):
    A = te.placeholder((m, k), "float32", name="A")
    B = te.placeholder((n, k) if transposed else (k, n), "float32", name="B")
    r = te.reduce_axis((0, k), "r")
    Y = te.compute((m, n), lambda i, j: te.sum(A[i, r] * (B[j, r] if transposed else B[r, j]), axis=r), name="Y")
    C = te.compute((m, n), lambda i, j: te.max(Y[i, j], 0), name="C")
    return te.create_prim_func([A, B, C], name="mm")


# CHECK-LABEL: TEST: test_register_tile_from_target
# CHECK: target llvm -mcpu=haswell (6, 16)
# CHECK: target llvm -mattr=+avx2,+fma,-avx512f (6, 16)
# CHECK: target llvm -mcpu=skylake-avx512 (14, 32)
# CHECK: target llvm -mattr=+avx512f (14, 32)
@run
def test_register_tile_from_target():
    for target in ("llvm -mcpu=haswell", "llvm -mattr=+avx2,+fma,-avx512f", "llvm -mcpu=skylake-avx512",
                   "llvm -mattr=+avx512f"):
        print("target", target, Target(target).register_tile())


# 84 rows (a multiple of 6 and of 14), 64 columns, k 32.
# CHECK-LABEL: TEST: test_avx2
# CHECK: sch.split(loop=[[J:l[0-9]+]], factors=[None, 16])
# CHECK: sch.split(loop=[[I:l[0-9]+]], factors=[None, 6])
# CHECK: sch.vectorize(
# CHECK: sch.unroll(
# CHECK: sch.reverse_compute_at(
# CHECK: sch.decompose_reduction(
# CHECK: vector.transfer_read {{.*}} vector<1x16xf32>
# CHECK: vector.contract
@run
def test_avx2():
    sch = mlc.Schedule(matmul_relu(84, 64, 32))
    apply_rules(sch, "llvm -mcpu=haswell")
    print(sch.trace)
    print(sch.mod)


# CHECK-LABEL: TEST: test_avx512
# CHECK: sch.split(loop={{l[0-9]+}}, factors=[None, 32])
# CHECK: sch.split(loop={{l[0-9]+}}, factors=[None, 14])
# CHECK: vector<1x32xf32>
@run
def test_avx512():
    sch = mlc.Schedule(matmul_relu(84, 64, 32))
    apply_rules(sch, "llvm -mcpu=skylake-avx512")
    print(sch.trace)
    print(sch.mod)


# x @ w.T (both operands contiguous along k): k split by the lanes (8 on AVX2), the partial
# sums rfactor-ed into a block of their own, a 2 x 4 tile of accumulator vectors over the
# lanes; the lanes summed and relu applied on that tile.
# CHECK-LABEL: TEST: test_transposed_b
# CHECK: [[K:l[0-9]+]], [[L:l[0-9]+]] = sch.split(loop={{l[0-9]+}}, factors=[None, 8])
# CHECK: [[RF:b[0-9]+]] = sch.rfactor(loop=[[L]])
# CHECK: sch.split(loop={{l[0-9]+}}, factors=[None, 4])
# CHECK: sch.split(loop={{l[0-9]+}}, factors=[None, 2])
# CHECK: sch.vectorize(
# CHECK: sch.decompose_reduction(block=[[RF]]
# CHECK: sch.reverse_compute_at(
# CHECK: %[[XE:.+]] = tensor.expand_shape %arg0 {{.*}} into tensor<64x4x8xf32>
# CHECK: scf.for {{.*}} -> (tensor<2x4x8xf32>)
# CHECK: vector.transfer_read %[[XE]][{{.*}}], {{.*}} : tensor<64x4x8xf32>, vector<8xf32>
# CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "reduction"]} ins({{.*}} : tensor<2x4x8xf32>) {{.*}}mlc.block = "Y"
# CHECK: arith.maximumf {{.*}} : vector<4xf32>
@run
def test_transposed_b():
    sch = mlc.Schedule(matmul_relu(64, 64, 32, transposed=True))
    apply_rules(sch, "llvm -mcpu=haswell")
    print(sch.trace)
    print(sch.mod)


# tunable: the same schedule, each choice a sampling decision named by its block and the
# rule's decision, with the rule's pick selected; enough cores and work -> parallel
# (decision 1): the rows split in one block per core, each in 6-row register tiles (the rows
# sampled among 1..6; 24 rows: no partial tile to peel).
# CHECK-LABEL: TEST: test_tunable
# CHECK: sch.sample_categorical(candidates=[0, 1], probs=[0.5, 0.5], label="Y.parallel", decision=1)
# CHECK: sch.sample_perfect_tile(loop={{l[0-9]+}}, n=2, max_innermost_factor=16, label="Y.cols", decision=[4, 16])
# CHECK: sch.split(loop={{l[0-9]+}}, factors=[4, None])
# CHECK: [[MR:v[0-9]+]] = sch.sample_categorical(candidates=[1, 2, 3, 4, 5, 6], {{.*}}label="Y.rows", decision=5)
# CHECK: sch.split(loop={{l[0-9]+}}, factors=[None, [[MR]]])
# CHECK-NOT: sch.peel(
# CHECK: sch.parallel(
# CHECK: replayed equal: True
@run
def test_tunable():
    mod = matmul_relu(96, 64, 512)
    sch = mlc.Schedule(mod)
    apply_rules(sch, "llvm -mcpu=haswell -num-cores=4", tunable=True)
    print(sch.trace)
    plain = mlc.Schedule(mod)
    apply_rules(plain, "llvm -mcpu=haswell -num-cores=4")
    print("replayed equal:", str(sch.trace.apply(mod).mod) == str(plain.mod))


# A large contraction gets the structure of a BLAS kernel; here its five blocks of 64 columns
# do not share out evenly over the 2 cores, so one block of 128 rows per core (parallel), the target's
# full 6 x 16 register tile with the rows' remainder peeled (128 = 21 x 6 + 2), columns by 64
# and k by 512 (unrolled by 8 inside the tile's rows), rows outer / columns inner inside
# the block, and the 512 x 64 panel of B copied to a local buffer once per (NC, KC) block
# (compute_at k0: outside both register-tile loops).
# CHECK-LABEL: TEST: test_large_contraction_cache_blocks
# CHECK: sch.split(loop=[[I:l[0-9]+]], factors=[None, 128])
# CHECK-NEXT: [[IT:l[0-9]+]], [[IR:l[0-9]+]] = sch.split(loop={{l[0-9]+}}, factors=[None, 6])
# CHECK-NEXT: [[J0:l[0-9]+]], [[JB:l[0-9]+]] = sch.split(loop={{l[0-9]+}}, factors=[None, 64])
# CHECK-NEXT: [[JT:l[0-9]+]], [[JR:l[0-9]+]] = sch.split(loop=[[JB]], factors=[None, 16])
# CHECK-NEXT: [[K0:l[0-9]+]], [[K1:l[0-9]+]] = sch.split(loop={{l[0-9]+}}, factors=[None, 512])
# CHECK-NEXT: [[K1O:l[0-9]+]], [[KR:l[0-9]+]] = sch.split(loop=[[K1]], factors=[None, 8])
# CHECK-NEXT: sch.reorder({{l[0-9]+}}, [[J0]], [[K0]], [[IT]], [[JT]], [[K1O]], [[IR]], [[KR]], [[JR]])
# CHECK-NEXT: sch.peel(loop=[[IT]])
# CHECK-NEXT: sch.vectorize(loop=[[JR]])
# CHECK-NEXT: sch.unroll(loop=[[IR]])
# CHECK-NEXT: sch.unroll(loop=[[KR]])
# CHECK-NEXT: [[BL:b[0-9]+]] = sch.cache_read(block={{b[0-9]+}}, read_buffer_index=1, storage_scope="local")
# CHECK-NEXT: sch.compute_at(block=[[BL]], loop=[[K0]])
# CHECK: sch.parallel(
# The IR: per core and k block, the 512 x 64 panel of B copied once (vectors of 64), then 21
# full 6-row tiles of 16 columns (6 FMAs of one A element by the same B row per
# k step, 8 k steps per iteration: 48), then the 2-row remainder (2 per k step: 16), all
# reading the local panel.
# CHECK: scf.forall (%{{.*}}) in (2)
# CHECK: scf.for %[[K0:.*]] = %c0 to %c1024 step %c512
# CHECK: %[[PANEL:.*]] = bufferization.alloc_tensor() : tensor<512x64xf32>
# CHECK: %[[PACKED:.*]] = scf.for
# CHECK: vector.transfer_read %arg1{{.*}} : tensor<1024x320xf32>, vector<1x64xf32>
# CHECK: scf.for %{{.*}} = %c0 to %c126 step %c6
# CHECK: scf.for %{{.*}} = %c0 to %c64 step %c16
# CHECK: scf.for %{{.*}} = %c0 to %c512 step %c8
# (peeled tiles are vectorized after the peel, at static shapes, and their contractions
# lowered there: each k step of a row is one FMA of a broadcast A element by the B row)
# CHECK: %[[BROW:.*]] = vector.transfer_read %[[PACKED]]{{.*}} vector<1x16xf32>
# CHECK: %[[B16:.*]] = vector.extract %[[BROW]][0] : vector<16xf32> from vector<1x16xf32>
# CHECK-COUNT-6: vector.fma {{.*}}, %[[B16]], {{.*}} : vector<16xf32>
# CHECK: scf.yield
# CHECK: tensor.extract_slice {{.*}}[126, 0] [2, 64]
# CHECK: %[[BROW2:.*]] = vector.transfer_read %[[PACKED]]{{.*}} vector<1x16xf32>
# CHECK: %[[B2:.*]] = vector.extract %[[BROW2]][0] : vector<16xf32> from vector<1x16xf32>
# CHECK-COUNT-2: vector.fma {{.*}}, %[[B2]], {{.*}} : vector<16xf32>
# (the second row's FMA with the first B row comes after the first row's 8: 7 left)
# CHECK-COUNT-7: vector.fma {{.*}} : vector<16xf32>
# CHECK-NOT: vector.fma
# CHECK: scf.forall.in_parallel
@run
def test_large_contraction_cache_blocks():
    A = te.placeholder((256, 1024), "float32", name="A")
    B = te.placeholder((1024, 320), "float32", name="B")
    r = te.reduce_axis((0, 1024), "r")
    Y = te.compute((256, 320), lambda i, j: te.sum(A[i, r] * B[r, j], axis=r), name="Y")
    sch = mlc.Schedule(te.create_prim_func([A, B, Y], name="big"))
    apply_rules(sch, "llvm -mcpu=haswell -num-cores=2")
    print(sch.trace)
    print(sch.mod)




# Fewer rows than the tile's 6 (a row vector times a matrix: batch 1): the columns widen so
# that the accumulators still fill the registers and hide the FMA latency: 1 row -> 8
# vectors (64 f32: 8 accumulators, B from memory), 3 rows -> 2 vectors (3 would fit the
# registers, 9 accumulators + 3 B + 1 broadcast, but a power of two is taken: 3 x 24 ran at
# 6 GFLOP/s), 6 rows or more -> the plain 6 x 16 tile.
# CHECK-LABEL: TEST: test_few_rows_widen_the_columns
# CHECK: rows 1: sch.split(loop={{l[0-9]+}}, factors=[None, 64])
# CHECK: rows 3: sch.split(loop={{l[0-9]+}}, factors=[None, 16])
# CHECK: rows 8: sch.split(loop={{l[0-9]+}}, factors=[None, 16])
# CHECK: vector.contract {{.*}} vector<1x64xf32>
@run
def test_few_rows_widen_the_columns():
    for rows in (1, 3, 8):
        sch = mlc.Schedule(matmul_relu(rows, 128, 64))
        apply_rules(sch, "llvm -mcpu=haswell -num-cores=1")
        split = next(line for line in str(sch.trace).splitlines() if "sch.split(" in line)
        print(f"rows {rows}: {split.strip().split(' = ')[-1]}")
    sch = mlc.Schedule(matmul_relu(1, 128, 64))
    apply_rules(sch, "llvm -mcpu=haswell -num-cores=1")
    print(sch.mod)


# Columns that are not whole vectors (10 outputs, fewer than the tile): a tile of at most one
# vector (5), not one vector<10xf32> per row (6x slower). More columns than the tile whose
# divisors cannot fill it (72 = 4 x 16 + 8, 127 = 7 x 16 + 15): full 16-column tiles and
# the partial last one peeled (127 x 127 ran at 9 GFLOP/s in 1-column tiles, 86 so).
# CHECK-LABEL: TEST: test_columns_whole_vectors_or_at_most_one
# CHECK: cols 10: sch.split(loop={{l[0-9]+}}, factors=[None, 5]) peeled: 1
# CHECK: cols 72: sch.split(loop={{l[0-9]+}}, factors=[None, 16]) peeled: 2
# CHECK: cols 127: sch.split(loop={{l[0-9]+}}, factors=[None, 16]) peeled: 2
# CHECK: cols 128: sch.split(loop={{l[0-9]+}}, factors=[None, 16]) peeled: 1
@run
def test_columns_whole_vectors_or_at_most_one():
    for cols in (10, 72, 127, 128):
        sch = mlc.Schedule(matmul_relu(64, cols, 32))
        apply_rules(sch, "llvm -mcpu=haswell -num-cores=1")
        split = next(line for line in str(sch.trace).splitlines() if "sch.split(" in line)
        print(f"cols {cols}: {split.strip().split(' = ')[-1]} peeled: {str(sch.trace).count('sch.peel(')}")
