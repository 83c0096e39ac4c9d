// RUN: mlc-opt %s --mlc-memory-plan | filecheck %s

// A lowered graph function after deallocation: every intermediate freed at the end.
// The three tensors (4 KiB each) share one 8 KiB arena: %a is last read by @k2, so %c
// (allocated after that call) takes %a's bytes at offset 0; %b, read by @k3 which writes
// %c, lives with both and sits at 4096. The arena is freed right after the last reader of
// its last tensor; the output %out is not planned.
// CHECK-LABEL: func.func @main
// CHECK: %[[T0:.+]] = memref.alloc() {alignment = 64 : i64} : memref<8192xi8>
// CHECK: %[[O0:.+]] = arith.constant 0 : index
// CHECK: %[[A:.+]] = memref.view %[[T0]][%[[O0]]][] : memref<8192xi8> to memref<32x32xf32>
// CHECK: call @k1(%arg0, %[[A]])
// CHECK: %[[O1:.+]] = arith.constant 4096 : index
// CHECK: %[[B:.+]] = memref.view %[[T0]][%[[O1]]][] : memref<8192xi8> to memref<32x32xf32>
// CHECK: call @k2(%[[A]], %[[B]])
// CHECK: %[[O2:.+]] = arith.constant 0 : index
// CHECK: %[[C:.+]] = memref.view %[[T0]][%[[O2]]][] : memref<8192xi8> to memref<16x64xf32>
// CHECK: call @k3(%[[B]], %[[C]])
// CHECK-NEXT: call @k4(%[[C]], %arg1)
// CHECK-NEXT: memref.dealloc %[[T0]]
// CHECK-NOT: memref.dealloc
// CHECK: return
func.func private @k1(%x: memref<32x32xf32>, %y: memref<32x32xf32>) attributes {mlc.prim_func}
func.func private @k2(%x: memref<32x32xf32>, %y: memref<32x32xf32>) attributes {mlc.prim_func}
func.func private @k3(%x: memref<32x32xf32>, %y: memref<16x64xf32>) attributes {mlc.prim_func}
func.func private @k4(%x: memref<16x64xf32>, %y: memref<16x64xf32>) attributes {mlc.prim_func}
func.func @main(%arg0: memref<32x32xf32>, %arg1: memref<16x64xf32>) attributes {mlc.lowered_graph} {
  %a = memref.alloc() {alignment = 64 : i64} : memref<32x32xf32>
  call @k1(%arg0, %a) : (memref<32x32xf32>, memref<32x32xf32>) -> ()
  %b = memref.alloc() {alignment = 64 : i64} : memref<32x32xf32>
  call @k2(%a, %b) : (memref<32x32xf32>, memref<32x32xf32>) -> ()
  %c = memref.alloc() {alignment = 64 : i64} : memref<16x64xf32>
  call @k3(%b, %c) : (memref<32x32xf32>, memref<16x64xf32>) -> ()
  call @k4(%c, %arg1) : (memref<16x64xf32>, memref<16x64xf32>) -> ()
  memref.dealloc %a : memref<32x32xf32>
  memref.dealloc %b : memref<32x32xf32>
  memref.dealloc %c : memref<16x64xf32>
  return
}

// A tensor of dynamic size keeps its own allocation, freed after its last reader.
// CHECK-LABEL: func.func @dynamic
// CHECK: %[[A:.+]] = memref.alloc(%{{.+}}) : memref<?x8xf32>
// CHECK-NOT: memref.view
// CHECK: call @kd(%arg0, %[[A]])
// CHECK-NEXT: call @kd(%[[A]], %arg1)
// CHECK-NEXT: memref.dealloc %[[A]]
// CHECK-NEXT: call @kd(%arg0, %arg1)
// CHECK-NEXT: return
func.func private @kd(%x: memref<?x8xf32>, %y: memref<?x8xf32>) attributes {mlc.prim_func}
func.func @dynamic(%arg0: memref<?x8xf32>, %arg1: memref<?x8xf32>) attributes {mlc.lowered_graph} {
  %c0 = arith.constant 0 : index
  %n = memref.dim %arg0, %c0 : memref<?x8xf32>
  %a = memref.alloc(%n) : memref<?x8xf32>
  call @kd(%arg0, %a) : (memref<?x8xf32>, memref<?x8xf32>) -> ()
  call @kd(%a, %arg1) : (memref<?x8xf32>, memref<?x8xf32>) -> ()
  call @kd(%arg0, %arg1) : (memref<?x8xf32>, memref<?x8xf32>) -> ()
  memref.dealloc %a : memref<?x8xf32>
  return
}
