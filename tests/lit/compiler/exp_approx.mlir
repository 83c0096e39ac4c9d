// RUN: mlc-opt %s --mlc-exp-approx | filecheck %s

// exp on an f32 vector becomes the polynomial (compiler/exp_approx.py): range reduction,
// FMAs, 2^n from exponent bits, the limits selected; a scalar exp stays (a libm call).
// CHECK-LABEL: func.func @vector_exp
// CHECK-NOT: math.exp
// CHECK: math.floor %{{.+}} : vector<16xf32>
// CHECK-COUNT-5: math.fma
// CHECK: arith.shli %{{.+}} : vector<16xi32>
// CHECK: arith.bitcast %{{.+}} : vector<16xi32> to vector<16xf32>
// CHECK: arith.cmpf uno
// CHECK: return
func.func @vector_exp(%x: vector<16xf32>) -> vector<16xf32> {
  %y = math.exp %x : vector<16xf32>
  return %y : vector<16xf32>
}

// CHECK-LABEL: func.func @scalar_exp
// CHECK: math.exp %{{.+}} : f32
func.func @scalar_exp(%x: f32) -> f32 {
  %y = math.exp %x : f32
  return %y : f32
}
