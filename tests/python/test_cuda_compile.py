"""``mlc.build(..., target="cuda")`` without a GPU: PTX, ptxas, structure and errors."""

import re
import subprocess

import pytest
from _cuda_util import matmul_blocking, ptxas, vector_add

import mlc_mlir as mlc
from mlc_mlir import te
from mlc_mlir.compiler.cuda import NO_DRIVER, cuda_driver
from mlc_mlir.errors import RuntimeError_
from mlc_mlir.testing import filecheck


@pytest.fixture(scope="module")
def vadd_rt():
    return mlc.build(vector_add(1024, 128).mod, target="cuda -arch=sm_90")


@pytest.fixture(scope="module")
def matmul_rt():
    return mlc.build(matmul_blocking(256).mod, target="cuda -arch=sm_90")


def _entries(ptx: str) -> list[str]:
    return [line.split()[-1].rstrip("(") for line in ptx.splitlines() if ".entry" in line]


def test_vector_add_ptx(vadd_rt):
    ptx = vadd_rt.get_source("ptx")
    assert ".target sm_90" in ptx and ".version 8.0" in ptx
    assert _entries(ptx) == ["main_kernel"]
    assert "ld.global" in ptx and "st.global" in ptx
    assert "%ctaid.x" in ptx and "%tid.x" in ptx
    assert ".maxntid 128, 1, 1" in ptx


def test_vector_add_launch_structure(vadd_rt):
    mapped = vadd_rt.get_source("gpu")
    assert "scf.forall" not in mapped
    assert "gpu.launch blocks" in mapped and "gpu.block_id  x" in mapped and "gpu.thread_id  x" in mapped
    host = vadd_rt.get_source("llvm-dialect")
    assert "llvm.call @mgpuStreamSynchronize" in host
    for call in ("mgpuMemAlloc", "mgpuMemcpy"):  # the arguments are device pointers: no copies
        assert f"llvm.call @{call}" not in host
    assert "gpu.launch_func" in host and "gpu.binary @main_kernel" in host
    llvm_ir = vadd_rt.get_source("llvm")
    # grid (8, 1, 1), block (128, 1, 1): the bound loops' trip counts
    assert re.search(r"call void @mgpuLaunchKernel\(ptr %\d+, i64 8, i64 1, i64 1, i64 128, i64 1, i64 1,", llvm_ir)
    assert "@llvm.global_ctors" in llvm_ir  # loads the kernel binary when the module is loaded


def test_matmul_blocking_ptx(matmul_rt):
    ptx = matmul_rt.get_source("ptx")
    assert _entries(ptx) == ["main_kernel"]
    assert ".target sm_90" in ptx and "ld.global" in ptx and "fma.rn.f32" in ptx  # mulf+addf contracted
    assert ".maxntid 8, 8, 1" in ptx
    assert "%ctaid.y" in ptx and "%tid.y" in ptx
    # The 8x8 local accumulator lives in registers: no local-memory traffic.
    assert "ld.local" not in ptx and "st.local" not in ptx
    mapped = matmul_rt.get_source("gpu")
    assert "memref.alloca() : memref<8x8xf32>" in mapped


@pytest.mark.parametrize("name", ["vadd", "matmul"])
def test_ptxas_accepts_the_ptx(name, vadd_rt, matmul_rt, tmp_path):
    tool = ptxas()
    if tool is None:
        pytest.skip("ptxas of the nvidia-cuda-nvcc wheel is not installed (pip install -e '.[cuda]')")
    rt = vadd_rt if name == "vadd" else matmul_rt
    src = tmp_path / f"{name}.ptx"
    src.write_text(rt.get_source("ptx"))
    proc = subprocess.run([str(tool), "-arch=sm_90", str(src), "-o", str(tmp_path / f"{name}.cubin")],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / f"{name}.cubin").read_bytes()[:4] == b"\x7fELF"


def test_kernels_are_cubins_when_ptxas_is_there(vadd_rt):
    if ptxas() is None:
        assert vadd_rt.cuda.format == "isa"
    else:
        assert vadd_rt.cuda.format == "bin"
        assert 'bin = "\\7FELF' in vadd_rt.get_source("llvm-dialect")


def test_partial_tiles_are_guarded():
    """1000 elements split by 128: the last block's threads past the end do nothing."""
    rt = mlc.build(vector_add(1000, 128).mod, target="cuda")
    filecheck(rt.get_source("gpu"), """
        CHECK: %[[TX:.+]] = gpu.thread_id x
        CHECK: %[[IN:.+]] = arith.cmpi slt, %[[TX]], %{{.+}} : index
        CHECK-NEXT: scf.if %[[IN]] {
    """)
    assert ".maxntid 128, 1, 1" in rt.get_source("ptx")


def test_two_kernels_and_math():
    A = te.placeholder((1024,), "float32", name="A")
    B = te.compute((1024,), lambda i: te.exp(A[i]), name="B")
    C = te.compute((1024,), lambda i: B[i] + 1.0, name="C")
    sch = mlc.Schedule(te.create_prim_func([A, C], name="two"))
    for block in ("B", "C"):
        (i,) = sch.get_loops(sch.get_block(block))
        i0, i1 = sch.split(i, factors=[None, 256])
        sch.bind(i0, "blockIdx.x")
        sch.bind(i1, "threadIdx.x")
    ptx = mlc.build(sch.mod, target="cuda").get_source("ptx")
    assert re.findall(r"// gpu.binary @(\w+)", ptx) == ["two_kernel", "two_kernel_0"]  # one module each
    assert len(_entries(ptx)) == 2
    assert "ex2.approx" in ptx  # math.exp through libdevice


@pytest.mark.parametrize("target, arch, version", [
    ("cuda -arch=sm_80", None, "8.0"), ("cuda", "sm_86", "8.0"), ("cuda -arch=sm_100", "sm_100", "8.6")])
def test_other_chips(target, arch, version):
    rt = mlc.build(vector_add(256, 64).mod, target=target, arch=arch)
    ptx = rt.get_source("ptx")
    assert f".target {rt.cuda.arch}" in ptx and f".version {version}" in ptx


def test_calls_without_a_driver_raise(vadd_rt):
    if cuda_driver() is not None:
        pytest.skip("a CUDA driver is present: test_cuda_run.py runs the kernels")
    import numpy as np

    a = np.zeros(1024, np.float32)
    with pytest.raises(RuntimeError_, match="no CUDA driver"):
        vadd_rt["main"](a, a.copy(), a.copy())
    with pytest.raises(mlc.ArgumentError, match="expected shape"):  # arguments are still checked
        vadd_rt["main"](a[:5], a, a)
    assert "not run here" in NO_DRIVER


def _relu(n: int = 128) -> mlc.Schedule:
    A = te.placeholder((n, n), "float32", name="A")
    C = te.compute((n, n), lambda i, j: te.max(A[i, j], 0.0), name="C")
    return mlc.Schedule(te.create_prim_func([A, C], name="relu"))


def test_unbound_loops_are_rejected():
    sch = _relu()
    with pytest.raises(mlc.BuildError, match="block 'C' .* every loop nest must be bound"):
        mlc.build(sch.mod, target="cuda")
    i, j = sch.get_loops(sch.get_block("C"))
    sch.parallel(i)
    with pytest.raises(mlc.BuildError, match="block 'C' \\(parallel loop 'i'.*must be bound"):
        mlc.build(sch.mod, target="cuda")


def test_reduction_init_outside_the_kernel_is_rejected():
    A = te.placeholder((64, 64), "float32", name="A")
    k = te.reduce_axis((0, 64), name="k")
    S = te.compute((64,), lambda i: te.sum(A[i, k], axis=k), name="S")
    sch = mlc.Schedule(te.create_prim_func([A, S], name="rowsum"))
    i, _ = sch.get_loops(sch.get_block("S"))
    i0, i1 = sch.split(i, factors=[None, 32])
    sch.bind(i0, "blockIdx.x")
    sch.bind(i1, "threadIdx.x")
    with pytest.raises(mlc.BuildError, match="initialization of block 'S'.*decompose_reduction"):
        mlc.build(sch.mod, target="cuda")


@pytest.mark.parametrize("binds, msg", [
    ([("i", "threadIdx.x")], "bound to threadIdx but is not inside a loop bound to blockIdx"),
    ([("i", "blockIdx.x"), ("j", "blockIdx.x")], "blockIdx.x is bound to more than one"),
    ([("i", "blockIdx.x"), ("j", "threadIdx.x")], None),
])
def test_binding_errors(binds, msg):
    sch = _relu()
    loops = dict(zip("ij", sch.get_loops(sch.get_block("C"))))
    for loop, axis in binds:
        sch.bind(loops[loop], axis)
    if msg is None:
        assert ".entry relu_kernel" in mlc.build(sch.mod, target="cuda").get_source("ptx")
    else:
        with pytest.raises(mlc.BuildError, match=msg):
            mlc.build(sch.mod, target="cuda")


def test_too_many_threads_per_block():
    with pytest.raises(mlc.BuildError, match="threadIdx.x of loop 'i_1' has 2048 iterations; CUDA allows at most 1024"):
        mlc.build(vector_add(4096, 2048).mod, target="cuda")


def test_symbolic_grid_is_rejected():
    n = te.var("n")
    A = te.placeholder((n,), "float32", name="A")
    B = te.compute((n,), lambda i: A[i] * 2.0, name="B")
    sch = mlc.Schedule(te.create_prim_func([A, B], name="scale"))
    (i,) = sch.get_loops(sch.get_block("B"))
    i0, i1 = sch.split(i, factors=[None, 128])
    sch.bind(i0, "blockIdx.x")
    sch.bind(i1, "threadIdx.x")
    with pytest.raises(mlc.BuildError, match="loop 'i_0' has a symbolic trip count"):
        mlc.build(sch.mod, target="cuda")


@pytest.mark.parametrize("target, arch, msg", [
    ("cuda -arch=sm_999", None, "unknown CUDA architecture 'sm_999'; supported: sm_75"),
    ("cuda", "gfx90a", "unknown CUDA architecture 'gfx90a'"),
    ("cuda -arch=sm_80", "sm_90", "says sm_80 but arch='sm_90'"),
    ("cuda -max_threads=512", None, "unknown cuda target option '-max_threads=512'"),
    ("llvm", "sm_90", "arch='sm_90' is a CUDA option"),
])
def test_target_errors(target, arch, msg):
    with pytest.raises(mlc.BuildError, match=msg):
        mlc.build(vector_add(256, 64).mod, target=target, arch=arch)


MEMREF_MATMUL = """
func.func @matmul(%a: memref<256x256xf32>, %b: memref<256x256xf32>, %c: memref<256x256xf32>) {
  linalg.matmul ins(%a, %b : memref<256x256xf32>, memref<256x256xf32>) outs(%c : memref<256x256xf32>)
  return
}
"""

GPU_SCRIPT = """
module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %mm = transform.structured.match ops{["linalg.matmul"]} in %root : (!transform.any_op) -> !transform.any_op
    %t1, %blk = transform.structured.tile_using_forall %mm tile_sizes [32, 32]
        (mapping = [#gpu.block<y>, #gpu.block<x>]) : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    %t2, %k = transform.structured.tile_using_for %t1 tile_sizes [0, 0, 16]
        : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    %t3, %thr = transform.structured.tile_using_forall %t2 tile_sizes [2, 2]
        (mapping = [#gpu.thread<y>, #gpu.thread<x>]) : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    transform.yield
  }
}
"""


def test_memref_form_with_a_transform_script():
    """A hand-written GPU schedule: 2-D block/thread foralls, threads inside a serial k loop."""
    from mlc_mlir.schedule import apply_transform_script

    mod = apply_transform_script(mlc.Module.parse(MEMREF_MATMUL), GPU_SCRIPT)
    rt = mlc.build(mod, target="cuda -arch=sm_90")
    filecheck(rt.get_source("gpu-outlined"), """
        CHECK-DAG: %[[C1:.+]] = arith.constant 1 : index
        CHECK-DAG: %[[C8:.+]] = arith.constant 8 : index
        CHECK-DAG: %[[C16:.+]] = arith.constant 16 : index
        CHECK-NOT: gpu.memcpy
        CHECK: gpu.launch_func {{.*}} blocks in (%[[C8]], %[[C8]], %[[C1]]) threads in (%[[C16]], %[[C16]], %[[C1]])
        CHECK-NOT: gpu.memcpy
    """)  # 8 x 8 blocks of 16 x 16 threads; no copies: the arguments are device pointers
    ptx = rt.get_source("ptx")
    assert ".maxntid 16, 16, 1" in ptx and "bar.sync" in ptx


def test_ptx_without_ptxas(monkeypatch):
    """No toolkit: the kernels stay PTX (the driver compiles them when the module loads)."""
    from mlc_mlir.compiler import gpu_pipeline

    monkeypatch.setattr(gpu_pipeline, "cuda_toolkit", lambda: None)
    rt = mlc.build(vector_add(256, 64).mod, target="cuda -arch=sm_90")
    assert rt.cuda.format == "isa" and rt.cuda.toolkit is None
    assert 'assembly = "//\\0A// Generated by LLVM NVPTX' in rt.get_source("llvm-dialect")
    assert ".entry main_kernel" in rt.get_source("ptx")


def test_get_source_formats(vadd_rt):
    assert "linalg.generic" in vadd_rt.get_source("mlir")
    assert "nvvm.read.ptx.sreg.tid.x" in vadd_rt.get_source("nvvm")
    assert "llvm.func @_mlir_ciface_main" in vadd_rt.get_source("llvm-dialect")
    with pytest.raises(mlc.MlcError, match="unknown format 'cuda'"):
        vadd_rt.get_source("cuda")


_NOT_PERFECT = """
func.func @f(%a: memref<8x8xf32>) {
  %one = arith.constant 1.0 : f32
  %c0 = arith.constant 0 : index
  scf.forall (%i) in (8) {
    memref.store %one, %a[%i, %c0] : memref<8x8xf32>
    scf.forall (%j) in (8) {
      memref.store %one, %a[%i, %j] : memref<8x8xf32>
    } {mapping = [#gpu.block<x>], mlc.loop = "j"}
  } {mapping = [#gpu.block<y>], mlc.loop = "i"}
  return
}
"""

_PER_BLOCK_BUFFER = """
func.func @f(%a: memref<8x8xf32>) {
  %one = arith.constant 1.0 : f32
  scf.forall (%i) in (8) {
    %buf = memref.alloc() : memref<8xf32>
    scf.forall (%j) in (8) {
      memref.store %one, %buf[%j] : memref<8xf32>
      %v = memref.load %buf[%j] : memref<8xf32>
      memref.store %v, %a[%i, %j] : memref<8x8xf32>
    } {mapping = [#gpu.thread<x>], mlc.loop = "j"}
  } {mapping = [#gpu.block<x>], mlc.loop = "i"}
  return
}
"""

_WARP = """
func.func @f(%a: memref<8xf32>) {
  %one = arith.constant 1.0 : f32
  scf.forall (%i) in (8) {
    memref.store %one, %a[%i] : memref<8xf32>
  } {mapping = [#gpu.warp<x>], mlc.loop = "i"}
  return
}
"""


@pytest.mark.parametrize("text, msg", [
    (_NOT_PERFECT, "loop 'j' is bound to blockIdx inside loop 'i' but not perfectly nested"),
    (_PER_BLOCK_BUFFER, "allocated per GPU block.*shared memory, which the cuda build does not support"),
    (_WARP, "has GPU mapping #gpu.warp<x>: the cuda build supports #gpu.block"),
])
def test_unsupported_kernels(text, msg):
    with pytest.raises(mlc.BuildError, match=msg):
        mlc.build(mlc.Module.parse(text), target="cuda")


@pytest.mark.parametrize("tag, arch", [("nvidia/tesla-p100", None), ("nvidia/nvidia-a100", "sm_80"),
                                       ("nvidia/nvidia-h100", "sm_90")])
def test_course_target_tags_build_for_cuda(tag, arch):
    """Course ch.6: ``tvm.build(sch.mod, target="nvidia/tesla-p100")`` and
    ``rt_mod.imported_modules[0].get_source()``. A tag's chip is kept when the toolkit
    compiles for it; the P100's sm_60 (CUDA 13 starts at sm_75) builds for the GPU present."""
    from mlc_mlir.compiler.cuda import device_arch

    rt = mlc.build(vector_add(1024, 128).mod, target=tag)
    want = arch or device_arch() or "sm_90"
    assert rt.cuda.arch == want
    device = rt.imported_modules[0]
    assert device.type_key == "cuda"
    src = device.get_source()
    assert _entries(src) and f".target {want}" in src


def test_course_target_tags_in_tuning_and_errors():
    from mlc_mlir.tune.target import parse_target

    assert parse_target("nvidia/tesla-p100").kind == "cuda"
    assert parse_target("nvidia/nvidia-a100").text == "cuda -arch=sm_80"
    with pytest.raises(mlc.TuneError, match="unknown target tag 'nvidia/tesla-k80'"):
        parse_target("nvidia/tesla-k80")
    with pytest.raises(mlc.BuildError, match="unknown target tag"):
        mlc.build(vector_add(1024, 128).mod, target="nvidia/no-such-gpu")
