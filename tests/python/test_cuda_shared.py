"""Course ch.6 schedules with shared memory: compile-only checks everywhere (the IR, the
PTX, ptxas), kernels run and compared with NumPy only where a CUDA GPU is."""

import re
import subprocess

import numpy as np
import pytest
from _cuda_util import ptxas

import mlc_mlir as mlc
from mlc_mlir import te
from mlc_mlir.compiler.cuda import cuda_driver, device_arch

from mlc_mlir.testing import cuda_schedules as cs

needs_gpu = pytest.mark.skipif(cuda_driver() is None or device_arch() is None, reason="needs a CUDA GPU")


@pytest.fixture(scope="module")
def mm_shared():
    sch = cs.matmul_shared(1024)
    return sch, mlc.build(sch.mod, target="cuda -arch=sm_90")


def test_matmul_shared_tiles_are_workgroup_memory(mm_shared):
    _, rt = mm_shared
    gpu = rt.get_source("gpu")
    # the block's 64x8 tile of A and 8x64 tile of B, once per block
    assert re.search(r"memref.global \"private\" @__mlc_shared_\d : memref<64x8xf32, #gpu.address_space<workgroup>>",
                     gpu)
    assert re.search(r"memref.global \"private\" @__mlc_shared_\d : memref<8x64xf32, #gpu.address_space<workgroup>>",
                     gpu)
    assert gpu.count("gpu.barrier") >= 4  # before and after each cooperative fetch
    assert 'mlc.scope = "shared"' not in gpu  # every shared copy became a cooperative fetch
    assert "memref.alloca() : memref<8x8xf32>" in gpu  # the "local" accumulator, per thread


def test_matmul_shared_ptx(mm_shared, tmp_path):
    _, rt = mm_shared
    ptx = rt.get_source("ptx")
    assert re.findall(r"\.shared \.align 16 \.b8 __mlc_shared_\d\[(\d+)\]", ptx) == ["2048", "2048"]
    assert "st.shared.v4.b32" in ptx  # 4-wide cooperative fetch (vectorize(vec))
    assert "ld.shared" in ptx and "bar.sync" in ptx
    assert ".local" not in ptx  # the 8x8 accumulator stays in registers
    assert ".maxntid 8, 8, 1" in ptx  # fuse(i1, j1) bound to threadIdx.x: 64 threads
    tool = ptxas()
    if tool is None:
        pytest.skip("ptxas (nvidia-cuda-nvcc wheel) not installed")
    path = tmp_path / "mm.ptx"
    path.write_text(ptx.split("\n", 1)[1])
    proc = subprocess.run([str(tool), "-arch=sm_90", "-v", str(path), "-o", str(tmp_path / "mm.cubin")],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert re.search(r"4096 bytes smem", proc.stderr), proc.stderr
    assert "0 bytes spill" in proc.stderr


def test_matmul_shared_trace_replays(mm_shared):
    sch, _ = mm_shared
    text = str(sch.trace)
    assert "factors=[None, 64, 4]" in text and 'thread_axis="threadIdx.x"' in text
    assert str(sch.trace.apply(cs.matmul(1024)).mod) == str(sch.mod)


def test_window_sum_shared():
    """As in TVM, cache_read(C, 0, "shared") caches tensor A: the block's 130 elements of A
    (its three reads A[i], A[i+1], A[i+2] for 128 threads) in one shared buffer."""
    rt = mlc.build(cs.window_sum(1024).mod, target="cuda -arch=sm_90")
    gpu = rt.get_source("gpu")
    assert re.search(r"memref<130xf32, #gpu.address_space<workgroup>>", gpu)
    generic = next(line for line in gpu.splitlines() if "linalg.generic" in line)
    ins = generic.split("ins(")[1].split("outs(")[0]
    assert ins.count("#gpu.address_space<workgroup>") == 3  # every read of A from shared memory
    ptx = rt.get_source("ptx")
    assert ".shared .align 16 .b8 __mlc_shared_0[520]" in ptx
    assert "st.shared.b32" in ptx and "ld.shared.b32" in ptx and "bar.sync" in ptx
    assert "ld.global" in ptx.split("bar.sync")[1]  # the fetch; the sums read shared memory only
    assert "ld.global" not in ptx.split("bar.sync")[2]


def _blocked(n=256):
    sch = mlc.Schedule(cs.matmul(n))
    block = sch.get_block("C")
    i, j, k = sch.get_loops(block)
    i0, i1 = sch.split(i, [None, 64])
    j0, j1 = sch.split(j, [None, 64])
    k0, k1 = sch.split(k, [None, 8])
    sch.reorder(i0, j0, k0, i1, j1, k1)
    return sch, block, k0


def test_cooperative_fetch_errors():
    sch, block, k0 = _blocked()
    A_shared = sch.cache_read(block, 0, "shared")
    sch.compute_at(A_shared, k0)
    inner = sch.fuse(*sch.get_loops(A_shared)[-2:])
    with pytest.raises(mlc.ScheduleError, match=r"\[None, threads\]"):
        sch.split(inner, [None, 2, 2, 2])
    _, tx, vec = sch.split(inner, [None, 64, 4])
    with pytest.raises(mlc.ScheduleError, match="innermost"):
        sch.vectorize(tx)
    sch.vectorize(vec)
    B_local = sch.cache_read(block, 1, "local")
    sch.compute_at(B_local, k0)
    fused = sch.fuse(*sch.get_loops(B_local)[-2:])
    with pytest.raises(mlc.ScheduleError, match="fusion of several dims"):
        sch.split(fused, [None, 4])  # only shared copies are fetched cooperatively


def test_shared_copy_under_a_partial_tile_builds():
    """100 elements on 64 threads: the compute is guarded, the copy is not (it was refused;
    tests/python/test_cuda_shared_partial.py checks the schedules that need it)."""
    A = te.placeholder((100,), "float32", name="A")
    B = te.compute((100,), lambda i: A[i] * 2.0, name="C")
    sch = mlc.Schedule(te.create_prim_func([A, B], name="main"))
    block = sch.get_block("C")
    (i,) = sch.get_loops(block)
    i0, i1 = sch.split(i, [None, 64])
    sch.bind(i0, "blockIdx.x")
    sch.bind(i1, "threadIdx.x")
    A_shared = sch.cache_read(block, 0, "shared")
    sch.compute_at(A_shared, i1)
    gpu = mlc.build(sch.mod, target="cuda -arch=sm_90").get_source("gpu")
    assert gpu.index("gpu.barrier") < gpu.index("scf.if") < gpu.index('mlc.block = "C"')


@needs_gpu
@pytest.mark.parametrize("n", [256, 1024])
def test_matmul_shared_runs(n, rng):
    rt = mlc.build(cs.matmul_shared(n).mod, target="cuda")
    a, b = rng.random((n, n), dtype=np.float32), rng.random((n, n), dtype=np.float32)
    A, B = mlc.runtime.array(a, device=mlc.cuda(0)), mlc.runtime.array(b, device=mlc.cuda(0))
    C = mlc.runtime.empty((n, n), "float32", mlc.cuda(0))
    rt["main"](A, B, C)
    np.testing.assert_allclose(C.numpy(), a @ b, rtol=1e-4)


@needs_gpu
def test_window_sum_runs(rng):
    rt = mlc.build(cs.window_sum(1024).mod, target="cuda")
    a = rng.random(1026, dtype=np.float32)
    A = mlc.runtime.array(a, device=mlc.cuda(0))
    B = mlc.runtime.empty((1024,), "float32", mlc.cuda(0))
    rt["main"](A, B)
    np.testing.assert_allclose(B.numpy(), a[:-2] + a[1:-1] + a[2:], rtol=1e-6)


@needs_gpu
def test_torch_tensors_are_used_without_copies(rng):
    torch = pytest.importorskip("torch")
    rt = mlc.build(cs.vector_add(1 << 20).mod, target="cuda")
    a = torch.rand(1 << 20, device="cuda")
    b = torch.rand(1 << 20, device="cuda")
    c = torch.empty(1 << 20, device="cuda")
    rt["main"](a, b, c)
    torch.testing.assert_close(c, a + b)
    arr = mlc.runtime.from_dlpack(c)
    assert arr.data_ptr == c.data_ptr()
    back = torch.from_dlpack(arr)
    assert back.data_ptr() == c.data_ptr()
    timing = rt.time_evaluator("main", mlc.cuda(0), number=10)(a, b, c)
    assert timing.mean > 0


def _emulated_build(mod: mlc.Module):
    """Build for the CPU with the shared copies rewritten as on the GPU, but each thread
    fetching the whole block-wide tile into a private buffer (no barriers): checks the
    region relaxation, the fetch indexing (vector chunks included) and the per-thread views."""
    from mlir.execution_engine import ExecutionEngine

    from mlc_mlir.compiler import Compilation, ModuleStage, run_stages
    from mlc_mlir.compiler.pipeline import cpu_stages, run_pipeline
    from mlc_mlir.compiler.abi import to_memref_abi
    from mlc_mlir.compiler.executable import JitModule
    from mlc_mlir.compiler.gpu_mapping import trip_counts
    from mlc_mlir.compiler.gpu_shared import emulate_shared_copies
    from mlc_mlir.toolchain import mlir_lib
    from mlc_mlir.context import mlc_context

    work = mod.clone()
    module = work.mlir_module
    rewritten = []
    stages = []
    for stage in cpu_stages(Compilation()):
        stages.append(stage)
        if stage.name == "simplify":
            stages.append(ModuleStage("emulate-shared", lambda m: rewritten.append(emulate_shared_copies(m, trip_counts))))
    with mlc_context():
        run_pipeline(module, "inline", stage="inline")
        signatures = to_memref_abi(module)
        run_stages(module, stages)
        engine = ExecutionEngine(module, opt_level=2, shared_libs=[mlir_lib("libmlir_c_runner_utils.so")])
        engine.initialize()
    return JitModule(engine=engine, signatures=signatures, lowered=module, source="", target="llvm"), rewritten


@pytest.mark.parametrize("cfg", [dict(), dict(tile_local_y=4, tile_local_x=2, tile_block_y=4, tile_block_x=8,
                                          tile_k=4, vec=2)])
def test_shared_fetch_emulated_on_the_cpu(cfg, rng):
    rt, rewritten = _emulated_build(cs.matmul_shared(128, **cfg).mod)
    assert rewritten == [2]
    a, b = rng.random((128, 128), dtype=np.float32), rng.random((128, 128), dtype=np.float32)
    c = np.zeros((128, 128), np.float32)
    rt["main"](a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-4)


def test_window_sum_fetch_emulated_on_the_cpu(rng):
    rt, rewritten = _emulated_build(cs.window_sum(1024).mod)
    assert rewritten == [1]
    a = rng.random(1026, dtype=np.float32)
    c = np.zeros(1024, np.float32)
    rt["main"](a, c)
    np.testing.assert_allclose(c, a[:-2] + a[1:-1] + a[2:], rtol=1e-6)


def test_schedules_compute_the_right_thing_on_the_cpu(rng):
    """The ch.6 schedules built for the CPU (bound loops run as loops, caches as copies)."""
    rt = mlc.build(cs.matmul_shared(128).mod, target="llvm")
    a, b = rng.random((128, 128), dtype=np.float32), rng.random((128, 128), dtype=np.float32)
    c = np.zeros((128, 128), np.float32)
    rt["main"](a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-4)


def test_read_index_counts_tensors():
    """The window sum reads one tensor (A) through three operands: index 0 is A, there is no 1."""
    sch = cs.window_sum(256, shared=False)
    block = sch.get_block("C")
    A_shared = sch.cache_read(block, 0, "shared")
    assert A_shared.name == "A_shared"
    with pytest.raises(mlc.ScheduleError, match="out of range"):
        sch.cache_read(block, 1, "local")
