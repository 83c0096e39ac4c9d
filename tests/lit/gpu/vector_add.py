# RUN: %PYTHON %s | filecheck %s
"""Course ch.6.1 vector add, split by 128 and bound: gpu.launch, gpu.func, PTX entry."""

import mlc_mlir as mlc

from _cuda_util import vector_add  # tests/python/, on PYTHONPATH (lit.cfg.py)

rt = mlc.build(vector_add(1024, 128).mod, target="cuda -arch=sm_90")

print("// mapped")
print(rt.get_source("gpu"))
# CHECK-LABEL: // mapped
# CHECK: func.func @main(%[[A:[a-z0-9_]+]]: memref<1024xf32> {{.*}}, %[[B:[a-z0-9_]+]]: memref<1024xf32> {{.*}}, %[[C:[a-z0-9_]+]]: memref<1024xf32>
# CHECK-NOT: scf.forall
# CHECK-DAG: %[[C8:.+]] = arith.constant 8 : index
# CHECK-DAG: %[[C128:.+]] = arith.constant 128 : index
# CHECK: gpu.launch blocks({{.+}}) in (%{{.+}} = %[[C8]], {{.+}}) threads({{.+}}) in (%{{.+}} = %[[C128]],
# CHECK: %[[BX:.+]] = gpu.block_id x
# CHECK: %[[TX:.+]] = gpu.thread_id x
# CHECK: linalg.generic {{.*}}mlc.block = "C"
# CHECK: gpu.terminator

print("// outlined")
print(rt.get_source("gpu-outlined"))
# CHECK-LABEL: // outlined
# CHECK: func.func @main(%[[HA:[a-z0-9_]+]]: memref<1024xf32> {{.*}}, %[[HB:[a-z0-9_]+]]: memref<1024xf32> {{.*}}, %[[HC:[a-z0-9_]+]]: memref<1024xf32>
# CHECK-NOT: gpu.alloc
# CHECK-NOT: gpu.memcpy
# CHECK: gpu.launch_func async [%{{.+}}] @main_kernel::@main_kernel blocks in (%{{.+}}, %{{.+}}, %{{.+}}) threads in
# CHECK-SAME: args(%[[HA]] : memref<1024xf32>, %[[HB]] : memref<1024xf32>, %[[HC]] : memref<1024xf32>)
# CHECK: gpu.wait [%{{.+}}]
# CHECK: gpu.module @main_kernel
# CHECK: gpu.func @main_kernel(
# CHECK-SAME: kernel attributes {known_block_size = array<i32: 128, 1, 1>, known_grid_size = array<i32: 8, 1, 1>}
# CHECK: memref.load
# CHECK: arith.addf
# CHECK: memref.store
# CHECK: gpu.return

print("// ptx")
print(rt.get_source("ptx"))
# CHECK-LABEL: // ptx
# CHECK: // gpu.binary @main_kernel
# CHECK: .target sm_90
# CHECK: .visible .entry main_kernel(
# CHECK: .maxntid 128, 1, 1
# CHECK: mov.u32 {{.+}}, %ctaid.x;
# CHECK: mov.u32 {{.+}}, %tid.x;
# CHECK: ld.global.b32
# CHECK: add.f32
# CHECK: st.global.b32
