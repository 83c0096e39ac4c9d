"""``mlc_mlir.compiler.loop_deps``: the dependence facts the unroll-jam stage relies on.

``is_parallel`` on hand-written bufferized loops: which accesses prove iterations
disjoint (slabs along one dim, indices through ``arith`` / ``affine.apply`` / subview
chains) and which do not (overlaps, unknown ops, casts, non-unit strides, globals);
then the small IR helpers. Fast (parsing only): the mutation run of ``make mutate`` uses
these tests for the module."""

from __future__ import annotations

import pytest
from mlir import ir

from mlc_mlir.compiler import loop_deps as ld
from mlc_mlir.context import mlc_context
from mlc_mlir.errors import LoweringError

_HEAD = """
        %c0 = arith.constant 0 : index
        %c1 = arith.constant 1 : index
        %c2 = arith.constant 2 : index
        %c4 = arith.constant 4 : index
        %c8 = arith.constant 8 : index
        %z = arith.constant 0.0 : f32
        %zv = arith.constant dense<0.0> : vector<4xf32>
"""


def _func(m: ir.Module) -> ir.Operation:
    return next(o.operation for o in m.body.operations if o.operation.name == "func.func")


def _top_loops(func: ir.Operation) -> list[ir.Operation]:
    return [o.operation for o in func.regions[0].blocks[0].operations if o.operation.name == "scf.for"]


def parallel(args: str, *loops: str) -> list[bool]:
    """``is_parallel`` of each loop body in ``loops`` (``%i`` over 0..8 step 1, or the
    header given as ``STEP n:`` first)."""
    bodies = []
    for body in loops:
        step = "%c1"
        if body.startswith("STEP "):
            step, body = body[5:].split(":", 1)
        bodies.append(f"scf.for %i = %c0 to %c8 step {step} {{\n{body}\n}}")
    text = f"func.func @f({args}) {{{_HEAD}{''.join(bodies)}\nreturn\n}}"
    with mlc_context():
        m = ir.Module.parse(text)
        return [ld.is_parallel(lp) for lp in _top_loops(_func(m))]


def test_element_stores_by_index_expression():
    assert parallel(
        "%a: memref<64xf32>",
        "memref.store %z, %a[%i] : memref<64xf32>",                                  # i: disjoint
        "%j = arith.addi %i, %c2 : index\n memref.store %z, %a[%j] : memref<64xf32>",  # i + 2: not proven
        "%j = arith.muli %i, %c4 : index\n %k = arith.addi %c2, %j : index\n"
        " memref.store %z, %a[%k] : memref<64xf32>",                                 # 2 + 4 i
        "%j = arith.muli %i, %c4 : index\n memref.store %z, %a[%j] : memref<64xf32>",  # 4 i
        "%j = arith.muli %c4, %i : index\n memref.store %z, %a[%j] : memref<64xf32>",  # i * 4
        "memref.store %z, %a[%c2] : memref<64xf32>",                                 # one element
        "%j = arith.muli %i, %i : index\n memref.store %z, %a[%j] : memref<64xf32>",  # i * i: unknown
        "%j = arith.subi %i, %c1 : index\n memref.store %z, %a[%j] : memref<64xf32>",  # subi: unknown
        "%j = affine.apply affine_map<(d0) -> (d0 * 2 + 1)>(%i)\n memref.store %z, %a[%j] : memref<64xf32>",
        "%j = affine.apply affine_map<(d0) -> (d0 floordiv 2)>(%i)\n memref.store %z, %a[%j] : memref<64xf32>",
    ) == [True, False, True, True, True, False, False, False, True, False]


def test_affine_symbols_and_constants():
    assert parallel(
        "%a: memref<64xf32>",
        "%j = affine.apply affine_map<()[s0] -> (s0 * 4 + 3)>()[%i]\n memref.store %z, %a[%j] : memref<64xf32>",
        "%j = affine.apply affine_map<(d0)[s0] -> (d0 + s0 * 4)>(%c2)[%i]\n memref.store %z, %a[%j] : memref<64xf32>",
        "%j = affine.apply affine_map<()[s0] -> (s0 + 3)>()[%i]\n memref.store %z, %a[%j] : memref<64xf32>",
        "%j = affine.apply affine_map<(d0) -> (3)>(%i)\n memref.store %z, %a[%j] : memref<64xf32>",
        "%j = affine.apply affine_map<(d0) -> (4 * d0)>(%i)\n memref.store %z, %a[%j] : memref<64xf32>",
        "%j = affine.apply affine_map<(d0, d1) -> (d0 * 2 + d1)>(%i, %c1)\n memref.store %z, %a[%j] : memref<64xf32>",
    ) == [True, True, False, False, True, True]


def test_affine_sums_and_products():
    assert parallel(
        "%a: memref<64xf32>",
        # the second symbol: forms are the dims' then the symbols'
        "%j = affine.apply affine_map<(d0)[s0, s1] -> (d0 + s1 * 4)>(%c2)[%c1, %i]\n"
        " memref.store %z, %a[%j] : memref<64xf32>",
        # (i + 1) * 2 = 2 i + 2: the offset 2 is a whole step: not proven
        "%j = affine.apply affine_map<(d0) -> ((d0 + 1) * 2)>(%i)\n memref.store %z, %a[%j] : memref<64xf32>",
        # 2 (2 i + 1) and (2 i + 1) 2 = 4 i + 2
        "%j = affine.apply affine_map<(d0) -> (2 * (d0 * 2 + 1))>(%i)\n memref.store %z, %a[%j] : memref<64xf32>",
        "%j = affine.apply affine_map<(d0) -> ((d0 * 2 + 1) * 2)>(%i)\n memref.store %z, %a[%j] : memref<64xf32>",
        # i (i + 1): not linear
        "%k = arith.addi %i, %c1 : index\n %j = affine.apply affine_map<(d0)[s0] -> (d0 * s0)>(%i)[%k]\n"
        " memref.store %z, %a[%j] : memref<64xf32>",
        "%k = arith.addi %i, %c1 : index\n %j = affine.apply affine_map<(d0)[s0] -> (s0 * d0)>(%i)[%k]\n"
        " memref.store %z, %a[%j] : memref<64xf32>",
        # (i + 1) 2 through arith, both orders
        "%k = arith.addi %i, %c1 : index\n %j = arith.muli %k, %c2 : index\n memref.store %z, %a[%j] : memref<64xf32>",
        "%k = arith.addi %i, %c1 : index\n %j = arith.muli %c2, %k : index\n memref.store %z, %a[%j] : memref<64xf32>",
        "%k = arith.addi %i, %c1 : index\n %j = arith.muli %k, %i : index\n memref.store %z, %a[%j] : memref<64xf32>",
    ) == [True, False, True, True, False, False, False, False, False]


def test_symbol_products_and_unknown_parts():
    assert parallel(
        "%a: memref<64xf32>",
        "%j = affine.apply affine_map<(d0)[s0] -> (d0 * s0)>(%c2)[%i]\n memref.store %z, %a[%j] : memref<64xf32>",
        "%j = affine.apply affine_map<(d0) -> (d0 floordiv 2 + d0)>(%i)\n memref.store %z, %a[%j] : memref<64xf32>",
        "%j = affine.apply affine_map<(d0) -> ((d0 floordiv 2) * 4)>(%i)\n memref.store %z, %a[%j] : memref<64xf32>",
        "%m = arith.constant -1 : index\n %j = arith.addi %i, %m : index\n"
        " vector.store %zv, %a[%j] : memref<64xf32>, vector<4xf32>",           # slab [i - 1, i + 3): overlaps
        "%m = arith.constant -1 : index\n %j = arith.muli %i, %c4 : index\n %k = arith.addi %j, %m : index\n"
        " vector.store %zv, %a[%k] : memref<64xf32>, vector<4xf32>",           # [4 i - 1, 4 i + 3): overlaps
    ) == [True, False, False, False, False]


def test_a_dimension_that_proves_nothing_is_passed_over():
    assert parallel(
        "%a: memref<64x64xf32>",
        "%k = arith.muli %i, %i : index\n %j = arith.muli %i, %c4 : index\n"
        " memref.store %z, %a[%k, %j] : memref<64x64xf32>",                    # rows unknown, columns 4 i
        "%j = arith.muli %i, %c4 : index\n memref.store %z, %a[%c0, %j] : memref<64x64xf32>",
    ) == [True, True]


def test_every_operand_of_an_op_is_looked_at():
    """A private buffer first among an op's operands does not hide the shared one after it."""
    view = "memref<1x4xf32, strided<[4, 1], offset: ?>>"
    assert parallel(
        "%a: memref<20x4xf32>",
        "%t = memref.alloc() : memref<20x4xf32>\n"
        " linalg.copy ins(%t : memref<20x4xf32>) outs(%a : memref<20x4xf32>)",     # all of %a each time
        f"%t = memref.alloc() : memref<1x4xf32>\n"
        f" %s = memref.subview %a[%i, 0] [1, 4] [1, 1] : memref<20x4xf32> to {view}\n"
        f" linalg.copy ins(%t : memref<1x4xf32>) outs(%s : {view})",             # row i
        f"%s = memref.subview %a[%i, 0] [1, 4] [1, 1] : memref<20x4xf32> to {view}\n"
        f" %d = memref.dim %s, %c0 : {view}",                                     # an op not known
        "%s = memref.subview %a[%c0, %i] [8, 1] [1, 1] : memref<20x4xf32> to "
        "memref<8x1xf32, strided<[4, 1], offset: ?>>\n"
        " linalg.fill ins(%z : f32) outs(%s : memref<8x1xf32, strided<[4, 1], offset: ?>>)",  # two dynamic offsets
        "%s = memref.subview %a[0, %i] [20, 1] [1, 1] : memref<20x4xf32> to memref<20xf32, strided<[4], "
        "offset: ?>>\n linalg.fill ins(%z : f32) outs(%s : memref<20xf32, strided<[4], offset: ?>>)",  # rank-reducing
    ) == [False, True, False, True, False]


def test_matmul_operands_and_transposed_transfers():
    assert parallel(
        "%a: memref<8x8xf32>, %b: memref<8x8xf32>",
        "%sa = memref.subview %a[%i, 0] [1, 8] [1, 1] : memref<8x8xf32> to memref<1x8xf32, strided<[8, 1], "
        "offset: ?>>\n %sb = memref.subview %b[%i, 0] [1, 8] [1, 1] : memref<8x8xf32> to memref<1x8xf32, "
        "strided<[8, 1], offset: ?>>\n linalg.matmul ins(%sa, %b : memref<1x8xf32, strided<[8, 1], offset: ?>>, "
        "memref<8x8xf32>) outs(%sb : memref<1x8xf32, strided<[8, 1], offset: ?>>)",   # writes row i of %b
        "%v = arith.constant dense<0.0> : vector<1x8xf32>\n"
        " vector.transfer_write %v, %a[%i, %c0] {in_bounds = [true, false], permutation_map = "
        "affine_map<(d0, d1) -> (d1, d0)>} : vector<1x8xf32>, memref<8x8xf32>",       # rows i..i+8: overlap
    ) == [False, False]
    with mlc_context():
        m = ir.Module.parse("""
          func.func @f(%a: memref<4x8xf32>, %b: memref<8x4xf32>, %c: memref<4x4xf32>) {
            linalg.matmul ins(%a, %b : memref<4x8xf32>, memref<8x4xf32>) outs(%c : memref<4x4xf32>)
            return
          }""")
        mm = next(o.operation for o in _func(m).regions[0].blocks[0].operations if o.operation.name == "linalg.matmul")
        args = list(_func(m).regions[0].blocks[0].arguments)
        assert ld.linalg_ins(mm) == args[:2] and ld.linalg_outs(mm) == args[2:]
        m = ir.Module.parse("""
          func.func @g(%a: memref<4xf32>, %b: memref<4xf32>, %c: memref<4xf32>) {
            linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>,
                                             affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
                ins(%a : memref<4xf32>) outs(%b, %c : memref<4xf32>, memref<4xf32>) {
            ^bb0(%x: f32, %y: f32, %w: f32):
              linalg.yield %x, %x : f32, f32
            }
            return
          }""")
        gen = next(o.operation for o in _func(m).regions[0].blocks[0].operations
                   if o.operation.name == "linalg.generic")
        args = list(_func(m).regions[0].blocks[0].arguments)
        assert ld.linalg_ins(gen) == args[:1] and ld.linalg_outs(gen) == args[1:]


def test_loops_with_iter_args():
    with mlc_context():
        m = ir.Module.parse(f"""
          func.func @f(%a: memref<8xf32>) -> f32 {{{_HEAD}
            %r = scf.for %i = %c0 to %c8 step %c1 iter_args(%acc = %z) -> (f32) {{
              %v = memref.load %a[%i] : memref<8xf32>
              %s = arith.addf %acc, %v : f32
              %t = scf.for %j = %c0 to %c4 step %c1 iter_args(%x = %s) -> (f32) {{ scf.yield %x : f32 }}
              scf.yield %t : f32
            }}
            scf.for %i = %c0 to %c8 step %c1 {{
              %st = arith.addi %c1, %c0 : index
              scf.for %j = %c0 to %c4 step %st {{ }}
            }}
            return %r : f32
          }}""")
        first, second = _top_loops(_func(m))
        assert ld.trip_count(first) == 8
        iv = ld.induction_var(first)
        assert iv == first.regions[0].blocks[0].arguments[0] and str(iv.type) == "index"
        assert ld.inner_bounds_invariant(first)       # the inner loop's iter_args start inside: fine
        assert not ld.inner_bounds_invariant(second)  # its step is computed inside


def test_vector_loads_of_the_written_slab():
    assert parallel(
        "%a: memref<64xf32>",
        "%j = arith.muli %i, %c4 : index\n %v = vector.load %a[%j] : memref<64xf32>, vector<4xf32>\n"
        " vector.store %v, %a[%j] : memref<64xf32>, vector<4xf32>",
        "%j = arith.muli %i, %c4 : index\n %v = vector.transfer_read %a[%j], %z {in_bounds = [true]} : "
        "memref<64xf32>, vector<4xf32>\n vector.transfer_write %v, %a[%j] {in_bounds = [true]} : "
        "vector<4xf32>, memref<64xf32>",
        "%j = arith.muli %i, %c4 : index\n %v = vector.transfer_read %a[%j], %z {in_bounds = [true]} : "
        "memref<64xf32>, vector<8xf32>\n vector.transfer_write %zv, %a[%j] {in_bounds = [true]} : "
        "vector<4xf32>, memref<64xf32>",
    ) == [True, True, False]


def test_dynamic_subview_strides_are_not_proven():
    dyn = "memref<1x4xf32, strided<[?, ?], offset: ?>>"
    assert parallel(
        "%a: memref<20x4xf32>",
        f"%s = memref.subview %a[%i, 0] [1, 4] [%c1, %c1] : memref<20x4xf32> to {dyn}\n"
        f" linalg.fill ins(%z : f32) outs(%s : {dyn})",
        f"%s = memref.subview %a[%i, %c0] [1, %c4] [1, %c1] : memref<20x4xf32> to "
        "memref<1x?xf32, strided<[4, ?], offset: ?>>\n"
        " linalg.fill ins(%z : f32) outs(%s : memref<1x?xf32, strided<[4, ?], offset: ?>>)",
    ) == [False, False]


def test_offsets_must_fit_in_one_step():
    # each iteration's slab is [a * iv + c, a * iv + c + size) with 0 <= c, c + size <= a * step
    assert parallel(
        "%a: memref<64xf32>",
        "%j = arith.muli %i, %c4 : index\n %k = arith.addi %j, %c4 : index\n"
        " memref.store %z, %a[%k] : memref<64xf32>",                            # c = 4: not proven
        "%j = arith.muli %i, %c4 : index\n %k = arith.addi %j, %c2 : index\n"
        " memref.store %z, %a[%k] : memref<64xf32>",                            # c = 2
        "%j = arith.muli %i, %c4 : index\n vector.store %zv, %a[%j] : memref<64xf32>, vector<4xf32>",
        "%j = arith.muli %i, %c2 : index\n vector.store %zv, %a[%j] : memref<64xf32>, vector<4xf32>",
        "%j = arith.muli %i, %c4 : index\n %k = arith.addi %j, %c1 : index\n"
        " vector.store %zv, %a[%k] : memref<64xf32>, vector<4xf32>",           # 1 + 4 > 4
        "STEP %c2: %j = arith.muli %i, %c2 : index\n vector.store %zv, %a[%j] : memref<64xf32>, vector<4xf32>",
    ) == [False, True, True, False, False, True]


def test_every_access_of_a_written_buffer_counts():
    assert parallel(
        "%a: memref<64xf32>, %b: memref<64xf32>",
        # reads of another buffer anywhere: fine
        "%v = memref.load %b[%c0] : memref<64xf32>\n memref.store %v, %a[%i] : memref<64xf32>",
        # a read of the written buffer at another iteration's element: not parallel
        "%j = arith.addi %i, %c1 : index\n %v = memref.load %a[%j] : memref<64xf32>\n"
        " memref.store %v, %a[%i] : memref<64xf32>",
        # read and write of the same element: parallel
        "%v = memref.load %a[%i] : memref<64xf32>\n memref.store %v, %a[%i] : memref<64xf32>",
        # two coefficients of the iv in one buffer: not parallel
        "%j = arith.muli %i, %c2 : index\n memref.store %z, %a[%j] : memref<64xf32>\n"
        " memref.store %z, %a[%i] : memref<64xf32>",
        # vector reads of the written buffer
        "%v = vector.load %a[%i] : memref<64xf32>, vector<4xf32>\n"
        " %j = arith.muli %i, %c4 : index\n vector.store %v, %a[%j] : memref<64xf32>, vector<4xf32>",
    ) == [True, False, True, False, False]


def test_two_dimensional_slabs_and_subviews():
    view = "memref<2x4xf32, strided<[4, 1], offset: ?>>"
    col = "memref<8x1xf32, strided<[4, 1], offset: ?>>"
    assert parallel(
        "%a: memref<20x4xf32>",
        f"%s = memref.subview %a[%i, 0] [2, 4] [1, 1] : memref<20x4xf32> to {view}\n"
        f" linalg.fill ins(%z : f32) outs(%s : {view})",                     # rows i, i + 1: overlap
        f"STEP %c2: %s = memref.subview %a[%i, 0] [2, 4] [1, 1] : memref<20x4xf32> to {view}\n"
        f" linalg.fill ins(%z : f32) outs(%s : {view})",                     # step 2: tiles
        "memref.store %z, %a[%c0, %i] : memref<20x4xf32>",                   # along the columns
        f"%s = memref.subview %a[0, %i] [8, 1] [1, 1] : memref<20x4xf32> to {col}\n"
        f" linalg.fill ins(%z : f32) outs(%s : {col})",                      # column i: disjoint
        f"%s = memref.subview %a[%i, 0] [2, 4] [1, 1] : memref<20x4xf32> to {view}\n"
        f" %t = memref.subview %s[0, 0] [1, 4] [1, 1] : {view} to memref<1x4xf32, strided<[4, 1], offset: ?>>\n"
        " linalg.fill ins(%z : f32) outs(%t : memref<1x4xf32, strided<[4, 1], offset: ?>>)",  # row i of the view
        f"%s = memref.subview %a[%i, 0] [2, 4] [1, 1] : memref<20x4xf32> to {view}\n"
        f" %t = memref.subview %s[1, 0] [1, 4] [1, 1] : {view} to memref<1x4xf32, strided<[4, 1], offset: ?>>\n"
        " linalg.fill ins(%z : f32) outs(%t : memref<1x4xf32, strided<[4, 1], offset: ?>>)",  # i + 1: not proven
        "%s = memref.subview %a[%i, 0] [1, 2] [1, 2] : memref<20x4xf32> to memref<1x2xf32, strided<[4, 2], "
        "offset: ?>>\n linalg.fill ins(%z : f32) outs(%s : memref<1x2xf32, strided<[4, 2], offset: ?>>)",
        "%s = memref.subview %a[%i, 0] [1, 4] [1, 1] : memref<20x4xf32> to memref<4xf32, strided<[1], "
        "offset: ?>>\n linalg.fill ins(%z : f32) outs(%s : memref<4xf32, strided<[1], offset: ?>>)",
    ) == [False, True, True, True, True, False, False, False]


def test_transfers_with_permutation_maps():
    assert parallel(
        "%a: memref<8x8xf32>",
        "%v = vector.transfer_read %a[%i, %c0], %z {in_bounds = [true]} : memref<8x8xf32>, vector<8xf32>\n"
        " vector.transfer_write %v, %a[%i, %c0] {in_bounds = [true]} : vector<8xf32>, memref<8x8xf32>",
        "%v = vector.transfer_read %a[%i, %c0], %z {in_bounds = [true], permutation_map = "
        "affine_map<(d0, d1) -> (d1)>} : memref<8x8xf32>, vector<8xf32>\n"
        " vector.transfer_write %v, %a[%i, %c0] {in_bounds = [true]} : vector<8xf32>, memref<8x8xf32>",
        "%v = arith.constant dense<0.0> : vector<8xf32>\n"
        " vector.transfer_write %v, %a[%c0, %i] {in_bounds = [true], permutation_map = "
        "affine_map<(d0, d1) -> (d0)>} : vector<8xf32>, memref<8x8xf32>",
        "%v = arith.constant dense<0.0> : vector<2x8xf32>\n"
        " vector.transfer_write %v, %a[%i, %c0] {in_bounds = [true, true]} : vector<2x8xf32>, memref<8x8xf32>",
    ) == [True, True, False, False]


def test_unknown_ops_casts_and_private_buffers():
    assert parallel(
        "%a: memref<64xf32>",
        "%c = memref.cast %a : memref<64xf32> to memref<?xf32>\n memref.store %z, %c[%i] : memref<?xf32>",
        "%c = memref.cast %a : memref<64xf32> to memref<?xf32>\n %v = memref.load %c[%i] : memref<?xf32>\n"
        " memref.store %v, %a[%i] : memref<64xf32>",                          # a cast of a written buffer
        "%t = memref.alloc() : memref<4xf32>\n memref.store %z, %t[%c0] : memref<4xf32>\n"
        " memref.dealloc %t : memref<4xf32>",                                   # private to the iteration
        "%t = memref.alloca() : memref<4xf32>\n memref.store %z, %t[%c0] : memref<4xf32>",
        "%v = memref.load %a[%c0] : memref<64xf32>",                            # reads only
        "memref.dealloc %a : memref<64xf32>",                                   # frees the buffer each time
        "%d = memref.dim %a, %c0 : memref<64xf32>",                             # an op the analysis does not know
    ) == [False, False, True, True, True, False, False]


def test_buffers_defined_before_the_loop():
    with mlc_context():
        m = ir.Module.parse(f"""
          memref.global "private" @g : memref<8xf32> = dense<0.0>
          func.func private @use(memref<64xf32>)
          func.func @f(%n: index) {{{_HEAD}
            %t = memref.alloc() : memref<8xf32>
            %g = memref.get_global @g : memref<8xf32>
            scf.for %i = %c0 to %c8 step %c1 {{ memref.store %z, %t[%i] : memref<8xf32> }}
            scf.for %i = %c0 to %c8 step %c1 {{ memref.store %z, %t[%c0] : memref<8xf32> }}
            scf.for %i = %c0 to %c8 step %c1 {{ %v = memref.load %g[%i] : memref<8xf32> }}
            scf.for %i = %c0 to %c8 step %c1 {{ memref.store %z, %g[%i] : memref<8xf32> }}
            scf.for %i = %c0 to %c8 step %n {{ memref.store %z, %t[%i] : memref<8xf32> }}
            scf.for %i = %c0 to %c8 step %c1 {{
              scf.for %j = %c0 to %c8 step %c1 {{ memref.store %z, %t[%j] : memref<8xf32> }}
            }}
            scf.for %i = %c0 to %c8 step %c1 {{
              scf.for %j = %c0 to %c2 step %c1 {{
                %k = arith.muli %i, %c2 : index
                %l = arith.addi %k, %j : index
                memref.store %z, %t[%l] : memref<8xf32>
              }}
            }}
            return
          }}""")
        func = next(o.operation for o in m.body.operations
                    if o.operation.name == "func.func" and "sym_visibility" not in o.operation.attributes)
        assert [ld.is_parallel(lp) for lp in _top_loops(func)] == [True, False, True, False, False, False, False]


def test_values_of_block_arguments_and_loop_carried():
    with mlc_context():
        m = ir.Module.parse(f"""
          func.func @f(%a: memref<64xf32>) {{{_HEAD}
            scf.for %i = %c0 to %c8 step %c1 {{
              scf.for %j = %c0 to %c4 step %c1 {{
                memref.store %z, %a[%j] : memref<64xf32>
              }}
            }}
            scf.for %i = %c0 to %c8 step %c1 {{
              %r = scf.for %j = %c0 to %c4 step %c1 iter_args(%acc = %a) -> (memref<64xf32>) {{
                scf.yield %acc : memref<64xf32>
              }}
              memref.store %z, %r[%i] : memref<64xf32>
            }}
            return
          }}""")
        loops = _top_loops(_func(m))
        assert [ld.is_parallel(lp) for lp in loops] == [False, False]


# -- helpers ------------------------------------------------------------------------------

_HELPERS = f"""
  func.func @f(%a: memref<4x8xf32>, %b: memref<8x?xf32>, %n: index) {{{_HEAD}
    scf.for %i = %c0 to %c8 step %c1 {{
      %j = arith.addi %i, %c1 : index
      %k = arith.muli %c2, %c4 : index
      scf.for %l = %c0 to %j step %c1 {{
        %v = memref.load %a[%c0, %l] : memref<4x8xf32>
      }}
      scf.for %l = %c0 to %n step %c1 {{
        %w = arith.addi %l, %i : index
      }}
    }}
    scf.for %i = %c0 to %c8 step %c1 {{
      scf.for %l = %c0 to %n step %c2 {{ }}
      linalg.fill ins(%z : f32) outs(%a : memref<4x8xf32>)
      linalg.copy ins(%a : memref<4x8xf32>) outs(%a : memref<4x8xf32>)
    }}
    return
  }}"""


def test_depends_follows_values_to_the_induction_variable():
    with mlc_context():
        m = ir.Module.parse(_HELPERS)
        outer = _top_loops(_func(m))[0]
        iv = ld.induction_var(outer)
        ops = list(outer.regions[0].blocks[0].operations)
        j, k = ops[0].results[0], ops[1].results[0]
        inner = ops[3].operation
        w = inner.regions[0].blocks[0].operations[0].results[0]
        assert ld.depends(j, iv, outer) and not ld.depends(k, iv, outer)
        assert ld.depends(iv, iv, outer) and ld.depends(w, iv, outer)
        assert not ld.depends(ld.induction_var(inner), iv, outer)
        c8 = outer.operands[1]
        assert not ld.depends(c8, iv, outer)  # defined outside the loop
        # a value that reaches the iv twice is followed once
        seen: set = set()
        assert ld.depends(j, iv, outer, seen) and len(seen) == 1
        assert not ld.depends(j, iv, outer, seen)  # (already visited)


@pytest.mark.parametrize("step", ["0", "-1"])
def test_no_trip_count_without_a_positive_step(step):
    with mlc_context():
        m = ir.Module.parse(f"""
          func.func @f() {{
            %c0 = arith.constant 0 : index
            %c8 = arith.constant 8 : index
            %s = arith.constant {step} : index
            scf.for %i = %c0 to %c8 step %s {{ }}
            return
          }}""")
        (loop,) = _top_loops(_func(m))
        assert ld.trip_count(loop) is None


def test_trip_counts_constants_and_bounds():
    with mlc_context():
        m = ir.Module.parse(_HELPERS)
        first, second = _top_loops(_func(m))
        assert ld.trip_count(first) == 8
        body = list(first.regions[0].blocks[0].operations)
        assert ld.trip_count(body[2].operation) is None  # bound from the outer iv
        assert ld.const(first.operands[0]) == 0 and ld.const(first.operands[2]) == 1
        assert ld.const(5) == 5 and ld.const(body[0].results[0]) is None
        assert ld.const(ld.induction_var(first)) is None
        z = _func(m).regions[0].blocks[0].operations[5].results[0]  # %z: a float constant
        assert ld.const(z) is None
        assert not ld.inner_bounds_invariant(first)  # inner bound %j computed inside
        assert ld.inner_bounds_invariant(second)


def test_nesting_and_linalg_operands():
    with mlc_context():
        m = ir.Module.parse(_HELPERS)
        func = _func(m)
        first, second = _top_loops(func)
        body = list(second.regions[0].blocks[0].operations)
        fill, copy = body[1].operation, body[2].operation
        assert ld.inside(fill, second) and ld.inside(second, second) and not ld.inside(fill, first)
        assert ld.inside(body[1], second)  # an OpView
        views = [o for o in func.regions[0].blocks[0].operations if o.operation.name == "scf.for"]
        assert ld.inside(fill, views[1]) and not ld.inside(fill, views[0])  # OpView ancestors
        assert ld.inside_value(fill.operands[0], second) is False  # %z from outside
        assert ld.inside_value(ld.induction_var(second), second)
        assert not ld.inside_value(func.regions[0].blocks[0].arguments[0], second)
        assert ld.inside_value(body[0].operation.regions[0].blocks[0].arguments[0], second)
        assert not ld.inside_value(second.results[0], second) if second.results else True
        assert ld.enclosing(fill, "func.func") == func
        assert ld.enclosing(fill, "scf.for") == second
        with pytest.raises(LoweringError, match="outside any scf.parallel"):
            ld.enclosing(fill, "scf.parallel")
        assert len(ld.linalg_ins(fill)) == 1 and ld.linalg_outs(fill)[0] == func.regions[0].blocks[0].arguments[0]
        assert ld.linalg_ins(copy)[0] == func.regions[0].blocks[0].arguments[0] and len(ld.linalg_outs(copy)) == 1
        assert [o.name for o in ld.walk(second)] == [  # post-order, the loop itself last
            "scf.yield", "scf.for", "linalg.yield", "linalg.fill", "linalg.yield", "linalg.copy", "scf.yield",
            "scf.for"]
        a, b = (v.type for v in list(func.regions[0].blocks[0].arguments)[:2])
        assert ld.is_static_memref(a) and not ld.is_static_memref(b)
        assert not ld.is_static_memref(ir.IndexType.get())
        assert ld.numel(a) == 32 and ld.dtype_name(a) == "f32"
        assert ld.op_key(fill) == ld.op_key(body[1]) != ld.op_key(copy)
