"""The model zoo: the architectures people bring, in plain torch, with random seeded weights
(no download): the model tests (tests/python/test_model_zoo.py, small sizes), the examples
(examples/resnet18.py, gpt2_block.py) and benchmarks/bench_models.py (full sizes) use it.

ResNet-18 and MobileNet-v2 follow torchvision's structure (torchvision's PyPI wheel links
CUDA torch, so it is not a dependency), with a width parameter so tests stay quick; the
GPT-2 block is nanoGPT-style; ``hf_gpt2`` is transformers' ``GPT2Model`` (``None`` when
transformers is missing); ``encoder_layer`` is ``nn.TransformerEncoderLayer``; ``seeded``
redraws a model's parameters and batch-norm statistics from a seed. Needs torch.
"""

from __future__ import annotations

import math
from math import sqrt

import torch
from torch import fx, nn
from torch.nn import functional as F

fx.wrap("sqrt")  # fx records math.sqrt(k.size(-1)) as a call instead of failing on a Proxy


def fx_trace(model: nn.Module) -> fx.GraphModule:
    """``fx.symbolic_trace`` that also proxies buffers, so ``self.bias[:, :, :T, :T]`` with a
    traced ``T`` is a graph node (symbolic_trace reads buffers as plain tensors)."""

    class Tracer(fx.Tracer):
        proxy_buffer_attributes = True

    return fx.GraphModule(model, Tracer().trace(model))


# -- ResNet-18 ----------------------------------------------------------------------------
def conv3x3(cin: int, cout: int, stride: int = 1) -> nn.Conv2d:
    return nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=False)


class BasicBlock(nn.Module):
    expansion = 1

    def __init__(self, cin: int, cout: int, stride: int = 1, downsample: nn.Module | None = None):
        super().__init__()
        self.conv1 = conv3x3(cin, cout, stride)
        self.bn1 = nn.BatchNorm2d(cout)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = conv3x3(cout, cout)
        self.bn2 = nn.BatchNorm2d(cout)
        self.downsample = downsample

    def forward(self, x):
        identity = x
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        if self.downsample is not None:
            identity = self.downsample(x)
        return self.relu(out + identity)


class ResNet18(nn.Module):
    """torchvision's resnet18 with base width ``width`` (64 in torchvision)."""

    def __init__(self, width: int = 64, num_classes: int = 1000):
        super().__init__()
        self.inplanes = width
        self.conv1 = nn.Conv2d(3, width, 7, stride=2, padding=3, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
        self.layer1 = self._make_layer(width, 2)
        self.layer2 = self._make_layer(width * 2, 2, stride=2)
        self.layer3 = self._make_layer(width * 4, 2, stride=2)
        self.layer4 = self._make_layer(width * 8, 2, stride=2)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(width * 8, num_classes)

    def _make_layer(self, planes: int, blocks: int, stride: int = 1) -> nn.Sequential:
        downsample = None
        if stride != 1 or self.inplanes != planes:
            downsample = nn.Sequential(nn.Conv2d(self.inplanes, planes, 1, stride=stride, bias=False),
                                       nn.BatchNorm2d(planes))
        layers = [BasicBlock(self.inplanes, planes, stride, downsample)]
        self.inplanes = planes
        layers += [BasicBlock(planes, planes) for _ in range(1, blocks)]
        return nn.Sequential(*layers)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        x = torch.flatten(self.avgpool(x), 1)
        return self.fc(x)


# -- MobileNet-v2 -------------------------------------------------------------------------
def _make_divisible(v: float, divisor: int = 8) -> int:
    new_v = max(divisor, int(v + divisor / 2) // divisor * divisor)
    return new_v + divisor if new_v < 0.9 * v else new_v


class ConvBNReLU6(nn.Sequential):
    def __init__(self, cin: int, cout: int, kernel: int = 3, stride: int = 1, groups: int = 1):
        super().__init__(nn.Conv2d(cin, cout, kernel, stride, (kernel - 1) // 2, groups=groups, bias=False),
                         nn.BatchNorm2d(cout), nn.ReLU6(inplace=True))


class InvertedResidual(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int, expand_ratio: int):
        super().__init__()
        hidden = int(round(cin * expand_ratio))
        self.use_res_connect = stride == 1 and cin == cout
        layers: list[nn.Module] = []
        if expand_ratio != 1:
            layers.append(ConvBNReLU6(cin, hidden, kernel=1))
        layers += [ConvBNReLU6(hidden, hidden, stride=stride, groups=hidden),
                   nn.Conv2d(hidden, cout, 1, 1, 0, bias=False), nn.BatchNorm2d(cout)]
        self.conv = nn.Sequential(*layers)

    def forward(self, x):
        return x + self.conv(x) if self.use_res_connect else self.conv(x)


class MobileNetV2(nn.Module):
    """torchvision's mobilenet_v2 (``width_mult`` scales the channels; ``depth``, when given,
    caps the repeats of each stage, so tests build fewer kernels; ``pool`` "adaptive" pools
    with AdaptiveAvgPool2d, "mean" with ``x.mean((2, 3))``)."""

    SETTINGS = [[1, 16, 1, 1], [6, 24, 2, 2], [6, 32, 3, 2], [6, 64, 4, 2], [6, 96, 3, 1],
                [6, 160, 3, 2], [6, 320, 1, 1]]

    def __init__(self, width_mult: float = 1.0, num_classes: int = 1000, pool: str = "adaptive",
                 depth: int | None = None):
        super().__init__()
        cin = _make_divisible(32 * width_mult)
        self.last_channel = _make_divisible(1280 * max(1.0, width_mult))
        features: list[nn.Module] = [ConvBNReLU6(3, cin, stride=2)]
        for t, c, n, s in self.SETTINGS:
            cout = _make_divisible(c * width_mult)
            for i in range(n if depth is None else min(n, depth)):
                features.append(InvertedResidual(cin, cout, s if i == 0 else 1, t))
                cin = cout
        features.append(ConvBNReLU6(cin, self.last_channel, kernel=1))
        self.features = nn.Sequential(*features)
        self.pool = pool
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.classifier = nn.Sequential(nn.Dropout(0.2), nn.Linear(self.last_channel, num_classes))

    def forward(self, x):
        x = self.features(x)
        x = torch.flatten(self.avgpool(x), 1) if self.pool == "adaptive" else x.mean((2, 3))
        return self.classifier(x)


# -- GPT-2 block (nanoGPT style) ----------------------------------------------------------
class CausalSelfAttention(nn.Module):
    def __init__(self, d: int, n_head: int, block_size: int):
        super().__init__()
        self.c_attn = nn.Linear(d, 3 * d)
        self.c_proj = nn.Linear(d, d)
        self.n_head, self.d = n_head, d
        self.register_buffer("bias", torch.tril(torch.ones(block_size, block_size)).view(
            1, 1, block_size, block_size))

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(self.d, dim=2)
        hs = C // self.n_head
        q = q.view(B, T, self.n_head, hs).transpose(1, 2)
        k = k.view(B, T, self.n_head, hs).transpose(1, 2)
        v = v.view(B, T, self.n_head, hs).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / sqrt(k.size(-1)))
        att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
        att = F.softmax(att, dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
        return self.c_proj(y)


class GPT2Block(nn.Module):
    def __init__(self, d: int = 64, n_head: int = 4, block_size: int = 16):
        super().__init__()
        self.ln_1 = nn.LayerNorm(d)
        self.attn = CausalSelfAttention(d, n_head, block_size)
        self.ln_2 = nn.LayerNorm(d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(approximate="tanh"), nn.Linear(4 * d, d),
                                 nn.Dropout(0.1))

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class TriuMaskBlock(nn.Module):
    """Attention scores masked with ``triu`` of a bool tensor (the other spelling of the
    causal mask), on a fixed sequence length."""

    def __init__(self, d: int = 32, n_head: int = 4, seq: int = 8):
        super().__init__()
        self.qkv = nn.Linear(d, 3 * d)
        self.n_head = n_head
        self.register_buffer("mask", torch.triu(torch.ones(seq, seq, dtype=torch.bool), diagonal=1))

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        q = q.reshape(B, T, self.n_head, C // self.n_head).permute(0, 2, 1, 3)
        k = k.reshape(B, T, self.n_head, C // self.n_head).permute(0, 2, 3, 1)
        v = v.reshape(B, T, self.n_head, C // self.n_head).permute(0, 2, 1, 3)
        att = torch.matmul(q, k) / math.sqrt(C // self.n_head)
        att = att.masked_fill(self.mask, float("-inf")).softmax(-1)
        return torch.matmul(att, v).permute(0, 2, 1, 3).reshape(B, T, C)


# -- transformers' GPT-2 -------------------------------------------------------------------
def hf_gpt2(d: int = 64, n_layer: int = 2, n_head: int = 4, n_positions: int = 32, vocab: int = 100):
    """``transformers.GPT2Model`` (eager attention, no cache), or ``None`` without transformers."""
    try:
        from transformers import GPT2Config, GPT2Model
    except ImportError:
        return None
    config = GPT2Config(n_layer=n_layer, n_embd=d, n_head=n_head, n_positions=n_positions, vocab_size=vocab,
                        use_cache=False, attn_implementation="eager")
    return GPT2Model(config).eval()


class HFGPT2Wrapper(nn.Module):
    """``GPT2Model(input_ids, attention_mask).last_hidden_state`` as a plain tensor function."""

    def __init__(self, model: nn.Module):
        super().__init__()
        self.model = model

    def forward(self, input_ids, attention_mask=None):
        out = self.model(input_ids=input_ids, attention_mask=attention_mask, use_cache=False)
        return out.last_hidden_state


# -- nn.TransformerEncoderLayer ------------------------------------------------------------
def encoder_layer(d: int = 32, n_head: int = 4, ff: int = 64) -> nn.Module:
    return nn.TransformerEncoderLayer(d, n_head, dim_feedforward=ff, batch_first=True).eval()


class EncoderWithMask(nn.Module):
    """``nn.TransformerEncoderLayer`` with a bool ``src_key_padding_mask`` input."""

    def __init__(self, layer: nn.Module):
        super().__init__()
        self.layer = layer

    def forward(self, src, pad_mask):
        return self.layer(src, src_key_padding_mask=pad_mask)


def seeded(model: nn.Module, seed: int = 0) -> nn.Module:
    """``model`` in eval mode with its parameters and batch-norm statistics redrawn from ``seed``
    (running statistics made non-trivial so batch norm is really tested)."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.dim() > 1:
                fan_in = p[0].numel()
                p.copy_(torch.randn(p.shape, generator=g) / math.sqrt(fan_in))
            else:
                p.copy_(torch.randn(p.shape, generator=g) * 0.1 + (1.0 if name.endswith("weight") else 0.0))
        for m in model.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.running_mean.copy_(torch.randn(m.running_mean.shape, generator=g) * 0.1)
                m.running_var.copy_(torch.rand(m.running_var.shape, generator=g) * 0.5 + 0.75)
    return model.eval()
