"""Calling compiled functions from Python: the fast builtin entry and the checked path.

Every call is compared with NumPy; every check of the Python path is also made by the
fast entry (the same ArgumentError, with the same message); calls the entry declines
(NDArray, DLPack, subclasses, non-contiguous or strided arrays) still give the right
answer; the builtin outlives the module and is safe from several threads.
"""

import gc
import sys
import threading

import numpy as np
import pytest

import mlc_mlir as mlc
from mlc_mlir import te
from mlc_mlir.compiler import CompiledFunction, fastcall


def add_kernel(n, name, dtype="float32"):
    a, b = te.placeholder((n,), dtype, name="A"), te.placeholder((n,), dtype, name="B")
    c = te.compute((n,), lambda i: a[i] + b[i], name="C")
    return te.create_prim_func([a, b, c], name=name)


@pytest.fixture(scope="module", params=[10, "n"], ids=["static", "symbolic"])
def add(request):
    name = "add" if request.param == 10 else "addn"
    return mlc.build(add_kernel(request.param, name))[name]


def inputs(rng, n=10):
    return rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)


def test_fast_entry_is_used_and_matches_numpy(add, rng):
    assert fastcall.ndarray_layout() is not None  # NumPy's struct layout verified in this process
    assert type(type(add).__call__).__name__ == "builtin_function_or_method"
    a, b = inputs(rng)
    c = np.full(10, -1, np.float32)
    add(a, b, c)
    np.testing.assert_array_equal(c, a + b)


def test_symbolic_entry_takes_every_length(rng):
    f = mlc.build(add_kernel("n", "addn"))["addn"]
    for n in (0, 1, 37, 70000):  # 70000 floats: over GIL_RELEASE_BYTES, runs without the GIL
        a, b = inputs(rng, n)
        c = np.full(n, -1, np.float32)
        f(a, b, c)
        np.testing.assert_array_equal(c, a + b)


class Sub(np.ndarray):
    pass


def test_declined_calls_take_the_checked_path(add, rng):
    a, b = inputs(rng)
    big = rng.random(20, dtype=np.float32)
    for args, want in [((big[::2], b), big[::2] + b),                       # non-contiguous input
                       ((mlc.runtime.array(a), b), a + b),                  # NDArray
                       ((a.view(Sub), b), a + b),                           # subclass
                       ((np.from_dlpack(mlc.runtime.array(a)), b), a + b),  # DLPack import
                       ((a.astype(">f4").astype(np.float32), b), a + b)]:
        c = np.zeros(10, np.float32)
        add(*args, c)
        np.testing.assert_array_equal(c, want)
    out = mlc.runtime.empty((10,), "float32")
    add(a, b, out)
    np.testing.assert_array_equal(out.numpy(), a + b)


BAD_CALLS = {
    "arity": (lambda a, b, c: (a, b), "takes 3 arguments"),
    "too many": (lambda a, b, c: (a, b, c, c), "takes 3 arguments"),
    "dtype": (lambda a, b, c: (a.astype(np.float64), b, c), "argument 0 \\(A\\): expected dtype float32, got float64"),
    "rank": (lambda a, b, c: (a.reshape(2, 5), b, c), "argument 0 \\(A\\): expected rank 1"),
    "read-only output": (lambda a, b, c: (a, b, readonly(c)), "argument 2 \\(C\\): output array is read-only"),
    "strided output": (lambda a, b, c: (a, b, np.zeros(20, np.float32)[::2]), "output arrays must be C-contiguous"),
    "output aliases input": (lambda a, b, c: (a, b, a), "output argument 2 \\(C\\) overlaps argument 0 \\(A\\)"),
    "partial overlap": (lambda a, b, c: overlapping(b), "output argument 2 \\(C\\) overlaps argument 0"),
    "not an array": (lambda a, b, c: ("abc", b, c), "argument 0 \\(A\\)"),
}


def readonly(x):
    x = x.copy()
    x.flags.writeable = False
    return x


def overlapping(b):
    buf = np.zeros(15, np.float32)
    return buf[:10], b, buf[5:15]


@pytest.mark.parametrize("case", sorted(BAD_CALLS))
def test_fast_entry_rejects_what_the_checked_path_rejects(add, rng, case):
    make, message = BAD_CALLS[case]
    a, b = inputs(rng)
    args = make(a, b, np.zeros(10, np.float32))
    before = [np.array(x, copy=True) if isinstance(x, np.ndarray) else x for x in args]
    for call in (add, add.call_checked):
        with pytest.raises(mlc.ArgumentError, match=message):
            call(*args)
    for x, y in zip(args, before):  # nothing was written
        if isinstance(x, np.ndarray):
            np.testing.assert_array_equal(x, y)


def test_shape_and_symbol_errors():
    static = mlc.build(add_kernel(10, "add"))["add"]
    with pytest.raises(mlc.ArgumentError, match="expected shape \\(10,\\), got \\(11,\\)"):
        static(np.zeros(11, np.float32), np.zeros(10, np.float32), np.zeros(10, np.float32))
    sym = mlc.build(add_kernel("n", "addn"))["addn"]
    with pytest.raises(mlc.ArgumentError, match="symbol 'n' was bound to 4 by A"):
        sym(np.zeros(4, np.float32), np.zeros(5, np.float32), np.zeros(4, np.float32))
    with pytest.raises(mlc.ArgumentError, match="argument 2 \\(C\\): dimension 0 is 3"):
        sym(np.zeros(4, np.float32), np.zeros(4, np.float32), np.zeros(3, np.float32))


def test_builtin_outlives_the_module_and_keeps_refcounts(rng):
    f = mlc.build(add_kernel("n", "addn"))["addn"]
    gc.collect()
    a, b = inputs(rng)
    c = np.zeros(10, np.float32)
    before = sys.getrefcount(None), sys.getrefcount(a), sys.getrefcount(c)
    for _ in range(2000):
        f(a, b, c)
    assert abs(sys.getrefcount(None) - before[0]) < 50
    assert (sys.getrefcount(a), sys.getrefcount(c)) == before[1:]
    np.testing.assert_array_equal(c, a + b)


def test_two_threads_call_one_builtin():
    f = mlc.build(add_kernel("n", "addn"))["addn"]
    errors = []

    def work(seed):
        r = np.random.default_rng(seed)
        try:
            for _ in range(300):
                n = int(r.integers(1, 40000))  # both sides of the GIL-release threshold
                a, b = inputs(r, n)
                c = np.empty(n, np.float32)
                f(a, b, c)
                if not np.array_equal(c, a + b):
                    errors.append(f"wrong result, n={n}")
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(repr(exc))

    threads = [threading.Thread(target=work, args=(s,)) for s in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[:3]


def test_without_a_verified_numpy_layout_calls_take_the_checked_path(monkeypatch, rng):
    monkeypatch.setattr(fastcall, "ndarray_layout", lambda: None)
    rt = mlc.build(add_kernel("n", "addn"))
    assert "mlc_pyfn_" not in rt.get_source("llvm-dialect")
    f = rt["addn"]
    assert type(f).__call__ is CompiledFunction.__call__
    a, b = inputs(rng)
    c = np.zeros(10, np.float32)
    f(a, b, c)
    np.testing.assert_array_equal(c, a + b)
    with pytest.raises(mlc.ArgumentError, match="overlaps"):
        f(a, b, a)


STRIDED = """
func.func @copy(%a: memref<2x3xf32, strided<[1, 2]>>, %o: memref<2x3xf32>) {
  linalg.copy ins(%a : memref<2x3xf32, strided<[1, 2]>>) outs(%o : memref<2x3xf32>)
  return
}
func.func @store(%a: memref<2x3xf32>, %o: memref<2x3xf32, strided<[1, 2]>>) {
  linalg.copy ins(%a : memref<2x3xf32>) outs(%o : memref<2x3xf32, strided<[1, 2]>>)
  return
}
func.func @offset(%a: memref<4xf32, strided<[1], offset: 2>>, %o: memref<4xf32>) {
  linalg.copy ins(%a : memref<4xf32, strided<[1], offset: 2>>) outs(%o : memref<4xf32>)
  return
}
func.func @any(%a: memref<?xf32, strided<[?], offset: ?>>, %o: memref<?xf32, strided<[?], offset: ?>>) {
  linalg.copy ins(%a : memref<?xf32, strided<[?], offset: ?>>) outs(%o : memref<?xf32, strided<[?], offset: ?>>)
  return
}
"""


def test_strided_memref_layouts_are_honoured_or_rejected(rng):
    rt = mlc.build(mlc.Module.parse(STRIDED))
    x = rng.random((2, 3), dtype=np.float32)
    for arg in (np.asfortranarray(x), x):  # the Fortran array as is; the C array copied to the layout
        out = np.zeros((2, 3), np.float32)
        rt["copy"](arg, out)
        np.testing.assert_array_equal(out, x)
    out = np.asfortranarray(np.zeros((2, 3), np.float32))
    rt["store"](x, out)
    np.testing.assert_array_equal(out, x)
    with pytest.raises(mlc.ArgumentError, match="argument 1 \\(arg1\\).*layout strided<\\[1, 2\\]>.*\\(3, 1\\)"):
        rt["store"](x, np.zeros((2, 3), np.float32))
    y = rng.random(4, dtype=np.float32)
    out = np.zeros(4, np.float32)
    rt["offset"](y, out)
    np.testing.assert_array_equal(out, y)
    z = rng.random(12, dtype=np.float32)
    buf = np.zeros(12, np.float32)
    rt["any"](z[::-2], buf[1::2])  # dynamic strides: any strides, negative too, zero-copy
    np.testing.assert_array_equal(buf[1::2], z[::-2])
    np.testing.assert_array_equal(buf[::2], 0)


def copy_module(elem):
    return mlc.Module.parse(f"""
    func.func @cp(%a: tensor<5x{elem}>, %o: tensor<5x{elem}>) -> tensor<5x{elem}> {{
      %r = linalg.copy ins(%a : tensor<5x{elem}>) outs(%o : tensor<5x{elem}>) -> tensor<5x{elem}>
      return %r : tensor<5x{elem}>
    }}""")


@pytest.mark.parametrize("elem, dtype", [("ui8", np.uint8), ("ui32", np.uint32), ("si16", np.int16),
                                         ("complex<f32>", np.complex64), ("complex<f64>", np.complex128)])
def test_unsigned_and_complex_element_types(rng, elem, dtype):
    f = mlc.build(copy_module(elem))["cp"]
    x = (rng.random(5) * 200 + 1j * rng.random(5) * 50 if np.dtype(dtype).kind == "c" else rng.random(5) * 200)
    x = x.astype(dtype)
    out = np.zeros(5, dtype)
    f(x, out)
    np.testing.assert_array_equal(out, x)
    with pytest.raises(mlc.ArgumentError, match=f"expected dtype {np.dtype(dtype)}"):
        f(x.real.astype(np.float64), out)


@pytest.mark.parametrize("elem", ["bf16", "f8E4M3FN", "i4"])
def test_element_types_without_a_numpy_dtype_are_named(elem):
    rt = mlc.build(copy_module(elem))
    with pytest.raises(mlc.ArgumentError, match=f"@cp cannot be called from Python: element type {elem} "
                                                "has no NumPy dtype"):
        rt["cp"]


class BadDLPack:
    def __init__(self, result):
        self.result = result

    def __dlpack__(self, *args, **kwargs):
        if isinstance(self.result, Exception):
            raise self.result
        return self.result

    def __dlpack_device__(self):
        return (1, 0)


@pytest.mark.parametrize("result", [ValueError("boom"), "not a capsule", None, KeyError("k")])
def test_bad_dlpack_objects_are_argument_errors(add, result):
    c = np.zeros(10, np.float32)
    with pytest.raises(mlc.ArgumentError, match="argument 0 \\(A\\): cannot view BadDLPack through DLPack"):
        add(BadDLPack(result), np.zeros(10, np.float32), c)


def test_runtime_misuse_is_mlc_error(add):
    rt = add._rt
    for key in (["add"], None, 3):
        with pytest.raises(mlc.MlcError, match="looked up by name"):
            rt[key]
    for kw in ({"number": "3"}, {"number": 0}, {"repeat": 1.5}, {"number": True}, {"min_repeat_ms": "x"}):
        with pytest.raises(mlc.MlcError, match="time_evaluator"):
            rt.time_evaluator(add.name, **kw)


@pytest.mark.parametrize("shape, dtype, message", [
    ((2, -1), "float32", "non-negative ints"),
    ((2.5,), "float32", "non-negative ints"),
    ("ab", "float32", "non-negative ints"),
    (None, "float32", "sequence"),
    ((2,), "nonsense", "unknown dtype"),
    ((2,), "object", "not a numeric type"),
    ((1 << 40, 1 << 40), "float32", "cannot allocate"),
])
def test_runtime_empty_errors(shape, dtype, message):
    with pytest.raises(mlc.RuntimeError_, match=message):
        mlc.runtime.empty(shape, dtype)


def test_runtime_array_errors():
    with pytest.raises(mlc.RuntimeError_, match="cannot make an array"):
        mlc.runtime.array([[1, 2], [3]])
    with pytest.raises(mlc.RuntimeError_, match="not numeric"):
        mlc.runtime.array([object()])
    np.testing.assert_array_equal(mlc.runtime.array([[1, 2], [3, 4]]).numpy(), [[1, 2], [3, 4]])


def test_function_names_that_need_quoting(rng):
    text = """
    func.func @"my-copy.v2"(%a: tensor<4xf32>, %o: tensor<4xf32>) -> tensor<4xf32> {
      %r = linalg.copy ins(%a : tensor<4xf32>) outs(%o : tensor<4xf32>) -> tensor<4xf32>
      return %r : tensor<4xf32>
    }"""
    f = mlc.build(mlc.Module.parse(text))["my-copy.v2"]
    assert type(type(f).__call__).__name__ == "builtin_function_or_method"
    a, out = rng.random(4, dtype=np.float32), np.zeros(4, np.float32)
    f(a, out)
    np.testing.assert_array_equal(out, a)


I1_CHILD = """
import numpy as np, mlc_mlir as mlc
text = '''func.func @cp(%a: tensor<5xi1>, %o: tensor<5xi1>) -> tensor<5xi1> {
  %r = linalg.copy ins(%a : tensor<5xi1>) outs(%o : tensor<5xi1>) -> tensor<5xi1>
  return %r : tensor<5xi1>
}'''
try:
    f = mlc.build(mlc.Module.parse(text))["cp"]
except mlc.BuildError as exc:
    print("BUILD-ERROR", exc)
    raise SystemExit(0)
a = np.array([True, False, True, True, False])
out = np.zeros(5, bool)
f(a, out)
assert np.array_equal(out, a), out
try:
    f(a.astype(np.int8), out)
except mlc.ArgumentError as exc:
    assert "expected dtype bool" in str(exc), exc
else:
    raise AssertionError("int8 accepted for i1")
print("RAN")
"""


def test_bool_arrays_for_i1_functions():
    """i1 tensors: bool arrays are passed as is once they build (the build runs in a child: it may abort)."""
    import subprocess

    proc = subprocess.run([sys.executable, "-c", I1_CHILD], capture_output=True, text=True, timeout=300)
    if proc.returncode < 0 or "Assertion" in proc.stderr:
        pytest.skip(f"i1 functions do not build yet (the build aborts: {proc.stderr.strip()[-120:]})")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "RAN" in proc.stdout or "BUILD-ERROR" in proc.stdout


def test_unaligned_arrays_are_copied_or_rejected(add, rng):
    a, b = inputs(rng)
    c = np.zeros(10, np.float32)
    raw = bytearray(41)
    raw[1:41] = a.tobytes()
    una = np.frombuffer(raw, dtype=np.float32, count=10, offset=1)
    assert not una.flags.aligned
    add(una, b, c)
    np.testing.assert_array_equal(c, a + b)
    with pytest.raises(mlc.ArgumentError, match="argument 2 \\(C\\): output array is not aligned"):
        add(a, b, np.frombuffer(bytearray(41), dtype=np.float32, count=10, offset=1))


MEMREF_IO = """
func.func @axpy(%x: memref<?xf32>, %y: memref<?xf32>, %out: memref<?xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = memref.dim %x, %c0 : memref<?xf32>
  scf.for %i = %c0 to %n step %c1 {
    %a = memref.load %x[%i] : memref<?xf32>
    %v = memref.subview %y[0] [%n] [1] : memref<?xf32> to memref<?xf32, strided<[1]>>
    %b = memref.load %v[%i] : memref<?xf32, strided<[1]>>
    %s = arith.addf %a, %b : f32
    memref.store %s, %out[%i] : memref<?xf32>
  }
  return
}
"""


def test_memref_form_outputs_are_the_written_arguments(rng):
    rt = mlc.build(mlc.Module.parse(MEMREF_IO))
    assert [a.is_output for a in rt.signatures["axpy"].args] == [False, False, True]
    x, y = inputs(rng, 7)
    out = np.zeros(7, np.float32)
    rt["axpy"](readonly(x), y, out)  # read-only inputs are fine
    np.testing.assert_array_equal(out, x + y)
    with pytest.raises(mlc.ArgumentError, match="argument 2 \\(arg2\\): output array is read-only"):
        rt["axpy"](x, y, readonly(out))
    with pytest.raises(mlc.ArgumentError, match="output argument 2 \\(arg2\\) overlaps argument 1"):
        rt["axpy"](x, out, out)


def test_rank3_symbolic_strides(rng):
    a = te.placeholder(("n", "m", "k"), "float32", name="A")
    b = te.placeholder(("n", "m", "k"), "float32", name="B")
    c = te.compute(("n", "m", "k"), lambda i, j, l: a[i, j, l] * b[i, j, l] + 1.0, name="C")
    f = mlc.build(te.create_prim_func([a, b, c], name="fma3"))["fma3"]
    x, y = rng.random((2, 3, 5), dtype=np.float32), rng.random((2, 3, 5), dtype=np.float32)
    for call in (f, f.call_checked):
        out = np.zeros((2, 3, 5), np.float32)
        call(x, y, out)
        np.testing.assert_allclose(out, x * y + 1, rtol=1e-6)


def test_after_call_hook_runs_once_per_call_and_may_raise(rng):
    from mlc_mlir.compiler import compile

    calls = []

    def hook():
        calls.append(1)
        if len(calls) == 3:
            raise mlc.RuntimeError_("hook failed on call 3")

    f = compile(add_kernel("n", "addn"), after_call=hook).runtime["addn"]
    assert type(type(f).__call__).__name__ == "builtin_function_or_method"
    a, b = inputs(rng)
    c = np.zeros(10, np.float32)
    f(a, b, c)                          # fast entry
    f(mlc.runtime.array(a), b, c)       # declined: the checked path
    assert len(calls) == 2
    with pytest.raises(mlc.RuntimeError_, match="hook failed on call 3"):
        f(a, b, c)
    np.testing.assert_array_equal(c, a + b)
    f(a, b, c)
    assert len(calls) == 4


def test_copyfrom_errors():
    arr = mlc.runtime.empty((2,), "float32")
    arr.copyfrom(np.array([1.5, 2.5]))
    np.testing.assert_array_equal(arr.numpy(), [1.5, 2.5])
    with pytest.raises(mlc.RuntimeError_, match="shape \\(3,\\) differs from \\(2,\\)"):
        arr.copyfrom([1, 2, 3])
    with pytest.raises(mlc.RuntimeError_, match="cannot copy <U1 data into float32"):
        arr.copyfrom(np.array(["a", "b"]))


def random_argument(r, n, is_output):
    """An array of length about ``n`` with a random dtype, rank, layout, flags (or an NDArray)."""
    kind = r.integers(0, 9)
    size = n if r.random() < 0.8 else int(r.integers(0, 12))
    dtype = np.float32 if r.random() < 0.85 else r.choice([np.float64, np.int32, np.float16])
    if kind == 0:
        return np.zeros(2 * size, dtype)[::2]
    if kind == 1:
        return np.zeros((1, size), dtype)
    if kind == 2:
        x = np.zeros(size, dtype)
        x.flags.writeable = False
        return x
    if kind == 3:
        return mlc.runtime.array(np.zeros(size, dtype))
    return np.zeros(size, dtype) if not is_output or r.random() < 0.9 else np.zeros(size, dtype).view(Sub)


@pytest.mark.parametrize("name", ["add", "addn"])
def test_fast_entry_and_checked_path_agree_on_random_calls(name):
    """Seeded random calls: the builtin and call_checked raise the same error or give the same result."""
    f = mlc.build(add_kernel(10 if name == "add" else "n", name))[name]
    r = np.random.default_rng(42)
    outcomes = set()
    for _ in range(300):
        n = 10 if r.random() < 0.7 else int(r.integers(0, 12))
        args = [random_argument(r, n, k == 2) for k in range(3)]
        if r.random() < 0.15:  # aliasing: the output is (a view of) an input
            args[2] = args[int(r.integers(0, 2))]
        if r.random() < 0.05:
            args = args[:int(r.integers(0, 3))]
        results = []
        for call in (f, f.call_checked):
            for a in args:  # the same contents before each call
                view = np.asarray(a)
                if view.flags.writeable:
                    view[...] = np.arange(view.size).reshape(view.shape)
            try:
                call(*args)
                results.append(("ok", np.array(np.asarray(args[2]), copy=True).tolist()))
            except mlc.ArgumentError as exc:
                results.append(("error", str(exc)))
        assert results[0] == results[1], (results, [getattr(a, "shape", a) for a in args])
        outcomes.add(results[0][0])
    assert outcomes == {"ok", "error"}
