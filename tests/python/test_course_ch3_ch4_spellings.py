"""Course ch.3 / ch.4 spellings: call_dps_packed of a tensor program of the module,
``IRModule({...})``, ``with_attr`` / ``from_expr`` / ``get_global_var`` / ``update_func``
(the tuned-kernel swap), ``trace.with_decisions`` by printed position."""

import numpy as np
import pytest

import mlc_mlir as mlc
from mlc_mlir import graph as relax
from mlc_mlir import te

IRModule = mlc.IRModule


def te_linear(X, W, B):
    k = te.reduce_axis((0, X.shape[1]), "k")
    Y = te.compute((X.shape[0], W.shape[0]), lambda i, j: te.sum(X[i, k] * W[j, k], axis=k), name="Y")
    return te.compute(Y.shape, lambda i, j: Y[i, j] + B[j], name="Z")


def te_relu(X):
    return te.compute(X.shape, lambda i, j: te.max(X[i, j], 0), name="Y")


def prim(fn, *shapes):
    args = [te.placeholder(s, "float32", name=n) for s, n in zip(shapes, "XWB")]
    return te.create_prim_func([*args, fn(*args)])


rng = np.random.default_rng(0)
W0, B0 = rng.standard_normal((32, 16)).astype("float32"), rng.standard_normal(32).astype("float32")
W1, B1 = rng.standard_normal((10, 32)).astype("float32"), rng.standard_normal(10).astype("float32")


def mixture():
    """The course's MyModuleMixture: tensor programs called with call_dps_packed by name."""
    mod = IRModule({"linear0": prim(te_linear, (1, 16), (32, 16), (32,)),
                    "relu0": prim(te_relu, (1, 32))["main"],
                    "linear1": prim(te_linear, (1, 32), (10, 32), (10,))})
    bb = relax.BlockBuilder(mod)
    x = relax.Var("x", (1, 16))
    w0, b0, w1, b1 = (relax.Var(n, a.shape) for n, a in zip(("w0", "b0", "w1", "b1"), (W0, B0, W1, B1)))
    with bb.function("main", [x, w0, b0, w1, b1]):
        with bb.dataflow():
            lv0 = bb.emit(relax.op.call_dps_packed("linear0", (x, w0, b0), relax.TensorStructInfo((1, 32), "float32")))
            lv1 = bb.emit(relax.op.call_dps_packed("relu0", (lv0,), (1, 32), "float32"))
            out = bb.emit(relax.op.call_dps_packed("linear1", (lv1, w1, b1), (1, 10), "float32"))
            gv = bb.emit_output(out)
        bb.emit_func_output(gv)
    return bb.get()


def expected(x):
    return np.maximum(x @ W0.T + B0, 0) @ W1.T + B1


def run(mod, *args):
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), mlc.cpu())
    return vm["main"](*args).numpy()


def test_irmodule_from_dict_and_call_dps_packed_of_tensor_programs():
    mod = mixture()
    assert mod.functions == ["linear0", "relu0", "linear1", "main"]
    x = rng.standard_normal((1, 16)).astype("float32")
    np.testing.assert_allclose(run(mod, x, W0, B0, W1, B1), expected(x), rtol=1e-4, atol=1e-4)
    # the input module is left as written (call_dps_packed stays)
    assert '"linear0"' in mod.script() and "mlc.call_dps" in mod.script()


def test_irmodule_dict_errors():
    with pytest.raises(mlc.MlcError, match="maps function names to Functions"):
        IRModule({"f": 3})
    with pytest.raises(mlc.MlcError, match="has functions"):
        IRModule({"f": mixture()})


def test_tuned_kernel_swap_as_the_course_writes_it():
    MyModuleMixture = mixture()
    mod_linear = IRModule.from_expr(MyModuleMixture["linear0"].with_attr("global_symbol", "main"))
    assert mod_linear.functions == ["main"]
    sch = mlc.Schedule(mod_linear)
    block_Y = sch.get_block("Y", "main")
    i, j, k = sch.get_loops(block_Y)
    j0, j1 = sch.split(j, [None, 8])
    sch.reorder(j0, k, j1)
    new_func = sch.mod["main"].with_attr("global_symbol", "linear0")
    assert new_func.name == "linear0"
    MyModuleWithParams2 = relax.transform.BindParams("main", {"w0": W0, "b0": B0, "w1": W1, "b1": B1})(MyModuleMixture)
    gv = MyModuleWithParams2.get_global_var("linear0")
    assert gv == "linear0" and gv.name_hint == "linear0"
    MyModuleWithParams2.update_func(gv, new_func)
    assert "scf.for" in MyModuleWithParams2["linear0"].script()
    x = rng.standard_normal((1, 16)).astype("float32")
    np.testing.assert_allclose(run(MyModuleWithParams2, x), expected(x), rtol=1e-4, atol=1e-4)
    with pytest.raises(mlc.MlcError, match="no function named 'nope'"):
        MyModuleWithParams2.get_global_var("nope")


def test_functions_items_and_attrs():
    mod = mixture()
    items = dict(mod.functions.items())
    assert list(items) == ["linear0", "relu0", "linear1", "main"]
    assert isinstance(items["main"], relax.Function) and not isinstance(items["linear0"], relax.Function)
    assert items["main"].attrs is None
    prim_fn = items["main"].with_attr("Primitive", 1)
    assert prim_fn.attrs == {"Primitive": 1}


def test_with_decisions_by_printed_position():
    mod = prim(te_relu, (16, 64))
    sch = mlc.Schedule(mod, seed=3)
    (b,) = [sch.get_block("Y", "main")]
    i, j = sch.get_loops(b)
    v = sch.sample_perfect_tile(j, n=2, decision=[8, 8])
    sch.split(j, v)
    lines = str(sch.trace).splitlines()
    line = next(n for n, text in enumerate(lines) if "sample_perfect_tile" in text)
    name = lines[line].split(",")[0]  # "v3"
    x = rng.standard_normal((16, 64)).astype("float32")
    for key in (line, name):
        new = sch.trace.with_decisions({key: [16, 4]})
        assert "decision=[16, 4]" in str(new)
        out = np.empty_like(x)
        mlc.build(new.apply(mod).mod)["main"](x, out)
        np.testing.assert_allclose(out, np.maximum(x, 0))
    with pytest.raises(mlc.ScheduleError, match="not a sampling instruction"):
        sch.trace.with_decisions({0: [16, 4]})
