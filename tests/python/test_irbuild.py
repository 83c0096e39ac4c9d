"""The transform-script helper layer (mlc_mlir/irbuild.py) and the build stages built on it."""

import re
from pathlib import Path

import pytest
from mlir import ir
from mlir.dialects import transform
from mlir.dialects.transform import loop as tloop

from mlc_mlir.compiler.gpu_mapping import Kernel, map_kernels
from mlc_mlir.context import mlc_context
from mlc_mlir.errors import LoweringError
from mlc_mlir.irbuild import ENTRY_POINT, apply_transform, foreach, match, transform_script

LOOP = """
func.func @f(%m: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %x = arith.constant 1.0 : f32
  scf.for %i = %c0 to %c8 step %c1 {
    memref.store %x, %m[%i] : memref<8xf32>
  } {tag}
  return
}
"""


def _unroll_tagged(factor):
    def body(root):
        loops = match(root, ops=["scf.for"], attrs={"tag": ir.UnitAttr.get()})
        foreach(loops, lambda loop: tloop.LoopUnrollOp(loop, factor=factor))
    return transform_script(body)


def test_transform_script_is_one_readonly_named_sequence():
    with mlc_context():
        script = _unroll_tagged(2)
        script.operation.verify()
        text = str(script)
    assert text.startswith("module attributes {transform.with_named_sequence}")
    assert f"transform.named_sequence @{ENTRY_POINT}(%arg0: !transform.any_op {{transform.readonly}})" in text
    assert 'transform.structured.match ops{["scf.for"]} attributes {tag} in %arg0' in text
    assert re.search(r"transform.foreach %0 : !transform.any_op \{\n\s+\^bb0\(%arg1: !transform.any_op\):\n"
                     r"\s+transform.loop.unroll %arg1 \{factor = 2 : i64\}", text)
    assert text.rstrip().endswith("transform.yield \n  }\n}")


def test_apply_transform_rewrites_the_payload_in_place():
    with mlc_context():
        payload = ir.Module.parse(LOOP)
        apply_transform(payload, _unroll_tagged(2), error=LoweringError, message="test")
        text = str(payload)
    assert text.count("memref.store") == 2 and "step %c2" in text


def test_apply_transform_raises_the_callers_error_with_the_diagnostics():
    def unroll_func(root):
        tloop.LoopUnrollOp(match(root, ops=["func.func"]), factor=2)

    with mlc_context():
        payload = ir.Module.parse(LOOP)
        with pytest.raises(LoweringError, match=r"(?s)^stage 'x' failed:\n.*failed to unroll"):
            apply_transform(payload, transform_script(unroll_func), error=LoweringError,
                            message="stage 'x' failed")


def test_apply_transform_needs_the_entry_point():
    with mlc_context():
        script = ir.Module.create()
        script.operation.attributes["transform.with_named_sequence"] = ir.UnitAttr.get()
        with ir.InsertionPoint(script.body):
            seq = transform.NamedSequenceOp("other", [transform.AnyOpType.get()], [])
            with ir.InsertionPoint(seq.body):
                transform.YieldOp([])
        with pytest.raises(LoweringError, match=r"no transform.named_sequence @__transform_main"):
            apply_transform(ir.Module.parse(LOOP), script, error=LoweringError, message="stage 'x' failed")


def test_a_rejected_gpu_mapping_is_a_lowering_error():
    """128 threads in a block of 32: the interpreter refuses; the stage says so (no ValueError)."""
    kernel = """
    func.func @k(%m: memref<128xf32>) {
      %x = arith.constant 1.0 : f32
      scf.forall (%b) in (1) {
        scf.forall (%t) in (128) {
          memref.store %x, %m[%t] : memref<128xf32>
        } {mapping = [#gpu.thread<x>]}
      } {mapping = [#gpu.block<x>]}
      return
    }"""
    with mlc_context():
        payload = ir.Module.parse(kernel)
        root = payload.body.operations[0].regions[0].blocks[0].operations[1].operation
        with pytest.raises(LoweringError, match=r"(?s)^stage 'map-to-gpu' \(transform.gpu mapping\) failed:\n"
                                                r'.*loc\("map-to-gpu"\): the number of required parallel'):
            map_kernels(payload, [Kernel(root, (1, 1, 1), (32, 1, 1))])


def test_compiler_stages_apply_transforms_only_through_the_helper():
    compiler = Path(__file__).resolve().parents[2] / "mlc_mlir" / "compiler"
    callers = [p.name for p in compiler.glob("*.py") if "apply_named_sequence" in p.read_text()]
    assert callers == []
