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


# x @ w.T: the columns of B are gathered, one vector of them (8 on AVX2), 8 rows.
# CHECK-LABEL: TEST: test_transposed_b
# CHECK: sch.split(loop={{l[0-9]+}}, factors=[None, 8])
# CHECK: sch.split(loop={{l[0-9]+}}, factors=[None, 8])
@run
def test_transposed_b():
    sch = mlc.Schedule(matmul_relu(64, 64, 32, transposed=True))
    apply_rules(sch, "llvm -mcpu=haswell")
    print(sch.trace)


# tunable: the same schedule, each choice a sampling decision with the rule's pick selected;
# enough cores and work -> the outer loop is parallel (decision 1).
# CHECK-LABEL: TEST: test_tunable
# CHECK: sch.sample_perfect_tile(loop={{l[0-9]+}}, n=2, max_innermost_factor=16, decision=[4, 16])
# CHECK: sch.sample_perfect_tile(loop={{l[0-9]+}}, n=2, max_innermost_factor=6, decision=[16, 6])
# CHECK: sch.sample_categorical(candidates=[0, 1], probs=[0.5, 0.5], decision=1)
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


# A large contraction gets cache blocks: 32 register tiles of rows per parallel block, k by
# 256, the 256 x 16 panel of B copied to a local buffer at j0.
# CHECK-LABEL: TEST: test_large_contraction_cache_blocks
# CHECK: sch.split(loop={{l[0-9]+}}, factors=[None, 32, 4])
# CHECK: sch.split(loop={{l[0-9]+}}, factors=[None, 16])
# CHECK: sch.split(loop={{l[0-9]+}}, factors=[None, 256])
# CHECK: sch.cache_read(block={{b[0-9]+}}, read_buffer_index=1, storage_scope="local")
# CHECK: sch.compute_at(
# CHECK: sch.parallel(
@run
def test_large_contraction_cache_blocks():
    A = te.placeholder((256, 1024), "float32", name="A")
    B = te.placeholder((1024, 64), "float32", name="B")
    r = te.reduce_axis((0, 1024), "r")
    Y = te.compute((256, 64), lambda i, j: te.sum(A[i, r] * B[r, j], axis=r), name="Y")
    sch = mlc.Schedule(te.create_prim_func([A, B, Y], name="big"))
    apply_rules(sch, "llvm -mcpu=haswell -num-cores=2")
    print(sch.trace)
