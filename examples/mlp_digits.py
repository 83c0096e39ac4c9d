"""End-to-end model execution (MLC course ch.3) on real data: an MLP on scikit-learn digits.

1. Train a 2-layer MLP (64 -> 128 -> 10) with NumPy on ``sklearn.datasets.load_digits``.
2. Write the model five ways and run the whole test split through each: the course's four,
   (a) tensor programs only: ``call_tir`` of ``linear0`` / ``relu0`` / ``linear1`` built with te;
   (b) environment functions only: ``call_dps_packed("env.linear")`` / ``"env.relu"``;
   (c) a mixture of both;
   (d) the mixture after ``BindParams``: ``vm["main"](x)`` takes only the data;
   and (e) high-level graph ops (``matmul``, ``add``, ``relu``) legalized to tensor programs.
3. Each must predict exactly like the NumPy reference (same argmax on every sample,
   logits allclose).
4. Graph optimization (course ch.7, ``examples/mlp_fusion.py``): the model's graph ops
   fused (FuseDenseAddPass, FuseOps -> LegalizeOps -> FuseTIR) into fewer kernels, which
   must predict the same.

Run: ``python examples/mlp_digits.py`` (``make demo``).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable

import numpy as np

import mlc_mlir as mlc
from mlc_mlir import te
from mlc_mlir.graph import BlockBuilder, Var, op

HIDDEN = 128
SEED = 0


# -- data and training (NumPy) -----------------------------------------------------------
def load_data() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Digits 8x8 images as float32 in [0, 1], split 80/20 with a fixed permutation."""
    from sklearn.datasets import load_digits

    digits = load_digits()
    x = (digits.data / 16.0).astype(np.float32)
    y = digits.target.astype(np.int64)
    perm = np.random.default_rng(SEED).permutation(len(x))
    n_train = int(0.8 * len(x))
    tr, ts = perm[:n_train], perm[n_train:]
    return x[tr], y[tr], x[ts], y[ts]


def numpy_mlp(x: np.ndarray, w0: np.ndarray, b0: np.ndarray, w1: np.ndarray, b1: np.ndarray) -> np.ndarray:
    """The course's reference: ``relu(x @ w0.T + b0) @ w1.T + b1`` (the logits)."""
    return np.maximum(x @ w0.T + b0, 0) @ w1.T + b1


def train_mlp(x: np.ndarray, y: np.ndarray, *, epochs: int = 25, lr: float = 0.1,
              batch: int = 64) -> dict[str, np.ndarray]:
    """Mini-batch SGD with momentum on the softmax cross-entropy; returns float32 weights."""
    rng = np.random.default_rng(SEED)
    params = {"w0": rng.standard_normal((HIDDEN, 64)) * np.sqrt(2 / 64), "b0": np.zeros(HIDDEN),
              "w1": rng.standard_normal((10, HIDDEN)) * np.sqrt(2 / HIDDEN), "b1": np.zeros(10)}
    velocity = {k: np.zeros_like(v) for k, v in params.items()}
    onehot = np.eye(10)[y]
    for _ in range(epochs):
        order = rng.permutation(len(x))
        for s in range(0, len(x), batch):
            idx = order[s:s + batch]
            xb, tb = x[idx].astype(np.float64), onehot[idx]
            h_pre = xb @ params["w0"].T + params["b0"]
            h = np.maximum(h_pre, 0)
            logits = h @ params["w1"].T + params["b1"]
            p = np.exp(logits - logits.max(1, keepdims=True))
            p /= p.sum(1, keepdims=True)
            d_logits = (p - tb) / len(idx)
            d_h = d_logits @ params["w1"] * (h_pre > 0)
            grads = {"w1": d_logits.T @ h, "b1": d_logits.sum(0), "w0": d_h.T @ xb, "b0": d_h.sum(0)}
            for k in params:
                velocity[k] = 0.9 * velocity[k] - lr * grads[k]
                params[k] += velocity[k]
    return {k: v.astype(np.float32) for k, v in params.items()}


# -- tensor programs (te) ----------------------------------------------------------------
def te_linear(x: te.Tensor, w: te.Tensor, b: te.Tensor) -> te.Tensor:
    """``Z = X @ W.T + B`` as two computes, blocks "Y" and "Z" (course linear0)."""
    k = te.reduce_axis((0, x.shape[1]), "k")
    y = te.compute((x.shape[0], w.shape[0]), lambda i, j: te.sum(x[i, k] * w[j, k], axis=k), name="Y")
    return te.compute(y.shape, lambda i, j: y[i, j] + b[j], name="Z")


def te_relu(x: te.Tensor) -> te.Tensor:
    """``max(x, 0)`` (course relu0)."""
    return te.compute(x.shape, lambda i, j: te.max(x[i, j], 0), name="Y")


def tensor_programs() -> mlc.Module:
    """A module holding linear0, relu0 and linear1 for a symbolic batch ``n``."""
    bb = BlockBuilder()
    programs: list[tuple[str, Callable[..., te.Tensor], list[tuple[int | str, ...]]]] = [
        ("linear0", te_linear, [("n", 64), (HIDDEN, 64), (HIDDEN,)]),
        ("relu0", te_relu, [("n", HIDDEN)]),
        ("linear1", te_linear, [("n", HIDDEN), (10, HIDDEN), (10,)])]
    for name, fn, shapes in programs:
        args = [te.placeholder(s, "float32", name=n) for s, n in zip(shapes, "XWB")]
        bb.add_func(te.create_prim_func([*args, fn(*args)], name=name), name)
    return bb.get()


# -- environment functions ---------------------------------------------------------------
@mlc.register_func("env.linear", override=True)
def env_linear(x: np.ndarray, w: np.ndarray, b: np.ndarray, out: np.ndarray) -> None:
    """Destination-passing linear layer on zero-copy NumPy views (torch.from_dlpack works too)."""
    np.matmul(x, w.T, out=out)
    np.add(out, b, out=out)


@mlc.register_func("env.relu", override=True)
def env_relu(x: np.ndarray, out: np.ndarray) -> None:
    """Destination-passing ReLU."""
    np.maximum(x, 0, out=out)


# -- the graph functions -----------------------------------------------------------------
def build_mlp(kinds: tuple[str, str, str], base: mlc.Module | None = None) -> mlc.Module:
    """``main(x, w0, b0, w1, b1)``: each layer is ``"tir"`` (call_tir) or ``"env"`` (call_dps_packed)."""
    bb = BlockBuilder(base.clone() if base is not None else None)
    x = Var("x", ("n", 64), "float32")
    w0, b0 = Var("w0", (HIDDEN, 64), "float32"), Var("b0", (HIDDEN,), "float32")
    w1, b1 = Var("w1", (10, HIDDEN), "float32"), Var("b1", (10,), "float32")
    layers = [("linear0", "env.linear", [w0, b0], ("n", HIDDEN)),
              ("relu0", "env.relu", [], ("n", HIDDEN)),
              ("linear1", "env.linear", [w1, b1], ("n", 10))]
    with bb.function("main", params=[x, w0, b0, w1, b1]):
        with bb.dataflow():
            h = x
            for kind, (tir, env, extra, shape) in zip(kinds, layers):
                call = (op.call_tir(tir, (h, *extra), shape, "float32") if kind == "tir"
                        else op.call_dps_packed(env, (h, *extra), shape, "float32"))
                h = bb.emit(call)
            out = bb.emit_output(h)
        bb.emit_func_output(out)
    return bb.get()


def build_mlp_ops() -> mlc.Module:
    """The same model with high-level graph ops (course ch.7), legalized at build time."""
    bb = BlockBuilder()
    x = Var("x", ("n", 64), "float32")
    w0, b0 = Var("w0", (HIDDEN, 64), "float32"), Var("b0", (HIDDEN,), "float32")
    w1, b1 = Var("w1", (10, HIDDEN), "float32"), Var("b1", (10,), "float32")
    with bb.function("main", params=[x, w0, b0, w1, b1]):
        with bb.dataflow():
            lv0 = bb.emit(op.add(op.matmul(x, op.permute_dims(w0)), b0))
            lv1 = bb.emit(op.relu(lv0))
            out = bb.emit_output(op.add(op.matmul(lv1, op.permute_dims(w1)), b1))
        bb.emit_func_output(out)
    return bb.get()


def run_variant(title: str, mod: mlc.Module, args: list[np.ndarray], ref: np.ndarray,
                y: np.ndarray) -> float:
    """Build ``mod``, run ``main`` on ``args``, check against ``ref``; returns the accuracy."""
    t0 = time.perf_counter()
    vm = mlc.graph.VirtualMachine(mlc.graph.build(mod, target="llvm"), mlc.cpu())
    logits = vm["main"](*args).numpy()
    dt = time.perf_counter() - t0
    same = bool(np.array_equal(logits.argmax(1), ref.argmax(1)))
    close = bool(np.allclose(logits, ref, rtol=1e-4, atol=1e-4))
    acc = float((logits.argmax(1) == y).mean())
    print(f"  {title:<48} accuracy {acc:6.2%}   argmax == NumPy: {same}   logits allclose: {close}"
          f"   ({dt:.2f}s build+run)")
    if not (same and close):
        raise SystemExit(f"{title}: the compiled model disagrees with the NumPy reference")
    return acc


def main() -> int:
    """Train, then check the five variants (the course's four and legalized graph ops) on the test split."""
    t0 = time.perf_counter()
    x_train, y_train, x_test, y_test = load_data()
    params = train_mlp(x_train, y_train)
    ref = numpy_mlp(x_test, params["w0"], params["b0"], params["w1"], params["b1"])
    print(f"MLP 64 -> {HIDDEN} -> 10 trained with NumPy on {len(x_train)} digits in "
          f"{time.perf_counter() - t0:.1f}s; test accuracy (NumPy) {(ref.argmax(1) == y_test).mean():.2%} "
          f"on {len(x_test)} digits")
    weights = [params[k] for k in ("w0", "b0", "w1", "b1")]
    programs = tensor_programs()
    print("Inference on the whole test split, five ways (batch n = %d, one call each):" % len(x_test))
    run_variant("(a) tensor programs only (call_tir)", build_mlp(("tir", "tir", "tir"), programs),
                [x_test, *weights], ref, y_test)
    run_variant("(b) environment functions only (env.*)", build_mlp(("env", "env", "env")),
                [x_test, *weights], ref, y_test)
    mixture = build_mlp(("tir", "env", "env"), programs)
    run_variant("(c) mixture: linear0 call_tir, env.relu/linear", mixture, [x_test, *weights], ref, y_test)
    bound = mlc.graph.transform.BindParams("main", params)(mixture)
    run_variant("(d) mixture after BindParams: vm['main'](x)", bound, [x_test], ref, y_test)
    print(f"      after BindParams: {bound['main']!r} (weights in dense_resource blobs)")
    run_variant("(e) graph ops (matmul/add/relu), legalized", build_mlp_ops(), [x_test, *weights], ref, y_test)
    print("Graph optimization (course ch.7; examples/mlp_fusion.py): the graph-op model with bound weights")
    import mlp_fusion  # examples/mlp_fusion.py, beside this script

    mlp_fusion.fusion_section(params, x_test, y_test, ref)
    print(f"All variants agree with NumPy on every test sample ({time.perf_counter() - t0:.1f}s in total).")
    return 0


if __name__ == "__main__":
    sys.exit(main())
