"""Shared fixtures: the course's mm_relu written directly as MLIR text; the ``isolated`` marker."""

import os
import subprocess
import sys

import numpy as np
import pytest

_CHILD_ENV = "MLC_TEST_IN_CHILD"


#: Test files whose tests must not overlap one another when ``make test`` runs pytest-xdist
#: (``-n 2``): tuning runs pin their measurements to core 0 and pause their builders, the Ray
#: test starts a local cluster (its ports, /tmp/ray), others kill process groups or wait on
#: the sampler's and the workers' deadlines. They form one work unit, run first, one test at
#: a time, by one xdist worker; every other test is a unit of its own (see
#: :func:`pytest_xdist_make_scheduler`).
TUNING_FILES = frozenset({"test_tune.py", "test_tune_isolation.py"})


def pytest_configure(config):
    # The persistent compile cache is off in tests (each build compiles: tests of the build's
    # internals see its stages run, and no test reads another's entry); test_compile_cache.py
    # turns it on in temporary directories. Child processes (isolated tests, examples) inherit it.
    os.environ["MLC_CACHE_DIR"] = "off"
    config.addinivalue_line("markers", "isolated: run the test in a child pytest process, so that an abort "
                                       "of the interpreter fails this test instead of ending the run")


@pytest.hookimpl(optionalhook=True, tryfirst=True)
def pytest_xdist_make_scheduler(config, log):
    """xdist's scope scheduling with the :data:`TUNING_FILES` as one scope, every other test a
    scope of its own (xdist's ``--dist loadgroup`` with ``xdist_group`` marks would say the
    same, but xdist 3.8 renames ``item._nodeid``, which pytest 9 no longer reads)."""
    from xdist.scheduler import LoadScopeScheduling

    class TuningApart(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            name = nodeid.split("::", 1)[0].rsplit("/", 1)[-1]
            return "tuning" if name in TUNING_FILES else nodeid

    return TuningApart(config, log)


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
