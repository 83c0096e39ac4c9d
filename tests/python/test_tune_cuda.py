"""Tuning for target="cuda": the tunable GPU rules (gpu_rules.gpu_space) as the default
space and the CUDA build. Without a GPU every candidate is compiled (PTX assembled by
ptxas) and the run says no GPU is present; with one, the tuned kernel equals NumPy."""

from __future__ import annotations

import numpy as np
import pytest

import mlc_mlir as mlc
from mlc_mlir import TuneError
from mlc_mlir.compiler.cuda import cuda_driver, device_arch

from _cuda_util import ptxas
from _schedule_util import matmul

FAST = {"repeat": 2, "min_repeat_ms": 1.0}
HAS_GPU = cuda_driver() is not None and device_arch() is not None


def _kinds(record):
    return [inst[0] for inst in record.trace["insts"]]


@pytest.mark.skipif(HAS_GPU, reason="a GPU is present: test_cuda_tuning_on_the_gpu measures instead")
def test_cuda_candidates_compile_without_a_gpu(tmp_path):
    with pytest.raises(TuneError, match=r"no CUDA GPU to measure on here; 3 candidates were compiled"):
        mlc.tune.tune_tir(matmul(), "cuda", max_trials_global=3, num_trials_per_iter=3, work_dir=tmp_path,
                          seed=0, measure=FAST, progress=False)
    records = mlc.tune.JSONDatabase(tmp_path).records()
    assert len(records) == 3 and len({r.decisions for r in records}) == 3
    for r in records:
        assert r.error.startswith("run: TuneError: no CUDA GPU to measure on") and r.build_secs > 0
        assert r.extra["binary"] == ("bin" if ptxas() is not None else "isa")
        assert "bind" in _kinds(r) and "sample_categorical" in _kinds(r)
        assert r.target == "cuda"


def test_cuda_target_parsing():
    t = mlc.tune.parse_target("cuda -arch=sm_90")
    assert (t.kind, t.text, len(t.core_sets())) == ("cuda", "cuda -arch=sm_90", 1)
    with pytest.raises(TuneError, match="cannot parse 'sm_90'"):
        mlc.tune.parse_target("cuda sm_90")


@pytest.mark.skipif(not HAS_GPU, reason="needs a CUDA GPU")
def test_cuda_tuning_on_the_gpu(tmp_path):
    mod = matmul()
    db = mlc.tune.tune_tir(mod, "cuda", max_trials_global=6, num_trials_per_iter=3, work_dir=tmp_path, seed=0,
                           measure=FAST, progress=False)
    assert any(r.ok for r in db.records())
    sch = mlc.tune.compile_tir(db, mod, "cuda")
    rt = mlc.build(sch.mod, target="cuda")
    rng = np.random.default_rng(0)
    a = rng.standard_normal((128, 128), dtype=np.float32)
    b = rng.standard_normal((128, 128), dtype=np.float32)
    c = np.zeros((128, 128), np.float32)
    rt["main"](a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-3)
