"""Each torch -> graph translation of the frontends against torch eager: tiny modules imported
with from_exported_program and (where torch.fx traces them) from_fx, built for the CPU and run
on the VM. Symbolic (torch.export.Dim) sizes, fx shape arithmetic, import-time constants and
the errors for what is missing are tested at the end."""

import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")
from torch import fx, nn  # noqa: E402
from torch.nn import functional as F  # noqa: E402

import mlc_mlir as mlc  # noqa: E402


def run(mod, *args):
    vm = mlc.graph.VirtualMachine(mlc.graph.build(mod, "llvm"), mlc.cpu())
    out = vm["main"](*args)
    return [o.numpy() for o in out] if isinstance(out, (list, tuple)) else [out.numpy()]


def np_args(inputs):
    return [t.numpy() for t in inputs]


def compare(got, expect):
    assert len(got) == len(expect)
    for g, e in zip(got, expect):
        assert g.shape == e.shape and g.dtype == e.dtype, (g.shape, g.dtype, e.shape, e.dtype)
        if e.dtype == np.bool_ or np.issubdtype(e.dtype, np.integer):
            np.testing.assert_array_equal(g, e)
        else:
            np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-5)


def check(model, *inputs, use_fx=True, use_export=True):
    """``model(*inputs)`` equals its import through both frontends."""
    model = model.eval()
    with torch.no_grad():
        ref = model(*inputs)
    expect = [r.numpy() for r in (ref if isinstance(ref, (tuple, list)) else [ref])]
    if use_export:
        mod = mlc.frontend.from_exported_program(torch.export.export(model, tuple(inputs)))
        compare(run(mod, *np_args(inputs)), expect)
    if use_fx:
        dtypes = [str(t.dtype).replace("torch.", "") for t in inputs]
        mod = mlc.frontend.from_fx(fx.symbolic_trace(model), [tuple(t.shape) for t in inputs], dtype=dtypes)
        compare(run(mod, *np_args(inputs)), expect)


def randn(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


class Fn(nn.Module):
    """``fn(self, x)`` as a module (``modules`` its submodules)."""

    def __init__(self, fn, **modules):
        super().__init__()
        self.fn = fn
        for k, v in modules.items():
            setattr(self, k, v)

    def forward(self, x):
        return self.fn(self, x)


class Fn2(Fn):
    """``fn(self, x, y)`` as a module."""

    def forward(self, x, y):
        return self.fn(self, x, y)


# -- convolution and pooling ------------------------------------------------------------------
@pytest.mark.parametrize("kw", [dict(padding=1), dict(stride=2, padding=3, bias=False), dict(groups=2, padding=(1, 0)),
                                dict(groups=8, padding=1), dict(dilation=2, padding=2)], ids=str)
def test_conv2d_module(kw):
    torch.manual_seed(0)
    k = 7 if kw.get("padding") == 3 else 3
    check(nn.Sequential(nn.Conv2d(8, 8, k, **kw)), randn(2, 8, 9, 9))


def test_conv2d_functional():
    w, b = randn(6, 2, 3, 3, seed=1), randn(6, seed=2)
    check(Fn(lambda m, x: F.conv2d(x, w, b, stride=2, padding=1, groups=2)), randn(1, 4, 8, 8))


def test_pools():
    model = Fn(lambda m, x: (m.mp(x), m.ap(x), m.ap0(x), F.max_pool2d(x, 2), F.avg_pool2d(x, 3, 2, 1),
                             m.aap(x), m.gap(x)),
               mp=nn.MaxPool2d(3, 2, 1, ceil_mode=True), ap=nn.AvgPool2d(3, 2, 1, count_include_pad=False),
               ap0=nn.AvgPool2d(2), aap=nn.AdaptiveAvgPool2d((2, 2)), gap=nn.AdaptiveAvgPool2d(1))
    check(model, randn(2, 3, 8, 8))


def test_batch_and_layer_norm_functional():
    mean, var = randn(4, seed=1) * 0.1, torch.rand(4) + 0.5
    w, b = randn(4, seed=2), randn(4, seed=3)
    check(Fn(lambda m, x: (F.batch_norm(x, mean, var, w, b, eps=1e-3),
                           F.layer_norm(x, (4, 4), eps=1e-6),
                           F.layer_norm(x.transpose(1, 3), (4,), w, b))), randn(2, 4, 4, 4))


# -- activations and elementwise math ---------------------------------------------------------
def test_activations():
    model = Fn(lambda m, x: (m.r6(x * 4), m.ht(x), F.relu6(x * 4), F.hardtanh(x, -0.5, 0.5), torch.clamp(x, -0.2, 0.3),
                             m.gt(x), F.gelu(x, approximate="tanh"), F.gelu(x)),
               r6=nn.ReLU6(), ht=nn.Hardtanh(-0.3, 0.7), gt=nn.GELU(approximate="tanh"))
    check(model, randn(3, 17))
    check(Fn(lambda m, x: (m.silu(x), torch.sigmoid(x), torch.tanh(x), F.relu(x)), silu=nn.SiLU()), randn(3, 17))


def test_unary_math():
    check(Fn(lambda m, x: (torch.exp(x), torch.log(x.abs() + 1), torch.sqrt(x.abs()), torch.rsqrt(x.abs() + 1),
                           torch.erf(x), -x, torch.sin(x), torch.cos(x))), randn(4, 5))
    check(Fn(lambda m, x: (torch.floor(x * 3), torch.ceil(x * 3), torch.pow(x, 3.0), x.abs() ** 1.5, torch.maximum(x, x * 0.5),
                           torch.minimum(x, x * 0.5), 1.0 - x, 2.0 / (x.abs() + 1))), randn(4, 5))


# -- masks, comparisons, where ----------------------------------------------------------------
def test_comparisons_logic_where():
    def fn(m, x, y):
        a, b = x > y, x <= 0.1
        return (x == y, x != y, x < y, x >= y, a & b, a | b, ~a, torch.logical_and(a, b))

    def fn2(m, x, y):
        a, b = x > y, x <= 0.1
        return torch.where(a, x, y), torch.where(b, x, 0.0), torch.logical_or(a, b), torch.logical_not(b)

    x = randn(3, 4)
    y = torch.where(randn(3, 4, seed=1) > 0, x, randn(3, 4, seed=2))
    check(Fn2(fn), x, y)
    check(Fn2(fn2), x, y)


def test_masked_fill_causal_softmax():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("tri", torch.tril(torch.ones(6, 6)))
            self.register_buffer("upper", torch.triu(torch.ones(6, 6, dtype=torch.bool), 1))

        def forward(self, x, pad):
            a = x.masked_fill(self.tri == 0, float("-inf")).softmax(-1)
            b = x.masked_fill(self.upper, -1e9)
            c = x.masked_fill(pad[:, None, :], 0.0)
            return a, b, c

    pad = torch.zeros(2, 6, dtype=torch.bool)
    pad[1, 4:] = True
    check(M(), randn(2, 6, 6), pad)


def test_tril_of_a_runtime_tensor():
    check(Fn(lambda m, x: (torch.tril(x), torch.triu(x, 1))), randn(2, 5, 5))


# -- reductions and casts ---------------------------------------------------------------------
def test_reductions():
    model = Fn(lambda m, x: (x.mean((2, 3)), x.sum(-1, keepdim=True), torch.mean(x, 1), x.sum(),
                             torch.amax(x, 1), torch.amin(x, (0, 2), keepdim=True),
                             (x > 0).any(-1), (x > -2).all(1)))
    check(model, randn(2, 3, 4, 5))


def test_casts_and_like():
    model = Fn2(lambda m, x, i: (x.float(), i.float() * x, (x > 0).long() + i, x.to(torch.float32),
                                 torch.zeros_like(x), torch.ones_like(i), torch.full_like(x, 2.5), (x > 0).float()))
    check(model, randn(3, 4), torch.arange(12).reshape(3, 4))
    check(Fn2(lambda m, x, i: (x + i, i * 0.5, x > i, (x > 0) + 1)), randn(3, 4), torch.arange(12).reshape(3, 4))


# -- layout: views, slices, joins -------------------------------------------------------------
def test_views_and_permutations():
    check(Fn(lambda m, x: (x.view(2, 12), x.reshape(4, -1), x.permute(2, 0, 1), x.transpose(0, 2).contiguous(),
                           torch.flatten(x), x.unsqueeze(1))), randn(2, 3, 4))
    check(Fn(lambda m, x: (x.unsqueeze(-1).squeeze(-1), x[:, None].squeeze(1), x[:1].expand(3, 3, 4),
                           x.unsqueeze(0).expand(2, -1, -1, -1), x[0].t(), torch.squeeze(x[:, :1]))), randn(2, 3, 4))


def test_split_chunk_cat_select_slice():
    def parts(m, x):
        a, b, c = x.split(2, dim=1), torch.split(x, [1, 4], 1), x.chunk(2, -1)
        return a[0], a[1], a[2], b[0], b[1], c[0], c[1], x.narrow(2, 1, 2)

    check(Fn(parts), randn(2, 5, 6))
    check(Fn(lambda m, x: (torch.cat([x, x * 2], 0), torch.cat((x, x), dim=-1), x[:, 1], x[..., -1],
                           x[:, 1:4:2], x[:, -2:], x.select(0, 1), x[0, :, 1:])), randn(2, 5, 6))


def test_embedding_and_index():
    emb = nn.Embedding(10, 4)
    model = Fn2(lambda m, ids, x: (m.emb(ids), F.embedding(ids, m.emb.weight), x[ids[0]], x[:, ids[1]],
                                  torch.index_select(x, 1, ids[0])), emb=emb)
    check(model, torch.tensor([[1, 9, 0], [3, 3, 2]]), randn(10, 10))


def test_linear_matmul_batched():
    w = randn(6, 4, seed=1)
    model = Fn2(lambda m, x, y: (m.lin(x), F.linear(x, w), x @ y, torch.matmul(x, y[0]), torch.bmm(x, y),
                                x.transpose(-2, -1) @ x), lin=nn.Linear(4, 6))
    check(model, randn(2, 3, 4), randn(2, 4, 5, seed=2))


def test_dropout_is_identity_in_eval():
    check(Fn(lambda m, x: m.d(F.dropout(x, 0.5, training=False)) * 2, d=nn.Dropout(0.3)), randn(4, 4))


# -- fx shape arithmetic and import-time constants --------------------------------------------
def causal(t):
    """A (t, t) causal mask of ones and zeros (fx records the call: ``torch.ones(T, T)`` of a
    traced ``T`` does not trace)."""
    return torch.tril(torch.ones(t, t))


fx.wrap("causal")


class Heads(nn.Module):
    def __init__(self, n_head=2):
        super().__init__()
        self.n_head = n_head

    def forward(self, x):
        B, T, C = x.size()
        hs = x.shape[-1] // self.n_head
        q = x.view(B, T, self.n_head, hs).transpose(1, 2)
        att = (q @ q.transpose(-2, -1)) * (1.0 / math.sqrt(hs))
        mask = causal(T).view(1, 1, T, T)
        att = att.masked_fill(mask[:, :, :T, :T] == 0, float("-inf"))
        return att.softmax(-1).reshape(B * self.n_head, T, T) + x.size(1) - T - getattr(x, "shape")[0] + B


def test_fx_shape_arithmetic_and_constants():
    check(Heads(), randn(2, 5, 8))


def test_exported_constants_are_folded():
    class M(nn.Module):
        def forward(self, x):
            pos = torch.arange(x.shape[1]).unsqueeze(0)
            mask = torch.ones(x.shape[1], x.shape[1], dtype=torch.bool).tril()
            return x.masked_fill(~mask, 0.0) + pos

    x = randn(4, 4)
    mod = mlc.frontend.from_exported_program(torch.export.export(M(), (x,)))  # no rule for arange, full
    compare(run(mod, x.numpy()), [M()(x).numpy()])


# -- symbolic sizes (torch.export.Dim) ---------------------------------------------------------
class Flattened(nn.Module):
    """Linear on (B, T, C) through a (B*T, C) view (as decomposed linear/matmul do), heads,
    a batched matmul over (B*heads, T, T)."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x):
        B, T, C = x.shape
        y = self.lin(x.reshape(B * T, C)).view(B, T, 2, 4).transpose(1, 2).reshape(B * 2, T, 4)
        att = torch.bmm(y, y.transpose(1, 2)).softmax(-1)
        return torch.bmm(att, y).view(B, 2, T, 4).permute(0, 2, 1, 3).reshape(B, T, 8) + x


@pytest.mark.parametrize("dynamic_seq", [False, True])
def test_dynamic_batch_one_build(dynamic_seq):
    model = Flattened().eval()
    dims = {0: torch.export.Dim("batch")}
    if dynamic_seq:
        dims[1] = torch.export.Dim("seq", min=2, max=64)
    ep = torch.export.export(model, (randn(3, 5, 8),), dynamic_shapes={"x": dims})
    mod = mlc.frontend.from_exported_program(ep)
    assert mod["main"].params[0].struct_info.shape == ("batch", "seq" if dynamic_seq else 5, 8)
    vm = mlc.graph.VirtualMachine(mlc.graph.build(mod, "llvm"), mlc.cpu())
    for b in (1, 8):
        x = randn(b, 5, 8, seed=b)
        np.testing.assert_allclose(vm["main"](x.numpy()).numpy(), model(x).detach().numpy(), rtol=1e-5, atol=1e-5)


def test_dynamic_batch_index_grid_mask():
    """transformers' padding mask: ``mask[arange(b)[:, None, None, None], arange(t)]`` with a
    symbolic ``b`` reads the mask in place."""

    class M(nn.Module):
        def forward(self, x, mask):
            b, t = mask.shape
            grid = mask.bool()[torch.arange(b)[:, None, None, None], torch.arange(t)[None, None, None, :]]
            return x.masked_fill(~grid, -1.0)

    batch = torch.export.Dim("batch")
    mask = torch.ones(2, 6, dtype=torch.int64)
    ep = torch.export.export(M(), (randn(2, 3, 6, 6), mask), dynamic_shapes={"x": {0: batch}, "mask": {0: batch}})
    vm = mlc.graph.VirtualMachine(mlc.graph.build(mlc.frontend.from_exported_program(ep), "llvm"), mlc.cpu())
    for b in (1, 4):
        x, mask = randn(b, 3, 6, 6, seed=b), (randn(b, 6, seed=b + 1) > 0).long()
        np.testing.assert_array_equal(vm["main"](x.numpy(), mask.numpy()).numpy(), M()(x, mask).numpy())


def test_dynamic_view_that_cannot_stay_split_names_node():
    class M(nn.Module):
        def forward(self, x):
            return x.transpose(0, 1).reshape(x.shape[0] * 3, 2).sum(0)

    ep = torch.export.export(M(), (randn(4, 6),), dynamic_shapes={"x": {0: torch.export.Dim("n", min=3)}})
    with pytest.raises(mlc.MlcError, match=r"node '(view|reshape|_unsafe_view)\w*'.*view"):
        mlc.frontend.from_exported_program(ep)


# -- what is missing --------------------------------------------------------------------------
def test_missing_op_names_op_and_node():
    model = Fn(lambda m, x: torch.sort(x, -1)[0])
    with pytest.raises(mlc.MlcError, match=r"node 'sort'.*sort"):
        mlc.frontend.from_fx(fx.symbolic_trace(model), [(3, 4)])
    with pytest.raises(mlc.MlcError, match=r"node 'sort'.*aten.sort"):
        mlc.frontend.from_exported_program(torch.export.export(model, (randn(3, 4),)))


def test_weight_expanded_over_the_batch_is_not_materialized():
    """torch's decomposition of ``linear`` on a transposed 3-D input is ``expand`` of the
    weight to (batch, in, out) + ``bmm`` (nn.MultiheadAttention's input projection): the
    import keeps the (in, out) weight and lets matmul broadcast it (folding the expand made a
    905 MB constant of a d-768 TransformerEncoderLayer at batch 8)."""

    class Projection(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(16, 24)

        def forward(self, x):
            return self.lin(x.transpose(0, 1)) * 2.0

    model = Projection().eval()
    x = randn(4, 6, 16)
    mod = mlc.frontend.from_exported_program(torch.export.export(model, (x,)))
    text = str(mod)
    assert "tensor<16x24xf32>" in text and "x16x24xf32>" not in text
    with torch.no_grad():
        compare(run(mod, x.numpy()), [model(x).numpy()])
    check(Projection(), x, use_fx=False)


def test_safe_softmax_zero_on_a_fully_masked_row():
    x = randn(2, 3, 16)
    x[0, 1] = float("-inf")  # softmax: NaN; _safe_softmax: 0
    x[1, 2, ::3] = float("-inf")
    check(Fn(lambda m, x: torch._safe_softmax(x, -1)), x)


class _Attention(nn.Module):
    def __init__(self, mask):
        super().__init__()
        self.register_buffer("mask", mask)

    def forward(self, q, k, v):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=self.mask)


def test_attention_with_a_fully_masked_query():
    # exported, scaled_dot_product_attention's softmax is _safe_softmax: the masked query's
    # output is 0 (torch eager's too), one kernel instead of softmax + where
    mask = torch.ones(6, 10, dtype=torch.bool)
    mask[3] = False
    mask[1, 5:] = False
    model = _Attention(mask)
    args = (randn(2, 4, 6, 16, seed=1), randn(2, 4, 10, 16, seed=2), randn(2, 4, 10, 16, seed=3))
    ep = torch.export.export(model, args)
    mod = mlc.frontend.from_exported_program(ep)
    assert "mlc.safe_softmax" in mod.script()
    with torch.no_grad():
        ref = model(*args).numpy()
    assert np.all(ref[:, :, 3] == 0)
    compare(run(mod, *np_args(args)), [ref])
