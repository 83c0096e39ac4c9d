"""mlc_mlir.target: target strings, what the rules read from them, what the JIT gets."""

import numpy as np
import pytest

import mlc_mlir as mlc
from mlc_mlir.target import Target, TargetError, host_features


@pytest.mark.parametrize("text, bits, regs, tile", [
    ("llvm -mcpu=haswell", 256, 16, (6, 16)),
    ("llvm -mcpu=skylake-avx512", 512, 32, (14, 32)),
    ("llvm -mcpu=x86-64-v2", 128, 16, (6, 8)),
    ("llvm -mcpu=skylake-avx512 -mattr=-avx512f", 256, 16, (6, 16)),
    ("llvm -mcpu=haswell -mattr=+avx512f", 512, 32, (14, 32)),
])
def test_vector_facts_and_register_tile(text, bits, regs, tile):
    t = Target(text)
    assert (t.vector_bits, t.vector_registers, t.register_tile("float32")) == (bits, regs, tile)
    assert t.has_fma == (bits > 128)
    assert t.vector_lanes("float64") == bits // 64
    assert str(t) == text


def test_host_target_reads_the_cpu():
    t = Target("llvm")
    assert t.cpu and t.num_cores >= 1 and t.is_host
    assert t.features == host_features()
    assert t.llvm_function_attrs() == (None, [])
    assert Target.of(None) == t and Target.of(t) is t
    assert Target("llvm -num-cores=3").num_cores == 3


@pytest.mark.parametrize("text, words", [
    ("gpu", "unknown target"),
    ("llvm -mcpu=pentium9", "unknown -mcpu='pentium9'"),
    ("llvm -mattr=avx2", "+feature or -feature"),
    ("llvm -foo=1", "unknown option"),
    ("llvm mcpu", "cannot parse option 'mcpu'"),
    ("llvm -num-cores=zero", "-num-cores must be a positive integer"),
])
def test_bad_target_strings(text, words):
    with pytest.raises(TargetError, match=words.replace("(", r"\(").replace("+", r"\+")):
        Target(text)


def test_build_rejects_a_target_the_host_cannot_run():
    if "avx512f" in host_features():
        pytest.skip("the host has AVX-512")
    mod = mlc.Module.parse("""
func.func @f(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %r = linalg.copy ins(%a : tensor<4xf32>) outs(%b : tensor<4xf32>) -> tensor<4xf32>
  return %r : tensor<4xf32>
}""")
    with pytest.raises(mlc.BuildError, match="avx512f"):
        mlc.build(mod, target="llvm -mcpu=skylake-avx512")
    with pytest.raises(TargetError, match="unknown -mcpu"):
        mlc.build(mod, target="llvm -mcpu=nope")
    rt = mlc.build(mod, target=Target("llvm -mattr=-avx512f"))
    out = np.zeros(4, "float32")
    rt["f"](np.arange(4, dtype="float32"), out)
    np.testing.assert_array_equal(out, np.arange(4))


def test_l2_cache_of_the_host_only():
    import os
    from mlc_mlir.target import host_l2_bytes, host_cpu_name
    base = "/sys/devices/system/cpu/cpu0/cache"
    sizes = []
    if os.path.isdir(base):
        for index in os.listdir(base):
            if index.startswith("index") and open(f"{base}/{index}/level").read().strip() == "2":
                sizes.append(open(f"{base}/{index}/size").read().strip())
    expected = None if not sizes else int(sizes[0][:-1]) << {"K": 10, "M": 20}[sizes[0][-1]]
    assert host_l2_bytes() == expected
    assert Target("llvm").l2_bytes == expected
    other = "haswell" if host_cpu_name() != "haswell" else "znver3"
    assert Target(f"llvm -mcpu={other}").l2_bytes is None
