"""Fuzz cases, run inside the worker process (_fuzz_worker.py); arguments are JSON values.

Each case either succeeds with the right answer, raises an ``MlcError``, or raises
:class:`WrongResult`; any other exception is an escape the suite reports.
"""

from __future__ import annotations

import numpy as np

import mlc_mlir as mlc
from mlc_mlir import te
from mlc_mlir.graph import BlockBuilder, Var, op

__all__ = ["CASES", "WrongResult", "SEED_TEXTS", "PRIMITIVES", "GRAPH_OPS", "MISUSES", "TORCH_LAYERS"]


class WrongResult(Exception):
    """An accepted input computed a wrong answer."""


def _close(got, want, what: str) -> None:
    if not np.allclose(got, want, rtol=1e-4, atol=1e-4):
        raise WrongResult(f"{what}: max error {np.max(np.abs(np.asarray(got) - want))}")


# -- malformed text ------------------------------------------------------------------------
SEED_TEXTS = [
    """func.func @f(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> attributes {mlc.prim_func} {
  %r = linalg.copy ins(%a : tensor<4xf32>) outs(%b : tensor<4xf32>) -> tensor<4xf32>
  return %r : tensor<4xf32>
}""",
    """#m = affine_map<(d0, d1) -> (d1, d0)>
func.func @g(%x: memref<2x3xf32>) { %c0 = arith.constant 0 : index
  %v = memref.load %x[%c0, %c0] : memref<2x3xf32>
  scf.for %i = %c0 to %c0 step %c0 { scf.execute_region { scf.yield } }
  return }""",
    """module attributes {mlc.x = [1, [2, "s]"], {a = dense<[1.0, 2.0]> : tensor<2xf32>}]} {
  func.func private @ext(tensor<?xi1>) -> !llvm.ptr }""",
]


def parse_text(text: str) -> None:
    mod = mlc.Module.parse(text)
    str(mod)
    mod.clone()
    mod.functions


# -- random schedules ----------------------------------------------------------------------
PRIMITIVES = ["split", "split_sampled", "reorder", "fuse", "parallel", "vectorize", "unroll",
              "compute_at", "reverse_compute_at", "decompose_reduction", "perfect_tile", "cache_read",
              "cache_write", "peel", "rfactor"]
SCOPES = ["global", "shared", "local", "global.A_reg"]


def _program(kind: str):
    if kind.startswith("two_sums"):
        return _two_sums(*(int(v) for v in kind.split("_")[2:]))
    if kind.startswith("layer_norm"):
        return _layer_norm(*(int(v) for v in kind.split("_")[2:]))
    if kind == "mm_relu":
        A, B = te.placeholder((16, 12), name="A"), te.placeholder((12, 20), name="B")
        k = te.reduce_axis((0, 12), name="k")
        Y = te.compute((16, 20), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="Y")
        C = te.compute((16, 20), lambda i, j: te.max(Y[i, j], 0.0), name="C")
        rng = np.random.default_rng(0)
        a, b = rng.standard_normal((16, 12), dtype=np.float32), rng.standard_normal((12, 20), dtype=np.float32)
        return te.create_prim_func([A, B, C]), [a, b], np.maximum(a @ b, 0), ["Y", "C"]
    A = te.placeholder((8, 16), name="A")
    E = te.compute((8, 16), lambda i, k: A[i, k] * 2.0, name="E")
    k = te.reduce_axis((0, 16), name="k")
    S = te.compute((8,), lambda i: te.sum(E[i, k], axis=k), name="S")
    C = te.compute((8, 16), lambda i, j: E[i, j] / S[i], name="C")
    a = np.random.default_rng(1).uniform(1, 2, (8, 16)).astype(np.float32)
    return te.create_prim_func([A, C]), [a], (2 * a) / (2 * a).sum(1, keepdims=True), ["E", "S", "C"]


def _two_sums(rows: int = 3, k: int = 16):
    """LayerNorm's two row reductions (sum, sum of squares) of one input, then their sum."""
    A = te.placeholder((rows, k), name="A")
    k1, k2 = te.reduce_axis((0, k), name="k1"), te.reduce_axis((0, k), name="k2")
    S1 = te.compute((rows,), lambda i: te.sum(A[i, k1], axis=k1), name="S1")
    S2 = te.compute((rows,), lambda i: te.sum(A[i, k2] * A[i, k2], axis=k2), name="S2")
    C = te.compute((rows,), lambda i: S1[i] + S2[i], name="C")
    a = np.random.default_rng(3).standard_normal((rows, k)).astype(np.float32)
    return te.create_prim_func([A, C]), [a], a.sum(1) + (a * a).sum(1), ["S1", "S2", "C"]


def _layer_norm(rows: int = 4, k: int = 8):
    """``topi.nn.layer_norm`` over the last dim (gamma and beta folded in as 1 and 0)."""
    from mlc_mlir import topi

    A = te.placeholder((rows, k), name="A")
    g, b = te.placeholder((k,), name="g"), te.placeholder((k,), name="b")
    Y = topi.nn.layer_norm(A, g, b, epsilon=1e-5)
    a = np.random.default_rng(4).standard_normal((rows, k)).astype(np.float32)
    gv = np.random.default_rng(5).uniform(0.5, 1.5, k).astype(np.float32)
    bv = np.random.default_rng(6).uniform(-1, 1, k).astype(np.float32)
    want = (a - a.mean(1, keepdims=True)) / np.sqrt(a.var(1, keepdims=True) + 1e-5) * gv + bv
    return te.create_prim_func([A, g, b, Y]), [a, gv, bv], want, ["sum", "centered", "sumsq", "layer_norm"]


def _rfactor_rows(sch, blocks: list[str], block, loops, y: int, z: int) -> None:
    """The default rules' reduction recipe: k split by lanes, ``rfactor``, the partial sums'
    rows split and (with odd ``z``) unrolled, the lanes vectorized."""
    lanes = (2, 4, 8)[y % 3]
    _, k1 = sch.split(loops[-1], [None, lanes])
    rf = sch.rfactor(k1)
    blocks.append(rf.name)
    rf_loops = sch.get_loops(rf)
    if len(rf_loops) < 3:
        return
    i0, i1 = sch.split(rf_loops[0], [None, (1, 2, 3, 4)[(z // 2) % 4]])
    sch.reorder(i0, *rf_loops[1:-1], i1, rf_loops[-1])
    sch.vectorize(rf_loops[-1])
    if z % 2:
        sch.unroll(i1)


def _step(sch, blocks: list[str], prim: str, x: int, y: int, z: int) -> None:
    block = sch.get_block(blocks[x % len(blocks)])
    loops = sch.get_loops(block)
    if not loops and prim not in ("compute_at", "reverse_compute_at"):
        return
    loop = loops[y % len(loops)] if loops else None
    factors = [None, 1, 2, 3, 4, 5, 8, 16]
    if prim == "split":
        sch.split(loop, [factors[z % 8], factors[(z // 8) % 8]] + ([factors[(z // 64) % 8]] if z % 3 == 0 else []))
    elif prim == "split_sampled":
        sch.split(loop, [None, sch.sample_categorical([z % 7 - 2], [1.0])])
    elif prim == "perfect_tile":
        sch.split(loop, sch.sample_perfect_tile(loop, n=2 + z % 2, max_innermost_factor=1 + z % 8))
    elif prim == "reorder":
        order = sorted(range(len(loops)), key=lambda i: (i * 7919 + z) % 11)
        sch.reorder(*[loops[i] for i in order])
    elif prim == "fuse":
        sch.fuse(*loops[y % len(loops):y % len(loops) + 1 + z % 2])
    elif prim == "rfactor":
        _rfactor_rows(sch, blocks, block, loops, y, z)
    elif prim in ("parallel", "vectorize", "unroll", "peel"):
        getattr(sch, prim)(loop)
    elif prim == "decompose_reduction":
        sch.decompose_reduction(block, loop)
    elif prim == "cache_read":
        sch.cache_read(block, z % 3, SCOPES[y % len(SCOPES)])
    elif prim == "cache_write":
        sch.cache_write(block, z % 2, SCOPES[y % len(SCOPES)])
    else:
        other = sch.get_block(blocks[z % len(blocks)])
        other_loops = sch.get_loops(other)
        if other_loops:
            getattr(sch, prim)(block, other_loops[y % len(other_loops)])


def schedule(program: str, steps: list[list]) -> None:
    mod, inputs, want, blocks = _program(program)
    sch = mlc.Schedule(mod, seed=0)
    for prim, x, y, z in steps:
        try:
            _step(sch, blocks, PRIMITIVES[prim % len(PRIMITIVES)], x, y, z)
        except mlc.ScheduleError:
            pass
    out = np.zeros_like(want)
    mlc.build(sch.mod)["main"](*inputs, out)
    _close(out, want, f"schedule {sch.trace}")
    replayed = sch.trace.apply(mod)
    if str(replayed.mod) != str(sch.mod):
        raise WrongResult(f"replaying the trace gives other IR:\n{sch.trace}")


def rules(program: str, picks: list[int], cores: int) -> None:
    """The default rules with the decisions ``picks`` (cycled over the decisions in the
    order the rules reach them; each taken modulo the number of options) on ``cores`` cores."""
    mod, inputs, want, _ = _program(program)
    sch = mlc.Schedule(mod, seed=0)
    mlc.schedule.rules.apply_rules(sch, f"llvm -mcpu=haswell -num-cores={cores}",
                                   decide=lambda d: picks[d.site % len(picks)] % len(d.options) if picks else None)
    out = np.zeros_like(want)
    mlc.build(sch.mod, target=f"llvm -num-cores={cores}")["main"](*inputs, out)
    _close(out, want, f"rules {program} {picks} on {cores} cores: {sch.trace}")


# -- random graphs -------------------------------------------------------------------------
GRAPH_OPS = ["relu", "add", "multiply", "subtract", "matmul", "softmax", "ewise_fma", "permute2", "divide"]


def graph(ops: list[int], opt_level: int) -> None:
    rng = np.random.default_rng(2)
    x, y = rng.standard_normal((4, 8), dtype=np.float32), rng.uniform(1, 2, (4, 8)).astype(np.float32)
    w = rng.standard_normal((8, 8), dtype=np.float32) / 4
    params = [Var("x", (4, 8), "float32"), Var("y", (4, 8), "float32"), Var("w", (8, 8), "float32")]
    bb = BlockBuilder()
    ref = x
    with bb.function("main", params):
        px, py, pw = params
        with bb.dataflow():
            v = px
            for i in ops:
                name = GRAPH_OPS[i % len(GRAPH_OPS)]
                v, ref = _graph_op(bb, name, v, py, pw, ref, y, w)
            out = bb.emit_output(v)
        bb.emit_func_output(out)
    vm = mlc.graph.VirtualMachine(mlc.graph.build(bb.get(), opt_level=opt_level), mlc.cpu())
    _close(vm["main"](x, y, w).numpy(), ref, f"graph {[GRAPH_OPS[i % len(GRAPH_OPS)] for i in ops]} O{opt_level}")


def _graph_op(bb, name, v, py, pw, ref, y, w):
    if name == "relu":
        return bb.emit(op.relu(v)), np.maximum(ref, 0)
    if name in ("add", "multiply", "subtract", "divide"):
        fn = {"add": np.add, "multiply": np.multiply, "subtract": np.subtract, "divide": np.divide}[name]
        return bb.emit(getattr(op, name)(v, py)), fn(ref, y)
    if name == "matmul":
        return bb.emit(op.matmul(v, pw)), ref @ w
    if name == "softmax":
        e = np.exp(ref - ref.max(1, keepdims=True))
        return bb.emit(op.softmax(v, axis=1)), e / e.sum(1, keepdims=True)
    if name == "ewise_fma":
        return bb.emit(op.ewise_fma(v, py, v)), ref * y + ref
    t = bb.emit(op.permute_dims(v))
    return bb.emit(op.permute_dims(t)), ref


# -- random torch models -------------------------------------------------------------------
TORCH_LAYERS = ["linear", "relu", "gelu", "layer_norm", "softmax", "sigmoid", "tanh"]


def torch_model(layers: list[int], batch: int, width: int, opt_level: int, frontend: str) -> None:
    """A random stack of torch layers (seeded weights, eval mode) imported with ``frontend``
    (``fx`` or ``export``), built at ``opt_level``, against torch eager."""
    import torch
    from torch import fx, nn

    torch.manual_seed(len(layers) * 31 + width)
    mods, d = [], width
    for i in layers:
        name = TORCH_LAYERS[i % len(TORCH_LAYERS)]
        if name == "linear":
            mods.append(nn.Linear(d, d + 8))
            d += 8
        elif name == "layer_norm":
            mods.append(nn.LayerNorm(d, eps=1e-5 * (1 + i)))
            with torch.no_grad():
                mods[-1].weight.uniform_(0.5, 1.5)
                mods[-1].bias.uniform_(-1, 1)
        else:
            mods.append({"relu": nn.ReLU, "gelu": nn.GELU, "softmax": lambda: nn.Softmax(-1),
                         "sigmoid": nn.Sigmoid, "tanh": nn.Tanh}[name]())
    model = nn.Sequential(*mods).eval()
    x = np.random.default_rng(batch).standard_normal((batch, width)).astype(np.float32)
    if frontend == "fx":
        mod = mlc.frontend.from_fx(fx.symbolic_trace(model), [(batch, width)])
    else:
        mod = mlc.frontend.from_exported_program(torch.export.export(model, (torch.from_numpy(x),)))
    vm = mlc.graph.VirtualMachine(mlc.graph.build(mod, opt_level=opt_level), mlc.cpu())
    with torch.no_grad():
        want = model(torch.from_numpy(x)).numpy()
    _close(vm["main"](x).numpy(), want, f"torch {[TORCH_LAYERS[i % len(TORCH_LAYERS)] for i in layers]} "
                                        f"batch {batch} width {width} O{opt_level} {frontend}")


# -- runtime misuse --------------------------------------------------------------------------
MISUSES = ["few_args", "many_args", "float64", "int32", "shape", "rank", "list", "none", "string",
           "strided", "fortran", "zero_d", "symbolic_mismatch", "empty", "scalar", "bad_name", "readonly"]

_KERNELS: dict[str, object] = {}


def _kernel():
    if "rt" not in _KERNELS:
        n = te.var("n")
        A = te.placeholder((n, 6), name="A")
        B = te.compute((n, 6), lambda i, j: A[i, j] * 2.0 + 1.0, name="B")
        _KERNELS["rt"] = mlc.build(te.create_prim_func([A, B]))
    return _KERNELS["rt"]


def runtime_misuse(kind: str, rows: int) -> None:
    rt = _kernel()
    a = np.arange(rows * 6, dtype=np.float32).reshape(rows, 6)
    b = np.zeros_like(a)
    args = {
        "few_args": (a,), "many_args": (a, b, b), "float64": (a.astype(np.float64), b),
        "int32": (a, b.astype(np.int32)), "shape": (a, np.zeros((rows, 7), np.float32)),
        "rank": (a.ravel(), b), "list": (a.tolist(), b), "none": (None, b), "string": ("a", b),
        "strided": (np.zeros((rows, 12), np.float32)[:, ::2], b), "fortran": (np.asfortranarray(a), b),
        "zero_d": (np.float32(1.0), b), "symbolic_mismatch": (a, np.zeros((rows + 1, 6), np.float32)),
        "empty": (a[:0], b[:0]), "scalar": (a, 3.0), "bad_name": None, "readonly": (a, b),
    }[kind]
    if kind == "readonly":
        b.setflags(write=False)
    if args is None:
        rt["no_such_function"]
        return
    rt["main"](*args)
    if kind == "readonly":
        raise WrongResult("a read-only output array was accepted (and written)")
    src = np.asarray(args[0], dtype=np.float32)
    _close(args[1], src * 2 + 1, f"runtime {kind}")


CASES = {"parse_text": parse_text, "schedule": schedule, "rules": rules, "torch_model": torch_model, "graph": graph, "runtime_misuse": runtime_misuse}
