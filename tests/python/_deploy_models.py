"""Models of the deployment tests (test_deploy*.py, benchmarks/bench_deploy.py, examples/deploy_c):
the course MLP (784-128-10, graph ops, weights bound as constants) and a small CNN
(conv 3x3 -> +bias -> relu -> max_pool 2x2 -> flatten -> linear), with NumPy references."""

from __future__ import annotations

import numpy as np

import mlc_mlir as mlc
from mlc_mlir.graph import op


def mlp_params(din: int = 784, hidden: int = 128, classes: int = 10, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {"w0": rng.standard_normal((hidden, din), dtype="float32") / np.sqrt(din).astype("float32"),
            "b0": rng.standard_normal(hidden, dtype="float32"),
            "w1": rng.standard_normal((classes, hidden), dtype="float32") / np.sqrt(hidden).astype("float32"),
            "b1": rng.standard_normal(classes, dtype="float32")}


def mlp_module(p: dict[str, np.ndarray], batch: int | str = "n") -> mlc.Module:
    """The course's MLPModel: Linear-ReLU-Linear on graph ops, weights as constants."""
    bb = mlc.graph.BlockBuilder()
    x = mlc.graph.Var("x", (batch, p["w0"].shape[1]), "float32")
    w0, b0, w1, b1 = (mlc.graph.const(p[k]) for k in ("w0", "b0", "w1", "b1"))
    with bb.function("main", [x]):
        with bb.dataflow():
            lv0 = bb.emit(op.matmul(x, op.permute_dims(w0)))
            lv1 = bb.emit(op.relu(bb.emit(op.add(lv0, b0))))
            lv2 = bb.emit(op.matmul(lv1, op.permute_dims(w1)))
            gv = bb.emit_output(bb.emit(op.add(lv2, b1)))
        bb.emit_func_output(gv)
    return bb.get()


def mlp_reference(p: dict[str, np.ndarray], x: np.ndarray) -> np.ndarray:
    return np.maximum(x @ p["w0"].T + p["b0"], 0) @ p["w1"].T + p["b1"]


def cnn_params(seed: int = 1) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {"conv_w": rng.standard_normal((4, 1, 3, 3), dtype="float32") / 3,
            "conv_b": rng.standard_normal((1, 4, 1, 1), dtype="float32"),
            "fc_w": rng.standard_normal((10, 36), dtype="float32") / 6,
            "fc_b": rng.standard_normal(10, dtype="float32")}


def cnn_module(p: dict[str, np.ndarray]) -> mlc.Module:
    """x: (1, 1, 8, 8) -> conv (4, 6, 6) -> relu -> max_pool 2x2 (4, 3, 3) -> flatten 36 -> linear 10."""
    bb = mlc.graph.BlockBuilder()
    x = mlc.graph.Var("x", (1, 1, 8, 8), "float32")
    cw, cb, fw, fb = (mlc.graph.const(p[k]) for k in ("conv_w", "conv_b", "fc_w", "fc_b"))
    with bb.function("main", [x]):
        with bb.dataflow():
            lv0 = bb.emit(op.nn.conv2d(x, cw))
            lv1 = bb.emit(op.relu(bb.emit(op.add(lv0, cb))))
            lv2 = bb.emit(op.nn.max_pool2d(lv1, pool_size=(2, 2), strides=(2, 2)))
            lv3 = bb.emit(op.reshape(lv2, (1, 36)))
            gv = bb.emit_output(bb.emit(op.add(bb.emit(op.matmul(lv3, op.permute_dims(fw))), fb)))
        bb.emit_func_output(gv)
    return bb.get()


def cnn_reference(p: dict[str, np.ndarray], x: np.ndarray) -> np.ndarray:
    w = p["conv_w"]
    conv = np.zeros((1, 4, 6, 6), np.float32)
    for i in range(3):
        for j in range(3):
            conv += np.einsum("oc,ncij->noij", w[:, :, i, j], x[:, :, i:i + 6, j:j + 6])
    act = np.maximum(conv + p["conv_b"], 0)
    pooled = act.reshape(1, 4, 3, 2, 3, 2).max(axis=(3, 5))
    return pooled.reshape(1, 36) @ p["fc_w"].T + p["fc_b"]
