# RUN: %PYTHON %s | filecheck %s
"""Course ch.6.3.1 local blocking: blockIdx.y/x and threadIdx.y/x loops merged into one
2-D launch, the 8x8 accumulator private to each thread (registers, no local memory)."""

import mlc_mlir as mlc

from _cuda_util import matmul_blocking  # tests/python/, on PYTHONPATH (lit.cfg.py)

rt = mlc.build(matmul_blocking(256, local=8, block=8, tile_k=4).mod, target="cuda -arch=sm_90")

print("// mapped")
print(rt.get_source("gpu"))
# CHECK-LABEL: // mapped
# CHECK-NOT: scf.forall
# CHECK: gpu.launch blocks({{.+}}) in (%{{[a-z0-9_]+}} = %c4{{[_0-9]*}}, %{{[a-z0-9_]+}} = %c4{{[_0-9]*}}, %{{[a-z0-9_]+}} = %c1{{[_0-9]*}})
# CHECK-SAME: threads({{.+}}) in (%{{[a-z0-9_]+}} = %c8{{[_0-9]*}}, %{{[a-z0-9_]+}} = %c8{{[_0-9]*}}, %{{[a-z0-9_]+}} = %c1{{[_0-9]*}})
# CHECK: gpu.block_id x
# CHECK: gpu.block_id y
# CHECK: gpu.thread_id x
# CHECK: gpu.thread_id y
# CHECK: %[[ACC:.+]] = memref.alloca() : memref<8x8xf32>
# CHECK: linalg.fill {mlc.block_init = "C"} {{.*}} outs(%[[ACC]] : memref<8x8xf32>)
# CHECK: scf.for
# CHECK-COUNT-4: linalg.generic {{.*}} outs(%[[ACC]] : memref<8x8xf32>) attrs = {mlc.block = "C"}
# CHECK: linalg.copy {mlc.block = "C_local", mlc.scope = "local"} ins(%[[ACC]] : memref<8x8xf32>)
# CHECK: gpu.terminator

print("// ptx")
print(rt.get_source("ptx"))
# CHECK-LABEL: // ptx
# CHECK: .target sm_90
# CHECK: .visible .entry main_kernel(
# CHECK: .maxntid 8, 8, 1
# CHECK-DAG: %ctaid.x
# CHECK-DAG: %ctaid.y
# CHECK-DAG: %tid.x
# CHECK-DAG: %tid.y
# CHECK-NOT: .local
# CHECK: ld.global.b32
# CHECK: st.global.b32
