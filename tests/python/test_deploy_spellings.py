"""The course's runtime spellings: tvm.nd, vm.module.time_evaluator, tvm.runtime.load_module,
and calls with mlc.runtime arrays through the fast entries (as cheap as NumPy arrays)."""

from __future__ import annotations

import time

import numpy as np
import pytest

import mlc_mlir as mlc
from mlc_mlir import te
from mlc_mlir.errors import ArgumentError, GraphError, MlcError


def add_kernel(n: int | str = 16):
    A, B = te.placeholder((n,), name="A"), te.placeholder((n,), name="B")
    C = te.compute((n,), lambda i: A[i] + B[i], name="C")
    return te.create_prim_func([A, B, C], name="add")


def one_op_graph():
    bb = mlc.graph.BlockBuilder()
    a, b = mlc.graph.Var("a", ("n",), "float32"), mlc.graph.Var("b", ("n",), "float32")
    with bb.function("main", [a, b]):
        with bb.dataflow():
            out = bb.emit_output(mlc.graph.op.add(a, b))
        bb.emit_func_output(out)
    return bb.get()


def best_per_call(fn, *args, n=2000, rounds=7) -> float:
    best = float("inf")
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(n):
            fn(*args)
        best = min(best, (time.perf_counter() - t0) / n)
    return best


def test_tvm_nd_names():
    import mlc_mlir as tvm

    a_np = np.arange(6, dtype="float32").reshape(2, 3)
    a_nd = tvm.nd.array(a_np)
    c_nd = tvm.nd.empty((2, 3), dtype="float32")
    assert isinstance(a_nd, tvm.nd.NDArray) and isinstance(c_nd, tvm.nd.NDArray)
    np.testing.assert_array_equal(a_nd.numpy(), a_np)
    assert tvm.nd.array is mlc.runtime.array and tvm.runtime.load_module is mlc.runtime.load_module


@pytest.mark.parametrize("n", [16, "n"])
def test_ndarray_calls_take_the_fast_entry(n, tmp_path):
    rt = mlc.build(add_kernel(n))
    a, b = np.arange(16, dtype="float32"), np.ones(16, "float32")
    nd_a, nd_b, nd_c = mlc.runtime.array(a), mlc.runtime.array(b), mlc.runtime.empty((16,), "float32")
    rt.export_library(tmp_path / "add.so")
    for f in (rt["add"], mlc.runtime.load_module(tmp_path / "add.so")["add"]):
        f(nd_a, nd_b, nd_c)
        np.testing.assert_array_equal(nd_c.numpy(), a + b)
        f(nd_a, b, nd_c)  # mixed
        # the checked path costs tens of microseconds; the fast entry a fraction of one
        fast = best_per_call(f, a, b, nd_c.numpy())
        assert best_per_call(f, nd_a, nd_b, nd_c) < 4 * fast + 2e-6
        with pytest.raises(ArgumentError, match="argument 2"):
            f(nd_a, nd_b, mlc.runtime.empty((15,), "float32"))
        with pytest.raises(ArgumentError, match="overlaps"):
            f(nd_a, nd_b, nd_a)
        empty = mlc.runtime.NDArray.__new__(mlc.runtime.NDArray)  # no array in its slot: declined, no crash
        with pytest.raises((AttributeError, MlcError)):
            f(empty, nd_b, nd_c)


def test_vm_time_evaluator_spellings():
    vm = mlc.graph.VirtualMachine(mlc.graph.build(one_op_graph()), mlc.cpu())
    a = mlc.runtime.array(np.ones(8, "float32"))
    for timer in (vm.module.time_evaluator("main", mlc.cpu(), number=20),
                  vm.time_evaluator("main", mlc.cpu(), number=5, repeat=3)):
        res = timer(a, a)
        assert res.mean > 0 and len(res.results) in (1, 3)
    np.testing.assert_array_equal(vm.module["main"](a, a).numpy(), 2 * np.ones(8))
    with pytest.raises(ArgumentError, match="@main input 1"):
        vm.time_evaluator("main")(a, np.ones(7, "float32"))
    with pytest.raises(MlcError, match="number must be an int"):
        vm.time_evaluator("main", number=0)
    with pytest.raises(GraphError, match="no graph function 'nope'"):
        vm.time_evaluator("nope")


def test_virtual_machine_refuses_a_module_of_tensor_programs(tmp_path):
    mlc.build(add_kernel()).export_library(tmp_path / "add.so")
    with pytest.raises(GraphError, match=r"tensor programs only.*module\[name\]"):
        mlc.graph.VirtualMachine(mlc.runtime.load_module(tmp_path / "add.so"), mlc.cpu())
