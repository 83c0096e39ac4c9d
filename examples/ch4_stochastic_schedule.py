"""Course ch.4: a stochastic schedule (sample_perfect_tile), its trace with decisions,
and a random search over 5 trials keeping the fastest.

Run: python examples/ch4_stochastic_schedule.py
"""

import numpy as np

import mlc_mlir as mlc

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


def random_search(mod: mlc.Module, args, num_trials: int = 5, seed: int = 0) -> mlc.Schedule:
    best_result, best_sch = None, None
    for i in range(num_trials):
        sch = stochastic_schedule_mm(mlc.Schedule(mod, seed=seed + i))
        lib = mlc.build(sch.mod, target="llvm")
        result = lib.time_evaluator("main", number=10, repeat=2)(*args).mean
        print("=====Attempt %d, time-cost: %.3f ms====" % (i, result * 1000))
        print(sch.trace)
        if best_result is None or result < best_result:
            best_result, best_sch = result, sch
    if best_sch is None:
        raise ValueError(f"num_trials must be at least 1, got {num_trials}")
    return best_sch


def main() -> None:
    mod = mlc.Module.parse(MY_MODULE)
    a = np.random.rand(128, 128).astype("float32")
    b = np.random.rand(128, 128).astype("float32")
    c = np.empty((128, 128), dtype="float32")

    lib = mlc.build(mod, target="llvm")
    print("Time cost of MyModule: %.3f ms" % (lib.time_evaluator("main", number=10)(a, b, c).mean * 1000))

    sch = stochastic_schedule_mm(mlc.Schedule(mod, seed=1))
    print(sch.trace)
    print(sch.mod)

    best = random_search(mod, (a, b, c))
    print("best trace:")
    print(best.trace)
    mlc.build(best.mod, target="llvm")["main"](a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-4)
    # the trace replays (same decisions -> same program) and is a transform script too
    assert str(best.trace.apply(mod).mod) == str(best.mod)
    assert str(mlc.schedule.apply_transform_script(mod, best.trace.transform_script())) == str(best.mod)
    print("replayed trace and transform script give the same program")


if __name__ == "__main__":
    main()
