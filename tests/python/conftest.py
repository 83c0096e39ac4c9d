"""Shared fixtures: the course's mm_relu written directly as MLIR text; the ``isolated`` marker."""

import os
import subprocess
import sys

import numpy as np
import pytest

_CHILD_ENV = "MLC_TEST_IN_CHILD"


def pytest_configure(config):
    config.addinivalue_line("markers", "isolated: run the test in a child pytest process, so that an abort "
                                       "of the interpreter fails this test instead of ending the run")


def pytest_pyfunc_call(pyfuncitem):
    """Run ``@pytest.mark.isolated`` tests in a child process (an abort is one failed test)."""
    if pyfuncitem.get_closest_marker("isolated") is None or os.environ.get(_CHILD_ENV):
        return None
    env = dict(os.environ, **{_CHILD_ENV: "1"})
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", pyfuncitem.nodeid],
                          cwd=pyfuncitem.config.rootpath, env=env, capture_output=True, text=True, timeout=900)
    if proc.returncode != 0:
        how = f"killed by signal {-proc.returncode}" if proc.returncode < 0 else f"exit {proc.returncode}"
        pytest.fail(f"isolated test failed in its child process ({how}):\n{proc.stdout[-4000:]}\n"
                    f"{proc.stderr[-3000:]}", pytrace=False)
    return True

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
