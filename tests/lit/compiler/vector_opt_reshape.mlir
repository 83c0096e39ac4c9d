// RUN: mlc-opt %s --mlc-vector-opt | filecheck %s

// Views of whole buffers before the vector-opt stage (MLIR 22's fold_memref_alias_ops
// never returns on a row transfer through an expand_shape whose group it runs along).
// A convolution's (F, pixels) result read in NCHW through memref.expand_shape by row
// transfers: the view is gone, the rows read from the source at linearized indices
// (row = c * 56 + h), so the buffer keeps no view (accumulators in it stay hoistable).
// CHECK-LABEL: func.func @nchw_rows
// CHECK-NOT: memref.expand_shape
// CHECK-NOT: memref.reinterpret_cast
// CHECK: scf.for %[[C:.+]] = %{{.+}} to %{{.+}} step
// CHECK: scf.for %[[H:.+]] = %{{.+}} to %{{.+}} step
// CHECK: vector.load %{{.+}}[%{{.+}}, %{{.+}}] : memref<64x3136xf32>, vector<56xf32>
// CHECK: vector.store %{{.+}}, %{{.+}} : memref<1x64x56x56xf32>, vector<56xf32>
func.func @nchw_rows(%y: memref<64x3136xf32>, %out: memref<1x64x56x56xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c56 = arith.constant 56 : index
  %c64 = arith.constant 64 : index
  %pad = ub.poison : f32
  %view = memref.expand_shape %y [[0, 1], [2, 3]] output_shape [1, 64, 56, 56] : memref<64x3136xf32> into memref<1x64x56x56xf32>
  scf.for %c = %c0 to %c64 step %c1 {
    scf.for %h = %c0 to %c56 step %c1 {
      %row = vector.transfer_read %view[%c0, %c, %h, %c0], %pad {in_bounds = [true, true, true, true]} : memref<1x64x56x56xf32>, vector<1x1x1x56xf32>
      vector.transfer_write %row, %out[%c0, %c, %h, %c0] {in_bounds = [true, true, true, true]} : vector<1x1x1x56xf32>, memref<1x64x56x56xf32>
    }
  }
  return
}

// Rows written through the view (the result of a kernel computed in NCHW into a (F, pixels)
// buffer) are moved to the source as well.
// CHECK-LABEL: func.func @nchw_row_writes
// CHECK-NOT: memref.expand_shape
// CHECK-NOT: memref.reinterpret_cast
// CHECK: vector.store %{{.+}}, %{{.+}}[%{{.+}}, %{{.+}}] : memref<64x3136xf32>, vector<56xf32>
func.func @nchw_row_writes(%x: memref<1x64x56x56xf32>, %y: memref<64x3136xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c56 = arith.constant 56 : index
  %c64 = arith.constant 64 : index
  %pad = ub.poison : f32
  %view = memref.expand_shape %y [[0, 1], [2, 3]] output_shape [1, 64, 56, 56] : memref<64x3136xf32> into memref<1x64x56x56xf32>
  scf.for %c = %c0 to %c64 step %c1 {
    scf.for %h = %c0 to %c56 step %c1 {
      %row = vector.transfer_read %x[%c0, %c, %h, %c0], %pad {in_bounds = [true, true, true, true]} : memref<1x64x56x56xf32>, vector<1x1x1x56xf32>
      vector.transfer_write %row, %view[%c0, %c, %h, %c0] {in_bounds = [true, true, true, true]} : vector<1x1x1x56xf32>, memref<1x64x56x56xf32>
    }
  }
  return
}

// A view read otherwise (a column: no row of the source) becomes a reinterpret_cast.
// CHECK-LABEL: func.func @column
// CHECK-NOT: memref.collapse_shape
// CHECK: memref.reinterpret_cast %{{.+}} to offset: [0], sizes: [64, 576], strides: [576, 1]
func.func @column(%w: memref<64x64x3x3xf32>, %out: memref<8x1xf32>) {
  %c0 = arith.constant 0 : index
  %pad = ub.poison : f32
  %view = memref.collapse_shape %w [[0], [1, 2, 3]] : memref<64x64x3x3xf32> into memref<64x576xf32>
  %col = vector.transfer_read %view[%c0, %c0], %pad {in_bounds = [true, true]} : memref<64x576xf32>, vector<8x1xf32>
  vector.transfer_write %col, %out[%c0, %c0] {in_bounds = [true, true]} : vector<8x1xf32>, memref<8x1xf32>
  return
}

// A column read through an expand_shape along the last dim of its group (a convolution's
// NCHW output transposed from a (pixels, channels) gemm viewed (OH, OW, C): 14 pixels of one
// channel) moves to the source too: one step of ow is one row of the source, so the vector
// runs along the source's rows (no view left on the gemm's buffer).
// CHECK-LABEL: func.func @transposed_columns
// CHECK-NOT: memref.expand_shape
// CHECK-NOT: memref.reinterpret_cast
// CHECK: scf.for %[[F:.+]] = %{{.+}} to %{{.+}} step
// CHECK: vector.load %{{.+}}[%{{.+}}, %[[F]]] : memref<196x256xf32>, vector<1xf32>
func.func @transposed_columns(%y: memref<196x256xf32>, %out: memref<1x256x14x14xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c14 = arith.constant 14 : index
  %c256 = arith.constant 256 : index
  %pad = ub.poison : f32
  %view = memref.expand_shape %y [[0, 1], [2]] output_shape [14, 14, 256] : memref<196x256xf32> into memref<14x14x256xf32>
  scf.for %f = %c0 to %c256 step %c1 {
    scf.for %h = %c0 to %c14 step %c1 {
      %col = vector.transfer_read %view[%h, %c0, %f], %pad {in_bounds = [true, true, true]} : memref<14x14x256xf32>, vector<1x14x1xf32>
      %row = vector.shape_cast %col : vector<1x14x1xf32> to vector<1x1x1x14xf32>
      vector.transfer_write %row, %out[%c0, %f, %h, %c0] {in_bounds = [true, true, true, true]} : vector<1x1x1x14xf32>, memref<1x256x14x14xf32>
    }
  }
  return
}

// A column along a dim that is not the last of its group (one step of oh is 14 rows of the
// source) stays a view, as a reinterpret_cast.
// CHECK-LABEL: func.func @strided_columns
// CHECK: memref.reinterpret_cast %{{.+}} to offset: [0], sizes: [14, 14, 256], strides: [3584, 256, 1]
func.func @strided_columns(%y: memref<196x256xf32>, %out: memref<14x1x1xf32>) {
  %c0 = arith.constant 0 : index
  %pad = ub.poison : f32
  %view = memref.expand_shape %y [[0, 1], [2]] output_shape [14, 14, 256] : memref<196x256xf32> into memref<14x14x256xf32>
  %col = vector.transfer_read %view[%c0, %c0, %c0], %pad {in_bounds = [true, true, true]} : memref<14x14x256xf32>, vector<14x1x1xf32>
  vector.transfer_write %col, %out[%c0, %c0, %c0] {in_bounds = [true, true, true]} : vector<14x1x1xf32>, memref<14x1x1xf32>
  return
}

// A row of a strided slice read through a view (a convolution's epilogue computed per
// image reads one row of the image's (F, pixels) result: expand_shape of a subview): the
// rows move to the slice at linearized indices too, whatever its strides (and the slice
// then folds into the loads).
// CHECK-LABEL: func.func @strided_slice_rows
// CHECK-NOT: memref.expand_shape
// CHECK: vector.load %{{.+}}[%{{.+}}, %{{.+}}, %{{.+}}] : memref<1x64x3136xf32>, vector<56xf32>
func.func @strided_slice_rows(%y: memref<1x64x3136xf32>, %out: memref<1x64x56x56xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c56 = arith.constant 56 : index
  %c64 = arith.constant 64 : index
  %pad = ub.poison : f32
  scf.for %c = %c0 to %c64 step %c1 {
    scf.for %h = %c0 to %c56 step %c1 {
      %off = arith.muli %h, %c56 : index
      %s = memref.subview %y[0, %c, %off] [1, 1, 56] [1, 1, 1] : memref<1x64x3136xf32> to memref<1x1x56xf32, strided<[200704, 3136, 1], offset: ?>>
      %v = memref.expand_shape %s [[0], [1], [2, 3]] output_shape [1, 1, 1, 56] : memref<1x1x56xf32, strided<[200704, 3136, 1], offset: ?>> into memref<1x1x1x56xf32, strided<[200704, 3136, 56, 1], offset: ?>>
      %row = vector.transfer_read %v[%c0, %c0, %c0, %c0], %pad {in_bounds = [true, true, true, true]} : memref<1x1x1x56xf32, strided<[200704, 3136, 56, 1], offset: ?>>, vector<1x1x1x56xf32>
      vector.transfer_write %row, %out[%c0, %c, %h, %c0] {in_bounds = [true, true, true, true]} : vector<1x1x1x56xf32>, memref<1x64x56x56xf32>
    }
  }
  return
}

// A view of a view: a convolution's result in bands, (F, bands, rows * OW) = (64, 14, 224),
// expanded to (1, 64, 14, 4, 56) and collapsed to NCHW (1, 64, 56, 56), read by rows. The
// collapse's rows move to the expand at delinearized indices (h / 4, h % 4), then the
// expand's to the buffer at linearized ones: no view of the buffer is left (the banded
// gemm's accumulators in it were stored at every k step: 2.6 -> 1.9 ms at batch 1).
// CHECK-LABEL: func.func @banded_rows
// CHECK-NOT: memref.expand_shape
// CHECK-NOT: memref.collapse_shape
// CHECK-NOT: memref.reinterpret_cast
// CHECK-DAG: %[[R:.+]] = arith.remui %[[H:.+]], %[[C4:.+]] : index
// CHECK-DAG: %[[B:.+]] = arith.divui %[[H]], %[[C4]] : index
// CHECK: %[[P:.+]] = arith.muli %[[R]], %{{.+}} : index
// CHECK: vector.load %{{.+}}[%{{.+}}, %[[B]], %[[P]]] : memref<64x14x224xf32>, vector<56xf32>
func.func @banded_rows(%y: memref<64x14x224xf32>, %out: memref<1x64x56x56xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c56 = arith.constant 56 : index
  %c64 = arith.constant 64 : index
  %pad = ub.poison : f32
  %split = memref.expand_shape %y [[0, 1], [2], [3, 4]] output_shape [1, 64, 14, 4, 56] : memref<64x14x224xf32> into memref<1x64x14x4x56xf32>
  %view = memref.collapse_shape %split [[0], [1], [2, 3], [4]] : memref<1x64x14x4x56xf32> into memref<1x64x56x56xf32>
  scf.for %c = %c0 to %c64 step %c1 {
    scf.for %h = %c0 to %c56 step %c1 {
      %row = vector.transfer_read %view[%c0, %c, %h, %c0], %pad {in_bounds = [true, true, true, true]} : memref<1x64x56x56xf32>, vector<1x1x1x56xf32>
      vector.transfer_write %row, %out[%c0, %c, %h, %c0] {in_bounds = [true, true, true, true]} : vector<1x1x1x56xf32>, memref<1x64x56x56xf32>
    }
  }
  return
}
