// RUN: mlc-opt %s --mlc-vector-opt | filecheck %s

// The build's vector-opt stage loads gathers whose lanes read evenly spaced elements as one
// run and a shuffle (compiler/gathers.py). The gather below is how a stride-2 window reads
// its input in place: column 2 * x - 1 of row %i, clamped into [0, 31] (the padding), so
// only the vector at the left border needs the gather; the others read 16 consecutive
// elements and keep every second one. The run starts one element before lane 0's and ends
// at the last lane's: it stays in the buffer at the image's last vector, and its start is
// checked (it is off the buffer's first element). Two vectors a row: nothing to peel.
// CHECK-LABEL: func.func @stride_two_row
// CHECK: %[[START:.+]] = arith.cmpi sge, %[[LANE0:.+]], %c1 : index
// CHECK: scf.if %{{.+}} -> (vector<8xf32>) {
// CHECK:   %[[FROM:.+]] = arith.subi %[[LANE0]], %c1 : index
// CHECK:   %[[ROW:.+]] = vector.load %{{.+}}[%[[FROM]]] : memref<128xf32>, vector<16xf32>
// CHECK:   vector.shuffle %[[ROW]], %[[ROW]] [1, 3, 5, 7, 9, 11, 13, 15] : vector<16xf32>, vector<16xf32>
// CHECK: } else {
// CHECK:   vector.gather
func.func @stride_two_row(%src: memref<4x32xf32>, %dst: memref<4x16xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  %two = arith.constant dense<2> : vector<8xindex>
  %one = arith.constant dense<1> : vector<8xindex>
  %zero = arith.constant dense<0> : vector<8xindex>
  %last = arith.constant dense<31> : vector<8xindex>
  %width = arith.constant dense<32> : vector<8xindex>
  %mask = arith.constant dense<true> : vector<8xi1>
  %pass = arith.constant dense<0.0> : vector<8xf32>
  %step = vector.step : vector<8xindex>
  scf.for %i = %c0 to %c4 step %c1 {
    %row = vector.broadcast %i : index to vector<8xindex>
    %base = arith.muli %row, %width : vector<8xindex>
    scf.for %x0 = %c0 to %c16 step %c8 {
      %x0v = vector.broadcast %x0 : index to vector<8xindex>
      %x = arith.addi %step, %x0v : vector<8xindex>
      %col2 = arith.muli %x, %two : vector<8xindex>
      %col = arith.subi %col2, %one : vector<8xindex>
      %above = arith.maxsi %col, %zero : vector<8xindex>
      %clamped = arith.minsi %above, %last : vector<8xindex>
      %off = arith.addi %base, %clamped : vector<8xindex>
      %g = vector.gather %src[%c0, %c0][%off], %mask, %pass
          : memref<4x32xf32>, vector<8xindex>, vector<8xi1>, vector<8xf32> into vector<8xf32>
      vector.store %g, %dst[%i, %x0] : memref<4x16xf32>, vector<8xf32>
    }
  }
  return
}

// The padding's select on the gathered value (the pad value where the column is outside
// the row) moves into the branches: where the clamps are inactive its mask is the same on
// every lane (checked: the first and the last lane agree), so the loaded run is selected by
// one scalar. The column loop (5 vectors) is then peeled: its first and last vectors, at the
// borders, gather and select lane by lane; in the loop over the middle ones range analysis
// proves the clamps inactive and the columns inside the row: a plain load, no branch.
// CHECK-LABEL: func.func @padded_row
// CHECK: scf.for %[[I:.+]] = %c0 to %c4 step %c1 {
// CHECK:   vector.gather
// CHECK:   arith.select %{{.+}}, %{{.+}}, %{{.+}} : vector<8xi1>, vector<8xf32>
// CHECK:   vector.store %{{.+}}, %{{.+}}[%[[I]], %c0]
// CHECK:   scf.for %[[X:.+]] = %c8 to %c25 step %c8 {
// CHECK-NOT: scf.if
// CHECK-NOT: vector.gather
// CHECK:     vector.load %{{.+}} : memref<128xf32>, vector<8xf32>
// CHECK:     vector.store %{{.+}}, %{{.+}}[%[[I]], %[[X]]]
// CHECK:   }
// CHECK:   vector.gather
// CHECK:   arith.select %{{.+}}, %{{.+}}, %{{.+}} : vector<8xi1>, vector<8xf32>
// CHECK:   vector.store %{{.+}}, %{{.+}}[%[[I]], %c32]
func.func @padded_row(%src: memref<4x32xf32>, %dst: memref<4x40xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %c40 = arith.constant 40 : index
  %four = arith.constant dense<4> : vector<8xindex>
  %zero = arith.constant dense<0> : vector<8xindex>
  %last = arith.constant dense<31> : vector<8xindex>
  %width = arith.constant dense<32> : vector<8xindex>
  %mask = arith.constant dense<true> : vector<8xi1>
  %pass = arith.constant dense<0.0> : vector<8xf32>
  %pad = arith.constant dense<-1.0> : vector<8xf32>
  %step = vector.step : vector<8xindex>
  scf.for %i = %c0 to %c4 step %c1 {
    %row = vector.broadcast %i : index to vector<8xindex>
    %base = arith.muli %row, %width : vector<8xindex>
    scf.for %x0 = %c0 to %c40 step %c8 {
      %x0v = vector.broadcast %x0 : index to vector<8xindex>
      %x = arith.addi %step, %x0v : vector<8xindex>
      %col = arith.subi %x, %four : vector<8xindex>
      %inside_lo = arith.cmpi sge, %col, %zero : vector<8xindex>
      %inside_hi = arith.cmpi slt, %col, %width : vector<8xindex>
      %inside = arith.andi %inside_lo, %inside_hi : vector<8xi1>
      %above = arith.maxsi %col, %zero : vector<8xindex>
      %clamped = arith.minsi %above, %last : vector<8xindex>
      %off = arith.addi %base, %clamped : vector<8xindex>
      %g = vector.gather %src[%c0, %c0][%off], %mask, %pass
          : memref<4x32xf32>, vector<8xindex>, vector<8xi1>, vector<8xf32> into vector<8xf32>
      %v = arith.select %inside, %g, %pad : vector<8xi1>, vector<8xf32>
      vector.store %v, %dst[%i, %x0] : memref<4x40xf32>, vector<8xf32>
    }
  }
  return
}

// A gather at offsets read from memory (an embedding lookup) stays a gather.
// CHECK-LABEL: func.func @lookup
// CHECK-NOT: scf.if
// CHECK: vector.gather
func.func @lookup(%table: memref<64xf32>, %ids: memref<8xindex>, %dst: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %mask = arith.constant dense<true> : vector<8xi1>
  %pass = arith.constant dense<0.0> : vector<8xf32>
  %off = vector.load %ids[%c0] : memref<8xindex>, vector<8xindex>
  %g = vector.gather %table[%c0][%off], %mask, %pass
      : memref<64xf32>, vector<8xindex>, vector<8xi1>, vector<8xf32> into vector<8xf32>
  vector.store %g, %dst[%c0] : memref<8xf32>, vector<8xf32>
  return
}

// Lanes a row apart (a transposing read: column %j of 8 rows of 256) stay a gather: as a run
// the load would be 8 x 256 elements to keep 8 of them (gathers.MAX_STRIDE).
// CHECK-LABEL: func.func @transposed_column
// CHECK-NOT: vector<2048xf32>
// CHECK-NOT: vector.load
// CHECK: vector.gather
func.func @transposed_column(%src: memref<8x256xf32>, %dst: memref<256x8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c256 = arith.constant 256 : index
  %rows = arith.constant dense<256> : vector<8xindex>
  %mask = arith.constant dense<true> : vector<8xi1>
  %pass = arith.constant dense<0.0> : vector<8xf32>
  %step = vector.step : vector<8xindex>
  %base = arith.muli %step, %rows : vector<8xindex>
  scf.for %j = %c0 to %c256 step %c1 {
    %jv = vector.broadcast %j : index to vector<8xindex>
    %off = arith.addi %base, %jv : vector<8xindex>
    %g = vector.gather %src[%c0, %c0][%off], %mask, %pass
        : memref<8x256xf32>, vector<8xindex>, vector<8xi1>, vector<8xf32> into vector<8xf32>
    vector.store %g, %dst[%j, %c0] : memref<256x8xf32>, vector<8xf32>
  }
  return
}

// Six vectors of a stride-2 row (columns 2 * x - 1 of 96) summed into an accumulator carried
// by the column loop: the loop is peeled (its first and last vectors, then the middle ones,
// the accumulator chained through the three). Range analysis proves the clamps inactive and
// the run's start in the buffer in the middle loop and at the last vector (columns 79..93):
// they load runs with no branch; the first vector (column -1 clamped) gathers.
// CHECK-LABEL: func.func @stride_two_sum
// CHECK: %[[FIRST:.+]] = vector.gather
// CHECK: %[[ACC0:.+]] = arith.addf %[[FIRST]], %{{.+}} : vector<8xf32>
// CHECK: %[[MID:.+]] = scf.for %{{.+}} = %c8 to %c33 step %c8 iter_args(%[[ACC:.+]] = %[[ACC0]]) -> (vector<8xf32>) {
// CHECK-NOT: scf.if
// CHECK-NOT: vector.gather
// CHECK:   vector.load %{{.+}} : memref<288xf32>, vector<16xf32>
// CHECK:   vector.shuffle
// CHECK:   scf.yield
// CHECK: }
// CHECK-NOT: scf.if
// CHECK-NOT: vector.gather
// CHECK: %[[TAIL:.+]] = vector.load %{{.+}} : memref<288xf32>, vector<16xf32>
// CHECK: %[[LAST:.+]] = vector.shuffle %[[TAIL]], %[[TAIL]] [1, 3, 5, 7, 9, 11, 13, 15]
// CHECK: %[[SUM:.+]] = arith.addf %[[MID]], %[[LAST]] : vector<8xf32>
// CHECK: vector.store %[[SUM]], %{{.+}}[%{{.+}}, %c0] : memref<3x8xf32>, vector<8xf32>
func.func @stride_two_sum(%src: memref<3x96xf32>, %dst: memref<3x8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c8 = arith.constant 8 : index
  %c48 = arith.constant 48 : index
  %two = arith.constant dense<2> : vector<8xindex>
  %one = arith.constant dense<1> : vector<8xindex>
  %zero = arith.constant dense<0> : vector<8xindex>
  %last = arith.constant dense<95> : vector<8xindex>
  %width = arith.constant dense<96> : vector<8xindex>
  %mask = arith.constant dense<true> : vector<8xi1>
  %pass = arith.constant dense<0.0> : vector<8xf32>
  %step = vector.step : vector<8xindex>
  scf.for %i = %c0 to %c3 step %c1 {
    %row = vector.broadcast %i : index to vector<8xindex>
    %base = arith.muli %row, %width : vector<8xindex>
    %sum = scf.for %x0 = %c0 to %c48 step %c8 iter_args(%acc = %pass) -> (vector<8xf32>) {
      %x0v = vector.broadcast %x0 : index to vector<8xindex>
      %x = arith.addi %step, %x0v : vector<8xindex>
      %col2 = arith.muli %x, %two : vector<8xindex>
      %col = arith.subi %col2, %one : vector<8xindex>
      %above = arith.maxsi %col, %zero : vector<8xindex>
      %clamped = arith.minsi %above, %last : vector<8xindex>
      %off = arith.addi %base, %clamped : vector<8xindex>
      %g = vector.gather %src[%c0, %c0][%off], %mask, %pass
          : memref<3x96xf32>, vector<8xindex>, vector<8xi1>, vector<8xf32> into vector<8xf32>
      %next = arith.addf %acc, %g : vector<8xf32>
      scf.yield %next : vector<8xf32>
    }
    vector.store %sum, %dst[%i, %c0] : memref<3x8xf32>, vector<8xf32>
  }
  return
}

// A read of packed tiles y[o, t, l] at the digits of a linear index (q = 58 * i + j:
// t = q divsi 16, l = q - t * 16), as a convolution copies its tiles back to NCHW. The
// quotient is an atom of its own in the offset (o * 203 + t) * 16 + l, and it cancels:
// the offset is o * 3248 + q, consecutive along the lanes, a plain load with no branch.
// CHECK-LABEL: func.func @tiles_to_rows
// CHECK-NOT: vector.gather
// CHECK-NOT: scf.if
// CHECK: vector.load %{{.+}} : memref<207872xf32>, vector<8xf32>
func.func @tiles_to_rows(%y: memref<64x203x16xf32>, %dst: memref<64x56x56xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c56 = arith.constant 56 : index
  %c64 = arith.constant 64 : index
  %w = arith.constant dense<58> : vector<8xindex>
  %sixteen = arith.constant dense<16> : vector<8xindex>
  %tiles = arith.constant dense<203> : vector<8xindex>
  %mask = arith.constant dense<true> : vector<8xi1>
  %pass = arith.constant dense<0.0> : vector<8xf32>
  %step = vector.step : vector<8xindex>
  scf.for %o = %c0 to %c64 step %c1 {
    %ov = vector.broadcast %o : index to vector<8xindex>
    scf.for %i = %c0 to %c56 step %c1 {
      %iv = vector.broadcast %i : index to vector<8xindex>
      %row = arith.muli %iv, %w : vector<8xindex>
      scf.for %j0 = %c0 to %c56 step %c8 {
        %jv = vector.broadcast %j0 : index to vector<8xindex>
        %j = arith.addi %step, %jv : vector<8xindex>
        %q = arith.addi %row, %j : vector<8xindex>
        %t = arith.divsi %q, %sixteen : vector<8xindex>
        %t16 = arith.muli %t, %sixteen : vector<8xindex>
        %l = arith.subi %q, %t16 : vector<8xindex>
        %ot = arith.muli %ov, %tiles : vector<8xindex>
        %row_t = arith.addi %ot, %t : vector<8xindex>
        %base = arith.muli %row_t, %sixteen : vector<8xindex>
        %off = arith.addi %base, %l : vector<8xindex>
        %g = vector.gather %y[%c0, %c0, %c0][%off], %mask, %pass
            : memref<64x203x16xf32>, vector<8xindex>, vector<8xi1>, vector<8xf32> into vector<8xf32>
        vector.store %g, %dst[%o, %i, %j0] : memref<64x56x56xf32>, vector<8xf32>
      }
    }
  }
  return
}

// A remainder alone does not cancel (l = q mod 16 read at y[0, 0, l]: lanes wrap around
// within the tile): the gather stays.
// CHECK-LABEL: func.func @wrapped_lanes
// CHECK-NOT: vector.load
// CHECK: vector.gather
func.func @wrapped_lanes(%y: memref<1x1x16xf32>, %dst: memref<64xf32>) {
  %c0 = arith.constant 0 : index
  %c8 = arith.constant 8 : index
  %c64 = arith.constant 64 : index
  %sixteen = arith.constant dense<16> : vector<8xindex>
  %mask = arith.constant dense<true> : vector<8xi1>
  %pass = arith.constant dense<0.0> : vector<8xf32>
  %step = vector.step : vector<8xindex>
  scf.for %j0 = %c0 to %c64 step %c8 {
    %jv = vector.broadcast %j0 : index to vector<8xindex>
    %q = arith.addi %step, %jv : vector<8xindex>
    %l = arith.remsi %q, %sixteen : vector<8xindex>
    %g = vector.gather %y[%c0, %c0, %c0][%l], %mask, %pass
        : memref<1x1x16xf32>, vector<8xindex>, vector<8xi1>, vector<8xf32> into vector<8xf32>
    vector.store %g, %dst[%j0] : memref<64xf32>, vector<8xf32>
  }
  return
}
