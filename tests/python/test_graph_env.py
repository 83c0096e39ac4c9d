"""Environment functions (call_dps_packed + register_func): zero-copy views, errors."""

import numpy as np
import pytest

import mlc_mlir as mlc
from mlc_mlir.graph import BlockBuilder, Var, op


def env_module(*names, shape=("n", 4)):
    """main(x) = names[-1](...names[0](x)) through call_dps_packed."""
    x = Var("x", shape)
    bb = BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            h = x
            for name in names:
                h = bb.emit(op.call_dps_packed(name, (h,), shape, "float32"))
            gv = bb.emit_output(h)
        bb.emit_func_output(gv)
    return bb.get()


def run(mod, *args):
    return mlc.graph.VirtualMachine(mlc.graph.build(mod), mlc.cpu())["main"](*args)


def test_arguments_are_zero_copy_views_and_writes_reach_the_output():
    seen = {}

    @mlc.register_func("test_env.scale", override=True)
    def scale(x, out):
        seen["x_ptr"] = x.__array_interface__["data"][0]
        seen["types"] = (type(x), type(out), x.flags.c_contiguous)
        np.multiply(x, 2, out=out)
        out[0, 0] = 42.0  # written through the view

    x = np.arange(12, dtype="float32").reshape(3, 4)
    out = run(env_module("test_env.scale"), x).numpy()
    assert seen["x_ptr"] == x.ctypes.data  # the caller's array itself, no copy
    assert seen["types"][:2] == (np.ndarray, np.ndarray)
    expected = 2 * x
    expected[0, 0] = 42.0
    np.testing.assert_array_equal(out, expected)


def test_dlpack_consumers_accept_the_views():
    @mlc.register_func("test_env.dlpack", override=True)
    def via_dlpack(x, out):
        xv, ov = np.from_dlpack(x), np.from_dlpack(out)
        assert np.shares_memory(xv, x) and np.shares_memory(ov, out)
        np.add(xv, 1, out=ov)

    x = np.ones((2, 4), "float32")
    np.testing.assert_array_equal(run(env_module("test_env.dlpack"), x).numpy(), 2 * x)


def test_torch_from_dlpack_when_installed():
    torch = pytest.importorskip("torch")

    @mlc.register_func("test_env.torch_relu", override=True)
    def torch_relu(x, out):
        torch.maximum(torch.from_dlpack(x), torch.tensor(0.0), out=torch.from_dlpack(out))

    x = np.array([[-1, 2, -3, 4]], "float32")
    np.testing.assert_array_equal(run(env_module("test_env.torch_relu"), x).numpy(), np.maximum(x, 0))


def test_exception_in_callback_is_reraised_after_the_call():
    calls = []

    @mlc.register_func("test_env.boom", override=True)
    def boom(x, out):
        calls.append("boom")
        raise ValueError("boom inside env")

    @mlc.register_func("test_env.after", override=True)
    def after(x, out):
        calls.append("after")

    mod = env_module("test_env.boom", "test_env.after")
    vm = mlc.graph.VirtualMachine(mlc.graph.build(mod))
    with pytest.raises(mlc.MlcError, match="'test_env.boom' raised ValueError: boom inside env") as info:
        vm["main"](np.zeros((2, 4), "float32"))
    assert isinstance(info.value.__cause__, ValueError)
    assert calls == ["boom"]  # later callbacks of the failed call are skipped
    # the next call starts clean
    mlc.register_func("test_env.boom", lambda x, out: out.fill(1.0), override=True)
    out = vm["main"](np.zeros((2, 4), "float32"))
    assert out.shape == (2, 4)


def test_keyboard_interrupt_in_callback_stays_a_keyboard_interrupt():
    @mlc.register_func("test_env.interrupt", override=True)
    def interrupt(x, out):
        raise KeyboardInterrupt

    vm = mlc.graph.VirtualMachine(mlc.graph.build(env_module("test_env.interrupt")))
    with pytest.raises(KeyboardInterrupt):
        vm["main"](np.zeros((2, 4), "float32"))
    mlc.register_func("test_env.interrupt", lambda x, out: out.fill(2.0), override=True)
    np.testing.assert_array_equal(vm["main"](np.zeros((2, 4), "float32")).numpy(), np.full((2, 4), 2.0))


def test_mixture_with_tensor_programs_and_symbolic_sizes(rng):
    @mlc.register_func("test_env.neg", override=True)
    def neg(x, out):
        np.negative(x, out=out)

    x = Var("x", ("n", "m"))
    bb = BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            lv0 = bb.emit(op.relu(x))
            lv1 = bb.emit(op.call_dps_packed("test_env.neg", (lv0,), ("n", "m")))
            gv = bb.emit_output(op.add(lv1, x))
        bb.emit_func_output(gv)
    vm = mlc.graph.VirtualMachine(mlc.graph.build(bb.get()))
    for shape in [(2, 3), (5, 1), (1, 7)]:
        a = rng.standard_normal(shape).astype("float32")
        np.testing.assert_allclose(vm["main"](a).numpy(), a - np.maximum(a, 0), rtol=1e-6)


def test_env_function_with_several_ranks():
    @mlc.register_func("test_env.rowsum", override=True)
    def rowsum(x, out):
        np.sum(x, axis=1, out=out)

    x = Var("x", ("n", 3))
    bb = BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            gv = bb.emit_output(op.call_dps_packed("test_env.rowsum", (x,), ("n",)))
        bb.emit_func_output(gv)
    a = np.arange(6, dtype="float32").reshape(2, 3)
    np.testing.assert_array_equal(run(bb.get(), a).numpy(), a.sum(1))
