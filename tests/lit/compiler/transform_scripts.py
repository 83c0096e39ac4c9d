# RUN: %PYTHON %s | filecheck %s
# The transform scripts of the build stages, built with the transform dialect's builders through
# mlc_mlir/irbuild.py: unroll-jam's (compiler/unroll_jam.py, jam_script) and map-to-gpu's
# (compiler/gpu_mapping.py, mapping_script). Twins of the scripts in their docstrings.
from mlc_mlir.compiler.gpu_mapping import Kernel, mapping_script
from mlc_mlir.compiler.unroll_jam import jam_script
from mlc_mlir.context import mlc_context
from mlc_mlir.testing import run


@run
def test_jam_vectorized():
    with mlc_context():
        print(jam_script(2, vectorize=True))
# CHECK-LABEL: TEST: test_jam_vectorized
# CHECK: module attributes {transform.with_named_sequence}
# CHECK: transform.named_sequence @__transform_main(%[[ROOT:.+]]: !transform.any_op {transform.readonly})
# CHECK: %[[LOOPS:.+]] = transform.structured.match ops{["scf.for"]} attributes {mlc.unroll_jam = 2 : i64} in %[[ROOT]]
# CHECK: transform.foreach %[[LOOPS]] : !transform.any_op {
# CHECK-NEXT: ^bb0(%[[LOOP:.+]]: !transform.any_op):
# CHECK-NEXT: transform.loop.unroll_and_jam %[[LOOP]] {factor = 2 : i64}
# CHECK: %[[OPS:.+]] = transform.structured.match interface{LinalgOp} attributes {mlc.unroll_jam_op} in %[[ROOT]]
# CHECK: transform.foreach %[[OPS]]
# CHECK: transform.sequence %{{.+}} : !transform.any_op failures(suppress)
# CHECK: transform.structured.vectorize
# CHECK: transform.apply_patterns to %[[ROOT]] {
# CHECK-NEXT: transform.apply_patterns.vector.reduction_to_contract
# CHECK-NEXT: transform.apply_patterns.vector.transfer_permutation_patterns
# CHECK-NEXT: transform.apply_patterns.canonicalization
# CHECK: transform.apply_cse to %[[ROOT]]
# CHECK: transform.yield


@run
def test_jam_scalar():
    with mlc_context():
        print(jam_script(3, vectorize=False))
# CHECK-LABEL: TEST: test_jam_scalar
# CHECK: attributes {mlc.unroll_jam = 3 : i64}
# CHECK: transform.loop.unroll_and_jam %{{.+}} {factor = 3 : i64}
# CHECK-NOT: transform.structured.vectorize
# CHECK: transform.apply_cse


@run
def test_gpu_mapping():
    with mlc_context():
        print(mapping_script([Kernel(None, (8, 1, 1), (128, 1, 1)), Kernel(None, (4, 4, 1), (16, 8, 2))]))
# CHECK-LABEL: TEST: test_gpu_mapping
# CHECK: %[[F0:.+]] = transform.structured.match ops{["scf.forall"]} attributes {mlc.kernel = 0 : i64} in %[[ROOT:[^ ]+]]
# CHECK: %[[L0:.+]] = transform.gpu.map_forall_to_blocks %[[F0]] generate_gpu_launch
# CHECK: transform.gpu.map_nested_forall_to_threads %[[L0]] block_dims = [128, 1, 1]
# CHECK: %[[F1:.+]] = transform.structured.match ops{["scf.forall"]} attributes {mlc.kernel = 1 : i64} in %[[ROOT]]
# CHECK: %[[L1:.+]] = transform.gpu.map_forall_to_blocks %[[F1]] generate_gpu_launch
# CHECK: transform.gpu.map_nested_forall_to_threads %[[L1]] block_dims = [16, 8, 2]
# CHECK: transform.yield
