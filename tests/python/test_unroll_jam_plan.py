"""The unroll-jam stage's choice (``jam_plan``) on hand-written bufferized kernels of the
course's ch.2 shape (``i``, ``j`` by the tile's columns, ``k``; a ``1 x n`` accumulator),
for the AVX2 and AVX-512 register files: which loop, which factor, when none; then the
jam itself when the factor does not divide the trip count. Fast (no build): the mutation
run of ``make mutate`` uses these tests for the module."""

from __future__ import annotations

import pytest
from mlir import ir

from mlc_mlir.compiler.unroll_jam import jam_plan, unroll_and_jam
from mlc_mlir.context import mlc_context

AVX2, AVX512 = "llvm -mcpu=haswell", "llvm -mcpu=skylake-avx512"


def kernel(rows: int, cols: int, *, n: int = 128, k: int = 16, row_step: int = 1) -> str:
    """Y[i, j:j+cols] = A[i, :] @ B[:, j:j+cols] over ``rows`` rows, in ``n`` columns."""
    acc = f"memref<{row_step}x{cols}xf32, strided<[{n}, 1], offset: ?>>"
    a = f"memref<{row_step}x1xf32, strided<[{k}, 1], offset: ?>>"
    b = f"memref<1x{cols}xf32, strided<[{n}, 1], offset: ?>>"
    return f"""
      func.func @k(%A: memref<{rows * row_step}x{k}xf32>, %B: memref<{k}x{n}xf32>, %Y: memref<{rows * row_step}x{n}xf32>) {{
        %c0 = arith.constant 0 : index
        %c1 = arith.constant 1 : index
        %rows = arith.constant {rows * row_step} : index
        %rs = arith.constant {row_step} : index
        %n = arith.constant {n} : index
        %cols = arith.constant {cols} : index
        %k = arith.constant {k} : index
        %z = arith.constant 0.0 : f32
        scf.for %i = %c0 to %rows step %rs {{
          scf.for %j = %c0 to %n step %cols {{
            %y = memref.subview %Y[%i, %j] [{row_step}, {cols}] [1, 1] : memref<{rows * row_step}x{n}xf32> to {acc}
            linalg.fill ins(%z : f32) outs(%y : {acc})
            scf.for %kk = %c0 to %k step %c1 {{
              %av = memref.subview %A[%i, %kk] [{row_step}, 1] [1, 1] : memref<{rows * row_step}x{k}xf32> to {a}
              %bv = memref.subview %B[%kk, %j] [1, {cols}] [1, 1] : memref<{k}x{n}xf32> to {b}
              linalg.matmul ins(%av, %bv : {a}, {b}) outs(%y : {acc})
            }} {{mlc.loop = "k"}}
          }} {{mlc.loop = "j"}}
        }} {{mlc.loop = "i"}}
        return
      }}"""


def plan(text: str, target: str) -> list[tuple[str, int]]:
    with mlc_context():
        m = ir.Module.parse(text)
        return [(ir.StringAttr(lp.attributes["mlc.loop"]).value, f) for lp, f in jam_plan(m, target)]


@pytest.mark.parametrize("target,rows,cols,want", [
    # AVX2 (16 registers of 8 floats): a 1x32 row is 4 registers, B's row 4 more: 2 rows jammed
    (AVX2, 128, 32, [("i", 2)]),
    # AVX-512 (32 of 16): 2 + 2 registers: the largest factor, MAX_JAM (8)
    (AVX512, 128, 32, [("i", 8)]),
    (AVX512, 2, 32, [("i", 2)]),
    # the factor is at most the trip count
    (AVX512, 3, 32, [("i", 3)]),
    (AVX512, 5, 32, [("i", 5)]),
    # one row: the column loop instead (it shares A's element), by its trip count 4
    (AVX512, 1, 32, [("j", 4)]),
    # an accumulator of less than a vector: nothing
    (AVX2, 128, 4, []),
    # exactly one vector: jammed (16 - 1 - 1 = 14 registers: 8 rows at most)
    (AVX2, 128, 8, [("i", 8)]),
    # 7 registers of accumulator: 2 x 7 + 1 <= 16 but 16 - 7 - 1 leaves room for one: nothing
    (AVX2, 128, 56, []),
    # 8 registers: over half the register file
    (AVX2, 128, 64, []),
    # 3 registers: 16 - 3 - 1 = 12 free, 4 rows; 5 registers: 16 - 5 - 1 = 10, 2 rows
    (AVX2, 128, 24, [("i", 4)]),
    (AVX2, 128, 40, [("i", 2)]),
    # one row on AVX-512: 11 accumulator registers, 32 - 1 - 1 = 30 free: 2 column tiles
    (AVX512, 1, 176, [("j", 2)]),
])
def test_plan_picks_the_loop_and_factor(target, rows, cols, want):
    n = {56: 112, 24: 120, 40: 120, 176: 352}.get(cols, 128)
    assert plan(kernel(rows, cols, n=n), target) == want


def test_plan_with_row_tiles_of_two():
    """Two rows per iteration: 2 x 32 accumulators (8 AVX2 registers): 2 x 8 + 1 > 16, nothing."""
    assert plan(kernel(64, 32, row_step=2), AVX2) == []
    assert plan(kernel(64, 32, row_step=2), AVX512) == [("i", 7)]  # 4 each: (32 - 2 - 1) // 4


def test_a_loop_writing_what_another_iteration_reads_is_not_jammed():
    text = kernel(128, 32).replace("%y = memref.subview %Y[%i, %j]", "%y = memref.subview %Y[%c0, %j]")
    assert plan(text, AVX512) == [("j", 4)]  # the rows all write row 0: only the columns are parallel


def test_loops_with_results_or_varying_inner_bounds_are_not_candidates():
    inner = kernel(128, 32).replace("scf.for %kk = %c0 to %k step %c1", "scf.for %kk = %c0 to %i step %c1")
    assert plan(inner, AVX512) == [("j", 4)]  # k's bound varies with i


def test_jam_splits_a_trip_count_the_factor_does_not_divide():
    with mlc_context():
        m = ir.Module.parse(kernel(7, 32))
        (loop, factor), = jam_plan(m, AVX2)
        assert factor == 2
        unroll_and_jam(m, AVX2)
        text = str(m)
    assert "mlc.unroll_jam" not in text
    assert "to %c6 step %c2" in text  # 3 jammed pairs of rows, then the last row alone
    assert text.count('mlc.loop = "i"') == 1 or "%c6 to %c7" in text


def _two_kernels(first: str, second: str) -> str:
    return f"module {{{first.replace('@k(', '@first(')}\n{second.replace('@k(', '@second(')}\n}}"


@pytest.mark.parametrize("skipped", ["small", "factor 1", "no loop"])
def test_a_skipped_reduction_does_not_end_the_plan(skipped):
    """The first function's reduction is too small, leaves a factor of 1, or has no loop
    of two trips around it."""
    first = {"small": kernel(128, 4), "factor 1": kernel(128, 56, n=112), "no loop": kernel(1, 32, n=32)}[skipped]
    assert plan(_two_kernels(first, kernel(128, 32)), AVX2) == [("i", 2)]


def test_ties_go_to_the_innermost_loop():
    """8 x 8 tiles: j shares A's 8 elements, i shares B's 8: the inner loop j wins."""
    assert plan(kernel(16, 8, n=64, row_step=8), AVX512) == [("j", 7)]


def test_vector_reads_count_as_shared_elements():
    """The vectorized form: A's element loaded, B's row and the accumulator through transfers."""
    acc = "memref<1x32xf32, strided<[128, 1], offset: ?>>"
    text = f"""
      func.func @k(%A: memref<128x16xf32>, %B: memref<16x128xf32>, %Y: memref<128x128xf32>) {{
        %c0 = arith.constant 0 : index
        %c1 = arith.constant 1 : index
        %c16 = arith.constant 16 : index
        %c32 = arith.constant 32 : index
        %c128 = arith.constant 128 : index
        %z = arith.constant 0.0 : f32
        scf.for %i = %c0 to %c128 step %c1 {{
          scf.for %j = %c0 to %c128 step %c32 {{
            %y = memref.subview %Y[%i, %j] [1, 32] [1, 1] : memref<128x128xf32> to {acc}
            scf.for %kk = %c0 to %c16 step %c1 {{
              %a = memref.load %A[%i, %kk] : memref<128x16xf32>
              %av = vector.broadcast %a : f32 to vector<32xf32>
              %b = vector.transfer_read %B[%kk, %j], %z {{in_bounds = [true]}} : memref<16x128xf32>, vector<32xf32>
              %o = vector.transfer_read %y[%c0, %c0], %z {{in_bounds = [true]}} : {acc}, vector<32xf32>
              %r = vector.fma %av, %b, %o : vector<32xf32>
              vector.transfer_write %r, %y[%c0, %c0] {{in_bounds = [true]}} : vector<32xf32>, {acc}
            }} {{mlc.loop = "k"}}
          }} {{mlc.loop = "j"}}
        }} {{mlc.loop = "i"}}
        return
      }}"""
    assert plan(text, AVX2) == [("i", 2)]
    assert plan(text, AVX512) == [("i", 8)]
    # B's row read at the row i instead: nothing shared across i, the columns' loop is chosen
    by_row = text.replace("%B[%kk, %j]", "%B[%i, %j]").replace("%A[%i, %kk]", "%A[%i, %c0]")
    assert plan(by_row, AVX512) == [("j", 4)]
    # one row, and A read at the column: the column loop shares nothing: no jam
    nothing = text.replace("scf.for %i = %c0 to %c128 step %c1", "scf.for %i = %c0 to %c1 step %c1")
    assert plan(nothing.replace("%A[%i, %kk]", "%A[%j, %kk]"), AVX512) == []
    assert plan(nothing, AVX512) == [("j", 4)]


def test_two_reductions_under_one_loop_share_its_factor():
    """Two column loops under i (outputs Y and Y2): both choose i; one factor for it."""
    text = kernel(128, 32)
    nest = text[text.index("          scf.for %j"):text.index('        } {mlc.loop = "i"}')]
    twice = text.replace(nest, nest + nest.replace("%Y[", "%Y2[").replace("%y", "%y2"))
    twice = twice.replace("%Y: memref<128x128xf32>)", "%Y: memref<128x128xf32>, %Y2: memref<128x128xf32>)")
    assert plan(twice, AVX2) == [("i", 2)]
    assert plan(twice, AVX512) == [("i", 8)]  # each reduction alone: 2 + 2 registers, the largest factor


def test_a_loop_holding_a_full_register_tile_is_not_jammed():
    """A small reduction (1 x 32) and a full 14 x 32 AVX-512 tile (28 registers) under one
    row loop, as a batched contraction's peeled partial tile and its full tiles under the
    batch loop: jamming that loop for the small one would copy the full tile too (BERT's
    batched 8 x 128 x 768 @ 768 x 2304 ran 4x slower, spilled). The small one jams its
    column loop instead; the full tile nothing."""
    text = kernel(128, 32)
    big = """
          %c14 = arith.constant 14 : index
          %r2 = arith.muli %i, %c14 : index
          scf.for %j2 = %c0 to %n step %cols {
            %y2 = memref.subview %Y2[%r2, %j2] [14, 32] [1, 1] : memref<1792x128xf32> to memref<14x32xf32, strided<[128, 1], offset: ?>>
            linalg.fill ins(%z : f32) outs(%y2 : memref<14x32xf32, strided<[128, 1], offset: ?>>)
            scf.for %kk2 = %c0 to %k step %c1 {
              %av2 = memref.subview %A2[%r2, %kk2] [14, 1] [1, 1] : memref<1792x16xf32> to memref<14x1xf32, strided<[16, 1], offset: ?>>
              %bv2 = memref.subview %B[%kk2, %j2] [1, 32] [1, 1] : memref<16x128xf32> to memref<1x32xf32, strided<[128, 1], offset: ?>>
              linalg.matmul ins(%av2, %bv2 : memref<14x1xf32, strided<[16, 1], offset: ?>>, memref<1x32xf32, strided<[128, 1], offset: ?>>) outs(%y2 : memref<14x32xf32, strided<[128, 1], offset: ?>>)
            } {mlc.loop = "k2"}
          } {mlc.loop = "j2"}
"""
    text = text.replace('        } {mlc.loop = "i"}', big + '        } {mlc.loop = "i"}')
    text = text.replace("%Y: memref<128x128xf32>)", "%Y: memref<128x128xf32>, %A2: memref<1792x16xf32>, "
                                                    "%Y2: memref<1792x128xf32>)")
    assert plan(text, AVX512) == [("j", 4)]
    # without the full tile the row loop is the small one's choice (the test above)
    assert plan(kernel(128, 32), AVX512) == [("i", 8)]


def test_an_output_made_in_the_loop_is_no_accumulator():
    acc = "memref<1x32xf32, strided<[128, 1], offset: ?>>"
    text = kernel(128, 32).replace(f"linalg.matmul ins(%av, %bv : memref<1x1xf32, strided<[16, 1], offset: ?>>, "
                                   f"memref<1x32xf32, strided<[128, 1], offset: ?>>) outs(%y : {acc})",
                                   "%t = memref.alloca() : memref<1x32xf32>\n"
                                   "              linalg.matmul ins(%av, %bv : memref<1x1xf32, strided<[16, 1], "
                                   "offset: ?>>, memref<1x32xf32, strided<[128, 1], offset: ?>>) "
                                   "outs(%t : memref<1x32xf32>)")
    assert "memref.alloca" in text
    assert plan(text, AVX2) == []


def test_jam_keeps_one_loop_when_the_factor_divides():
    with mlc_context():
        m = ir.Module.parse(kernel(128, 32))
        unroll_and_jam(m, AVX2)
        text = str(m)
    assert text.count('mlc.loop = "i"') == 1 and "to %c128 step %c2" in text
