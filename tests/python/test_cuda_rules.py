"""GPU schedules by rule (``mlc_mlir.schedule.gpu_rules``) and decompose_reduction with bound loops."""

import numpy as np
import pytest
from _fake_cuda import FakeDriver

import mlc_mlir as mlc
from mlc_mlir import te
from mlc_mlir.runtime.cuda_device import use_driver
from mlc_mlir.schedule.gpu_rules import THREAD_CHOICES, apply_gpu_rules, gpu_space


def _dense_relu(n=4, k=64, m=300):
    A = te.placeholder((n, k), "float32", name="A")
    W = te.placeholder((k, m), "float32", name="W")
    r = te.reduce_axis((0, k), name="k")
    Y = te.compute((n, m), lambda i, j: te.sum(A[i, r] * W[r, j], axis=r), name="Y")
    Z = te.compute((n, m), lambda i, j: te.max(Y[i, j], 0.0), name="Z")
    return te.create_prim_func([A, W, Z], name="main")


def test_decompose_reduction_keeps_gpu_mappings():
    """The fuse path of decompose_reduction used to drop the bound loops' mappings."""
    sch = mlc.Schedule(_dense_relu())
    block = sch.get_block("Y")
    i, j, k = sch.get_loops(block)
    j0, j1 = sch.split(j, [None, 64])
    sch.bind(i, "blockIdx.y")
    sch.bind(j0, "blockIdx.x")
    sch.bind(j1, "threadIdx.x")
    sch.decompose_reduction(block, k)
    text = str(sch.mod)
    assert text.count("#gpu.block<y>") == 1 and text.count("#gpu.block<x>") == 1
    assert text.count("#gpu.thread<x>") == 1
    replay = sch.trace.apply(_dense_relu())
    assert str(replay.mod) == text


def test_rules_bind_every_block():
    sch = apply_gpu_rules(mlc.Schedule(_dense_relu()))
    rt = mlc.build(sch.mod, target="cuda")
    ptx = rt.get_source("ptx")
    assert ptx.count(".visible .entry") == 2 and ptx.count(".maxntid 256, 1, 1") == 2
    gpu = rt.get_source("gpu")
    assert gpu.count("gpu.launch blocks") == 2
    assert 'linalg.fill {mlc.block_init = "Y"}' in gpu  # the init runs in the kernel


def test_tunable_form_records_decisions():
    sch = gpu_space(mlc.Schedule(_dense_relu(), seed=3))
    text = str(sch.trace)
    assert text.count("sample_categorical") == 2 and text.count("sample_perfect_tile") == 1
    assert "sch.unroll" in text
    assert any(f"factors=[None, {t}]" in text for t in THREAD_CHOICES)
    rt = mlc.build(sch.mod, target="cuda")
    assert rt.get_source("ptx").count(".visible .entry") == 2
    # replaying the trace gives the same module
    assert str(sch.trace.apply(_dense_relu()).mod) == str(sch.mod)


def test_rules_errors():
    A = te.placeholder((64,), "float32", name="A")
    r = te.reduce_axis((0, 64), name="k")
    S = te.compute((1,), lambda i: te.sum(A[r], axis=r), name="S")
    sch = mlc.Schedule(te.create_prim_func([A, S], name="total"))
    apply_gpu_rules(sch)  # a 1-element spatial loop still binds
    with pytest.raises(mlc.ScheduleError, match="threads must be"):
        apply_gpu_rules(mlc.Schedule(_dense_relu()), threads=0)


def test_rules_launch_grids(rng):
    """The launches of the bound dense+relu (fake driver: no kernel code runs): 300 columns
    in 2 blocks of 256 threads, 4 rows on blockIdx.y."""
    sch = apply_gpu_rules(mlc.Schedule(_dense_relu(4, 64, 300)))
    fake = FakeDriver()
    with use_driver(fake):
        rt = mlc.build(sch.mod, target="cuda")
        a, w = rng.random((4, 64), dtype=np.float32), rng.random((64, 300), dtype=np.float32)
        z = np.zeros((4, 300), np.float32)
        rt["main"](a, w, z)
        grids = [dims for _, dims, _ in fake.launches]
    assert grids == [(2, 4, 1, 256, 1, 1), (2, 4, 1, 256, 1, 1)]
