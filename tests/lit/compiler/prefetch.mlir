// RUN: mlc-opt %s --mlc-vector-opt | filecheck %s

// The build's vector-opt stage prefetches rows that a reduction loop steps through a page or
// more apart (compiler/prefetch.py): the 1x1 convolution's tile below reads one vector of
// every row of %x (3136 floats apart) per column tile; each row is prefetched two column tiles
// ahead, clamped to its last element. Rows 256 floats apart (%y) are left to the hardware.
// CHECK-LABEL: func.func @rows_of_a_large_image
// CHECK: scf.for %[[J:.+]] = %{{.+}} to %{{.+}} step %c16
// CHECK: scf.for %[[K:.+]] = %{{.+}} to %{{.+}} step %c1
// CHECK:   %[[A:.+]] = arith.addi %[[J]], %c32 : index
// CHECK:   %[[M:.+]] = arith.minsi %[[A]], %c3135 : index
// CHECK:   memref.prefetch %{{.+}}[%[[K]], %[[M]]], read, locality<3>, data : memref<96x3136xf32>
// CHECK:   vector.load %{{.+}}[%[[K]], %[[J]]] : memref<96x3136xf32>, vector<16xf32>
func.func @rows_of_a_large_image(%x: memref<96x3136xf32>, %w: memref<24x96xf32>, %out: memref<24x3136xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %c96 = arith.constant 96 : index
  %c3136 = arith.constant 3136 : index
  %zero = arith.constant dense<0.0> : vector<16xf32>
  scf.for %j = %c0 to %c3136 step %c16 {
    %acc = scf.for %k = %c0 to %c96 step %c1 iter_args(%a = %zero) -> (vector<16xf32>) {
      %b = vector.load %x[%k, %j] : memref<96x3136xf32>, vector<16xf32>
      %s = memref.load %w[%c0, %k] : memref<24x96xf32>
      %v = vector.broadcast %s : f32 to vector<16xf32>
      %r = vector.fma %v, %b, %a : vector<16xf32>
      scf.yield %r : vector<16xf32>
    }
    vector.store %acc, %out[%c0, %j] : memref<24x3136xf32>, vector<16xf32>
  }
  return
}

// CHECK-LABEL: func.func @rows_of_a_small_image
// CHECK-NOT: memref.prefetch
func.func @rows_of_a_small_image(%y: memref<96x256xf32>, %w: memref<24x96xf32>, %out: memref<24x256xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %c96 = arith.constant 96 : index
  %c256 = arith.constant 256 : index
  %zero = arith.constant dense<0.0> : vector<16xf32>
  scf.for %j = %c0 to %c256 step %c16 {
    %acc = scf.for %k = %c0 to %c96 step %c1 iter_args(%a = %zero) -> (vector<16xf32>) {
      %b = vector.load %y[%k, %j] : memref<96x256xf32>, vector<16xf32>
      %s = memref.load %w[%c0, %k] : memref<24x96xf32>
      %v = vector.broadcast %s : f32 to vector<16xf32>
      %r = vector.fma %v, %b, %a : vector<16xf32>
      scf.yield %r : vector<16xf32>
    }
    vector.store %acc, %out[%c0, %j] : memref<24x256xf32>, vector<16xf32>
  }
  return
}
