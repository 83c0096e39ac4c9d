"""Course ch.5: PyTorch models imported with from_fx / from_exported_program, built with
graph.build and run on the VM, compared with torch eager (models trained briefly on
scikit-learn's bundled 8x8 digits)."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")
from torch import fx, nn  # noqa: E402

import mlc_mlir as mlc  # noqa: E402
from mlc_mlir import graph as relax  # noqa: E402
from mlc_mlir import te  # noqa: E402


def digits():
    from sklearn.datasets import load_digits

    data = load_digits()
    x = (data.images / 16.0).astype("float32")
    return x, data.target.astype("int64")


def train(model, x, y, steps=40):
    torch.manual_seed(0)
    opt = torch.optim.Adam(model.parameters(), lr=0.02)
    xt, yt = torch.from_numpy(x[:600]), torch.from_numpy(y[:600])
    for _ in range(steps):
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(xt), yt)
        loss.backward()
        opt.step()
    return model.eval()


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc0 = nn.Linear(64, 32)
        self.act = nn.GELU()
        self.fc1 = nn.Linear(32, 10)

    def forward(self, x):
        x = torch.flatten(x, 1)
        x = self.act(self.fc0(x))
        return torch.sigmoid(self.fc1(x)) * 10.0 - 5.0


class LeNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 6, 3)
        self.bn = nn.BatchNorm2d(6)
        self.pool = nn.MaxPool2d(2)
        self.flat = nn.Flatten()
        self.fc0 = nn.Linear(54, 32)
        self.norm = nn.LayerNorm(32)
        self.fc1 = nn.Linear(32, 10)
        self.softmax = nn.Softmax(dim=-1)

    def forward(self, x):
        x = self.pool(nn.functional.relu(self.bn(self.conv(x))))
        x = torch.tanh(self.norm(self.fc0(self.flat(x))))
        return self.softmax(self.fc1(x))


def run(mod, *args):
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), mlc.cpu())
    return vm["main"](*args).numpy()


@pytest.fixture(scope="module")
def data():
    return digits()


@pytest.fixture(scope="module")
def mlp(data):
    x, y = data
    return train(MLP(), x.reshape(-1, 1, 8, 8), y)


@pytest.fixture(scope="module")
def lenet(data):
    x, y = data
    return train(LeNet(), x.reshape(-1, 1, 8, 8), y, steps=20)


def test_mlp_from_fx_matches_torch(data, mlp):
    x = data[0][1000:1016].reshape(16, 1, 8, 8)
    mod = mlc.frontend.from_fx(fx.symbolic_trace(mlp), input_shapes=[(16, 1, 8, 8)])
    expect = mlp(torch.from_numpy(x)).detach().numpy()
    out = run(mod, x)
    np.testing.assert_allclose(out, expect, rtol=1e-4, atol=1e-4)
    assert (out.argmax(1) == data[1][1000:1016]).mean() > 0.7  # it did learn (held-out digits)


def test_lenet_from_fx_and_exported_program_match_torch(data, lenet):
    x = data[0][16:32].reshape(16, 1, 8, 8)
    expect = lenet(torch.from_numpy(x)).detach().numpy()
    mod = mlc.frontend.from_fx(fx.symbolic_trace(lenet), input_shapes=[(16, 1, 8, 8)])
    np.testing.assert_allclose(run(mod, x), expect, rtol=1e-4, atol=1e-5)
    ep = torch.export.export(lenet, (torch.from_numpy(x),))
    mod2 = mlc.frontend.from_exported_program(ep)
    assert [p.name for p in mod2["main"].params] == ["x"]
    np.testing.assert_allclose(run(mod2, x), expect, rtol=1e-4, atol=1e-5)


def test_mlp_exported_program_matches_torch(data, mlp):
    x = data[0][:8].reshape(8, 1, 8, 8)
    mod = mlc.frontend.from_exported_program(torch.export.export(mlp, (torch.from_numpy(x),)))
    np.testing.assert_allclose(run(mod, x), mlp(torch.from_numpy(x)).detach().numpy(), rtol=1e-4, atol=1e-4)


class Ops(nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(6, 4))

    def forward(self, x):
        y = torch.matmul(x, self.weight)                       # getattr of a parameter
        y = (y + 1.0) * 2.0 - y / 4.0
        y = y.view(2, 3, 4).permute(0, 2, 1).transpose(1, 2).reshape(4, 6).t()
        return torch.relu(y)


def test_functions_methods_and_parameters():
    torch.manual_seed(1)
    model = Ops().eval()
    x = torch.randn(6, 6)
    mod = mlc.frontend.from_fx(fx.symbolic_trace(model), [(6, 6)])
    np.testing.assert_allclose(run(mod, x.numpy()), model(x).detach().numpy(), rtol=1e-5, atol=1e-5)


class Unmapped(nn.Module):
    def forward(self, x):
        return torch.cumsum(x, 0)


def test_unmapped_op_names_node_and_op():
    with pytest.raises(mlc.MlcError, match=r"node 'cumsum'.*cumsum"):
        mlc.frontend.from_fx(fx.symbolic_trace(Unmapped()), [(4,)])
    ep = torch.export.export(Unmapped(), (torch.randn(4),))
    with pytest.raises(mlc.MlcError, match=r"node 'cumsum'.*aten.cumsum"):
        mlc.frontend.from_exported_program(ep)


def test_unsupported_module_option_names_node():
    model = nn.Sequential(nn.Conv2d(1, 2, 3, padding=1, padding_mode="reflect")).eval()
    with pytest.raises(mlc.MlcError, match=r"node '_0'.*padding"):
        mlc.frontend.from_fx(fx.symbolic_trace(model), [(1, 1, 8, 8)])


# -- the course's own translator (ch.5.3), verbatim but for the imports -------------------
class MyModel(nn.Module):
    def __init__(self):
        super(MyModel, self).__init__()
        self.weight = nn.Parameter(torch.randn(128, 128))

    def forward(self, x):
        x = torch.matmul(x, self.weight)
        x = torch.relu(x)
        return x


def map_param(param: nn.Parameter):
    return relax.const(
        param.data.cpu().numpy(), relax.TensorStructInfo(param.data.shape, "float32")
    )

def fetch_attr(fx_mod, target: str):
    """Helper function to fetch an attr"""
    target_atoms = target.split('.')
    attr_itr = fx_mod
    for i, atom in enumerate(target_atoms):
        if not hasattr(attr_itr, atom):
            raise RuntimeError(f"Node referenced nonexistant target {'.'.join(target_atoms[:i])}")
        attr_itr = getattr(attr_itr, atom)
    return attr_itr

def from_fx(fx_mod, input_shapes, call_function_map, call_module_map):
    input_index = 0
    node_map = {}
    named_modules = dict(fx_mod.named_modules())

    bb = relax.BlockBuilder()

    fn_inputs = []
    fn_output = None
    with bb.function("main"):
        with bb.dataflow():
            for node in fx_mod.graph.nodes:
                if node.op == "placeholder":
                    # create input placeholder
                    shape = input_shapes[input_index]
                    input_index += 1
                    input_var = relax.Var(
                        node.target, relax.TensorStructInfo(shape, "float32")
                    )
                    fn_inputs.append(input_var)
                    node_map[node] = input_var
                elif node.op == "get_attr":
                    node_map[node] = map_param(fetch_attr(fx_mod, node.target))
                elif node.op == "call_function":
                    node_map[node] = call_function_map[node.target](bb, node_map, node)
                elif node.op == "call_module":
                    named_module = named_modules[node.target]
                    node_map[node] = call_module_map[type(named_module)](bb, node_map, node, named_module)
                elif node.op == "output":
                    output = node_map[node.args[0]]
                    assert fn_output is None
                    fn_output = bb.emit_output(output)
        # output and finalize the function
        bb.emit_func_output(output, fn_inputs)
    return bb.get()


def te_matmul(A: te.Tensor, B: te.Tensor) -> te.Tensor:
    assert A.shape[1] == B.shape[0]
    n = A.shape[0]
    m = B.shape[1]
    k = te.reduce_axis((0, A.shape[1]), name="k")
    return te.compute((n, m), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="matmul")

def te_relu(A: te.Tensor) -> te.Tensor:
    return te.compute(A.shape, lambda *i: te.max(A(*i), 0), name="relu")

def map_matmul(bb, node_map, node: fx.Node):
    A = node_map[node.args[0]]
    B = node_map[node.args[1]]
    return bb.emit_te(te_matmul, A, B)

def map_relu(bb, node_map, node: fx.Node):
    A = node_map[node.args[0]]
    return bb.emit_te(te_relu, A)


def test_course_translator_verbatim():
    torch.manual_seed(2)
    model = MyModel()
    fx_module = fx.symbolic_trace(model)
    MyModule = from_fx(
        fx_module,
        input_shapes = [(1, 128)],
        call_function_map = {
          torch.matmul: map_matmul,
          torch.relu: map_relu,
        },
        call_module_map={},
    )
    x = torch.randn(1, 128)
    np.testing.assert_allclose(run(MyModule, x.numpy()), model(x).detach().numpy(), rtol=1e-4, atol=1e-4)
    # the library's from_fx gives the same result with its default maps
    np.testing.assert_allclose(run(mlc.frontend.from_fx(fx_module, [(1, 128)]), x.numpy()),
                               model(x).detach().numpy(), rtol=1e-4, atol=1e-4)
