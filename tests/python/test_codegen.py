"""Codegen without a hand schedule: fast-math, noalias, default rules; results against NumPy.

(The IR shape is checked with FileCheck in tests/lit/compiler/codegen_flags.py,
tests/lit/schedule/rules.py and tests/lit/graph/default_schedule.py; no timing here.)
"""

import numpy as np
import pytest

import mlc_mlir as mlc
from mlc_mlir import te
from mlc_mlir.graph import BlockBuilder, Var, op
from mlc_mlir.schedule.rules import apply_rules, default_schedule


def matmul_epilogue(m, n, k, *, transposed=False, bias=True):
    A = te.placeholder((m, k), "float32", name="A")
    B = te.placeholder((n, k) if transposed else (k, n), "float32", name="B")
    bvec = te.placeholder((n,), "float32", name="bias")
    r = te.reduce_axis((0, k), "r")
    Y = te.compute((m, n), lambda i, j: te.sum(A[i, r] * (B[j, r] if transposed else B[r, j]), axis=r), name="Y")
    if bias:
        C = te.compute((m, n), lambda i, j: te.max(Y[i, j] + bvec[j], 0), name="C")
        return te.create_prim_func([A, B, bvec, C], name="f")
    return te.create_prim_func([A, B, Y], name="f")


def reference(a, b, bias, transposed):
    y = a.astype("float64") @ (b.T if transposed else b)
    return np.maximum(y + bias, 0) if bias is not None else y


@pytest.mark.parametrize("m, n, k, transposed, bias", [
    (128, 128, 128, False, True),     # mm_relu-like: 4 x 16 tiles on AVX2
    (64, 128, 784, True, True),       # the course MLP's first layer (x @ w.T + b, relu)
    (64, 10, 128, True, True),        # 10 columns: a 5-wide vector tile
    (7, 33, 19, False, False),        # primes: 7 x 11 tiles, scalar-ish but correct
    (1, 128, 64, True, True),         # batch 1
    (256, 64, 1024, False, False),    # large: cache blocks, B panel copied to a local buffer
])
@pytest.mark.parametrize("fastmath", ["contract", "none"])
def test_default_rules_match_numpy(rng, m, n, k, transposed, bias, fastmath):
    sch = mlc.Schedule(matmul_epilogue(m, n, k, transposed=transposed, bias=bias))
    apply_rules(sch)
    rt = mlc.build(sch.mod, fastmath=fastmath)
    a = rng.standard_normal((m, k)).astype("float32")
    b = rng.standard_normal((n, k) if transposed else (k, n)).astype("float32")
    bv = rng.standard_normal(n).astype("float32")
    out = np.full((m, n), np.nan, "float32")
    rt["f"](*([a, b, bv, out] if bias else [a, b, out]))
    np.testing.assert_allclose(out, reference(a, b, bv if bias else None, transposed), rtol=1e-4, atol=1e-4)


def test_tunable_rules_replay_to_the_same_module():
    mod = matmul_epilogue(96, 64, 32)
    sch = mlc.Schedule(mod)
    apply_rules(sch, "llvm -mcpu=haswell -num-cores=2", tunable=True)
    assert "sample_perfect_tile" in str(sch.trace) and "sample_categorical" in str(sch.trace)
    plain = mlc.Schedule(mod)
    apply_rules(plain, "llvm -mcpu=haswell -num-cores=2")
    assert str(sch.trace.apply(mod).mod) == str(plain.mod)


def test_rules_on_elementwise_and_reductions(rng):
    X = te.placeholder((64, 200), "float32", name="X")
    E = te.compute((64, 200), lambda i, j: te.exp(X[i, j]) * 2, name="E")
    r = te.reduce_axis((0, 200), "r")
    S = te.compute((64,), lambda i: te.sum(E[i, r], axis=r), name="S")
    mod = te.create_prim_func([X, S], name="g")
    rt = mlc.build(default_schedule(mod))
    x = rng.standard_normal((64, 200)).astype("float32")
    out = np.zeros(64, "float32")
    rt["g"](x, out)
    np.testing.assert_allclose(out, (np.exp(x.astype("float64")) * 2).sum(1), rtol=1e-4)


def test_apply_rules_errors():
    with pytest.raises(mlc.ScheduleError, match="expects an mlc.Schedule"):
        apply_rules(matmul_epilogue(8, 8, 8))
    with pytest.raises(mlc.ScheduleError, match="CPU targets"):
        apply_rules(mlc.Schedule(matmul_epilogue(8, 8, 8)), "cuda")


def test_build_fastmath_option(rng):
    mod = matmul_epilogue(16, 16, 16, bias=False)
    with pytest.raises(mlc.BuildError, match="fastmath='fastest'"):
        mlc.build(mod, fastmath="fastest")
    a, b = rng.standard_normal((16, 16)).astype("float32"), rng.standard_normal((16, 16)).astype("float32")
    for flags in ("none", "contract", "contract,afn"):
        out = np.zeros((16, 16), "float32")
        mlc.build(mod, fastmath=flags)["f"](a, b, out)
        np.testing.assert_allclose(out, a.astype("float64") @ b, rtol=1e-5, atol=1e-5)


def test_noalias_inputs_may_share_memory_outputs_may_not(rng):
    # noalias is on every memref: inputs are only read (sharing is fine), outputs overlap
    # nothing (the runtime refuses such a call before it runs)
    sch = mlc.Schedule(matmul_epilogue(32, 32, 32, bias=False))
    apply_rules(sch)
    rt = mlc.build(sch.mod)
    a = rng.standard_normal((32, 32)).astype("float32")
    out = np.zeros((32, 32), "float32")
    rt["f"](a, a, out)
    np.testing.assert_allclose(out, a.astype("float64") @ a, rtol=1e-4, atol=1e-4)
    with pytest.raises(mlc.ArgumentError, match="overlaps"):
        rt["f"](a, out, out)


def test_asm_is_the_jit_code():
    rt = mlc.build(matmul_epilogue(16, 16, 16, bias=False))
    asm = rt.get_source("asm")
    assert "<f>:" in asm and "<_mlir_ciface_f>:" in asm   # the JIT object's symbols
    with pytest.raises(mlc.MlcError, match="unknown format"):
        rt.get_source("ptx")


def test_graph_build_course_mlp_batch64(rng):
    w0, b0 = rng.standard_normal((128, 784)).astype("float32") / 28, rng.standard_normal(128).astype("float32")
    w1, b1 = rng.standard_normal((10, 128)).astype("float32") / 11, rng.standard_normal(10).astype("float32")
    bb = BlockBuilder()
    x = Var("x", (64, 784), "float32")
    with bb.function("main", [x]):
        with bb.dataflow():
            h = bb.emit(op.relu(op.add(op.matmul(x, op.permute_dims(mlc.graph.const(w0))), mlc.graph.const(b0))))
            gv = bb.emit_output(op.add(op.matmul(h, op.permute_dims(mlc.graph.const(w1))), mlc.graph.const(b1)))
        bb.emit_func_output(gv)
    ex = mlc.graph.build(bb.get())
    assert "llvm.intr.fmuladd" in ex.get_source("llvm-dialect")
    xv = rng.standard_normal((64, 784)).astype("float32")
    out = mlc.graph.VirtualMachine(ex)["main"](xv).numpy()
    ref = np.maximum(xv.astype("float64") @ w0.T + b0, 0) @ w1.T + b1
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-4)


def test_asm_bytes_are_the_code_in_memory(tmp_path):
    """get_source("asm") disassembles the JIT's object file; its bytes are the ones the JIT
    runs (compared instruction by instruction with the function's memory; instructions
    with relocations, whose operands the JIT linker fills in, are skipped)."""
    import ctypes
    import re
    import subprocess

    from mlc_mlir.toolchain import tool_path

    rt = mlc.build(matmul_epilogue(32, 32, 32, bias=False))
    asm = rt.get_source("asm")
    obj = tmp_path / "jit.o"
    rt.engine.dump_to_object_file(str(obj))
    dump = subprocess.run([tool_path("llvm-objdump"), "-d", "--disassemble-symbols=_mlir_f", str(obj)],
                          capture_output=True, text=True, check=True).stdout
    base = rt.engine.raw_lookup("f")  # the packed wrapper _mlir_f the runtime calls
    start = int(re.search(r"^([0-9a-f]+) <_mlir_f>:", dump, re.MULTILINE).group(1), 16)
    checked = 0
    for line in dump.splitlines():
        m = re.match(r"\s*([0-9a-f]+):\s+((?:[0-9a-f]{2} )+)\s*(\S.*)", line)
        if not m or re.search(r"movabs|call|rip|jmp\s+\*", m.group(3)):
            continue
        want = bytes.fromhex(m.group(2).replace(" ", ""))
        assert ctypes.string_at(base + int(m.group(1), 16) - start, len(want)) == want, line
        assert m.group(3).split()[0] in asm
        checked += 1
    assert checked > 10


def test_graph_build_forwards_its_target(rng):
    bb = BlockBuilder()
    x = Var("x", (4, 8), "float32")
    with bb.function("main", [x]):
        with bb.dataflow():
            gv = bb.emit_output(op.relu(x))
        bb.emit_func_output(gv)
    ex = mlc.graph.build(bb.get(), target="llvm -mattr=-avx512f")
    assert 'target_features = #llvm.target_features<["-avx512f"]>' in ex.get_source("llvm-dialect")
    xv = rng.standard_normal((4, 8)).astype("float32")
    np.testing.assert_array_equal(mlc.graph.VirtualMachine(ex)["main"](xv).numpy(), np.maximum(xv, 0))


def test_rules_leave_scheduled_functions_alone():
    sch = mlc.Schedule(matmul_epilogue(32, 32, 32))
    apply_rules(sch)
    again = mlc.Schedule(sch.mod)  # loops and vectors already: a tuned kernel swapped in
    apply_rules(again)
    assert "split" not in str(again.trace) and str(again.mod) == str(sch.mod)


def test_rules_leave_functions_marked_tuned_alone():
    mod = matmul_epilogue(32, 32, 32)
    name = mod.functions[0]
    mod.update_func(name, mod[name].with_attr("mlc.tuned", True))  # tune_model's mark
    sch = mlc.Schedule(mod)
    apply_rules(sch)
    assert "split" not in str(sch.trace) and str(sch.mod) == str(mod)


def ch2_schedule(rows, n):
    """The course's ch.2 schedule (split j by 32, reorder(j0, k, j1), reverse_compute_at C) on mm_relu."""
    A = te.placeholder((rows, n), "float32", name="A")
    B = te.placeholder((n, n), "float32", name="B")
    r = te.reduce_axis((0, n), "r")
    Y = te.compute((rows, n), lambda i, j: te.sum(A[i, r] * B[r, j], axis=r), name="Y")
    C = te.compute((rows, n), lambda i, j: te.max(Y[i, j], 0), name="C")
    sch = mlc.Schedule(te.create_prim_func([A, B, C], name="f"))
    i, j, k = sch.get_loops(sch.get_block("Y"))
    j0, j1 = sch.split(j, factors=[None, 32])
    sch.reorder(j0, k, j1)
    sch.reverse_compute_at(sch.get_block("C"), j0)
    return sch.mod


@pytest.mark.parametrize("rows, n", [(128, 128), (7, 64), (1, 32)])
@pytest.mark.parametrize("fastmath", ["contract", "none"])
def test_unroll_jam_of_the_ch2_schedule_matches_numpy(rng, capsys, rows, n, fastmath):
    """The unroll-jam stage jams the rows of the ch.2 schedule (a remainder row when 2 does
    not divide them; nothing for one row): same results as NumPy, FMAs only with contract."""
    # the AVX2 register file (16 ymm): an AVX-512 host's own build jams more rows
    rt = mlc.build(ch2_schedule(rows, n), target="llvm -mcpu=haswell", fastmath=fastmath, print_after_all=True)
    captured = capsys.readouterr()
    after = (captured.out + captured.err).split("IR Dump After unroll-jam")[1].split("IR Dump After")[0]
    jammed = after.count("vector.contract")
    assert jammed == (0 if rows == 1 or fastmath == "none" else 2), after
    a = rng.standard_normal((rows, n)).astype("float32")
    b = rng.standard_normal((n, n)).astype("float32")
    out = np.full((rows, n), np.nan, "float32")
    rt["f"](a, b, out)
    np.testing.assert_allclose(out, np.maximum(a.astype("float64") @ b, 0), rtol=1e-4, atol=1e-4)
    fmas = sum("vfmadd" in line for line in rt.get_source("asm").splitlines())
    assert (fmas > 0) == (fastmath == "contract")
