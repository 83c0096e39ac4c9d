"""Regression tests of issue 13: each input once killed or fooled the interpreter.

Every case runs in a child process (tests/python/_isolated.py): should a guard regress,
the abort fails that one test instead of the whole run.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import mlc_mlir as mlc
from mlc_mlir.ir import MAX_NESTING

from _isolated import expect_error, run_child

SOFTMAX = """
A = te.placeholder((8, 16), name="A")
E = te.compute((8, 16), lambda i, k: A[i, k] * 2.0, name="E")
k = te.reduce_axis((0, 16), name="k")
S = te.compute((8,), lambda i: te.sum(E[i, k], axis=k), name="S")
C = te.compute((8, 16), lambda i, j: E[i, j] / S[i], name="C")
mod = te.create_prim_func([A, C])
sch = mlc.Schedule(mod)
"""


@pytest.mark.parametrize("move", [
    'sch.reverse_compute_at(sch.get_block("S"), sch.get_loops(sch.get_block("E"))[0])',
    'sch.compute_at(sch.get_block("E"), sch.get_loops(sch.get_block("S"))[0])',
])
def test_producer_with_consumer_outside_the_loop_is_refused(move):
    expect_error(SOFTMAX + move, "ScheduleError", "'E'", "['C']", "outside")


def test_softmax_other_fusions_still_run():
    out = run_child(SOFTMAX + """
sch.reverse_compute_at(sch.get_block("C"), sch.get_loops(sch.get_block("S"))[0])
rt = mlc.build(sch.mod)
a = np.random.default_rng(0).standard_normal((8, 16)).astype("float32"); c = np.zeros_like(a)
rt["main"](a, c)
e = a * 2
np.testing.assert_allclose(c, e / e.sum(1, keepdims=True), rtol=1e-5)
print("ok")
""")
    assert out.strip().endswith("ok")


ADD16 = """
A = te.placeholder((16,), name="A")
B = te.compute((16,), lambda i: A[i] + 1.0, name="B")
sch = mlc.Schedule(te.create_prim_func([A, B]))
i, = sch.get_loops(sch.get_block("B"))
"""


@pytest.mark.parametrize("value", [-4, 0])
def test_sampled_split_factor_is_checked(value):
    expect_error(ADD16 + f"v = sch.sample_categorical([{value}], [1.0])\nsch.split(i, [None, v])",
                 "ScheduleError", "split", f"got {value}")


def test_sample_perfect_tile_without_tiling():
    code = ADD16.replace("16", "17") + "sch.sample_perfect_tile(i, 1, max_innermost_factor=4)"
    expect_error(code, "ScheduleError", "extent 17", "max_innermost_factor=4")


def test_split_of_a_bound_loop_is_refused():
    expect_error(ADD16 + 'sch.bind(i, "threadIdx.x")\nsch.split(i, [None, 4])',
                 "ScheduleError", "bound to threadIdx.x")


I1_COPY = """
mod = mlc.Module.parse('''func.func @f(%a: tensor<4xi1>, %b: tensor<4xi1>) -> tensor<4xi1> attributes {mlc.prim_func} {
  %r = linalg.copy ins(%a : tensor<4xi1>) outs(%b : tensor<4xi1>) -> tensor<4xi1>
  return %r : tensor<4xi1> }''')
mlc.build(mod)
"""


def test_i1_buffers_give_a_build_error():
    expect_error(I1_COPY, "BuildError", "i1", "tensor<4xi1>")


def test_call_of_a_declaration_gives_a_build_error():
    expect_error("""
mod = mlc.Module.parse('''func.func private @ext(tensor<4xf32>) -> tensor<4xf32>
func.func @f(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> attributes {mlc.prim_func} {
  %r = func.call @ext(%a) : (tensor<4xf32>) -> tensor<4xf32>
  %s = linalg.copy ins(%r : tensor<4xf32>) outs(%b : tensor<4xf32>) -> tensor<4xf32>
  return %s : tensor<4xf32> }''')
mlc.build(mod)
""", "BuildError", "@ext", "declaration")


def test_graph_module_with_environment_functions_to_build_names_graph_build():
    """mlc.build lowers graph functions too (one driver), but only mlc.graph.build connects
    environment functions (Python) to the compiled code."""
    expect_error("""
@mlc.register_func("env.twice", override=True)
def twice(x, out):
    out[:] = 2 * x
bb = mlc.graph.BlockBuilder()
x = mlc.graph.Var("x", (4,), "float32")
with bb.function("main", [x]):
    with bb.dataflow():
        o = bb.emit_output(bb.emit(mlc.graph.op.call_dps_packed("env.twice", [x], (4,), "float32")))
    bb.emit_func_output(o)
mlc.build(bb.get())
""", "BuildError", "env.twice", "mlc.graph.build")


def test_graph_module_through_build_runs_destination_passing():
    bb = mlc.graph.BlockBuilder()
    x = mlc.graph.Var("x", (4,), "float32")
    with bb.function("main", [x]):
        with bb.dataflow():
            o = bb.emit_output(bb.emit(mlc.graph.op.relu(x)))
        bb.emit_func_output(o)
    a = np.array([-1, 2, -3, 4], np.float32)
    out = np.zeros(4, np.float32)
    mlc.build(bb.get())["main"](a, out)
    np.testing.assert_array_equal(out, np.maximum(a, 0))


DEEP = {
    "array": "'module attributes {x = ' + '['*10000 + ']'*10000 + '} {}'",
    "region": "'func.func @f() {' + 'scf.execute_region {'*5000 + 'scf.yield' + '}'*5000 + ' return }'",
    "affine": "'#m = affine_map<(d0) -> (' + '('*20000 + 'd0' + ')'*20000 + ')>'",
}


@pytest.mark.parametrize("kind", sorted(DEEP))
def test_deep_nesting_is_refused_not_a_segfault(kind):
    expect_error(f"mlc.Module.parse({DEEP[kind]})", "ParseError", f"deeper than {MAX_NESTING}")


@pytest.mark.parametrize("kind", sorted(DEEP))
def test_mlc_opt_refuses_deep_nesting(kind, tmp_path):
    path = tmp_path / "deep.mlir"
    path.write_text(eval(DEEP[kind]))  # noqa: S307 - the expressions above
    proc = subprocess.run([sys.executable, "-m", "mlc_mlir.tools.mlc_opt", str(path)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1, proc.stderr
    assert f"deeper than {MAX_NESTING}" in proc.stderr


def test_nesting_within_the_limit_parses():
    depth = 100
    text = "func.func @f() {" + "scf.execute_region {" * depth + "scf.yield " + "} scf.yield " * (depth - 1) \
        + "} return }"
    assert "scf.execute_region" in str(mlc.Module.parse(text))
    # brackets inside strings and comments do not count
    mlc.Module.parse('module attributes {mlc.note = "' + "[" * 5000 + '"} {}\n// ' + "(" * 5000)


def test_lone_surrogate_and_binary_file(tmp_path):
    with pytest.raises(mlc.ParseError, match="surrogate"):
        mlc.Module.parse("module {}\n\ud800")
    path = tmp_path / "bin.mlir"
    path.write_bytes(bytes(range(256)))
    with pytest.raises(mlc.ParseError, match="not UTF-8"):
        mlc.Module.from_file(path)


# A module with two data layout specs: MLIR's module verifier reports the error but returns
# success, and the bindings' assertion ("unhandled captured errors") aborts the interpreter.
TWO_SPECS = {
    "inline": 'module attributes {dlti.dl_spec = #dlti.dl_spec<"dlti.endianness" = "little">, '
              'a.x = #dlti.dl_spec<"dlti.endianness" = "big">} {}',
    "alias": '#s = #dlti.dl_spec<>\n#t = #s\nmodule attributes {a.x = #s, b.y = #t} {}',
    "pretty": 'module attributes {a.x = #dlti<dl_spec<>>, // comment\n b.y = #dlti.dl_spec<>} {}',
    "nested": 'module {\n  module @m attributes {"a.x" = #dlti.dl_spec<>, b.y = #dlti.dl_spec<>} {}\n}',
    "generic": '"builtin.module"() <{sym_name = "m"}> ({\n^bb0:\n}) {a.x = #dlti.dl_spec<>, '
               'b.y = #dlti.dl_spec<>} : () -> () loc("x.mlir":1:1)',
}


@pytest.mark.parametrize("kind", sorted(TWO_SPECS))
def test_two_data_layout_specs_are_refused_not_an_abort(kind):
    expect_error(f"mlc.Module.parse({TWO_SPECS[kind]!r})", "ParseError", "2 data layout specs", "'a.x'",
                 "at most one")


@pytest.mark.parametrize("kind", ["inline", "deep"])
def test_transform_script_text_goes_through_the_parse_guard(kind):
    """A user's transform script is parsed behind the same guard as a module."""
    script = TWO_SPECS["inline"] if kind == "inline" else "module {" + "(" * (MAX_NESTING + 10) + "}"
    expect_error(f"from mlc_mlir.testing.programs import mm_relu\n"
                 f"mlc.schedule.apply_transform_script(mm_relu(), {script!r})",
                 "ScheduleError", "transform script does not parse")


def test_single_data_layout_specs_still_parse():
    out = run_child("""
for text in [
    'module attributes {dlti.dl_spec = #dlti.dl_spec<"dlti.endianness" = "little">} {}',
    'module attributes {a.x = #dlti.dl_spec<>} {\\n module attributes {b.y = #dlti.dl_spec<>} {}\\n}',
    'func.func @f(%a: i32 {a.x = #dlti.dl_spec<>, b.y = #dlti.dl_spec<>}) { return }',
    'module attributes {a.x = #dlti.map<"k" = 1>, b.y = #dlti.dl_spec<>} {}',
    'module attributes {a.x = "#dlti.dl_spec<>", b.y = #dlti.dl_spec<"x" = #dlti.dl_spec<>>} {}',
]:
    print(type(mlc.Module.parse(text)).__name__)
""")
    assert out.split() == ["Module"] * 5, out


def test_mlc_opt_refuses_two_data_layout_specs_in_bytecode_and_irdl_files(tmp_path):
    from mlc_mlir.tools.gen_upstream import mlir_opt_path

    text, binary = tmp_path / "two.mlir", tmp_path / "two.mlirbc"
    text.write_text(TWO_SPECS["inline"])
    if mlir_opt_path() is None:
        pytest.skip("no mlir-opt to write the bytecode")
    subprocess.run([str(mlir_opt_path()), str(text), "--emit-bytecode", "-o", str(binary)], check=True,
                   capture_output=True)
    for args, names in (([str(binary), "--mlc-remove-unused"], "'a.x', 'dlti.dl_spec'"),  # bytecode: sorted
                        ([f"--irdl-file={text}", str(binary)], "'dlti.dl_spec', 'a.x'")):
        proc = subprocess.run([sys.executable, "-m", "mlc_mlir.tools.mlc_opt", *args],
                              capture_output=True, text=True, timeout=120)
        assert proc.returncode == 1, proc.stderr[-2000:]
        assert f"2 data layout specs (#dlti.dl_spec: {names})" in proc.stderr


@pytest.mark.parametrize("size", ["te.var('n')", "1_000_000"])
def test_too_large_intermediate_raises_allocation_error(size):
    out = run_child(f"""
n = {size}
A = te.placeholder((n,), name="A")
B = te.compute((n, n), lambda i, j: A[i] * A[j], name="B")
k = te.reduce_axis((0, n), name="k")
C = te.compute((n,), lambda i: te.sum(B[i, k], axis=k), name="C")
rt = mlc.build(te.create_prim_func([A, C]))
x = np.ones(1_000_000, np.float32); y = np.zeros_like(x)
try:
    rt["main"](x, y)
except MemoryError as exc:
    assert isinstance(exc, mlc.errors.AllocationError) and isinstance(exc, mlc.RuntimeError_)
    print("MemoryError:", exc)
if not isinstance(n, int):  # the same kernel still runs on small inputs
    x = np.arange(5, dtype=np.float32); y = np.zeros_like(x)
    rt["main"](x, y)
    np.testing.assert_allclose(y, x * x.sum())
print("ok")
""")
    # (aligned_alloc: the buffer's own size, 1e12 floats; malloc had 64 bytes of alignment slack)
    assert "MemoryError: compiled code could not allocate" in out and "4000000000000 bytes" in out
    assert out.strip().endswith("ok")


@pytest.mark.parametrize("dtype", ["int8", "int32", "int64"])
def test_integer_division_matches_numpy(dtype):
    out = run_child(f"""
A = te.placeholder((12,), dtype="{dtype}", name="A")
B = te.placeholder((12,), dtype="{dtype}", name="B")
D = te.compute((12,), lambda i: A[i] // B[i], name="D")
M = te.compute((12,), lambda i: A[i] % B[i], name="M")
K = te.compute((12,), lambda i: A[i] // -1 + A[i] % 0 + A[i] // 0 + A[i] % -3, name="K")
rt = mlc.build(te.create_prim_func([A, B, D]))
rm = mlc.build(te.create_prim_func([A, B, M]))
rk = mlc.build(te.create_prim_func([A, K]))
lo = np.iinfo("{dtype}").min
a = np.array([7, -7, 7, -7, 0, 5, lo, lo, lo, 3, -3, lo], "{dtype}")
b = np.array([2, 2, -2, -2, 0, 0, -1, 1, 0, 5, 5, lo], "{dtype}")
d = np.zeros_like(a); m = np.zeros_like(a)
rt["main"](a, b, d); rm["main"](a, b, m)
k = np.zeros_like(a); rk["main"](a, k)
with np.errstate(all="ignore"):
    np.testing.assert_array_equal(d, a // b)
    np.testing.assert_array_equal(m, a % b)
    t = a.dtype.type
    np.testing.assert_array_equal(k, a // t(-1) + a % t(0) + a // t(0) + a % t(-3))
print("ok")
""")
    assert out.strip() == "ok"


HAND_FUSION = """
script = '''module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %s = transform.structured.match attributes{mlc.block = "S"} in %root : (!transform.any_op) -> !transform.any_op
    %e = transform.structured.match attributes{mlc.block = "E"} in %root : (!transform.any_op) -> !transform.any_op
    %t, %l = transform.structured.tile_using_for %s tile_sizes [1]
        : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    %f, %nl = transform.structured.fuse_into_containing_op %e into %l
        : (!transform.any_op, !transform.any_op) -> (!transform.any_op, !transform.any_op)
    transform.yield
  }
}'''
mlc.schedule.apply_transform_script(mod, script)
"""


def test_transform_script_that_aborts_the_interpreter_is_a_schedule_error():
    expect_error(SOFTMAX + HAND_FUSION, "ScheduleError", "crashed the transform interpreter", "SIGABRT")


def test_safe_transform_script_is_applied_in_process():
    from mlc_mlir.schedule.isolate import is_provably_safe
    from mlc_mlir.context import mlc_context
    from mlir import ir

    script = HAND_FUSION.split("'''")[1]
    with mlc_context():
        assert not is_provably_safe(ir.Module.parse(script))
        tiled = script.replace("fuse_into_containing_op %e into %l", "tile_using_for %e tile_sizes [1]")
        tiled = tiled.replace("(!transform.any_op, !transform.any_op) -> (!transform.any_op, !transform.any_op)",
                              "(!transform.any_op) -> (!transform.any_op, !transform.any_op)")
        assert is_provably_safe(ir.Module.parse(tiled))


def test_vectorize_under_gpu_bound_loops_names_vectorize():
    expect_error("""
A = te.placeholder((64, 64), name="A")
B = te.compute((64, 64), lambda i, j: A[i, j] * 2.0, name="B")
sch = mlc.Schedule(te.create_prim_func([A, B]))
i, j = sch.get_loops(sch.get_block("B"))
sch.bind(i, "blockIdx.x")
j0, j1 = sch.split(j, [None, 8])
sch.bind(j0, "threadIdx.x")
sch.vectorize(j1)
mlc.build(sch.mod, target="cuda -arch=sm_90")
""", "BuildError", "sch.vectorize", "GPU kernel")


@pytest.mark.parametrize("kind", sorted(DEEP))
def test_mlc_opt_console_script_refuses_deep_nesting_on_stdin(kind):
    # the console script hands plain runs to mlir-opt; stdin cannot be checked first, so it
    # keeps the guarded Python parse
    script = Path(sys.executable).with_name("mlc-opt")
    proc = subprocess.run([str(script), "-canonicalize"], input=eval(DEEP[kind]),  # noqa: S307
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1, proc.stderr[-2000:]
    assert f"deeper than {MAX_NESTING}" in proc.stderr
