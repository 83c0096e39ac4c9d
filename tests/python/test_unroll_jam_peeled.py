"""The unroll-jam build stage on the default rules' mm_relu 128: the peeled 2-row remainder
(128 = 21 x 6 + 2) is latency-bound with 4 accumulators; the stage jams its column loop by
3 (12 accumulators). Regression: loops were keyed by ``hash(op)``, equal for the two copies
``transform.loop.peel`` makes, so the remainder's reduction was merged into the main one's
and never jammed."""

import numpy as np

import mlc_mlir as mlc
from mlc_mlir.schedule.rules import apply_rules
from mlc_mlir.testing import check_mm_relu, filecheck
from mlc_mlir.testing.programs import mm_relu

from test_schedule_perf_shape import ir_after_stage


def test_peeled_remainder_is_jammed(capsys):
    sch = mlc.Schedule(mm_relu())
    apply_rules(sch, "llvm -mcpu=haswell -num-cores=1")
    ir_text, _ = ir_after_stage(sch.mod, "unroll-jam", capsys)
    filecheck(ir_text, """
        CHECK: scf.for %{{.+}} = %c0 to %c126 step %c6
        CHECK: scf.for %{{.+}} = %c0 to %c96 step %c48
        CHECK: scf.for %{{.+}} = %c96 to %c128 step %c16
    """)
    check_mm_relu(sch)


def test_op_key_is_unique_per_operation():
    from mlir import ir

    from mlc_mlir.compiler.loop_deps import op_key
    from mlc_mlir.context import mlc_context

    with mlc_context():
        m = ir.Module.parse("""
          func.func @f(%n: index) {
            %c0 = arith.constant 0 : index
            %c1 = arith.constant 1 : index
            scf.for %i = %c0 to %n step %c1 { }
            scf.for %j = %c0 to %n step %c1 { }
            return
          }""")
        loops = [op for op in m.body.operations[0].regions[0].blocks[0].operations if op.name == "scf.for"]
        clone = loops[0].operation.clone()
        try:
            keys = {op_key(loops[0]), op_key(loops[1]), op_key(clone)}
            same = op_key(loops[0]) == op_key(loops[0].operation)
        finally:
            clone.erase()  # (before the module goes: a clone left holding uses of %c0 aborts)
        assert len(keys) == 3 and same


def test_is_parallel_reads_globals_refuses_writing_them():
    """Inlined into the graph's function a kernel reads its weights from memref.get_global:
    the loop over columns stays provably parallel (before, a global made every loop
    'not parallel', so the model compiled the kernel without the jam the tuner measured)."""
    from mlir import ir

    from mlc_mlir.compiler.loop_deps import is_parallel
    from mlc_mlir.context import mlc_context

    text = """
      memref.global "private" constant @w : memref<4x8xf32> = dense<1.0>
      memref.global "private" @g : memref<8xf32> = dense<0.0>
      func.func @f(%y: memref<8xf32>) {
        %c0 = arith.constant 0 : index
        %c1 = arith.constant 1 : index
        %c8 = arith.constant 8 : index
        %w = memref.get_global @w : memref<4x8xf32>
        %g = memref.get_global @g : memref<8xf32>
        scf.for %j = %c0 to %c8 step %c1 {
          %v = memref.load %w[%c0, %j] : memref<4x8xf32>
          memref.store %v, %y[%j] : memref<8xf32>
        }
        scf.for %j = %c0 to %c8 step %c1 {
          %v = memref.load %w[%c1, %j] : memref<4x8xf32>
          memref.store %v, %g[%j] : memref<8xf32>
        }
        return
      }"""
    with mlc_context():
        m = ir.Module.parse(text)
        func = [op for op in m.body.operations if op.operation.name == "func.func"][0]
        loops = [op.operation for op in func.regions[0].blocks[0].operations if op.operation.name == "scf.for"]
        assert [is_parallel(lp) for lp in loops] == [True, False]
