"""Course ch.6: GPU thread binding. Vector add and window sum, ``i`` split by 128 and
bound to ``blockIdx.x`` / ``threadIdx.x``, built for CUDA (sm_90 unless a GPU says
otherwise). Prints the bound loops, the launch and the head of the PTX; runs the kernels
and compares with NumPy only when a CUDA driver and GPU are present.

Run: python examples/ch6_gpu_vector_add.py
"""

import numpy as np

import mlc_mlir as mlc
from mlc_mlir import te
from mlc_mlir.compiler import RuntimeModule
from mlc_mlir.compiler.cuda import CudaModule, cuda_driver, device_arch

N, NTHREAD = 1024, 128


def vector_add() -> mlc.Module:
    A = te.placeholder((N,), "float32", name="A")
    B = te.placeholder((N,), "float32", name="B")
    C = te.compute((N,), lambda i: A[i] + B[i], name="C")
    return te.create_prim_func([A, B, C], name="main")


def window_sum() -> mlc.Module:
    A = te.placeholder((N + 3,), "float32", name="A")
    B = te.compute((N,), lambda i: A[i] + A[i + 1] + A[i + 2], name="C")
    return te.create_prim_func([A, B], name="main")


def bind(mod: mlc.Module) -> mlc.Schedule:
    sch = mlc.Schedule(mod)
    block_C = sch.get_block("C")
    (i,) = sch.get_loops(block=block_C)
    i0, i1 = sch.split(i, [None, NTHREAD])
    sch.bind(i0, "blockIdx.x")
    sch.bind(i1, "threadIdx.x")
    return sch


def show(title: str, rt: RuntimeModule, head: int) -> None:
    """The launch, the first ``head`` lines of the PTX and its global loads/stores."""
    assert isinstance(rt, CudaModule)  # what mlc.build returns for target="cuda"
    print(f"--- {title}: {rt.target} (kernels as {rt.cuda.format}) ---")
    launch = [line.strip() for line in rt.get_source("gpu").splitlines() if "gpu.launch" in line]
    print("launch:", launch[0])
    ptx = rt.get_source("ptx").splitlines()
    if head:
        print("\n".join(ptx[:head]))
    print("  ...\n" + "\n".join(line for line in ptx if "ld.global" in line or "st.global" in line))


def main() -> None:
    sch = bind(vector_add())
    print(sch.mod)
    print(sch.trace)
    vadd = mlc.build(sch.mod, target="cuda")
    show("vector add", vadd, head=14)
    wsum = mlc.build(bind(window_sum()).mod, target="cuda")
    show("window sum", wsum, head=0)

    rng = np.random.default_rng(0)
    a, b = rng.random(N, dtype=np.float32), rng.random(N, dtype=np.float32)
    w = rng.random(N + 3, dtype=np.float32)
    if cuda_driver() is None or device_arch() is None:
        print("no CUDA GPU here: the kernels were compiled only (get_source('ptx') above)")
        return
    c = np.zeros(N, np.float32)
    vadd["main"](a, b, c)
    np.testing.assert_allclose(c, a + b, rtol=1e-6)
    s = np.zeros(N, np.float32)
    wsum["main"](w, s)
    np.testing.assert_allclose(s, w[:-3] + w[1:-2] + w[2:-1], rtol=1e-6)
    print(f"ran on {device_arch()}: vector add and window sum equal NumPy")


if __name__ == "__main__":
    main()
