"""Building and running graphs: every graph op against NumPy, call_tir, symbolic shapes,
fresh outputs per call, call-time argument errors, BindParams."""

import numpy as np
import pytest

import mlc_mlir as mlc
from mlc_mlir import te
from mlc_mlir.graph import BlockBuilder, Var, op


def run_graph(params, body, *arrays, **build_kw):
    """Build ``main(params)`` whose dataflow block returns ``body(*params)``; run it."""
    bb = BlockBuilder()
    with bb.function("main", params):
        with bb.dataflow():
            gv = bb.emit_output(body(*params))
        bb.emit_func_output(gv)
    vm = mlc.graph.VirtualMachine(mlc.graph.build(bb.get(), **build_kw), mlc.cpu())
    return vm["main"](*arrays).numpy()


def softmax(x, axis):
    e = np.exp(x - x.max(axis, keepdims=True))
    return e / e.sum(axis, keepdims=True)


CASES = {
    "matmul": ([(3, 5), (5, 4)], lambda a, b: op.matmul(a, b), lambda a, b: a @ b),
    "matmul_vec": ([(2, 3, 5), (5,)], lambda a, b: op.matmul(a, b), lambda a, b: a @ b),
    "add_bcast": ([(3, 1, 4), (2, 1)], lambda a, b: op.add(a, b), lambda a, b: a + b),
    "subtract": ([(3, 4), (4,)], lambda a, b: op.subtract(a, b), lambda a, b: a - b),
    "multiply": ([(3, 4), (3, 4)], lambda a, b: op.multiply(a, b), lambda a, b: a * b),
    "divide": ([(3, 4), (1, 4)], lambda a, b: op.divide(a, b), lambda a, b: a / b),
    "relu": ([(3, 4)], lambda a: op.relu(a), lambda a: np.maximum(a, 0)),
    "permute": ([(2, 3, 4)], lambda a: op.permute_dims(a, (2, 0, 1)), lambda a: a.transpose(2, 0, 1)),
    "transpose": ([(2, 3)], lambda a: op.permute_dims(a), lambda a: a.T),
    "reshape": ([(2, 3, 4)], lambda a: op.reshape(a, (4, 6)), lambda a: a.reshape(4, 6)),
    "ewise_fma": ([(3, 4)] * 3, lambda a, b, c: op.ewise_fma(a, b, c), lambda a, b, c: a * b + c),
    "softmax1": ([(3, 5)], lambda a: op.softmax(a, axis=1), lambda a: softmax(a, 1)),
    "softmax0": ([(3, 5)], lambda a: op.softmax(a, axis=0), lambda a: softmax(a, 0)),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_graph_op_matches_numpy(case, rng):
    shapes, graph, ref = CASES[case]
    arrays = [(rng.standard_normal(s) + (3 if case == "divide" and i == 1 else 0)).astype("float32")
              for i, s in enumerate(shapes)]
    params = [Var(f"p{i}", s, "float32") for i, s in enumerate(shapes)]
    out = run_graph(params, graph, *arrays)
    np.testing.assert_allclose(out, ref(*arrays), rtol=1e-5, atol=1e-5)


def test_custom_op_map_overrides_default(rng):
    calls = []

    def my_relu(bb, call):
        calls.append(call.args[0].shape)
        return bb.call_te(lambda a: te.compute(a.shape, lambda *i: te.max(a(*i), 1.0), name="relu1"),
                          call.args[0], primfunc_name_hint="my_relu")

    x = rng.standard_normal((2, 3)).astype("float32")
    out = run_graph([Var("x", (2, 3))], op.relu, x, op_map={"relu": my_relu})
    np.testing.assert_allclose(out, np.maximum(x, 1.0))
    assert calls == [(2, 3)]
    with pytest.raises(mlc.GraphError, match="not a graph op"):
        mlc.graph.transform.LegalizeOps({"mlc.conv9d": my_relu})


def te_linear(x, w, b):
    k = te.reduce_axis((0, x.shape[1]), "k")
    y = te.compute((x.shape[0], w.shape[0]), lambda i, j: te.sum(x[i, k] * w[j, k], axis=k), name="Y")
    return te.compute(y.shape, lambda i, j: y[i, j] + b[j], name="Z")


def linear_relu_module():
    x, w, b = Var("x", ("n", 8)), Var("w", (16, 8)), Var("b", (16,))
    bb = BlockBuilder()
    with bb.function("main", [x, w, b]):
        with bb.dataflow():
            lv0 = bb.emit_te(te_linear, x, w, b)
            gv = bb.emit_output(op.relu(lv0))
        bb.emit_func_output(gv)
    return bb.get()


def test_symbolic_batch_and_fresh_outputs(rng):
    vm = mlc.graph.VirtualMachine(mlc.graph.build(linear_relu_module()))
    w = rng.standard_normal((16, 8)).astype("float32")
    b = rng.standard_normal(16).astype("float32")
    outs = []
    for n in (1, 7, 3):
        x = rng.standard_normal((n, 8)).astype("float32")
        out = vm["main"](x, w, b)
        assert isinstance(out, mlc.runtime.NDArray) and out.shape == (n, 16)
        np.testing.assert_allclose(out.numpy(), np.maximum(x @ w.T + b, 0), rtol=1e-5, atol=1e-5)
        outs.append(out)
    a, b2 = vm["main"](x, w, b), vm["main"](x, w, b)
    assert not np.shares_memory(np.asarray(a), np.asarray(b2))
    np.testing.assert_array_equal(outs[2].numpy(), a.numpy())  # earlier result not overwritten


def test_call_time_errors(rng):
    f = mlc.graph.VirtualMachine(mlc.graph.build(linear_relu_module()))["main"]
    x = np.zeros((2, 8), "float32")
    w, b = np.zeros((16, 8), "float32"), np.zeros(16, "float32")
    with pytest.raises(mlc.ArgumentError, match=r"@main takes 3 input\(s\) \(x, w, b\), got 2"):
        f(x, w)
    with pytest.raises(mlc.ArgumentError, match=r"input 1 \(w\): expected shape \(16, 8\), got \(8, 16\)"):
        f(x, w.T.copy(), b)
    with pytest.raises(mlc.ArgumentError, match=r"input 0 \(x\): expected dtype float32, got float64"):
        f(x.astype("float64"), w, b)
    with pytest.raises(mlc.ArgumentError, match=r"expected shape \(n, 8\)"):
        f(np.zeros(8, "float32"), w, b)
    with pytest.raises(mlc.GraphError, match="no graph function 'nope'"):
        mlc.graph.VirtualMachine(mlc.graph.build(linear_relu_module()))["nope"]


def test_call_tir_of_a_tensor_program_text(rng):
    text = """
    func.func @scale(%a: tensor<?xf32> {mlc.shape = ["n"]}, %o: tensor<?xf32> {mlc.shape = ["n"]})
        -> tensor<?xf32> attributes {mlc.prim_func} {
      %two = arith.constant 2.0 : f32
      %r = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>],
                           iterator_types = ["parallel"]} ins(%a : tensor<?xf32>) outs(%o : tensor<?xf32>) {
      ^bb0(%x: f32, %y: f32):
        %m = arith.mulf %x, %two : f32
        linalg.yield %m : f32
      } -> tensor<?xf32>
      return %r : tensor<?xf32>
    }
    """
    bb = BlockBuilder(mlc.Module.parse(text))
    x = Var("x", (5,))
    with bb.function("main", [x]):
        with bb.dataflow():
            lv = bb.emit(op.call_tir("scale", (x,), (5,), "float32"))
            gv = bb.emit_output(op.call_tir("scale", (lv,), (5,), "float32"))
        bb.emit_func_output(gv)
    a = rng.standard_normal(5).astype("float32")
    out = mlc.graph.VirtualMachine(mlc.graph.build(bb.get()))["main"](a)
    np.testing.assert_allclose(out.numpy(), 4 * a, rtol=1e-6)


def test_call_tir_of_a_memref_form_program(rng):
    text = """
    func.func @add1(%a: memref<?x3xf32>, %o: memref<?x3xf32>) {
      %one = arith.constant 1.0 : f32
      linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
                      iterator_types = ["parallel", "parallel"]} ins(%a : memref<?x3xf32>) outs(%o : memref<?x3xf32>) {
      ^bb0(%x: f32, %y: f32):
        %s = arith.addf %x, %one : f32
        linalg.yield %s : f32
      }
      return
    }
    """
    bb = BlockBuilder(mlc.Module.parse(text))
    x = Var("x", ("n", 3))
    with bb.function("main", [x]):
        with bb.dataflow():
            lv = bb.emit(op.call_tir("add1", (x,), ("n", 3), "float32"))
            gv = bb.emit_output(op.relu(lv))
        bb.emit_func_output(gv)
    a = rng.standard_normal((4, 3)).astype("float32")
    out = mlc.graph.VirtualMachine(mlc.graph.build(bb.get()))["main"](a)
    np.testing.assert_allclose(out.numpy(), np.maximum(a + 1, 0), rtol=1e-6)


def test_build_errors():
    with pytest.raises(mlc.GraphError, match="no graph function"):
        mlc.graph.build(mlc.Module.parse("func.func @f(%a: tensor<2xf32>) -> tensor<2xf32> { return %a : tensor<2xf32> }"))
    x = Var("x", (2,))
    bb = BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            gv = bb.emit_output(op.call_tir("missing", (x,), (2,)))
        bb.emit_func_output(gv)
    with pytest.raises(mlc.GraphError, match="calls @missing, which is not a function of the module"):
        mlc.graph.build(bb.get())
    bb = BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            gv = bb.emit_output(op.call_dps_packed("env.f", (x,), ("k",)))
        bb.emit_func_output(gv)
    mlc.register_func("test_graph_run.f", lambda a, o: None, override=True)
    with pytest.raises(mlc.GraphError, match="'env.f', which is not registered"):
        mlc.graph.build(bb.get())


def test_output_shape_must_follow_from_inputs():
    mlc.register_func("test_graph_run.k", lambda a, o: None, override=True)
    x = Var("x", (2,))
    bb = BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            gv = bb.emit_output(op.call_dps_packed("test_graph_run.k", (x,), ("k",)))
        bb.emit_func_output(gv)
    with pytest.raises(mlc.GraphError, match="dimension.*k are not determined by any parameter"):
        mlc.graph.build(bb.get())


@pytest.mark.isolated  # a broken BindParams can abort the interpreter
def test_bind_params(rng):
    mod = linear_relu_module()
    w = rng.standard_normal((16, 8)).astype("float32")
    b = rng.standard_normal(16).astype("float32")
    bound = mlc.graph.transform.BindParams("main", {"w": w, "b": mlc.runtime.array(b)})(mod)
    assert "w" in str(mod["main"])  # the input module is unchanged
    text = bound.script()
    assert "dense_resource<w" in text and "dense<" in text  # b has 16 elements: inline
    assert len(bound["main"].function_type.inputs) == 1
    vm = mlc.graph.VirtualMachine(mlc.graph.build(bound))
    x = rng.standard_normal((4, 8)).astype("float32")
    np.testing.assert_allclose(vm["main"](x).numpy(), np.maximum(x @ w.T + b, 0), rtol=1e-5, atol=1e-5)
    with pytest.raises(mlc.ArgumentError, match="takes 1 input"):
        vm["main"](x, w, b)


@pytest.mark.isolated  # a broken BindParams can abort the interpreter
def test_bind_params_errors_and_symbols(rng):
    mod = linear_relu_module()
    with pytest.raises(mlc.GraphError, match=r"has no parameter\(s\) \['v'\]"):
        mlc.graph.transform.BindParams("main", {"v": np.zeros(3)})(mod)
    with pytest.raises(mlc.GraphError, match=r"parameter 'w' of @main has shape \(16, 8\), the array \(8, 16\)"):
        mlc.graph.transform.BindParams("main", {"w": np.zeros((8, 16), "float32")})(mod)
    with pytest.raises(mlc.GraphError, match="is float32, the array is float64"):
        mlc.graph.transform.BindParams("main", {"w": np.zeros((16, 8))})(mod)
    # binding x fixes the symbol n everywhere: the output shape becomes static
    x = rng.standard_normal((3, 8)).astype("float32")
    bound = mlc.graph.transform.BindParams("main", {"x": x})(mod)
    assert '"n"' not in str(bound["main"])
    w, b = np.ones((16, 8), "float32"), np.zeros(16, "float32")
    out = mlc.graph.VirtualMachine(mlc.graph.build(bound))["main"](w, b)
    np.testing.assert_allclose(out.numpy(), np.maximum(x @ w.T + b, 0), rtol=1e-5, atol=1e-5)
