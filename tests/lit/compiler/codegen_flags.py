# RUN: %PYTHON %s | filecheck %s
# What LLVM gets to vectorize and fuse multiply-adds (mlc.build, mlc_mlir/compiler/codegen_flags.py):
# llvm.noalias on the aligned pointer of each memref argument, #arith.fastmath<contract>
# (the default) or none, target_cpu/target_features from -mattr, and get_source("asm")
# showing the JIT's own machine code (the course's ch.2 schedule: FMAs on ymm vectors).
import numpy as np

import mlc_mlir as mlc
from mlc_mlir import te
from mlc_mlir.testing import run


def mm_relu(n=64):
    A = te.placeholder((n, n), "float32", name="A")
    B = te.placeholder((n, n), "float32", name="B")
    k = te.reduce_axis((0, n), "k")
    Y = te.compute((n, n), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="Y")
    C = te.compute((n, n), lambda i, j: te.max(Y[i, j], 0), name="C")
    return te.create_prim_func([A, B, C], name="mm_relu")


def ch2(mod):
    sch = mlc.Schedule(mod)
    b = sch.get_block("Y")
    i, j, k = sch.get_loops(b)
    j0, j1 = sch.split(j, factors=[None, 32])
    sch.reorder(j0, k, j1)
    sch.reverse_compute_at(sch.get_block("C"), j0)
    return sch.mod


def header(rt, name):
    return next(l.strip() for l in rt.get_source("llvm-dialect").splitlines() if l.strip().startswith(f"llvm.func @{name}("))


MOD = ch2(mm_relu())
A = np.random.default_rng(0).standard_normal((64, 64)).astype("float32")
B = np.random.default_rng(1).standard_normal((64, 64)).astype("float32")
REF = np.maximum(A.astype("float64") @ B, 0)


def matches_numpy(rt):
    c = np.empty((64, 64), "float32")
    rt["mm_relu"](A, B, c)
    return np.allclose(c, REF, rtol=1e-5, atol=1e-4)


# Each memref expands to (allocated, aligned, offset, sizes[2], strides[2]): the aligned
# pointer (the second field) is noalias, the allocated one is not.
# CHECK-LABEL: TEST: test_default_build
# CHECK: llvm.func @mm_relu(%{{.+}}: !llvm.ptr, %{{.+}}: !llvm.ptr {llvm.noalias}, %{{.+}}: i64, %{{.+}}: i64, %{{.+}}: i64, %{{.+}}: i64, %{{.+}}: i64, %{{.+}}: !llvm.ptr, %{{.+}}: !llvm.ptr {llvm.noalias},
# CHECK: llvm.{{.*}}fastmathFlags = #llvm.fastmath<contract>
# CHECK: vfmadd{{[0-9]+}}ps {{.*}}%{{[yz]}}mm
# CHECK: results match NumPy: True
@run
def test_default_build():
    rt = mlc.build(MOD)
    print(header(rt, "mm_relu"))
    print(next(l.strip() for l in rt.get_source("llvm-dialect").splitlines() if "fastmath<contract>" in l))
    # 256-bit FMAs on AVX2 hosts, 512-bit ones on AVX-512 hosts
    print(next(l.strip() for l in rt.get_source("asm").splitlines() if "vfmadd" in l and ("ymm" in l or "zmm" in l)))
    print("results match NumPy:", matches_numpy(rt))


# IEEE evaluation: no fast-math flag, no FMA in the JIT's code.
# CHECK-LABEL: TEST: test_fastmath_none
# CHECK-NOT: fastmath<contract>
# CHECK: FMA instructions: 0
# CHECK: results match NumPy: True
@run
def test_fastmath_none():
    rt = mlc.build(MOD, fastmath="none")
    print("\n".join(l for l in rt.get_source("llvm-dialect").splitlines() if "llvm.fmul" in l))
    print("FMA instructions:", sum("vfmadd" in l for l in rt.get_source("asm").splitlines()))
    print("results match NumPy:", matches_numpy(rt))


# -mattr reaches the JIT as function attributes (here: a feature removed, runnable anywhere).
# CHECK-LABEL: TEST: test_target_attributes
# CHECK: target llvm -mattr=-avx512f
# CHECK: llvm.func @mm_relu({{.*}}) attributes {{{.*}}target_cpu = "{{[a-z0-9-]+}}", target_features = #llvm.target_features<["-avx512f"]>
@run
def test_target_attributes():
    rt = mlc.build(MOD, target="llvm -mattr=-avx512f")
    print("target", rt.target)
    print(header(rt, "mm_relu"))
