"""export_library / load_module in this process: modules and graphs round-trip through a
shared library, with the same calls, checks and errors as the JIT's (the fresh-venv test is
test_deploy_venv.py, the C program test_deploy_c.py)."""

from __future__ import annotations

import ctypes
import ctypes.util
import json
import os

import numpy as np
import pytest
from _deploy_models import cnn_module, cnn_params, cnn_reference, mlp_module, mlp_params, mlp_reference

import mlc_mlir as mlc
from mlc_mlir import te
from mlc_mlir.errors import ArgumentError, BuildError, MlcError, RuntimeError_
from mlc_mlir.runtime.module import RuntimeModule
from mlc_mlir.runtime.vm import Executable
from mlc_mlir.target import host_features


def scale_mod(factor: float = 2.0, name: str = "f") -> mlc.Module:
    A = te.placeholder(("n", 8), name="A")
    B = te.compute(A.shape, lambda i, j: A[i, j] * factor + 1.0, name="B")
    return te.create_prim_func([A, B], name=name)


@pytest.fixture(scope="module")
def mlp_lib(tmp_path_factory):
    p = mlp_params()
    ex = mlc.graph.build(mlp_module(p), "llvm")
    path = tmp_path_factory.mktemp("deploy") / "mlp.so"
    ex.export_library(path)
    return p, ex, path


def test_module_round_trip(tmp_path):
    rt = mlc.build(scale_mod())
    path = tmp_path / "scale.so"
    rt.export_library(path)
    loaded = mlc.runtime.load_module(str(path))
    assert isinstance(loaded, RuntimeModule) and loaded.functions == ["f"]
    assert loaded.signatures == rt.signatures
    a = np.arange(24, dtype=np.float32).reshape(3, 8)
    out = np.zeros_like(a)
    f = loaded["f"]
    assert type(type(f).__dict__["__call__"]).__name__ == "builtin_function_or_method"  # the fast entry
    f(a, out)
    np.testing.assert_array_equal(out, a * 2 + 1)
    out2 = mlc.runtime.empty((3, 8))
    f(mlc.runtime.array(a), out2)  # the checked path
    np.testing.assert_array_equal(out2.numpy(), a * 2 + 1)
    f(a[:, ::-1], out)  # a strided input: copied by the checked path
    np.testing.assert_array_equal(out, a[:, ::-1] * 2 + 1)
    with pytest.raises(ArgumentError, match=r"@f argument 1 \(B\)"):
        f(a, np.zeros((4, 8), np.float32))
    with pytest.raises(ArgumentError, match="overlaps"):
        f(a, a)
    assert loaded.time_evaluator("f", mlc.cpu(), number=5, repeat=2)(a, out).mean > 0
    copy = tmp_path / "copy.so"
    loaded.export_library(copy)  # a loaded library exports as a copy of its file
    assert copy.read_bytes() == path.read_bytes()


def test_graph_round_trip_mlp(mlp_lib):
    p, ex, path = mlp_lib
    loaded = mlc.runtime.load_module(path)
    assert isinstance(loaded, Executable) and loaded.functions == ["main"]
    assert loaded.signatures == ex.signatures
    rng = np.random.default_rng(3)
    for batch in (1, 5, 64):  # "n": a symbolic batch
        x = rng.random((batch, 784), dtype="float32")
        y = mlc.graph.VirtualMachine(loaded, mlc.cpu())["main"](x)
        np.testing.assert_allclose(y.numpy(), mlp_reference(p, x), rtol=1e-4, atol=1e-4)
        y2 = mlc.runtime.vm.VirtualMachine(loaded, mlc.runtime.cpu())["main"](mlc.runtime.array(x))
        np.testing.assert_array_equal(y2.numpy(), y.numpy())
    with pytest.raises(ArgumentError, match="@main input 0"):
        mlc.graph.VirtualMachine(loaded, mlc.cpu())["main"](np.zeros((2, 783), np.float32))


def test_graph_round_trip_cnn(tmp_path):
    p = cnn_params()
    ex = mlc.graph.build(cnn_module(p), "llvm")
    ex.export_library(tmp_path / "cnn.so")
    vm = mlc.graph.VirtualMachine(mlc.runtime.load_module(tmp_path / "cnn.so"), mlc.cpu())
    x = np.random.default_rng(0).random((1, 1, 8, 8), dtype="float32")
    np.testing.assert_allclose(vm["main"](x).numpy(), cnn_reference(p, x), rtol=1e-4, atol=1e-4)


def test_library_exports_only_its_entries(mlp_lib):
    _, _, path = mlp_lib
    lib = ctypes.CDLL(str(path))
    for sym in ("mlc_call_main", "mlc_get_function", "mlc_last_error", "mlc_module_metadata",
                "_mlir_ciface_main", "mlc_pyfn_main"):
        assert hasattr(lib, sym), sym
    meta = json.loads(ctypes.string_at(ctypes.addressof(ctypes.c_char.in_dll(lib, "mlc_module_metadata"))))
    assert meta["kind"] == "graph" and meta["graph"]["functions"][0]["inputs"][0]["shape"] == ["n", 784]
    with pytest.raises(AttributeError):
        lib.main  # the kernel called main stays local to the library  # noqa: B018


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32),
                ("ndim", ctypes.c_int32), ("code", ctypes.c_uint8), ("bits", ctypes.c_uint8),
                ("lanes", ctypes.c_uint16), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.c_void_p), ("byte_offset", ctypes.c_uint64)]


def dl(arr: np.ndarray) -> DLTensor:
    shape = (ctypes.c_int64 * arr.ndim)(*arr.shape)
    t = DLTensor(arr.ctypes.data, 1, 0, arr.ndim, 2, 32, 1, shape, None, 0)
    t._keep = shape
    return t


def test_c_entry(mlp_lib):
    p, _, path = mlp_lib
    lib = ctypes.CDLL(str(path))
    lib.mlc_last_error.restype = ctypes.c_char_p
    lib.mlc_get_function.restype = ctypes.c_void_p
    call = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(DLTensor), ctypes.c_int32)(lib.mlc_get_function(b"main"))
    x = np.random.default_rng(1).random((3, 784), dtype="float32")
    y = np.zeros((3, 10), np.float32)
    assert call((DLTensor * 2)(dl(x), dl(y)), 2) == 0
    np.testing.assert_allclose(y, mlp_reference(p, x), rtol=1e-4, atol=1e-4)
    assert call((DLTensor * 2)(dl(x), dl(np.zeros((2, 10), np.float32))), 2) == -1
    assert b"dimension 0 is 2 but n = 3" in lib.mlc_last_error()
    assert call((DLTensor * 1)(dl(x)), 1) == -1 and b"takes 2 arguments" in lib.mlc_last_error()
    assert not lib.mlc_get_function(b"nope") and b"no function nope" in lib.mlc_last_error()


def test_two_libraries_in_the_global_scope_keep_their_own_code(tmp_path):
    """As when a C program links two models: each library calls its own kernels."""
    mlc.build(scale_mod(2.0)).export_library(tmp_path / "two.so")
    mlc.build(scale_mod(3.0)).export_library(tmp_path / "three.so")
    libs = [ctypes.CDLL(str(tmp_path / name), mode=ctypes.RTLD_GLOBAL) for name in ("two.so", "three.so")]
    a = np.ones((2, 8), np.float32)
    for lib, want in zip(libs, (3.0, 4.0)):
        out = np.zeros_like(a)
        lib.mlc_call_f.argtypes = [ctypes.POINTER(DLTensor), ctypes.c_int32]
        assert lib.mlc_call_f((DLTensor * 2)(dl(a), dl(out)), 2) == 0
        assert (out == want).all()


def test_export_again_to_the_same_path_loads_the_new_code(tmp_path):
    path = tmp_path / "f.so"
    a = np.ones((2, 8), np.float32)
    out = np.zeros_like(a)
    mlc.build(scale_mod(2.0)).export_library(path)
    first = mlc.runtime.load_module(path)
    mlc.build(scale_mod(3.0)).export_library(path)
    second = mlc.runtime.load_module(path)
    first["f"](a, out)
    assert out[0, 0] == 3.0
    second["f"](a, out)
    assert out[0, 0] == 4.0


@pytest.mark.skipif(not {"avx2", "fma"} <= host_features(), reason="the host cannot run haswell code")
def test_export_for_another_cpu(tmp_path):
    rt = mlc.build(scale_mod(), target="llvm -mcpu=haswell")
    rt.export_library(tmp_path / "haswell.so")
    loaded = mlc.runtime.load_module(tmp_path / "haswell.so")
    assert loaded.target == "llvm -mcpu=haswell"
    a = np.ones((2, 8), np.float32)
    out = np.zeros_like(a)
    loaded["f"](a, out)
    assert (out == 3).all()


def test_object_and_llvm_ir_alone(tmp_path):
    rt = mlc.build(scale_mod())
    rt.export_library(tmp_path / "f.o")
    assert (tmp_path / "f.o").read_bytes()[:4] == b"\x7fELF"
    rt.export_library(tmp_path / "f.ll")
    assert "define void @_mlir_ciface_f" in (tmp_path / "f.ll").read_text()


def test_foreign_triple_is_a_clear_error():
    with pytest.raises(BuildError, match="mtriple"):
        mlc.build(scale_mod(), target="llvm -mtriple=aarch64-linux-gnu")


def test_no_c_compiler_is_a_clear_error(tmp_path, monkeypatch):
    rt = mlc.build(scale_mod())
    monkeypatch.setenv("CC", "no-such-cc")
    with pytest.raises(BuildError, match="needs a C compiler.*no-such-cc.*ending in .o"):
        rt.export_library(tmp_path / "f.so")
    rt.export_library(tmp_path / "f.o")  # the object needs none


def test_environment_functions_cannot_be_exported(tmp_path):
    @mlc.register_func("test_deploy.double", override=True)
    def double(x, out):
        np.multiply(x, 2, out=out)

    bb = mlc.graph.BlockBuilder()
    x = mlc.graph.Var("x", (4,), "float32")
    with bb.function("main", [x]):
        with bb.dataflow():
            gv = bb.emit_output(bb.emit(mlc.graph.op.call_dps_packed("test_deploy.double", [x], (4,), "float32")))
        bb.emit_func_output(gv)
    ex = mlc.graph.build(bb.get(), "llvm")
    with pytest.raises(BuildError, match=r"environment functions \['test_deploy.double'\]"):
        ex.export_library(tmp_path / "env.so")


def test_load_errors(tmp_path):
    with pytest.raises(RuntimeError_, match="no file"):
        mlc.runtime.load_module(tmp_path / "missing.so")
    (tmp_path / "text.so").write_text("not a library")
    with pytest.raises(RuntimeError_, match="cannot load it as a shared library"):
        mlc.runtime.load_module(tmp_path / "text.so")
    libm = ctypes.util.find_library("m")
    if libm and os.path.isfile(f"/lib/x86_64-linux-gnu/{libm}"):
        with pytest.raises(RuntimeError_, match="not a library exported by mlc-mlir"):
            mlc.runtime.load_module(f"/lib/x86_64-linux-gnu/{libm}")
    with pytest.raises(MlcError, match="holds no code"):
        RuntimeModule(lookup=lambda name: 0, signatures={}, target="llvm").export_library(tmp_path / "x.so")



STRIDED = """
func.func @copy(%a: memref<2x3xf32, strided<[1, 2]>>, %o: memref<2x3xf32>) {
  linalg.copy ins(%a : memref<2x3xf32, strided<[1, 2]>>) outs(%o : memref<2x3xf32>)
  return
}
func.func @offset(%a: memref<4xf32, strided<[1], offset: 2>>, %o: memref<4xf32>) {
  linalg.copy ins(%a : memref<4xf32, strided<[1], offset: 2>>) outs(%o : memref<4xf32>)
  return
}
func.func @any(%a: memref<?xf32, strided<[?], offset: ?>>, %o: memref<?xf32, strided<[?], offset: ?>>) {
  memref.copy %a, %o : memref<?xf32, strided<[?], offset: ?>> to memref<?xf32, strided<[?], offset: ?>>
  return
}
"""


def test_strided_layouts_and_memref_copy(tmp_path):
    """Memref layouts through the loaded library (checked path, C entry); memref.copy of
    strided memrefs calls memrefCopy, which the library carries instead of MLIR's runtime."""
    mlc.build(mlc.Module.parse(STRIDED)).export_library(tmp_path / "strided.so")
    rt = mlc.runtime.load_module(tmp_path / "strided.so")
    rng = np.random.default_rng(0)
    x = rng.random((2, 3), dtype=np.float32)
    for arg in (np.asfortranarray(x), x):
        out = np.zeros((2, 3), np.float32)
        rt["copy"](arg, out)
        np.testing.assert_array_equal(out, x)
    y = rng.random(4, dtype=np.float32)
    out4 = np.zeros(4, np.float32)
    rt["offset"](y, out4)
    np.testing.assert_array_equal(out4, y)
    z = rng.random(12, dtype=np.float32)
    buf = np.zeros(12, np.float32)
    rt["any"](z[::-2], buf[1::2])
    np.testing.assert_array_equal(buf[1::2], z[::-2])
    lib = ctypes.CDLL(str(tmp_path / "strided.so"))
    lib.mlc_last_error.restype = ctypes.c_char_p
    fx, out = np.asfortranarray(x), np.zeros((2, 3), np.float32)
    t = dl(fx)
    strides = (ctypes.c_int64 * 2)(1, 2)
    t.strides = ctypes.addressof(strides)
    assert lib.mlc_call_copy((DLTensor * 2)(t, dl(out)), 2) == 0
    np.testing.assert_array_equal(out, x)
    assert lib.mlc_call_copy((DLTensor * 2)(dl(x), dl(out)), 2) == -1  # C-contiguous: not the layout
    assert b"stride" in lib.mlc_last_error()
