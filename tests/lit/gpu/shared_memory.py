# RUN: %PYTHON %s | filecheck %s
"""Course ch.6.3 blocking with shared memory (256, 8x8 threads, 8x8 per thread, k by 8):
the block's tiles of A and B in workgroup memory, fetched by all 64 threads with 4-wide
accesses between barriers; each thread reads its 8-row (8-column) part of the tile."""

import mlc_mlir as mlc

from _benchmarks import load_benchmark  # tests/python/, on PYTHONPATH (lit.cfg.py)

cuda_schedules = load_benchmark("cuda_schedules")

rt = mlc.build(cuda_schedules.matmul_shared(256).mod, target="cuda -arch=sm_90")

print("// mapped")
print(rt.get_source("gpu"))
# CHECK-LABEL: // mapped
# CHECK-DAG: memref.global "private" @[[SA:__mlc_shared_[0-9]]] : memref<64x8xf32, #gpu.address_space<workgroup>> = uninitialized {alignment = 16 : i64}
# CHECK-DAG: memref.global "private" @[[SB:__mlc_shared_[0-9]]] : memref<8x64xf32, #gpu.address_space<workgroup>> = uninitialized {alignment = 16 : i64}
# CHECK: gpu.launch blocks
# CHECK: %[[ACC:.+]] = memref.alloca() : memref<8x8xf32>
# CHECK: scf.for
# CHECK: %[[A:.+]] = memref.get_global @[[SA]]
# CHECK: gpu.barrier
# CHECK: scf.for
# CHECK: vector.load %arg0
# CHECK: vector.store {{.+}}, %[[A]]
# CHECK: gpu.barrier
# CHECK: memref.subview %[[A]]{{.+}} [8, 8] [1, 1] : memref<64x8xf32, #gpu.address_space<workgroup>> to memref<8x8xf32, strided<[8, 1], offset: ?>, #gpu.address_space<workgroup>>
# CHECK: %[[B:.+]] = memref.get_global @[[SB]]
# CHECK: gpu.barrier
# CHECK: vector.store {{.+}}, %[[B]]
# CHECK: gpu.barrier
# CHECK: linalg.generic {{.+}} outs(%[[ACC]] : memref<8x8xf32>) attrs = {mlc.block = "C"}
# CHECK: linalg.copy {mlc.block = "C_local", mlc.scope = "local"} ins(%[[ACC]] : memref<8x8xf32>)

print("// ptx")
print(rt.get_source("ptx"))
# CHECK-LABEL: // ptx
# CHECK: .visible .entry main_kernel(
# CHECK: .maxntid 8, 8, 1
# CHECK: .shared .align 16 .b8 __mlc_shared_{{[0-9]}}[2048];
# CHECK: .shared .align 16 .b8 __mlc_shared_{{[0-9]}}[2048];
# CHECK-NOT: .local
# CHECK: bar.sync 0;
# CHECK: st.shared.v4.b32
# CHECK: bar.sync 0;
# CHECK: ld.shared
# CHECK: fma.rn.f32
