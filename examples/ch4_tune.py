"""Course ch.4, automatic optimization with ``meta_schedule`` (here ``mlc_mlir.meta_schedule``):

1. ``ms.tune_tir`` over the course's ``stochastic_schedule_mm`` space, ``compile_tir``,
   the tuned trace printed and replayed, the tuned program built and checked;
2. auto-scheduling (``space`` left out): the schedule rules shared with ``graph.build``
   (skipped with a message when this build has no ``mlc_mlir.schedule.rules``);
3. the course's MLP (784-128-10) with ``linear0`` as a tensor program and the rest as
   environment functions: ``linear0`` taken out into its own module as ``main``, tuned,
   swapped back with ``update_func``, the model built and run against NumPy;
4. ``tune_model``: every tensor program of the model tuned under one budget.

Small budgets (8 trials per task) keep it under a minute. Run: python examples/ch4_tune.py
"""

from __future__ import annotations

import importlib.util
import tempfile
import time
from pathlib import Path

import numpy as np

import mlc_mlir as mlc
from mlc_mlir import meta_schedule as ms
from mlc_mlir import te
from mlc_mlir.graph import BlockBuilder, Var, op

TARGET = "llvm --num-cores=1"
MEASURE = {"repeat": 2, "min_repeat_ms": 2.0}

MY_MODULE = """
func.func @main(%A: tensor<128x128xf32>, %B: tensor<128x128xf32>, %C: tensor<128x128xf32>)
    -> tensor<128x128xf32> attributes {mlc.prim_func} {
  %zero = arith.constant 0.0 : f32
  %c0 = linalg.fill {mlc.block_init = "C"} ins(%zero : f32) outs(%C : tensor<128x128xf32>) -> tensor<128x128xf32>
  %c = linalg.matmul {mlc.block = "C"} ins(%A, %B : tensor<128x128xf32>, tensor<128x128xf32>)
       outs(%c0 : tensor<128x128xf32>) -> tensor<128x128xf32>
  return %c : tensor<128x128xf32>
}
"""


def stochastic_schedule_mm(sch: mlc.Schedule) -> mlc.Schedule:
    block_C = sch.get_block("C", "main")
    i, j, k = sch.get_loops(block=block_C)
    j_factors = sch.sample_perfect_tile(loop=j, n=2)
    j_0, j_1 = sch.split(loop=j, factors=j_factors)
    sch.reorder(i, j_0, k, j_1)
    sch.decompose_reduction(block_C, k)
    return sch


def te_linear(x: te.Tensor, w: te.Tensor, b: te.Tensor) -> te.Tensor:
    k = te.reduce_axis((0, x.shape[1]), name="k")
    y = te.compute((x.shape[0], w.shape[0]), lambda i, j: te.sum(x[i, k] * w[j, k], axis=k), name="Y")
    return te.compute(y.shape, lambda i, j: y[i, j] + b[j], name="Z")


def stochastic_schedule_linear(sch: mlc.Schedule) -> mlc.Schedule:
    """linear0: column tiles of a sampled width, k outside the vectorized tile, bias fused."""
    block_Y = sch.get_block("Y")
    i, j, k = sch.get_loops(block_Y)
    j_0, j_1 = sch.split(j, factors=sch.sample_perfect_tile(j, n=2, max_innermost_factor=64))
    sch.reorder(i, j_0, k, j_1)
    sch.vectorize(j_1)
    sch.reverse_compute_at(sch.get_block("Z"), j_0)
    sch.decompose_reduction(block_Y, k)
    return sch


def part1_tune_tir(work: Path) -> None:
    mod = mlc.Module.parse(MY_MODULE)
    a, b = np.random.rand(128, 128).astype("float32"), np.random.rand(128, 128).astype("float32")
    c = np.zeros((128, 128), "float32")
    t0 = time.perf_counter()
    database = ms.tune_tir(mod=mod, target=TARGET, max_trials_global=8, num_trials_per_iter=4,
                           space=ms.space_generator.ScheduleFn(stochastic_schedule_mm),
                           work_dir=str(work / "mm"), task_name="main", seed=0, measure=MEASURE)
    print(f"tuned in {time.perf_counter() - t0:.1f} s, {len(database)} records in {database.path.name}")
    sch = ms.tir_integration.compile_tir(database, mod, TARGET)
    sch.trace.show()
    sch.mod.show()
    lib = mlc.build(sch.mod, target="llvm")
    lib["main"](a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-4)
    assert str(sch.trace.apply(mod).mod) == str(sch.mod)
    print("tuned matmul equals NumPy; its trace replays to the same program; "
          f"{lib.time_evaluator('main', number=20)(a, b, c).mean * 1e3:.3f} ms")


def part2_auto(work: Path) -> None:
    if importlib.util.find_spec("mlc_mlir.schedule.rules") is None:
        print("auto-scheduling skipped: this build has no mlc_mlir.schedule.rules")
        return
    mod = mlc.Module.parse(MY_MODULE)
    database = ms.tune_tir(mod=mod, target=TARGET, max_trials_global=8, num_trials_per_iter=4,
                           work_dir=str(work / "auto"), task_name="main", seed=0, measure=MEASURE)
    sch = ms.tir_integration.compile_tir(database, mod, TARGET)
    print(sch.trace)
    a, b = np.random.rand(128, 128).astype("float32"), np.random.rand(128, 128).astype("float32")
    c = np.zeros((128, 128), "float32")
    mlc.build(sch.mod)["main"](a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-4)
    print("auto-scheduled matmul equals NumPy")


@mlc.register_func("env.relu", override=True)
def env_relu(x: np.ndarray, out: np.ndarray) -> None:
    np.maximum(x, 0, out=out)


@mlc.register_func("env.linear", override=True)
def env_linear(x: np.ndarray, w: np.ndarray, b: np.ndarray, out: np.ndarray) -> None:
    np.matmul(x, w.T, out=out)
    np.add(out, b, out=out)


def mlp_mixture(params: dict[str, np.ndarray]) -> mlc.Module:
    """The course's MyModuleMixture (linear0 a tensor program) with the weights bound."""
    bb = BlockBuilder()
    x = Var("x", (1, 784), "float32")
    w0, b0 = Var("w0", (128, 784), "float32"), Var("b0", (128,), "float32")
    w1, b1 = Var("w1", (10, 128), "float32"), Var("b1", (10,), "float32")
    args = [te.placeholder(s, "float32", name=n) for s, n in [((1, 784), "X"), ((128, 784), "W"), ((128,), "B")]]
    bb.add_func(te.create_prim_func([*args, te_linear(*args)], name="linear0"), "linear0")
    with bb.function("main", params=[x, w0, b0, w1, b1]):
        with bb.dataflow():
            lv0 = bb.emit(op.call_tir("linear0", (x, w0, b0), (1, 128), "float32"))
            lv1 = bb.emit(op.call_dps_packed("env.relu", (lv0,), (1, 128), "float32"))
            out = bb.emit_output(op.call_dps_packed("env.linear", (lv1, w1, b1), (1, 10), "float32"))
        bb.emit_func_output(out)
    return mlc.graph.transform.BindParams("main", params)(bb.get())


def mlp_params() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    return {"w0": rng.standard_normal((128, 784)).astype("float32") * 0.05,
            "b0": rng.standard_normal(128).astype("float32"),
            "w1": rng.standard_normal((10, 128)).astype("float32") * 0.1,
            "b1": rng.standard_normal(10).astype("float32")}


def check_mlp(model: mlc.Module, params: dict[str, np.ndarray]) -> None:
    x = np.random.default_rng(1).standard_normal((1, 784)).astype("float32")
    ref = np.maximum(x @ params["w0"].T + params["b0"], 0) @ params["w1"].T + params["b1"]
    vm = mlc.graph.VirtualMachine(mlc.graph.build(model, target="llvm"), mlc.cpu())
    np.testing.assert_allclose(vm["main"](x).numpy(), ref, rtol=1e-4, atol=1e-4)


def part3_linear0(work: Path) -> None:
    params = mlp_params()
    model = mlp_mixture(params)
    mod_linear = mlc.Module.parse(model["linear0"].script()).with_attr("global_symbol", "main")
    database = ms.tune_tir(mod=mod_linear, target=TARGET, max_trials_global=8, num_trials_per_iter=4,
                           space=ms.space_generator.ScheduleFn(stochastic_schedule_linear),
                           work_dir=str(work / "linear0"), task_name="main", seed=0, measure=MEASURE)
    sch = ms.tir_integration.compile_tir(database, mod_linear, TARGET)
    print(sch.trace)
    new_func = sch.mod.with_attr("global_symbol", "linear0")
    model.update_func("linear0", new_func)
    check_mlp(model, params)
    print("MLP with the tuned linear0 swapped in equals NumPy")


def part4_tune_model(work: Path) -> None:
    params = mlp_params()
    tuned = mlc.tune.tune_model(mlp_mixture(params), TARGET, max_trials_global=8, work_dir=work / "model",
                                num_trials_per_iter=4, space=stochastic_schedule_linear, seed=0,
                                measure=MEASURE)
    check_mlp(tuned, params)
    kept = [f for f in tuned.functions if "mlc.tuned" in tuned[f].op.attributes]
    # (tune_model gives a kernel back to the default rules when the model runs faster without it:
    # the course's stochastic schedule of a linear layer usually is slower than the rules')
    print(f"tune_model: MLP with its tuned kernels equals NumPy ({len(kept)} kept tuned: {', '.join(kept) or 'none'})")


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="ch4_tune_") as tmp:
        work = Path(tmp)
        part1_tune_tir(work)
        part2_auto(work)
        part3_linear0(work)
        part4_tune_model(work)
    print("ch.4 tuning flows done")


if __name__ == "__main__":
    main()
