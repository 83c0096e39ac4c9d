"""The persistent compile cache (mlc_mlir/compiler/compile_cache.py) and the ahead-of-time
library build it stores (mlc_mlir/compiler/aot.py).

conftest.py turns the cache off for the session (MLC_CACHE_DIR=off); these tests turn it on
in a temporary directory of their own (the ``cache`` fixture).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import mlc_mlir as mlc
from mlc_mlir.compiler import compile_cache
from mlc_mlir.compiler.aot import AotModule
from mlc_mlir.compiler.executable import JitModule
from mlc_mlir.graph import BlockBuilder, Var, op

from _deploy_models import cnn_module, cnn_params, cnn_reference, mlp_module, mlp_params, mlp_reference

HERE = Path(__file__).resolve().parent


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """The cache on, in a directory of this test."""
    root = tmp_path / "cache"
    monkeypatch.setenv("MLC_CACHE_DIR", str(root))
    return root


@pytest.fixture
def records(caplog):
    """The INFO records of the driver (one per compilation) and of the cache (hit / stored)."""
    caplog.set_level(logging.INFO, logger="mlc_mlir")

    def take() -> list[str]:
        out = [f"{r.name}: {r.getMessage()}" for r in caplog.records
               if r.name in ("mlc_mlir.compiler.driver", "mlc_mlir.compiler.compile_cache")]
        caplog.clear()
        return out

    return take


def compiled(log: list[str]) -> int:
    """How many compilations ran (the driver's ``build: ... slowest stages`` record each)."""
    return sum(1 for line in log if line.startswith("mlc_mlir.compiler.driver: build:"))


def entries(root: Path) -> list[Path]:
    return sorted(p.parent for p in root.glob("v1/*/*/entry.json"))


def run(ex, x):
    return mlc.graph.VirtualMachine(ex, mlc.cpu())["main"](x).numpy()


P = mlp_params()
X = np.random.default_rng(1).standard_normal((4, 784), dtype="float32")


def test_second_build_loads_the_first_builds_library(cache, records):
    ex1 = mlc.graph.build(mlp_module(P))
    log = records()
    assert compiled(log) == 1 and any("compile cache: stored" in line for line in log)
    assert isinstance(ex1.rt, AotModule) and len(entries(cache)) == 1
    # built again from scratch (new resource blobs, renamed by MLIR in this process): same key
    ex2 = mlc.graph.build(mlp_module(P))
    log = records()
    assert compiled(log) == 0 and any("compile cache: hit" in line for line in log)
    out1, out2 = run(ex1, X), run(ex2, X)
    np.testing.assert_array_equal(out1, out2)
    np.testing.assert_allclose(out2, mlp_reference(P, X), rtol=1e-5, atol=1e-5)
    assert ex2.functions == ex1.functions == ["main"]
    assert ex2.source is not None and ex2.extent_checks == ex1.extent_checks
    assert ex2.optimized.functions == ex1.optimized.functions
    assert ex2.get_source("mlir") == ex1.get_source("mlir")
    assert ex2.get_source("llvm-dialect") == ex1.get_source("llvm-dialect")
    assert "define" in ex2.get_source("llvm") and "<library>" in ex2.get_source("asm")
    # the fast path: the VM's call is generated code over the library's C entry
    assert mlc.graph.VirtualMachine(ex2, mlc.cpu())["main"](X).numpy().shape == (4, 10)


def test_cached_executable_exports_and_loads(cache, tmp_path):
    mlc.graph.build(mlp_module(P))
    ex = mlc.graph.build(mlp_module(P))
    path = tmp_path / "mlp.so"
    ex.export_library(path)
    loaded = mlc.runtime.load_module(path)
    np.testing.assert_allclose(run(loaded, X), mlp_reference(P, X), rtol=1e-5, atol=1e-5)
    with pytest.raises(mlc.BuildError, match="compile cache"):
        ex.export_library(tmp_path / "mlp.o")  # the entry keeps the library only


def test_fresh_library_build_exports_object_code(cache, tmp_path):
    ex = mlc.graph.build(mlp_module(P))
    ex.export_library(tmp_path / "mlp.o")
    ex.export_library(tmp_path / "mlp.ll")
    assert (tmp_path / "mlp.o").stat().st_size > 0 and "define" in (tmp_path / "mlp.ll").read_text()


@pytest.mark.parametrize("change", ["weight", "target", "l2", "opt_level", "llvm_opt_level", "version", "source"])
def test_a_change_misses(cache, records, monkeypatch, change):
    mlc.graph.build(mlp_module(P))
    records()
    p, kwargs = P, {}
    if change == "weight":
        p = {k: v.copy() for k, v in P.items()}
        p["w1"][3, 5] += 1.0
    elif change == "target":
        kwargs["target"] = "llvm -mattr=+avx2"  # runs here; another target string, another key
    elif change == "l2":  # the same target string on a host of another L2 (the rules' column blocks)
        import mlc_mlir.target as target_mod
        monkeypatch.setattr(target_mod, "host_l2_bytes", lambda: 12345 << 10)
    elif change == "opt_level":
        kwargs["opt_level"] = 1
    elif change == "llvm_opt_level":
        kwargs["llvm_opt_level"] = 2
    elif change == "version":
        monkeypatch.setattr(mlc, "__version__", mlc.__version__ + ".dev1")
    else:
        monkeypatch.setattr(compile_cache, "_source_digest", lambda: "another source tree")
    ex = mlc.graph.build(mlp_module(p), **kwargs)
    assert compiled(records()) == 1
    np.testing.assert_allclose(run(ex, X), mlp_reference(p, X), rtol=1e-5, atol=1e-5)
    assert len(entries(cache)) == 2


def test_key_covers_weights_locations_and_options():
    mod = mlp_module(P)
    key = compile_cache.build_key(mod, kind="graph", options={"opt_level": 2})
    assert key == compile_cache.build_key(mlp_module(P), kind="graph", options={"opt_level": 2})
    # the fast alias (bytecode) names the blobs as they are: equal for one module, not across rebuilds
    first, again = (compile_cache.BuildKey(m, kind="graph", options={"opt_level": 2}) for m in (mod, mlp_module(P)))
    assert first.alias == compile_cache.BuildKey(mod, kind="graph", options={"opt_level": 2}).alias
    assert first.key == again.key and first.alias != again.alias
    assert key != compile_cache.build_key(mod, kind="graph", options={"opt_level": 3})
    assert key != compile_cache.build_key(mod, kind="module", options={"opt_level": 2})
    p = dict(P, b0=P["b0"] + np.float32(1e-3))
    assert key != compile_cache.build_key(mlp_module(p), kind="graph", options={"opt_level": 2})
    assert key != compile_cache.build_key(mlp_module(P, batch=4), kind="graph", options={"opt_level": 2})


@pytest.mark.parametrize("damage", ["truncated", "flipped", "record", "missing"])
def test_a_corrupt_entry_is_built_again(cache, records, damage):
    mlc.graph.build(mlp_module(P))
    records()
    (entry,) = entries(cache)
    lib = entry / "lib.so"
    if damage == "truncated":
        lib.write_bytes(lib.read_bytes()[:1000])
    elif damage == "flipped":  # same size, other bytes: the sha256 check
        data = bytearray(lib.read_bytes())
        data[len(data) // 2] ^= 0xFF
        lib.write_bytes(bytes(data))
    elif damage == "record":
        (entry / "entry.json").write_text("{not json")
    else:
        (entry / "code.mlir").unlink()
    ex = mlc.graph.build(mlp_module(P))
    assert compiled(records()) == 1
    np.testing.assert_allclose(run(ex, X), mlp_reference(P, X), rtol=1e-5, atol=1e-5)
    assert len(entries(cache)) == 1
    mlc.graph.build(mlp_module(P))
    assert compiled(records()) == 0  # the rebuilt entry is used


def test_a_damaged_optimized_module_is_an_error_not_a_crash(cache):
    mlc.graph.build(mlp_module(P))
    (entry,) = entries(cache)
    bc = entry / "optimized.mlirbc"
    data = bytearray(bc.read_bytes())
    data[len(data) // 2] ^= 0xFF
    bc.write_bytes(bytes(data))
    ex = mlc.graph.build(mlp_module(P))  # read when asked for: the library itself is fine
    np.testing.assert_allclose(run(ex, X), mlp_reference(P, X), rtol=1e-5, atol=1e-5)
    with pytest.raises(mlc.BuildError, match="damaged"):
        ex.optimized


def test_cache_false_and_env_off_bypass_it(cache, records, monkeypatch):
    ex = mlc.graph.build(mlp_module(P), cache=False)
    assert isinstance(ex.rt, JitModule) and not cache.exists()
    monkeypatch.setenv("MLC_CACHE_DIR", "off")
    ex = mlc.graph.build(mlp_module(P))
    assert isinstance(ex.rt, JitModule) and not cache.exists()
    assert compiled(records()) == 2
    other = cache.parent / "explicit"
    ex = mlc.graph.build(mlp_module(P), cache=other)  # a directory argument wins over the env switch
    assert isinstance(ex.rt, AotModule) and len(entries(other)) == 1


def test_default_directory(monkeypatch, tmp_path):
    monkeypatch.delenv("MLC_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert compile_cache.cache_root() == tmp_path / "xdg" / "mlc-mlir"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert compile_cache.cache_root() == tmp_path / "home" / ".cache" / "mlc-mlir"
    for off in ("off", "OFF", "0", "false", "none"):
        monkeypatch.setenv("MLC_CACHE_DIR", off)
        assert compile_cache.cache_root() is None
    assert compile_cache.cache_root(False) is None


def test_an_unwritable_cache_builds_without_it(tmp_path, monkeypatch, caplog):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    monkeypatch.setenv("MLC_CACHE_DIR", str(blocker))
    with caplog.at_level(logging.WARNING, logger="mlc_mlir"):
        ex = mlc.graph.build(mlp_module(P))
    np.testing.assert_allclose(run(ex, X), mlp_reference(P, X), rtol=1e-5, atol=1e-5)
    assert "cannot write" in caplog.text


def test_environment_functions_bypass_it(cache):
    mlc.register_func("test_cache.double", lambda x, out: np.multiply(x, 2, out=out), override=True)
    x = Var("x", ("n", 4))
    bb = BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            gv = bb.emit_output(bb.emit(op.call_dps_packed("test_cache.double", (x,), ("n", 4), "float32")))
        bb.emit_func_output(gv)
    ex = mlc.graph.build(bb.get())
    data = np.arange(8, dtype="float32").reshape(2, 4)
    np.testing.assert_array_equal(run(ex, data), 2 * data)
    assert isinstance(ex.rt, JitModule) and entries(cache) == [] and not list((cache / "tmp").iterdir())


def test_library_build_equals_the_jit(cache):
    """The library path (split kernels, weights as their own section) computes what the JIT does."""
    cp = cnn_params()
    x = np.random.default_rng(2).standard_normal((1, 1, 8, 8), dtype="float32")
    lib, jit = mlc.graph.build(cnn_module(cp)), mlc.graph.build(cnn_module(cp), cache=False)
    assert isinstance(lib.rt, AotModule) and isinstance(jit.rt, JitModule)
    np.testing.assert_array_equal(run(lib, x), run(jit, x))
    np.testing.assert_allclose(run(lib, x), cnn_reference(cp, x), rtol=1e-5, atol=1e-5)
    xb = np.random.default_rng(3).standard_normal((64, 784), dtype="float32")  # batch 64: row-parallel kernels
    lib, jit = mlc.graph.build(mlp_module(P, batch=64)), mlc.graph.build(mlp_module(P, batch=64), cache=False)
    np.testing.assert_array_equal(run(lib, xb), run(jit, xb))
    with pytest.raises(mlc.ArgumentError):
        run(lib, xb[:3])  # the library's entry checks the static batch


def test_mlc_build_caches_on_request(cache, records, mm_relu_text):
    mod = mlc.Module.parse(mm_relu_text)
    rt = mlc.build(mod)
    assert isinstance(rt, JitModule) and not cache.exists()  # off by default for tensor programs
    rt1 = mlc.build(mod, cache=True)
    rt2 = mlc.build(mlc.Module.parse(mm_relu_text), cache=True)
    log = records()
    assert compiled(log) == 2 and any("compile cache: hit" in line for line in log)
    a, b = (np.random.default_rng(4).random((128, 128), dtype="float32") for _ in range(2))
    c1, c2 = np.empty((128, 128), "float32"), np.empty((128, 128), "float32")
    rt1["mm_relu"](a, b, c1)
    rt2["mm_relu"](a, b, c2)
    np.testing.assert_array_equal(c1, c2)
    np.testing.assert_allclose(c2, np.maximum(a @ b, 0), rtol=1e-5)


_CHILD = textwrap.dedent("""
    import numpy as np
    import mlc_mlir as mlc
    from _deploy_models import mlp_module, mlp_params, mlp_reference
    p = mlp_params()
    ex = mlc.graph.build(mlp_module(p))
    x = np.ones((3, 784), "float32")
    np.testing.assert_allclose(mlc.graph.VirtualMachine(ex, mlc.cpu())["main"](x).numpy(), mlp_reference(p, x),
                               rtol=1e-5, atol=1e-5)
    print("ok", type(ex.rt).__name__, type(ex).__name__)
""")


def test_concurrent_builds_into_one_directory(cache):
    # the children import the shared test models from tests/python (as lit's scripts do)
    env = dict(os.environ, MLC_CACHE_DIR=str(cache), PYTHONPATH=str(HERE))
    code = _CHILD
    procs = [subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True) for _ in range(2)]
    outs = [p.communicate(timeout=300) for p in procs]
    for p, (out, err) in zip(procs, outs):
        assert p.returncode == 0, err[-3000:]
        assert out.strip().startswith("ok AotModule")
    assert len(entries(cache)) == 1
    # a third process finds the entry (through the bytecode alias the first builds recorded)
    third = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert third.stdout.strip() == "ok AotModule CachedExecutable", third.stderr[-3000:]
    leftovers = [p.name for p in (cache / "tmp").iterdir()]
    assert not leftovers, leftovers
    record = json.loads((entries(cache)[0] / "entry.json").read_text())
    lib = entries(cache)[0] / "lib.so"
    assert record["files"]["lib.so"]["sha256"] == hashlib.sha256(lib.read_bytes()).hexdigest()


def test_large_modules_build_a_library_without_the_cache(monkeypatch):
    """Without the cache, a module above AOT_MIN_CODE of code is compiled into a temporary
    library (faster than the JIT there), removed with the module."""
    import gc

    from mlc_mlir.compiler import cpu_backend

    monkeypatch.setattr(cpu_backend, "AOT_MIN_CODE", 0)
    ex = mlc.graph.build(mlp_module(P), cache=False)
    assert isinstance(ex.rt, AotModule)
    np.testing.assert_allclose(run(ex, X), mlp_reference(P, X), rtol=1e-5, atol=1e-5)
    folder = Path(ex.rt.path).parent
    assert folder.is_dir() and "mlc_pyfn_main" not in ex.get_source("llvm-dialect")
    del ex
    gc.collect()
    assert not folder.exists()


def test_least_recently_used_entries_are_evicted_past_the_limit(cache, records, monkeypatch, mm_relu_text):
    """Three tensor-program builds under a limit that holds two: the least recently used
    entry goes (a hit counts as a use), the newest one is never removed, and the evicted
    build is compiled again when asked for."""
    texts = [mm_relu_text.replace("@mm_relu", f"@mm_relu{i}") for i in range(3)]
    mlc.build(mlc.Module.parse(texts[0]), cache=True)
    (first,) = entries(cache)
    one = sum(size for _, size, _ in compile_cache.CompileCache(cache).entries())
    monkeypatch.setenv("MLC_CACHE_MAX_MB", str(2.5 * one / (1 << 20)))
    mlc.build(mlc.Module.parse(texts[1]), cache=True)
    (second,) = set(entries(cache)) - {first}
    os.utime(first / "entry.json", (1, 1))  # entry 0 used long ago...
    mlc.build(mlc.Module.parse(texts[0]), cache=True)  # ...and now again: entry 1 is the oldest
    records()
    mlc.build(mlc.Module.parse(texts[2]), cache=True)
    log = records()
    assert any("removed 1 least recently used entries" in line for line in log)
    left = entries(cache)
    assert len(left) == 2 and (second not in left) and (first in left)
    mlc.build(mlc.Module.parse(texts[1]), cache=True)  # evicted: compiled again
    assert compiled(records()) == 1


def test_cache_limit_setting(monkeypatch, tmp_path, caplog):
    monkeypatch.delenv("MLC_CACHE_MAX_MB", raising=False)
    assert compile_cache.max_cache_bytes() == compile_cache.DEFAULT_MAX_MB << 20
    monkeypatch.setenv("MLC_CACHE_MAX_MB", "none")
    assert compile_cache.max_cache_bytes() is None
    monkeypatch.setenv("MLC_CACHE_MAX_MB", "0.5")
    assert compile_cache.max_cache_bytes() == 1 << 19
    monkeypatch.setenv("MLC_CACHE_MAX_MB", "-3")
    with caplog.at_level(logging.WARNING, logger="mlc_mlir"):
        assert compile_cache.max_cache_bytes() == compile_cache.DEFAULT_MAX_MB << 20
    assert "is not a positive number of megabytes" in caplog.text
    # staging directories of builds that died a day ago go with the next eviction; fresh ones stay
    store = compile_cache.CompileCache(tmp_path)
    old, fresh = store.staging(), store.staging()
    os.utime(old, (1, 1))
    assert store.evict(None) == [] and not old.exists() and fresh.exists()
