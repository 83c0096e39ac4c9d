"""Course ch.2: transform mm_relu with a schedule (split, reorder, reverse_compute_at,
decompose_reduction), build and time it, then sweep the j factor (2, 4, 8, 9, 32).

Run: python examples/ch2_transform_mm_relu.py
"""

import numpy as np

import mlc_mlir as mlc
from mlc_mlir import te


def mm_relu_module() -> mlc.Module:
    A = te.placeholder((128, 128), "float32", name="A")
    B = te.placeholder((128, 128), "float32", name="B")
    k = te.reduce_axis((0, 128), "k")
    Y = te.compute((128, 128), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="Y")
    C = te.compute((128, 128), lambda i, j: te.max(Y[i, j], 0), name="C")
    return te.create_prim_func([A, B, C], name="mm_relu")


def transform(mod: mlc.Module, jfactor: int) -> mlc.Schedule:
    sch = mlc.Schedule(mod)
    block_Y = sch.get_block("Y", func_name="mm_relu")
    i, j, k = sch.get_loops(block_Y)
    j0, j1 = sch.split(j, factors=[None, jfactor])
    sch.reorder(j0, k, j1)
    block_C = sch.get_block("C", "mm_relu")
    sch.reverse_compute_at(block_C, j0)
    return sch


def time_of(mod: mlc.Module, a: np.ndarray, b: np.ndarray, c: np.ndarray) -> float:
    rt = mlc.build(mod, target="llvm")
    rt["mm_relu"](a, b, c)
    return rt.time_evaluator("mm_relu", number=20, repeat=3)(a, b, c).mean


def main() -> None:
    MyModule = mm_relu_module()
    a = np.random.rand(128, 128).astype("float32")
    b = np.random.rand(128, 128).astype("float32")
    c = np.empty((128, 128), dtype="float32")
    c_mm_relu = np.maximum(a @ b, 0)

    sch = transform(MyModule, jfactor=4)
    block_Y = sch.get_block("Y", "mm_relu")
    _, _, k, _ = sch.get_loops(block_Y)
    sch.decompose_reduction(block_Y, k)
    print(sch.mod)
    print(sch.trace)

    print("Time cost of MyModule %g sec" % time_of(MyModule, a, b, c))
    np.testing.assert_allclose(c, c_mm_relu, rtol=1e-5)
    print("Time cost of transformed sch.mod %g sec" % time_of(sch.mod, a, b, c))
    np.testing.assert_allclose(c, c_mm_relu, rtol=1e-5)

    for jfactor in (2, 4, 8, 9, 32):
        mod_transformed = transform(MyModule, jfactor).mod
        t = time_of(mod_transformed, a, b, c)
        np.testing.assert_allclose(c, c_mm_relu, rtol=1e-5)
        print(f"jfactor={jfactor:2d}: time cost of transformed mod_transformed {t:g} sec")


if __name__ == "__main__":
    main()
