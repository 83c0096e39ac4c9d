"""Course ch.5: import PyTorch models (torch.fx and torch.export), build, run, compare.

A small MLP and a LeNet-style CNN are trained for a few steps on scikit-learn's bundled
8x8 digits, imported with ``mlc.frontend.from_fx`` (the course's way) and
``mlc.frontend.from_exported_program`` (PyTorch 2's way), compiled with
``mlc.graph.build`` and checked against torch eager. The course's own hand-written
translator (``map_matmul`` / ``map_relu`` with ``bb.emit_te``) is shown too.

Needs torch (``pip install mlc-mlir[torch]``). Run: python examples/ch5_pytorch_import.py
"""

import numpy as np
import torch
from sklearn.datasets import load_digits
from torch import fx, nn

import mlc_mlir as mlc
from mlc_mlir import graph as relax
from mlc_mlir import te


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.flat = nn.Flatten()
        self.fc0 = nn.Linear(64, 64)
        self.fc1 = nn.Linear(64, 10)

    def forward(self, x):
        return self.fc1(torch.relu(self.fc0(self.flat(x))))


class LeNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 8, 3)
        self.bn = nn.BatchNorm2d(8)
        self.pool = nn.MaxPool2d(2)
        self.fc = nn.Sequential(nn.Flatten(), nn.Linear(72, 32), nn.GELU(), nn.Linear(32, 10))

    def forward(self, x):
        return self.fc(self.pool(torch.relu(self.bn(self.conv(x)))))


def train(model, x, y, steps):
    torch.manual_seed(0)
    opt = torch.optim.Adam(model.parameters(), lr=0.02)
    for _ in range(steps):
        opt.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
    return model.eval()


def compiled(mod):
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), mlc.cpu())
    return vm["main"]


def check(name, mod, model, x, y):
    out = compiled(mod)(x.numpy()).numpy()
    ref = model(x).detach().numpy()
    acc = (out.argmax(1) == y.numpy()).mean()
    print(f"{name:34s} max |mlc - torch| = {np.abs(out - ref).max():.2e}  accuracy {acc:.2f}  "
          f"allclose: {np.allclose(out, ref, rtol=1e-4, atol=1e-4)}")


# -- the course's translator (5.3), for one matmul + relu model ----------------------------
class MyModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(128, 128))

    def forward(self, x):
        return torch.relu(torch.matmul(x, self.weight))


def te_matmul(A, B):
    k = te.reduce_axis((0, A.shape[1]), name="k")
    return te.compute((A.shape[0], B.shape[1]), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="matmul")


def te_relu(A):
    return te.compute(A.shape, lambda *i: te.max(A(*i), 0), name="relu")


def map_matmul(bb, node_map, node: fx.Node):
    return bb.emit_te(te_matmul, node_map[node.args[0]], node_map[node.args[1]])


def map_relu(bb, node_map, node: fx.Node):
    return bb.emit_te(te_relu, node_map[node.args[0]])


def main() -> None:
    digits = load_digits()
    x = torch.from_numpy((digits.images / 16.0).astype("float32")).reshape(-1, 1, 8, 8)
    y = torch.from_numpy(digits.target.astype("int64"))
    x_train, y_train, x_test, y_test = x[:1200], y[:1200], x[1200:1264], y[1200:1264]

    mlp = train(MLP(), x_train, y_train, steps=60)
    fx_module = fx.symbolic_trace(mlp)
    print(fx_module.graph)
    mod = mlc.frontend.from_fx(fx_module, input_shapes=[(64, 1, 8, 8)])
    mod.show()
    check("MLP   from_fx", mod, mlp, x_test, y_test)
    check("MLP   from_exported_program", mlc.frontend.from_exported_program(
        torch.export.export(mlp, (x_test,))), mlp, x_test, y_test)

    cnn = train(LeNet(), x_train, y_train, steps=30)
    check("LeNet from_fx", mlc.frontend.from_fx(fx.symbolic_trace(cnn), [(64, 1, 8, 8)]), cnn, x_test, y_test)
    check("LeNet from_exported_program", mlc.frontend.from_exported_program(
        torch.export.export(cnn, (x_test,))), cnn, x_test, y_test)

    model = MyModel()
    mod = mlc.frontend.from_fx(fx.symbolic_trace(model), [(1, 128)],
                               call_function_map={torch.matmul: map_matmul, torch.relu: map_relu})
    mod["main"].show()
    inp = torch.randn(1, 128)
    out = compiled(mod)(inp.numpy()).numpy()
    print("course translator maps allclose:", np.allclose(out, model(inp).detach().numpy(), rtol=1e-4, atol=1e-3))


if __name__ == "__main__":
    main()
