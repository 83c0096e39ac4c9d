"""The shape of the code that fast schedules lower to (no timing here: benchmarks/bench_matmul.py).

A matmul scheduled with an 8x32 register tile (8 rows unrolled, 32 columns vectorized)
must build to broadcast + FMA on whole vector rows with the accumulators carried in
registers across the k loop, not to per-element extract/insert storms; a local cache of
B computed at a loop gets a buffer of the tile's shape, filled once per iteration of that
loop.
"""

import re

import mlc_mlir as mlc

from _benchmarks import load_benchmark
from _schedule_util import check_matmul, matmul

matmul_schedules = load_benchmark("matmul_schedules")
primitive_schedule = matmul_schedules.primitive_schedule

N = 256
#: the register tile below is the AVX-512 one (8x32 after cutting 14 rows to a divisor of
#: 256); the schedule is target-independent IR, built here for the host
TILE_TARGET = "llvm -mcpu=skylake-avx512"


def register_tile_schedule(n: int = N) -> mlc.Schedule:
    """``primitive_schedule`` of benchmarks/matmul_schedules.py on block ``C``."""
    return primitive_schedule(matmul(n), block="C", target=TILE_TARGET)


def blocked_schedule(n: int = N, *, vectorize_copy: bool = False) -> mlc.Schedule:
    """``blocked_schedule`` of benchmarks/matmul_schedules.py at 256: 64-row blocks, k by 128."""
    return matmul_schedules.blocked_schedule(matmul(n), block="C", row_tiles=8, k_block=128,
                                             vectorize_copy=vectorize_copy, target=TILE_TARGET)


#: the target whose register file the IR checks describe (16 ymm registers, 8 f32 lanes); its
#: code runs on any AVX2 host, AVX-512 ones included (whose own build jams more rows)
AVX2 = "llvm -mcpu=haswell"


def ir_after_stage(mod: mlc.Module, stage: str, capsys, target: str = AVX2) -> tuple[str, object]:
    """Build ``mod`` for ``target``; the IR that ``print_after_all=True`` prints after
    ``stage``, and the build."""
    capsys.readouterr()
    rt = mlc.build(mod, target=target, print_after_all=True)
    err = capsys.readouterr().err
    dump = err.split(f"// -----// IR Dump After {stage} //----- //\n", 1)[1]
    return dump.split("// -----// IR Dump After", 1)[0], rt


def check_fma_rows(llvm_dialect: str, rows: int) -> None:
    """One FMA on a whole vector row per row of the tile; no element-wise storms."""
    fmas = re.findall(r"llvm\.intr\.fmuladd\(.*\) : \((vector<(?:16|32)xf32>)", llvm_dialect)
    assert len(fmas) >= rows, llvm_dialect
    assert "llvm.fmul" not in llvm_dialect
    assert llvm_dialect.count("llvm.extractelement") <= 2 * rows   # A's elements, broadcast


def test_register_tile_schedule_is_correct():
    check_matmul(register_tile_schedule(), N)


def test_register_tile_init_is_vectorized():
    text = str(register_tile_schedule().mod)
    # the init fill of each 8x32 tile is vectorized with the tile (TVM: decompose_reduction
    # keeps the vectorized loop); a scalar fill would leave a view of C that blocks hoisting
    assert re.search(r"vector\.transfer_write %cst.* : vector<8x32xf32>, tensor<8x32xf32>", text), text
    assert "vector.contract" in text and "linalg.fill" not in text


def test_register_tile_lowers_to_fma_rows(capsys):
    after, rt = ir_after_stage(register_tile_schedule().mod, "vector-opt", capsys)
    k_loop = after[after.index("scf.for %arg5"):]
    # 8 accumulator rows carried by the k loop, one FMA each, no per-element traffic
    assert re.search(r"scf\.for .* iter_args\(.*\) -> \((vector<1x32xf32>, ){7}vector<1x32xf32>\)", k_loop)
    assert len(re.findall(r"vector\.fma .* : vector<32xf32>", after)) == 8
    for op in ("vector.to_elements", "vector.from_elements", "vector.contract", "vector.transfer_read"):
        assert op not in after, op
    check_fma_rows(rt.get_source("llvm-dialect"), 8)


def test_blocked_schedule_is_correct():
    check_matmul(blocked_schedule(), N)


def test_blocked_schedule_caches_b_tile_per_j0(capsys):
    sch = blocked_schedule()
    text = str(sch.mod)
    # compute_at(B_local, j_0): one 128x32 copy per j_0 iteration, in a buffer of that
    # shape, right in j_0 before the register tiles' loop i_1 (not in the innermost loop)
    copy = re.search(r"%(\S+) = bufferization\.alloc_tensor\(\) : tensor<128x32xf32>\n"
                     r".*linalg\.copy \{mlc\.block = \"arg1_local\", mlc\.scope = \"local\"\} "
                     r"ins\(%\S+ : tensor<128x32xf32>\) outs\(%\1 : tensor<128x32xf32>\)", text)
    assert copy, text
    loops = [m.start() for m in re.finditer(r"= scf\.for %", text)]
    assert len(loops) == 4                                   # k_0, j_0, i_1, k_1
    assert loops[1] < copy.start() < loops[2], text
    assert "tensor<256x256xf32>) outs" not in text           # no full-size copy of B
    after, rt = ir_after_stage(sch.mod, "vector-opt", capsys)
    assert "memref.alloc() {alignment = 64 : i64} : memref<128x32xf32>" in after
    check_fma_rows(rt.get_source("llvm-dialect"), 8)


def test_blocked_schedule_vectorized_copy():
    sch = blocked_schedule(vectorize_copy=True)
    assert [lp.name for lp in sch.get_loops("arg1_local")] == ["i_0", "k_0", "j_0", "ax0", "ax1"]
    text = str(sch.mod)
    # the copy's rows move 32 floats at a time into the 128x32 local tile, inside j_0
    assert re.search(r"vector\.transfer_write .* : vector<1x32xf32>, tensor<128x32xf32>", text), text
    assert '} {mlc.loop = "ax0"}' in text and "linalg.copy" not in text
    check_matmul(sch, N)
