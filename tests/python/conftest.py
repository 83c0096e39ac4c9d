"""Shared fixtures: the course's mm_relu written directly as MLIR text."""

import numpy as np
import pytest

MM_RELU = """
func.func @mm_relu(%A: tensor<128x128xf32>, %B: tensor<128x128xf32>, %C: tensor<128x128xf32>)
    -> tensor<128x128xf32> attributes {mlc.prim_func} {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<128x128xf32>
  %y0 = linalg.fill {mlc.block_init = "Y"} ins(%zero : f32) outs(%e : tensor<128x128xf32>) -> tensor<128x128xf32>
  %y = linalg.matmul {mlc.block = "Y"} ins(%A, %B : tensor<128x128xf32>, tensor<128x128xf32>)
       outs(%y0 : tensor<128x128xf32>) -> tensor<128x128xf32>
  %c = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
                       iterator_types = ["parallel", "parallel"]}
       ins(%y : tensor<128x128xf32>) outs(%C : tensor<128x128xf32>) attrs = {mlc.block = "C"} {
  ^bb0(%v: f32, %o: f32):
    %r = arith.maximumf %v, %zero : f32
    linalg.yield %r : f32
  } -> tensor<128x128xf32>
  return %c : tensor<128x128xf32>
}
"""


@pytest.fixture
def rng():
    return np.random.default_rng(0)


@pytest.fixture
def mm_relu_text():
    return MM_RELU
