"""Fusion numerics on seeded random graphs: unfused == FuseOps/FuseTIR == NumPy.

Each graph mixes elementwise, broadcast, matmul and data-movement ops, reuses values
(shared producers), exposes an intermediate as a second output, and sometimes spans
two dataflow blocks or a symbolic batch. Besides the numbers, the structure after
FuseOps is checked: every op appears exactly once (nothing duplicated), and inside a
primitive function every value but the result has exactly one user.
"""

from __future__ import annotations

import numpy as np
import pytest

import mlc_mlir as mlc
from mlc_mlir.graph import BlockBuilder, Var, op
from mlc_mlir.graph.ir.analysis import graph_functions, is_primitive, walk_ops
from mlc_mlir.graph.transform.outline import users
from mlc_mlir.graph.transform import FuseOps, FuseTIR, LegalizeOps

ROWS, COLS = 3, (4, 6)


class _Gen:
    """A random graph and its NumPy evaluation, built op by op."""

    def __init__(self, seed: int):
        self.rng = np.random.default_rng(seed)
        self.symbolic = seed % 3 == 0
        self.params: list[Var] = []
        self.arrays: list[np.ndarray] = []
        self.env: dict[int, np.ndarray] = {}

    def param(self, shape: tuple, sym_shape: tuple | None = None) -> Var:
        v = Var(f"p{len(self.params)}", sym_shape or shape, "float32")
        a = self.rng.uniform(-1, 1, shape).astype("float32")
        self.params.append(v)
        self.arrays.append(a)
        self.env[id(v)] = a
        return v

    def matrix(self, cols: int) -> Var:
        return self.param((ROWS, cols), ("n", cols) if self.symbolic else None)

    def step(self, bb: BlockBuilder, pool: list[Var]) -> Var:
        """Emit one random op on values of ``pool`` (recent ones preferred: shared producers)."""
        rng = self.rng
        a = pool[-1 - int(rng.integers(0, min(3, len(pool))))]
        cols = a.shape[-1]
        same = [v for v in pool if v.shape == a.shape]
        b = same[int(rng.integers(0, len(same)))]
        kind = rng.choice(["add", "subtract", "multiply", "relu", "fma", "bias", "matmul", "matmul_t"])
        ea = self.env[id(a)]
        if kind in ("add", "subtract", "multiply"):
            expr, ref = getattr(op, kind)(a, b), {"add": np.add, "subtract": np.subtract,
                                                  "multiply": np.multiply}[kind](ea, self.env[id(b)])
        elif kind == "relu":
            expr, ref = op.relu(a), np.maximum(ea, 0)
        elif kind == "fma":
            expr, ref = op.ewise_fma(a, b, a), ea * self.env[id(b)] + ea
        elif kind == "bias":
            c = self.param((cols,))
            expr, ref = op.add(a, c), ea + self.env[id(c)]
        else:
            out = int(rng.choice(COLS))
            if kind == "matmul":
                w = self.param((cols, out))
                expr, ref = op.matmul(a, w), ea @ self.env[id(w)]
            else:
                w = self.param((out, cols))
                expr, ref = op.matmul(a, op.permute_dims(w)), ea @ self.env[id(w)].T
            ref = ref / cols  # keep magnitudes near 1
            expr = op.multiply(expr, mlc.graph.const(np.float32(1.0 / cols)))
        v = bb.emit(expr)
        self.env[id(v)] = ref.astype("float32")
        return v


def random_graph(seed: int) -> tuple[mlc.Module, list[np.ndarray], list[np.ndarray]]:
    """(module, inputs, NumPy outputs) of random graph number ``seed``."""
    g = _Gen(seed)
    bb = BlockBuilder()
    x = g.matrix(COLS[0])
    two_blocks = seed % 2 == 1
    outs = []
    with bb.function("main", None):
        pool = [x]
        for block in range(2 if two_blocks else 1):
            with bb.dataflow():
                pool = list(pool)
                for _ in range(int(g.rng.integers(4, 9))):
                    pool.append(g.step(bb, pool))
                side = pool[len(pool) // 2]
                gv_side = bb.emit_output(side)
                gv = bb.emit_output(pool[-1])
            g.env[id(gv_side)], g.env[id(gv)] = g.env[id(side)], g.env[id(pool[-1])]
            outs.append(gv_side)
            pool = [gv, gv_side]
        outs.append(gv)
        bb.emit_func_output(outs, params=g.params)
    return bb.get(), g.arrays, [g.env[id(o)] for o in outs]


def run(mod: mlc.Module, arrays: list[np.ndarray], **kw) -> list[np.ndarray]:
    out = mlc.graph.VirtualMachine(mlc.graph.build(mod, **kw), mlc.cpu())["main"](*arrays)
    return [o.numpy() for o in (out if isinstance(out, tuple) else (out,))]


def _op_count(mod: mlc.Module) -> int:
    return sum(1 for f in graph_functions(mod.mlir_module) for o in walk_ops(f)
               if o.name.startswith("mlc.") and o.name[4:] not in ("dataflow", "output", "constant"))


@pytest.mark.parametrize("seed", range(12))
def test_random_graph_fused_matches_unfused_and_numpy(seed):
    mod, arrays, refs = random_graph(seed)
    unfused = run(mod, arrays, opt_level=0)
    fused = run(mod, arrays, opt_level=1)
    rewritten = run(mod, arrays, opt_level=2)
    for u, f, r, ref in zip(unfused, fused, rewritten, refs):
        np.testing.assert_allclose(u, ref, rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(f, ref, rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(r, ref, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("seed", range(12))
def test_random_graph_fusion_structure(seed):
    mod, _, _ = random_graph(seed)
    fused = FuseOps()(mod)
    assert _op_count(fused) == _op_count(mod), "an op was duplicated or lost by FuseOps"
    for fop in graph_functions(fused.mlir_module):
        if not is_primitive(fop):
            continue
        ops = [o for o in walk_ops(fop) if o.name.startswith("mlc.")]
        assert len(ops) >= 2
        for o in ops[:-1]:
            assert len(users(o.results[0])) == 1, f"{o.name} in a group has several users"
    tir = FuseTIR()(LegalizeOps()(fused))
    kernels = mlc.graph.count_kernels(tir)
    assert kernels <= mlc.graph.count_kernels(LegalizeOps()(mod))
    for name in tir.functions:
        fop = tir[name].op
        if "mlc.prim_func" in fop.attributes:
            blocks = [str(o.attributes["mlc.block"]) for o in walk_ops(fop) if "mlc.block" in o.attributes]
            assert len(blocks) == len(set(blocks)), f"duplicate block names in @{name}: {blocks}"


def test_shared_producer_is_computed_once():
    """``a = x + y`` feeds two chains: it is its own kernel, each chain fuses after it."""
    x, y = Var("x", (4, 4)), Var("y", (4, 4))
    bb = BlockBuilder()
    with bb.function("main", [x, y]):
        with bb.dataflow():
            a = bb.emit(op.add(x, y))
            b = bb.emit(op.relu(op.multiply(a, x)))
            c = bb.emit(op.relu(op.subtract(a, y)))
            gv = bb.emit_output(op.add(b, c))
        bb.emit_func_output(gv)
    mod = bb.get()
    fused = FuseTIR()(LegalizeOps()(FuseOps()(mod)))
    # add(a) alone; {multiply, relu}, {subtract, relu} and the final add fuse into one group
    assert mlc.graph.count_kernels(fused) == 2
    main = fused["main"].op
    calls = [o for o in walk_ops(main) if o.name == "mlc.call_tir"]
    assert str(calls[0].attributes["callee"]).startswith("@add")  # the shared add, on its own
    rng = np.random.default_rng(1)
    xa, ya = rng.standard_normal((4, 4)).astype("float32"), rng.standard_normal((4, 4)).astype("float32")
    want = np.maximum((xa + ya) * xa, 0) + np.maximum(xa + ya - ya, 0)
    (out,) = run(fused, [xa, ya], opt_level=0)
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)
