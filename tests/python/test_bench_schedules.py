"""The hand-written transform scripts of benchmarks/schedules/ give NumPy's results.

They are schedules too (course ch.2: any transformation sequence is a schedule); the
benchmark times them, this test keeps them correct.
"""


import numpy as np
import pytest

import mlc_mlir as mlc
from mlc_mlir.compiler.passes import memref_abi

from _benchmarks import load_benchmark

render_script = load_benchmark("matmul_schedules").render_script  # templates: the host's register tile


def _matmul(n: int) -> str:
    t = f"tensor<{n}x{n}xf32>"
    return f"""
func.func @main(%A: {t}, %B: {t}, %C: {t}) -> {t} attributes {{mlc.prim_func}} {{
  %zero = arith.constant 0.0 : f32
  %y0 = linalg.fill {{mlc.block_init = "Y"}} ins(%zero : f32) outs(%C : {t}) -> {t}
  %y = linalg.matmul {{mlc.block = "Y"}} ins(%A, %B : {t}, {t}) outs(%y0 : {t}) -> {t}
  return %y : {t}
}}"""


def _scheduled(text: str, script: str) -> mlc.Module:
    mod = mlc.Module.parse(text)
    memref_abi(mod)
    return mlc.schedule.apply_transform_script(mod, render_script(script))


@pytest.mark.parametrize("script", ["mm_relu128.mlir", "mm_relu128_parallel.mlir"])
def test_mm_relu128_script(mm_relu_text, rng, script):
    mod = _scheduled(mm_relu_text, script)
    text = str(mod)
    assert "vector.fma" in text or "vector.outerproduct" in text or "llvm.intr.fmuladd" in text
    a, b = rng.standard_normal((128, 128), dtype=np.float32), rng.standard_normal((128, 128), dtype=np.float32)
    c = np.zeros((128, 128), np.float32)
    mlc.build(mod)["mm_relu"](a, b, c)
    np.testing.assert_allclose(c, np.maximum(a @ b, 0), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("threads", [1, 2])
def test_matmul1024_script_parallel(rng, threads):
    import ctypes

    from mlc_mlir.toolchain import openmp_lib

    mod = _scheduled(_matmul(1024), "matmul1024.mlir")
    assert "scf.forall" in str(mod)
    rt = mlc.build(mod)
    ctypes.CDLL(openmp_lib()).omp_set_num_threads(threads)
    a, b = rng.random((1024, 1024), dtype=np.float32), rng.random((1024, 1024), dtype=np.float32)
    c = np.zeros((1024, 1024), np.float32)
    rt["main"](a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-3)
    assert "__kmpc_fork_call" in rt.get_source("llvm")  # the forall runs on OpenMP threads


@pytest.mark.parametrize("target, tile, split, rest_tile", [
    ("llvm -mcpu=haswell -num-cores=2", (6, 16), 1020, 4),          # AVX2: 12 ymm accumulators
    ("llvm -mcpu=skylake-avx512 -num-cores=2", (14, 32), 1008, 8),  # AVX-512: 28 zmm accumulators
    ("llvm -mcpu=haswell -num-cores=1", (6, 16), 1020, 4),
])
def test_matmul1024_script_takes_the_target_register_tile(target, tile, split, rest_tile):
    """Full MR x NR tiles from Target.register_tile on rows [0, split), one block of rows per
    core, the remaining rows in smaller full tiles; B packed (nofold pad + hoist_pad)."""
    from mlc_mlir.target import Target

    text = render_script("matmul1024.mlir", target)
    cores = Target(target).num_cores
    assert f"tile_sizes [{tile[0]}, {tile[1]}, 0]" in text
    assert f"split %mm after {split} {{dimension = 0}}" in text
    assert f"tile_using_forall %main tile_sizes [{split // cores}, 0]" in text
    assert f"tile_sizes [{rest_tile}, {tile[1]}, 0]" in text
    assert split % (tile[0] * cores) == 0 and (1024 - split) % rest_tile == 0
    assert "hoist_pad %p_b" in text and "@" not in text.replace("@__transform_main", "")
