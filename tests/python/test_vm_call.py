"""Calling graph functions: the VM's generated call path, its checks and its slower path.

Results against NumPy; symbols bound once across inputs; a tensor program compiled for
static sizes called with a symbolic argument is checked at run time (never garbage or an
out-of-bounds read); allocation failures are MlcErrors; threads and lifetimes are safe.
"""

import gc
import threading

import numpy as np
import pytest

import mlc_mlir as mlc
from mlc_mlir.graph import BlockBuilder, Var, op

KERN = """
func.func @kern(%a: tensor<2x3xf32>, %o: tensor<2x3xf32>) -> tensor<2x3xf32> attributes {mlc.prim_func} {
  %two = arith.constant 2.0 : f32
  %r = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
                       iterator_types = ["parallel", "parallel"]} ins(%a : tensor<2x3xf32>) outs(%o : tensor<2x3xf32>) {
  ^bb0(%x: f32, %y: f32):
    %m = arith.mulf %x, %two : f32
    linalg.yield %m : f32
  } -> tensor<2x3xf32>
  return %r : tensor<2x3xf32>
}
"""


def graph_vm(params, body, module=None, **build_kw):
    bb = BlockBuilder(module) if module is not None else BlockBuilder()
    with bb.function("main", params):
        with bb.dataflow():
            gv = bb.emit_output(body(*params))
        bb.emit_func_output(gv)
    return mlc.graph.VirtualMachine(mlc.graph.build(bb.get(), **build_kw), mlc.cpu())


@pytest.fixture(scope="module")
def add_vm():
    return graph_vm([Var("a", ("n", 4), "float32"), Var("b", ("n", 4), "float32")], op.add)


def test_generated_call_matches_numpy_and_allocates_fresh_outputs(add_vm, rng):
    f = add_vm["main"]
    assert type(f).__call__ is not mlc.graph.GraphFunction.__call__  # the generated path is in use
    a, b = rng.random((3, 4), dtype=np.float32), rng.random((3, 4), dtype=np.float32)
    r1, r2 = f(a, b), f(a, b)
    assert isinstance(r1, mlc.runtime.NDArray) and r1.shape == (3, 4)
    np.testing.assert_array_equal(r1.numpy(), a + b)
    assert not np.shares_memory(np.from_dlpack(r1), np.from_dlpack(r2))
    for n in (0, 1, 50):
        x, y = rng.random((n, 4), dtype=np.float32), rng.random((n, 4), dtype=np.float32)
        np.testing.assert_array_equal(f(x, y).numpy(), x + y)


class Sub(np.ndarray):
    pass


def test_declined_calls_take_the_checked_path(add_vm, rng):
    f = add_vm["main"]
    a, b = rng.random((3, 4), dtype=np.float32), rng.random((6, 4), dtype=np.float32)
    np.testing.assert_array_equal(f(mlc.runtime.array(a), b[::2]).numpy(), a + b[::2])
    np.testing.assert_array_equal(f(a.view(Sub), np.asfortranarray(b[:3])).numpy(), a + b[:3])
    with pytest.raises(mlc.ArgumentError, match="input 0 \\(a\\): expected dtype float32, got float64"):
        f(a.tolist(), b[:3])  # NumPy makes float64 of a list


@pytest.mark.parametrize("wrap", [np.asarray, mlc.runtime.array], ids=["numpy", "ndarray"])
def test_inputs_that_disagree_on_a_symbol(add_vm, wrap):
    f = add_vm["main"]
    with pytest.raises(mlc.ArgumentError, match="input 1 \\(b\\): dimension 0 is 5 but n = 3 from an earlier input"):
        f(wrap(np.zeros((3, 4), np.float32)), wrap(np.zeros((5, 4), np.float32)))
    with pytest.raises(mlc.ArgumentError, match="input 0 \\(a\\): expected dtype float32, got float64"):
        f(wrap(np.zeros((3, 4))), wrap(np.zeros((3, 4), np.float32)))
    with pytest.raises(mlc.ArgumentError, match="input 1 \\(b\\): expected shape \\(n, 4\\), got \\(3, 5\\)"):
        f(wrap(np.zeros((3, 4), np.float32)), wrap(np.zeros((3, 5), np.float32)))
    with pytest.raises(mlc.ArgumentError, match="takes 2 input\\(s\\) \\(a, b\\), got 1"):
        f(wrap(np.zeros((3, 4), np.float32)))


@pytest.mark.parametrize("opt_level", [0, 2])
def test_static_kernel_called_with_a_symbolic_argument(rng, opt_level):
    vm = graph_vm([Var("x", ("n", 3), "float32")],
                  lambda x: op.call_tir("kern", (x,), ("n", 3), "float32"),
                  mlc.Module.parse(KERN), opt_level=opt_level)
    f = vm["main"]
    for n in (5, 1, 100000, 0):
        for x in (np.ones((n, 3), np.float32), mlc.runtime.array(np.ones((n, 3), np.float32))):
            with pytest.raises(mlc.ArgumentError, match=f"input 0 \\(x\\): dimension 0 is {n}, but n must be 2: "
                                                        "@kern argument 0 dimension 0 is compiled for size 2"):
                f(x)
    x = rng.random((2, 3), dtype=np.float32)
    np.testing.assert_array_equal(f(x).numpy(), 2 * x)


def test_output_allocation_failure_is_a_runtime_error():
    vm = graph_vm([Var("x", ("n", 1), "float32"), Var("y", (1, "n"), "float32")], op.matmul)
    n = 1 << 23  # output n x n float32: 256 TiB
    with pytest.raises(mlc.RuntimeError_, match="cannot allocate output 0 of shape \\(8388608, 8388608\\)"):
        vm["main"](np.zeros((n, 1), np.float32), np.zeros((1, n), np.float32))


def test_env_function_errors_are_raised_after_a_fast_call():
    def boom(x, out):
        raise ValueError("no luck")

    mlc.register_func("test_vm_call.boom", boom, override=True)
    vm = graph_vm([Var("x", (4,), "float32")],
                  lambda x: op.call_dps_packed("test_vm_call.boom", (x,), (4,), "float32"))
    for _ in range(2):  # the error of one call does not leak into the next
        with pytest.raises(mlc.RuntimeError_, match="'test_vm_call.boom' raised ValueError: no luck"):
            vm["main"](np.zeros(4, np.float32))


def test_graph_function_outlives_vm_and_executable_and_threads(rng):
    f = graph_vm([Var("a", ("n",), "float32"), Var("b", ("n",), "float32")], op.multiply)["main"]
    gc.collect()
    errors = []

    def work(seed):
        r = np.random.default_rng(seed)
        try:
            for _ in range(200):
                n = int(r.integers(1, 30000))
                a, b = r.random(n, dtype=np.float32), r.random(n, dtype=np.float32)
                if not np.array_equal(f(a, b).numpy(), a * b):
                    errors.append(f"wrong result, n={n}")
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(repr(exc))

    threads = [threading.Thread(target=work, args=(s,)) for s in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[:3]


def test_env_function_errors_are_kept_per_thread():
    from mlc_mlir.runtime.vm import CallbackErrors

    errors = CallbackErrors()
    errors.errors.append(("env.f", ValueError("from the main thread")))
    seen = []
    t = threading.Thread(target=lambda: seen.append(list(errors.errors)))
    t.start()
    t.join()
    assert seen == [[]]
    with pytest.raises(mlc.RuntimeError_, match="from the main thread"):
        errors.reraise()
    errors.reraise()  # cleared


def test_two_outputs_on_the_generated_path(rng):
    bb = BlockBuilder()
    a, b = Var("a", ("n", 3), "float32"), Var("b", ("n", 3), "float32")
    with bb.function("main", [a, b]):
        with bb.dataflow():
            s = bb.emit_output(op.add(a, b))
            p = bb.emit_output(op.multiply(a, b))
        bb.emit_func_output((s, p))
    f = mlc.graph.VirtualMachine(mlc.graph.build(bb.get()))["main"]
    x, y = rng.random((4, 3), dtype=np.float32), rng.random((4, 3), dtype=np.float32)
    for args in ((x, y), (mlc.runtime.array(x), y)):
        s_out, p_out = f(*args)
        np.testing.assert_array_equal(s_out.numpy(), x + y)
        np.testing.assert_array_equal(p_out.numpy(), x * y)


KERN_MEMREF = """
func.func @mkern(%a: memref<2x3xf32>, %o: memref<2x3xf32>) {
  %one = arith.constant 1.0 : f32
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
                  iterator_types = ["parallel", "parallel"]} ins(%a : memref<2x3xf32>) outs(%o : memref<2x3xf32>) {
  ^bb0(%x: f32, %y: f32):
    %s = arith.addf %x, %one : f32
    linalg.yield %s : f32
  }
  return
}
"""


def test_static_memref_kernel_called_with_a_symbolic_argument(rng):
    vm = graph_vm([Var("x", ("n", 3), "float32")],
                  lambda x: op.call_tir("mkern", (x,), ("n", 3), "float32"), mlc.Module.parse(KERN_MEMREF))
    with pytest.raises(mlc.ArgumentError, match="dimension 0 is 7, but n must be 2: @mkern argument 0"):
        vm["main"](np.ones((7, 3), np.float32))
    x = rng.random((2, 3), dtype=np.float32)
    np.testing.assert_array_equal(vm["main"](x).numpy(), x + 1)
