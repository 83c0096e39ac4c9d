"""Issue 27, ch.6 shared memory as the course writes it (compile-only here: the IR, the PTX
through ptxas; numbers on the CPU through the emulated fetch; kernels run where a GPU is).

- ``compute_at`` of a ``"shared"`` cache sizes the copy by the thread block's region
  (threadIdx loops relaxed, window offsets included): the window sum's ``A_shared`` gets a
  loop of its own over 130 elements, which the course splits and binds to fetch
  cooperatively;
- a thread tile that does not divide the extent (1000 elements on 128 threads): the
  compute is guarded, the cooperative copy is not (each element fetched where it lies
  inside the source), so every thread reaches the barriers.
"""

import re
import subprocess

import numpy as np
import pytest
from _cuda_util import ptxas
from test_cuda_shared import _emulated_build

import mlc_mlir as mlc
import mlc_mlir as tvm  # the course's spelling
from mlc_mlir import te
from mlc_mlir.compiler.cuda import cuda_driver, device_arch
from mlc_mlir.context import mlc_context
from mlc_mlir.testing import cuda_schedules as cs

from mlir import ir

needs_gpu = pytest.mark.skipif(cuda_driver() is None or device_arch() is None, reason="needs a CUDA GPU")
TARGET = "cuda -arch=sm_90"


def window_sum_module(n: int = 1024, extra: int = 3) -> mlc.Module:
    """The course's ``MyModuleWindowSum``: ``B[i] = A[i] + A[i+1] + A[i+2]``, A of n + 3."""
    A = te.placeholder((n + extra,), "float32", name="A")
    B = te.compute((n,), lambda i: A[i] + A[i + 1] + A[i + 2], name="C")
    return te.create_prim_func([A, B], name="main")


def extent(sch: mlc.Schedule, loop) -> int:
    """A loop's extent, as TVMScript prints it (read from the schedule's loop nest)."""
    return sch._funcs["main"].loops[loop.uid].extent


def course_window_sum(mod: mlc.Module, nthread: int = 128):
    """Course ch.6.2, cell by cell; returns the schedule and what ``get_loops`` gave."""
    sch = tvm.tir.Schedule(mod)
    block_C = sch.get_block("C")
    i, = sch.get_loops(block=block_C)
    i0, i1 = sch.split(i, [None, nthread])
    sch.bind(i0, "blockIdx.x")
    sch.bind(i1, "threadIdx.x")
    A_shared = sch.cache_read(block_C, read_buffer_index=0, storage_scope="shared")
    sch.compute_at(A_shared, i1)
    after_compute_at = [(lp.name, extent(sch, lp)) for lp in sch.get_loops(A_shared)]
    ax = sch.get_loops(A_shared)[-1]
    ax0, ax1 = sch.split(ax, [None, nthread])
    sch.bind(ax1, "threadIdx.x")
    return sch, after_compute_at, (ax0, ax1)


def check_ptx(ptx: str, tmp_path, name: str) -> str:
    tool = ptxas()
    if tool is None:
        pytest.skip("ptxas (nvidia-cuda-nvcc wheel) not installed")
    path = tmp_path / f"{name}.ptx"
    path.write_text(ptx.split("\n", 1)[1] if ptx.startswith("//") else ptx)
    proc = subprocess.run([str(tool), "-arch=sm_90", "-v", str(path), "-o", str(tmp_path / f"{name}.cubin")],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return proc.stderr


def barriers_outside_conditions(gpu_text: str) -> int:
    """Every ``gpu.barrier`` of the kernels sits outside every ``scf.if`` (all threads of the
    block reach it); returns how many there are."""
    count = 0
    with mlc_context():
        module = ir.Module.parse(gpu_text)

        def visit(op: ir.Operation) -> ir.WalkResult:
            nonlocal count
            if op.name == "gpu.barrier":
                count += 1
                parent = op.parent
                while parent is not None and parent.name != "func.func":
                    assert parent.name != "scf.if", "a barrier under a condition"
                    parent = parent.parent
            return ir.WalkResult.ADVANCE

        module.operation.walk(visit, ir.WalkOrder.PRE_ORDER)
    return count


# -- the course's cooperative-fetch cell, as written -------------------------------------
def test_course_window_sum_cell_loops_and_trace():
    sch, after, (ax0, ax1) = course_window_sum(window_sum_module())
    # TVM: for ax0 in range(130) under i_1 (128 threads + a window of 3)
    assert after == [("i_0", 8), ("i_1", 128), ("ax0", 130)]
    assert (ax0.name, ax1.name) == ("ax0_0", "ax0_1")
    text = str(sch.trace)
    assert re.search(r"sch\.compute_at\(block=b\d+, loop=l\d+\)\n(.*\n)?l\d+, l\d+, (l\d+) = sch\.get_loops", text)
    assert re.search(r"sch\.split\(loop=l\d+, factors=\[None, 128\]\)", text)
    assert text.count('thread_axis="threadIdx.x"') == 2
    assert str(sch.trace.apply(window_sum_module()).mod) == str(sch.mod)  # the trace replays
    assert str(mlc.Schedule(window_sum_module()).replay(sch.trace).mod) == str(sch.mod)


def test_course_window_sum_cell_ptx(tmp_path):
    sch, _, _ = course_window_sum(window_sum_module())
    rt_mod = tvm.build(sch.mod, target=TARGET)
    ptx = rt_mod.imported_modules[0].get_source()  # the course's print of the device code
    assert ".shared .align 16 .b8 __mlc_shared_0[520]" in ptx  # 130 floats
    assert ptx.count("bar.sync") >= 2 and "ld.shared.b32" in ptx
    assert ".maxntid 128, 1, 1" in ptx
    assert barriers_outside_conditions(rt_mod.get_source("gpu")) >= 2
    check_ptx(ptx, tmp_path, "window_sum")


@pytest.mark.parametrize("n", [1024, 1000])
def test_course_window_sum_cell_numbers_on_the_cpu(n, rng):
    sch, _, _ = course_window_sum(window_sum_module(n))
    a = rng.random(n + 3, dtype=np.float32)
    want = a[:n] + a[1:n + 1] + a[2:n + 2]
    rt, rewritten = _emulated_build(sch.mod)  # the cooperative fetch, emulated
    assert rewritten == [1]
    c = np.zeros(n, np.float32)
    rt["main"](a, c)
    np.testing.assert_allclose(c, want, rtol=1e-6)
    c = np.zeros(n, np.float32)
    mlc.build(sch.mod, target="llvm")["main"](a, c)  # the same schedule as CPU loops
    np.testing.assert_allclose(c, want, rtol=1e-6)


def _course_matmul_shared(n: int):
    """Course ch.6.3.2 ``blocking_with_shared`` as written (reverse_compute_at before fuse)."""
    def cache_read_and_coop_fetch(sch, block, nthread, read_idx, read_loc, seen):
        read_cache = sch.cache_read(block=block, read_buffer_index=read_idx, storage_scope="shared")
        sch.compute_at(block=read_cache, loop=read_loc)
        # vectorized cooperative fetch
        inner0, inner1 = sch.get_loops(block=read_cache)[-2:]
        seen.append([(lp.name, extent(sch, lp)) for lp in (inner0, inner1)])
        inner = sch.fuse(inner0, inner1)
        _, tx, vec = sch.split(loop=inner, factors=[None, nthread, 4])
        sch.vectorize(vec)
        sch.bind(tx, "threadIdx.x")

    def blocking_with_shared(sch, tile_local_y, tile_local_x, tile_block_y, tile_block_x, tile_k, seen):
        block_C = sch.get_block("C")
        C_local = sch.cache_write(block_C, 0, "local")
        i, j, k = sch.get_loops(block=block_C)
        i0, i1, i2 = sch.split(loop=i, factors=[None, tile_block_y, tile_local_y])
        j0, j1, j2 = sch.split(loop=j, factors=[None, tile_block_x, tile_local_x])
        k0, k1 = sch.split(loop=k, factors=[None, tile_k])
        sch.reorder(i0, j0, i1, j1, k0, k1, i2, j2)
        sch.reverse_compute_at(C_local, j1)
        sch.bind(i0, "blockIdx.y")
        sch.bind(j0, "blockIdx.x")
        tx = sch.fuse(i1, j1)
        sch.bind(tx, "threadIdx.x")
        nthread = tile_block_y * tile_block_x
        cache_read_and_coop_fetch(sch, block_C, nthread, 0, k0, seen)
        cache_read_and_coop_fetch(sch, block_C, nthread, 1, k0, seen)
        sch.decompose_reduction(block_C, k0)
        return sch

    seen: list = []
    sch = blocking_with_shared(tvm.tir.Schedule(cs.matmul(n)), 8, 8, 8, 8, 8, seen)
    return sch, seen


def test_course_matmul_shared_cell_loops():
    sch, seen = _course_matmul_shared(1024)
    # TVM: A_shared for ax0, ax1 in T.grid(64, 8); B_shared in T.grid(8, 64)
    assert seen == [[("ax0", 64), ("ax1", 8)], [("ax0", 8), ("ax1", 64)]]
    assert str(sch.mod) == str(cs.matmul_shared(1024).mod)  # the schedule the benchmarks build


# -- partial thread tiles ------------------------------------------------------------------
def _window_sum_partial(n: int = 1000, nthread: int = 128, coop: bool = True) -> mlc.Schedule:
    sch = cs.window_sum(n, nthread, shared=True)
    if coop:
        ax = sch.get_loops(sch.get_block("A_shared"))[-1]
        _, tx = sch.split(ax, [None, nthread])
        sch.bind(tx, "threadIdx.x")
    return sch


def test_partial_thread_tile_guards_the_compute_not_the_copy(tmp_path):
    sch = _window_sum_partial()
    assert [(lp.name, extent(sch, lp)) for lp in sch.get_loops(sch.get_block("C"))] == [("i_0", 8), ("i_1", 128)]
    rt = mlc.build(sch.mod, target=TARGET)
    gpu = rt.get_source("gpu")
    assert "memref<130xf32, #gpu.address_space<workgroup>>" in gpu
    assert barriers_outside_conditions(gpu) >= 2
    # the fetch checks the source's bounds (the last block's 104 threads widen past A's 1002)
    assert re.search(r"arith.cmpi ult, %\w+, %c1002", gpu)
    guard = gpu.index("{mlc.guard}")
    assert gpu.rindex('mlc.block = "C"', 0, guard) > gpu.rindex("gpu.barrier", 0, guard)  # compute guarded
    ptx = rt.get_source("ptx")
    assert ".shared .align 16 .b8 __mlc_shared_0[520]" in ptx
    check_ptx(ptx, tmp_path, "window_sum_1000")


@pytest.mark.parametrize("n,nthread,coop", [(1000, 128, True), (1000, 128, False), (100, 64, True), (5, 32, True)])
def test_partial_thread_tile_numbers_on_the_cpu(n, nthread, coop, rng):
    sch = _window_sum_partial(n, nthread, coop)
    a = rng.random(n + 2, dtype=np.float32)
    want = a[:-2] + a[1:-1] + a[2:]
    rt, rewritten = _emulated_build(sch.mod)
    assert rewritten == [1]
    c = np.zeros(n, np.float32)
    rt["main"](a, c)
    np.testing.assert_allclose(c, want, rtol=1e-6)


def _matmul_partial(m: int, n: int, kk: int, *, t: int = 16, tk: int = 8, vec: int = 1) -> mlc.Schedule:
    """One element of C per thread on ``t x t`` threads (threadIdx.y, threadIdx.x), k by ``tk``,
    A and B tiles in shared memory fetched cooperatively; m and n need not divide by t."""
    A = te.placeholder((m, kk), "float32", name="A")
    B = te.placeholder((kk, n), "float32", name="B")
    k = te.reduce_axis((0, kk), name="k")
    C = te.compute((m, n), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    sch = mlc.Schedule(te.create_prim_func([A, B, C], name="main"))
    block = sch.get_block("C")
    C_local = sch.cache_write(block, 0, "local")
    i, j, k = sch.get_loops(block)
    i0, i1 = sch.split(i, [None, t])
    j0, j1 = sch.split(j, [None, t])
    k0, k1 = sch.split(k, [None, tk])
    sch.reorder(i0, j0, i1, j1, k0, k1)
    sch.reverse_compute_at(C_local, j1)
    sch.bind(i0, "blockIdx.y")
    sch.bind(j0, "blockIdx.x")
    sch.bind(i1, "threadIdx.y")
    sch.bind(j1, "threadIdx.x")
    for index in (0, 1):
        cache = sch.cache_read(block, index, "shared")
        sch.compute_at(cache, k0)
        inner = sch.fuse(*sch.get_loops(cache)[-2:])
        if vec > 1:
            _, tx, v = sch.split(inner, [None, t * t, vec])
            sch.vectorize(v)
        else:
            _, tx = sch.split(inner, [None, t * t])
        sch.bind(tx, "threadIdx.x")
    sch.decompose_reduction(block, k0)
    return sch


def test_matmul_partial_tiles_loops():
    sch = _matmul_partial(100, 100, 64)
    fs = sch._funcs["main"]
    # the block's 16 rows x 8 of k of A and 8 x 16 columns of B (threadIdx.y/x relaxed)
    assert [e for e, _ in fs.blocks["A_shared"].base] == [16, 8]
    assert [e for e, _ in fs.blocks["B_shared"].base] == [8, 16]


@pytest.mark.parametrize("m,n,kk,vec", [(100, 100, 64, 1), (100, 100, 64, 4), (37, 50, 16, 2), (128, 128, 32, 4),
                                         (100, 98, 64, 4)])  # 98 columns: a chunk of 4 across B's end
def test_matmul_partial_tiles_numbers_on_the_cpu(m, n, kk, vec, rng):
    sch = _matmul_partial(m, n, kk, vec=vec)
    a, b = rng.random((m, kk), dtype=np.float32), rng.random((kk, n), dtype=np.float32)
    rt, rewritten = _emulated_build(sch.mod)
    assert rewritten == [2]
    c = np.zeros((m, n), np.float32)
    rt["main"](a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-4)


def test_matmul_partial_tiles_ptx(tmp_path):
    rt = mlc.build(_matmul_partial(100, 100, 64, vec=4).mod, target=TARGET)
    gpu = rt.get_source("gpu")
    assert barriers_outside_conditions(gpu) >= 4  # two fetches per k0 iteration
    # the guard of the partial tile moved inside k_0: for k0 { fetch; fetch; if (in tile) C }
    loop = gpu[gpu.index("scf.for"):gpu.index('{mlc.loop = "k_0"}')]
    assert loop.count("gpu.barrier") == 4 and 'mlc.block = "C"' in loop and "mlc.guard" in loop
    ptx = rt.get_source("ptx")
    assert re.findall(r"\.shared \.align 16 \.b8 __mlc_shared_\d\[(\d+)\]", ptx) == ["512", "512"]
    assert "st.shared.v4.b32" in ptx  # 100 columns: whole 4-vectors, fetched where inside B
    stderr = check_ptx(ptx, tmp_path, "matmul_100")
    assert "1024 bytes smem" in stderr


# -- what stays refused ------------------------------------------------------------------
def test_block_wide_copy_loops_are_only_fetched_cooperatively():
    sch = cs.window_sum(1024)
    A_shared = sch.get_block("A_shared")
    (ax,) = sch.get_loops(A_shared)[-1:]
    for prim in ("vectorize", "unroll", "parallel"):
        with pytest.raises(mlc.ScheduleError, match="fetch together"):
            getattr(sch, prim)(ax)
    with pytest.raises(mlc.ScheduleError, match=r"\[None, threads\]"):
        sch.split(ax, [None, 2, 2, 2])
    with pytest.raises(mlc.ScheduleError, match="fetch together"):
        sch.bind(ax, "threadIdx.x")


def test_tiles_of_other_caches_are_unchanged():
    """Only a shared cache is widened: a local cache of the window sum is one element per
    thread (no loop of its own), as before; a shared cache with no thread loops and plain
    reads is the tile one iteration reads."""
    sch = cs.window_sum(256, shared=False)
    block = sch.get_block("C")
    A_local = sch.cache_read(block, 0, "local")
    sch.compute_at(A_local, sch.get_loops(block)[-1])
    assert [lp.name for lp in sch.get_loops(A_local)] == ["i_0", "i_1"]
    sch = mlc.Schedule(cs.matmul(64))
    block = sch.get_block("C")
    i, j, k = sch.get_loops(block)
    k0, k1 = sch.split(k, [None, 8])
    sch.reorder(i, k0, j, k1)
    A_shared = sch.cache_read(block, 0, "shared")
    sch.compute_at(A_shared, k0)
    assert [(lp.name, extent(sch, lp)) for lp in sch.get_loops(A_shared)] == [("i", 64), ("k_0", 8), ("ax0", 8)]
    assert not sch._funcs["main"].blocks["A_shared"].block_wide


# -- on a GPU --------------------------------------------------------------------------------
@needs_gpu
@pytest.mark.parametrize("n", [1024, 1000, 100])
def test_window_sum_partial_runs(n, rng):
    sch, _, _ = course_window_sum(window_sum_module(n))
    rt = mlc.build(sch.mod, target="cuda")
    a = rng.random(n + 3, dtype=np.float32)
    A = mlc.runtime.array(a, device=mlc.cuda(0))
    B = mlc.runtime.empty((n,), "float32", mlc.cuda(0))
    rt["main"](A, B)
    np.testing.assert_allclose(B.numpy(), a[:n] + a[1:n + 1] + a[2:n + 2], rtol=1e-6)


@needs_gpu
@pytest.mark.parametrize("m,n,kk,vec", [(100, 100, 64, 4), (37, 50, 16, 2)])
def test_matmul_partial_tiles_run(m, n, kk, vec, rng):
    rt = mlc.build(_matmul_partial(m, n, kk, vec=vec).mod, target="cuda")
    a, b = rng.random((m, kk), dtype=np.float32), rng.random((kk, n), dtype=np.float32)
    A, B = mlc.runtime.array(a, device=mlc.cuda(0)), mlc.runtime.array(b, device=mlc.cuda(0))
    C = mlc.runtime.empty((m, n), "float32", mlc.cuda(0))
    rt["main"](A, B, C)
    np.testing.assert_allclose(C.numpy(), a @ b, rtol=1e-4)
