"""The default rules' large-contraction schedule (``rule_blocked.schedule_blocked``): the
structure of a BLAS kernel (the NC column blocks shared by the cores, or one block of rows
per core when they do not share out evenly; the full 6 x 16 register tile with the rows'
remainder peeled, the KC x NC panel of B copied once per cache block) equals NumPy, keeps
its accumulators in registers, and every block size is a decision the tuner can change
(no timing here: benchmarks/bench_matmul.py)."""

import random
import re

import numpy as np
import pytest

import mlc_mlir as mlc
from mlc_mlir import te
from mlc_mlir.schedule import Schedule, Trace
from mlc_mlir.schedule.rules import apply_rules
from mlc_mlir.testing import filecheck

from test_rules_few_rows import linear_relu
from test_schedule_perf_shape import ir_after_stage

M, K, N = 256, 512, 384   # 50M multiply-adds, k = 512: the large path


def matmul(relu=False, n=N):
    A = te.placeholder((M, K), "float32", name="A")
    B = te.placeholder((K, n), "float32", name="B")
    r = te.reduce_axis((0, K), "r")
    Y = te.compute((M, n), lambda i, j: te.sum(A[i, r] * B[r, j], axis=r), name="Y")
    if not relu:
        return te.create_prim_func([A, B, Y], name="mm")
    C = te.compute((M, n), lambda i, j: te.max(Y[i, j], 0), name="C")
    return te.create_prim_func([A, B, C], name="mm")


def run(mod, relu=False, n=N):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((M, K), dtype=np.float32)
    b = rng.standard_normal((K, n), dtype=np.float32)
    c = np.full((M, n), np.nan, np.float32)
    mlc.build(mod)["mm"](a, b, c)
    ref = a @ b
    np.testing.assert_allclose(c, np.maximum(ref, 0) if relu else ref, rtol=1e-4, atol=1e-3)


def _check_linear_relu(rt, n, seed):
    """``linear_relu(M, n, K)``'s ``linear`` in ``rt`` on random data equals NumPy."""
    rng = np.random.default_rng(seed)
    a, b = rng.standard_normal((M, K), dtype=np.float32), rng.standard_normal((K, n), dtype=np.float32)
    bias = rng.standard_normal(n, dtype=np.float32)
    c = np.full((M, n), np.nan, np.float32)
    rt["linear"](a, b, bias, c)
    np.testing.assert_allclose(c, np.maximum(a @ b + bias, 0), rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("cores,relu", [(1, False), (2, False), (2, True)])
def test_large_matmul_under_rules_equals_numpy(cores, relu):
    sch = Schedule(matmul(relu))
    apply_rules(sch, f"llvm -mcpu=haswell -num-cores={cores}")
    text = str(sch.trace)
    # all 256 rows in one block by the full 6-row tile (a remainder of 4, peeled); the 6
    # column blocks of 64 shared by the cores: j0 outermost, parallel
    assert f"factors=[None, {M}]" in text and "factors=[None, 6]" in text
    assert "sch.peel(" in text and 'storage_scope="local"' in text
    assert "sch.reorder(l8, l4, l12" in text
    assert ("sch.parallel(loop=l8)" in text) == (cores > 1)
    run(sch.mod, relu)


def test_large_matmul_rows_per_core_when_columns_do_not_share_out():
    # 320 columns = 5 blocks of 64: not even over 2 cores, so one block of 128 rows per core
    # (a remainder of 2 each, peeled), the row blocks outermost and parallel
    sch = Schedule(matmul(n=320))
    apply_rules(sch, "llvm -mcpu=haswell -num-cores=2")
    text = str(sch.trace)
    assert f"factors=[None, {M // 2}]" in text and "sch.peel(" in text
    assert "sch.reorder(l4, l8, l12" in text and "sch.parallel(loop=l4)" in text
    run(sch.mod, n=320)


def test_large_matmul_keeps_the_tile_in_registers(capsys):
    sch = Schedule(matmul())
    apply_rules(sch, "llvm -mcpu=haswell -num-cores=2")
    after, _ = ir_after_stage(sch.mod, "vector-opt", capsys)
    # the main loop over full 6-row tiles (all 256 rows: the cores share the column blocks):
    # per k step one row of the packed panel, 6 FMAs on the 6 accumulator rows carried by the
    # k loop (registers), stored once per k block; then the 4-row remainder
    filecheck(after, """
    CHECK: memref.alloc() {{.*}} : memref<512x64xf32>
    CHECK: scf.for %{{.*}} = %c0 to %c252 step %c6
    CHECK: scf.for {{.*}} iter_args({{.*}}) -> ([[V:vector<(1x)?16xf32>]], [[V]], [[V]], [[V]], [[V]], [[V]])
    CHECK-COUNT-6: vector.fma {{.*}} : vector<16xf32>
    CHECK: scf.yield
    CHECK: scf.for {{.*}} iter_args({{.*}}) -> ([[V]], [[V]], [[V]], [[V]])
    CHECK-COUNT-4: vector.fma {{.*}} : vector<16xf32>
    """)


def test_block_sizes_are_decisions():
    # every decision of the large path, picked at random: the schedule stays correct, the
    # trace records each choice and replays to the same IR
    seen: list[str] = []

    def decide(rng):
        def pick(decision):
            seen.append(decision.name)
            return rng.randrange(len(decision.options))
        return pick

    texts = set()
    for seed in (1, 2, 3):
        seen.clear()
        sch = Schedule(matmul())
        apply_rules(sch, "llvm -mcpu=haswell -num-cores=2", decide=decide(random.Random(seed)))
        text = str(sch.trace)
        texts.add(text)
        # parallel, NC, cores on columns or rows (only when parallel), rows per block, tile
        # rows, KC, k unroll, the copy: 8 decisions (7 serial), each recorded in the trace
        parallel = "sch.parallel(" in text
        names = ["parallel", "col_block", "split_cores", "row_block", "rows", "k_block", "k_unroll", "cache_b"]
        assert seen == [n for n in names if parallel or n != "split_cores"]
        assert len(seen) == text.count("sample_categorical")
        assert all(f'label="Y.{n}"' in text for n in seen)
        again = Schedule(matmul()).replay(Trace.from_json(sch.trace.as_json()))
        assert str(again.mod) == str(sch.mod)
        run(sch.mod)
    assert len(texts) == 3
    # a one-core target: no parallel decision, the columns outermost without one: 6 sites
    seen.clear()
    sch = Schedule(matmul())
    apply_rules(sch, "llvm -mcpu=haswell -num-cores=1", decide=decide(random.Random(4)))
    assert seen == ["col_block", "row_block", "rows", "k_block", "k_unroll", "cache_b"]
    assert str(sch.trace).count("sample_categorical") == 6
    run(sch.mod)


def matmul_mnk(m, n, k):
    A = te.placeholder((m, k), "float32", name="A")
    B = te.placeholder((k, n), "float32", name="B")
    r = te.reduce_axis((0, k), "r")
    Y = te.compute((m, n), lambda i, j: te.sum(A[i, r] * B[r, j], axis=r), name="Y")
    return te.create_prim_func([A, B, Y], name="mm")


@pytest.mark.parametrize("shape", [(1024, 1024, 1024), (1000, 1000, 1000), (1030, 520, 600), (768, 1024, 2048)])
def test_large_matmul_odd_shapes_equal_numpy(shape):
    # the shapes the large path sees: remainders of rows (1000 = 166 x 6 + 4, 1030 = 171 x 6
    # + 4), columns not a multiple of 16 (1000: 10-column tiles; 520: 13), k not a power of
    # two (600: KC 300, k unrolled by 6), a long k (2048: 4 blocks); the default decisions
    # (the cores on column blocks or on rows) and one random draw of every decision
    m, n, k = shape
    rng = np.random.default_rng(1)
    a = rng.standard_normal((m, k), dtype=np.float32)
    b = rng.standard_normal((k, n), dtype=np.float32)
    ref = a @ b
    pick = random.Random(sum(shape))
    for decide in (None, lambda decision: pick.randrange(len(decision.options))):
        sch = Schedule(matmul_mnk(m, n, k))
        apply_rules(sch, "llvm -mcpu=haswell -num-cores=2", decide=decide)
        assert "sch.cache_read(" in str(sch.trace) or decide is not None
        c = np.full((m, n), np.nan, np.float32)
        mlc.build(sch.mod)["mm"](a, b, c)
        np.testing.assert_allclose(c, ref, rtol=1e-3, atol=1e-3, err_msg=f"{shape}\n{sch.trace}")


def test_large_matmul_columns_in_whole_vectors():
    # 1000 columns: the full 6 x 16 tile in column blocks of 200 (12 tiles + a peeled partial
    # one of 8 columns), k in blocks of 250; the rows' remainder (1000 = 166 x 6 + 4) peeled
    sch = Schedule(matmul_mnk(1000, 1000, 1000))
    apply_rules(sch, "llvm -mcpu=haswell -num-cores=2")
    text = str(sch.trace)
    for factor in (200, 16, 6, 250):
        assert f"factors=[None, {factor}])" in text, text
    assert text.count("sch.peel(") == 2 and "factors=[None, 10])" not in text


@pytest.mark.parametrize("shape,block", [((257, 257, 257), 257), ((1000, 1000, 1000), 200), ((200, 1008, 300), 144)])
def test_large_matmul_avx512_tiles_peel_the_columns(shape, block):
    # AVX-512's 14 x 32 tile: columns no 32-column tile divides keep the full tile in column
    # blocks with the partial one peeled: 257 (a prime: one block, 8 x 32 + 1; before, tiles
    # of one column, 14x NumPy), 1000 (200 = 6 x 32 + 8), 1008 (144 = 4 x 32 + 16: whole
    # vectors, so the copied panel's rows start on cache lines; not 168 = 5 x 32 + 8)
    m, n, k = shape
    rng = np.random.default_rng(2)
    a = rng.standard_normal((m, k), dtype=np.float32)
    b = rng.standard_normal((k, n), dtype=np.float32)
    for target in ("llvm -mcpu=skylake-avx512 -num-cores=2", "llvm -mcpu=haswell -num-cores=2"):
        sch = Schedule(matmul_mnk(m, n, k))
        apply_rules(sch, target, tunable=True)
        text = str(sch.trace)
        if "avx512" in target:
            assert 'label="Y.peel_cols", decision=1)' in text, text
            # (one option, 257: no decision recorded, the factor itself)
            assert "factors=[None, 32])" in text, text
            assert _decided(text, "Y.col_block") == block or f"factors=[None, {block}])" in text, text
            if "avx512f" not in mlc.target.host_features():
                continue  # (the AVX-512 code runs where the host has it)
        c = np.full((m, n), np.nan, np.float32)
        mlc.build(sch.mod, target)["mm"](a, b, c)
        np.testing.assert_allclose(c, a @ b, rtol=1e-3, atol=1e-3, err_msg=f"{target}\n{text}")


def _decided(trace_text, label):
    """The option a recorded decision ``label`` took (None: not recorded)."""
    found = re.search(rf'candidates=\[([^]]*)\].*label="{re.escape(label)}", decision=(\d+)\)', trace_text)
    return [int(v) for v in found.group(1).split(",")][int(found.group(2))] if found else None


def test_large_matmul_without_the_column_peel():
    # the column peel is a decision: without it, tiles of one vector (8), not of 10 (a vector
    # and 2 lanes, 4x slower), with the rows that then fit the registers (12 accumulators + B
    # + a broadcast: 12 x 8), the rows' remainder (1000 = 83 x 12 + 4) peeled
    sch = Schedule(matmul_mnk(1000, 1000, 1000))
    apply_rules(sch, "llvm -mcpu=haswell -num-cores=2", decide={"Y.peel_cols": 0})
    text = str(sch.trace)
    assert 'label="Y.peel_cols", decision=0)' in text and text.count("sch.peel(") == 1
    ir_text = str(sch.mod)  # (the factors are sampled: the tile is read from the IR)
    assert "vector<1x8xf32>" in ir_text and "vector<1x16xf32>" not in ir_text and "vector<1x10xf32>" not in ir_text
    assert "%c996 step %c12" in ir_text  # 83 full tiles of 12 rows


def batched_mm(b, m, k, n):
    """``bmm``: ``Y[t] = A @ B[t]`` for a batch of ``b`` B matrices (A shared)."""
    A = te.placeholder((m, k), "float32", name="A")
    B = te.placeholder((b, k, n), "float32", name="B")
    r = te.reduce_axis((0, k), "r")
    Y = te.compute((b, m, n), lambda t, i, j: te.sum(A[i, r] * B[t, r, j], axis=r), name="Y")
    return te.create_prim_func([A, B, Y], name="bmm")


def _blocked_equals_numpy(b, m, k, n, target, large, seed):
    """The batched gemm ``(b, m, n) += A(m, k) @ B(b, k, n)`` under the rules for ``target``:
    the blocked rule (B's panel copied: ``cache_read``) exactly when ``large``; equal to NumPy."""
    sch = Schedule(batched_mm(b, m, k, n))
    apply_rules(sch, target)
    assert ("cache_read" in str(sch.trace)) == large, str(sch.trace)
    rng = np.random.default_rng(seed)
    a, bv = rng.standard_normal((m, k), dtype=np.float32), rng.standard_normal((b, k, n), dtype=np.float32)
    out = np.full((b, m, n), np.nan, np.float32)
    mlc.build(sch.mod)["bmm"](a, bv, out)
    np.testing.assert_allclose(out, np.einsum("ik,bkn->bin", a, bv), rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("shape,large", [((2, 32, 256, 1024), True),    # a batch of gemms: blocked per item
                                         ((1, 64, 4608, 49), False),    # 49 columns: the register-tile rule
                                         ((1, 64, 100, 4096), False)])  # k of 100: the register-tile rule
def test_large_rule_takes_batches_and_leaves_narrow_or_short_contractions(shape, large):
    """The large-contraction rule from K_BLOCK of reduction and MIN_COLUMNS columns, batch
    dims included (a convolution's per-image gemms at batch 8); each schedule equals NumPy."""
    b, m, k, n = shape
    sch = Schedule(batched_mm(b, m, k, n))
    apply_rules(sch, "llvm -mcpu=haswell -num-cores=2")
    assert ("cache_read" in str(sch.trace)) == large, str(sch.trace)  # the B panel copy: the blocked rule
    rng = np.random.default_rng(3)
    a, bv = rng.standard_normal((m, k), dtype=np.float32), rng.standard_normal((b, k, n), dtype=np.float32)
    out = np.full((b, m, n), np.nan, np.float32)
    mlc.build(sch.mod, target="llvm -mcpu=haswell")["bmm"](a, bv, out)
    np.testing.assert_allclose(out, np.einsum("ik,bkn->bmn".replace("m", "i"), a, bv), rtol=1e-4, atol=1e-3)


def test_large_rule_loops_rows_b_does_not_read_inside_the_panel_copy():
    """A linear layer on a permuted input, ``(s, b, n) += x[b, s, k] * w[k, n]`` (BERT's
    input projection on a batch-first input): s is a batch dim of the output that B does not
    read, so it is more rows of the gemm, looped inside the k block whose panel of B is
    copied (outermost, the panel was copied and the cores forked once per s); equals NumPy."""
    s, b, k, n = 24, 8, 256, 512
    X = te.placeholder((b, s, k), "float32", name="X")
    W = te.placeholder((k, n), "float32", name="W")
    r = te.reduce_axis((0, k), "r")
    Y = te.compute((s, b, n), lambda t, i, j: te.sum(X[i, t, r] * W[r, j], axis=r), name="Y")
    sch = Schedule(te.create_prim_func([X, W, Y], name="proj"))
    apply_rules(sch, "llvm -mcpu=haswell -num-cores=2")
    text = str(sch.trace)
    assert "cache_read" in text, text
    reorder = next(line for line in text.splitlines() if "sch.reorder(" in line)
    args = reorder.split("(", 1)[1].rstrip(")").split(", ")
    # j0 (parallel), ip, k0, then s's loop (l1, the first of get_loops), then the tiles
    assert args[3] == "l1" and args.index("l1") > 1, text
    assert "sch.parallel(loop=l1)" not in text, text
    rng = np.random.default_rng(5)
    x, w = rng.standard_normal((b, s, k), dtype=np.float32), rng.standard_normal((k, n), dtype=np.float32)
    out = np.full((s, b, n), np.nan, np.float32)
    mlc.build(sch.mod, target="llvm -mcpu=haswell")["proj"](x, w, out)
    np.testing.assert_allclose(out, x.transpose(1, 0, 2) @ w, rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("relu", [False, True])
def test_register_tile_rule_blocks_k_for_a_large_panel_of_b(relu):
    """256 x 2304 x 196 (ResNet-18's 3x3 convolutions at 256 channels as gemms): B's panel
    (2304 x 196 floats) is over K_PANEL_BYTES, so k runs in blocks outside the register
    tiles (decision ``k_block``), the init before them; with a fused ReLU (which must see the
    whole sum) it does not; each equals NumPy, and so does a random draw of the decisions."""
    m, k, n = 256, 2304, 196
    A = te.placeholder((m, k), "float32", name="A")
    B = te.placeholder((k, n), "float32", name="B")
    r = te.reduce_axis((0, k), "r")
    Y = te.compute((m, n), lambda i, j: te.sum(A[i, r] * B[r, j], axis=r), name="Y")
    outs = [te.compute((m, n), lambda i, j: te.max(Y[i, j], 0.0), name="C")] if relu else [Y]
    rng = np.random.default_rng(7)
    a, b = rng.standard_normal((m, k), dtype=np.float32), rng.standard_normal((k, n), dtype=np.float32)
    ref = np.maximum(a @ b, 0) if relu else a @ b
    pick = random.Random(11)
    for decide in (None, lambda decision: pick.randrange(len(decision.options))):
        sch = Schedule(te.create_prim_func([A, B, *outs], name="mm"))
        apply_rules(sch, "llvm -mcpu=haswell -num-cores=2", decide=decide)
        text = str(sch.trace)
        assert "cache_read" not in text, text  # the register-tile rule (196 columns)
        if decide is None:
            assert ('label="Y.k_block"' in text or "factors=[None, 384])" in text) != relu, text
        out = np.full((m, n), np.nan, np.float32)
        mlc.build(sch.mod, target="llvm -mcpu=haswell")["mm"](a, b, out)
        np.testing.assert_allclose(out, ref, rtol=1e-3, atol=1e-2, err_msg=text)


def test_register_tile_rule_blocks_k_inside_the_batch_dims():
    """A batch of such contractions (a convolution's per-image gemms at batch > 1): k's
    blocks inside the batch loop that the cores share; equals NumPy."""
    b, m, k, n = 2, 64, 2304, 196
    sch = Schedule(batched_mm(b, m, k, n))
    apply_rules(sch, "llvm -mcpu=haswell -num-cores=2")
    text = str(sch.trace)
    assert "factors=[None, 384])" in text and "sch.parallel(loop=l1)" in text, text  # k by 384; the batch parallel
    reorder = next(line for line in text.splitlines() if "sch.reorder(" in line)
    assert reorder.split("(", 1)[1].split(", ")[0] == "l1", text  # the batch loop first, then k's blocks
    rng = np.random.default_rng(9)
    a, bv = rng.standard_normal((m, k), dtype=np.float32), rng.standard_normal((b, k, n), dtype=np.float32)
    out = np.full((b, m, n), np.nan, np.float32)
    mlc.build(sch.mod, target="llvm -mcpu=haswell")["bmm"](a, bv, out)
    np.testing.assert_allclose(out, np.einsum("ik,bkn->bin", a, bv), rtol=1e-3, atol=1e-2)


@pytest.mark.parametrize("panel", [1, 0])
# the column blocks shared by the cores, or a block of rows each (320: by the rule; 576: by
# decision, rows wider than the epilogue's vectors may be)
@pytest.mark.parametrize("n,rows", [(N, False), (320, True), (576, True)])
def test_large_matmul_epilogue_per_panel(capsys, panel, n, rows):
    """Decision ``epilogue_panel``: the bias + ReLU after the contraction computed per
    iteration of the outermost (parallel) loop, once that block of Y is complete: Y lives
    in one block per iteration (64 columns, or 128 rows), not a buffer of its own."""
    target = "llvm -mcpu=haswell -num-cores=2"
    sch = Schedule(linear_relu(M, n, K))
    apply_rules(sch, target, decide={"epilogue_panel": panel, **({"split_cores": 0} if n == 576 else {})})
    text = str(sch.trace)
    assert 'label="Y.epilogue_panel"' in text
    # at the outermost loop, the parallel one: j0 (columns shared) or ip (rows per core)
    at = re.findall(r"sch\.reverse_compute_at\(block=b\d+, loop=(l\d+)\)", text)
    assert at == (re.findall(r"sch\.parallel\(loop=(l\d+)\)", text) if panel else [])
    after, rt = ir_after_stage(sch.mod, "simplify", capsys, target=target)
    whole, block = f"memref<{M}x{n}xf32>", (f"memref<{M // 2}x{n}xf32>" if rows else "memref<256x64xf32>")
    allocs = re.findall(r"memref\.alloc\(\) .*: (memref<[0-9x]+xf32>)", after)
    assert (block in allocs and whole not in allocs) if panel else whole in allocs, allocs
    assert not re.search(r"vector<(\d{4,}|[6-9]\d\d|5[2-9]\d|51[3-9])xf32>", after)  # no vector over 512 lanes
    _check_linear_relu(rt, n, seed=1)


@pytest.mark.parametrize("rows, l2, nc", [(1024, 2 << 20, 128), (256, 2 << 20, 64), (1024, 512 << 10, 64),
                                          (1024, None, 64)])
def test_large_matmul_column_block_follows_the_l2(monkeypatch, rows, l2, nc):
    # the host's L2 (sysfs) picks NC: 128 columns where it holds 1 MiB and A's block (the
    # rows by KC = 512) does not stay in half of it (1024 rows: 2 MiB; B's 512 x 128 panel
    # an eighth of a 2 MiB L2), else 64; a target naming another CPU keeps 64
    import mlc_mlir.target as target_mod
    monkeypatch.setattr(target_mod, "host_l2_bytes", lambda: l2)
    sch = Schedule(matmul_mnk(rows, N, K))
    apply_rules(sch, "llvm -num-cores=2")
    text = str(sch.trace)
    assert f"sch.split(loop=l2, factors=[None, {nc}])" in text, text
    if nc == 128:
        other = Schedule(matmul_mnk(rows, N, K))
        apply_rules(other, "llvm -mcpu=x86-64-v3 -num-cores=2")
        assert "sch.split(loop=l2, factors=[None, 64])" in str(other.trace)
    rng = np.random.default_rng(0)
    a = rng.standard_normal((rows, K), dtype=np.float32)
    b = rng.standard_normal((K, N), dtype=np.float32)
    c = np.full((rows, N), np.nan, np.float32)
    mlc.build(sch.mod)["mm"](a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("k, l2, kc", [(768, 2 << 20, 768), (3072, 2 << 20, 1024), (768, 512 << 10, 384),
                                      (3072, 512 << 10, 512), (768, None, 384)])
def test_large_matmul_k_block_follows_the_l2(monkeypatch, k, l2, kc):
    """KC: the largest divisor of k up to 1024 where the host's L2 holds 1 MiB (BERT's
    reductions of 768 in one block), else up to 512; a target naming another CPU keeps 512.
    Results equal NumPy."""
    import mlc_mlir.target as target_mod
    monkeypatch.setattr(target_mod, "host_l2_bytes", lambda: l2)
    m, n = 256, 256
    sch = Schedule(matmul_mnk(m, n, k))
    apply_rules(sch, "llvm -num-cores=1", tunable=True)
    line = next(x for x in str(sch.trace).splitlines() if 'label="Y.k_block"' in x)
    candidates = [int(v) for v in line.split("candidates=[")[1].split("]")[0].split(", ")]
    assert candidates[int(line.rsplit("decision=", 1)[1].rstrip(")"))] == kc, line
    rng = np.random.default_rng(8)
    a, b = rng.standard_normal((m, k), dtype=np.float32), rng.standard_normal((k, n), dtype=np.float32)
    c = np.full((m, n), np.nan, np.float32)
    mlc.build(sch.mod)["mm"](a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=2e-3)


@pytest.mark.parametrize("l2, n, large", [(512 << 10, 49, True), (2 << 20, 49, False), (None, 49, False),
                                          (512 << 10, 196, False)])
def test_few_columns_whose_b_outgrows_the_l2_are_blocked(monkeypatch, l2, n, large):
    """ResNet-18's last convolutions as gemms (512 x 4608 x 49; here 128 x 4608 x n): B (903 KB
    at 49 columns) larger than a 512 KB L2 takes the blocked rule (the register-tile rule
    streamed all of B from L3 for every row panel); within a 2 MB L2, for a target naming
    another CPU (L2 unknown), or at 196 columns it stays in the register-tile rule."""
    import mlc_mlir.target as target_mod
    monkeypatch.setattr(target_mod, "host_l2_bytes", lambda: l2)
    _blocked_equals_numpy(1, 128, 4608, n, "llvm -num-cores=2", large, seed=5)


@pytest.mark.parametrize("n, kc", [(49, 144), (64, 128), (40, 192)])
def test_few_columns_block_k_for_a_panel_in_l1(monkeypatch, n, kc):
    """With few columns (ResNet-18's 512 x 4608 x 49), k's block is the largest whose panel
    of B fits 32 KB (49 columns: 144 x 49 x 4 B = 28 KB; the default 256 read a 50 KB panel
    from L2 for every row tile); the results equal NumPy."""
    import mlc_mlir.target as target_mod
    monkeypatch.setattr(target_mod, "host_l2_bytes", lambda: 512 << 10)
    m, k = 128, 4608
    sch = Schedule(batched_mm(1, m, k, n))
    apply_rules(sch, "llvm -num-cores=1", tunable=True)
    line = next(x for x in str(sch.trace).splitlines() if 'label="Y.k_block"' in x)
    candidates = [int(v) for v in line.split("candidates=[")[1].split("]")[0].split(", ")]
    assert candidates[int(line.rsplit("decision=", 1)[1].rstrip(")"))] == kc, line
    rng = np.random.default_rng(6)
    a, bv = rng.standard_normal((m, k), dtype=np.float32), rng.standard_normal((1, k, n), dtype=np.float32)
    out = np.full((1, m, n), np.nan, np.float32)
    mlc.build(sch.mod)["bmm"](a, bv, out)
    np.testing.assert_allclose(out, np.einsum("ik,bkn->bin", a, bv), rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("m, n, large", [(24, 3136, False), (48, 3136, True), (24, 784, True)])
def test_few_rows_over_rows_a_page_apart_stay_in_the_register_tile_rule(m, n, large):
    """A 1x1 convolution of few output channels over a 56 x 56 image (24 x 144 x 3136 per
    image): its rows of B are 12.5 KB apart, so the register-tile rule's re-reads are
    prefetched by the build and beat the panel copy; with more rows, or rows 3 KB apart
    (28 x 28), the blocked rule. Results equal NumPy."""
    _blocked_equals_numpy(8, m, 144, n, "llvm -num-cores=1", large, seed=7)


@pytest.mark.parametrize("b, m, k, n, l2, large", [
    (8, 96, 576, 196, 512 << 10, True),    # 1x1 conv 576 -> 96 at 14 x 14, batch 8
    (8, 96, 960, 49, 512 << 10, True),     # 960 -> 96 at 7 x 7
    (1, 96, 576, 196, 512 << 10, True),    # one image (5.4M multiply-adds: PACKED_MIN_MACS)
    (1, 32, 576, 196, 512 << 10, False),   # 3.6M multiply-adds
    (8, 96, 576, 192, 512 << 10, False),   # rows of whole cache lines
    (8, 96, 576, 196, 2 << 20, False),     # a 2 MB L2
    (8, 96, 576, 196, None, False),        # L2 unknown
    (8, 96, 960, 196, 512 << 10, False),   # B (735 KB) outgrows the L2
    (8, 96, 192, 196, 512 << 10, False),   # B (150 KB) a third of it or less
    (8, 96, 960, 28, 512 << 10, False)])   # fewer than 32 columns
def test_b_of_unaligned_rows_from_the_arguments_is_packed(monkeypatch, b, m, k, n, l2, large):
    """A 1x1 convolution's per-image gemms (m x k x n, B the input as it is):
    fewer than MIN_COLUMNS columns, but B's rows are not whole cache lines and B stays in
    a small L2 (more than a third of it), so the blocked rule copies its panels (aligned,
    contiguous) instead of the register-tile rule re-reading them for every row tile; not where B's rows are whole
    cache lines, B outgrows the L2 or fills a third of it or less, the L2 is 1 MB or more or
    unknown, under 32 columns or under PACKED_MIN_MACS multiply-adds. Results equal NumPy."""
    import mlc_mlir.target as target_mod
    monkeypatch.setattr(target_mod, "host_l2_bytes", lambda: l2)
    _blocked_equals_numpy(b, m, k, n, "llvm -num-cores=1", large, seed=8)


@pytest.mark.parametrize("target,unroll", [("llvm -mcpu=haswell -num-cores=1", 8),
                                           ("llvm -mcpu=znver3 -num-cores=1", 8),
                                           ("llvm -mcpu=skylake-avx512 -num-cores=1", 1),
                                           ("llvm -mcpu=sapphirerapids -num-cores=1", 1)])
def test_k_unrolled_by_default_only_with_16_registers(target, unroll):
    """k is unrolled by 8 inside AVX2's 6 x 16 tile; AVX-512's 14 x 32 tile (28 of 32
    registers) keeps k rolled: unrolled, LLVM's Skylake-server scheduling spilled the tile
    (matmul 1024 78 against 152 GFLOP/s). The decision still offers every unroll."""
    sch = Schedule(matmul())
    apply_rules(sch, target, tunable=True)
    text = str(sch.trace)
    m = re.search(r'candidates=\[([0-9, ]+)\][^\n]*label="Y.k_unroll", decision=(\d+)', text)
    options = [int(x) for x in m.group(1).split(",")]
    assert options == [1, 2, 4, 8] and options[int(m.group(2))] == unroll
    if mlc.target.Target.of(target).is_host:
        run(sch.mod)


def test_one_core_panel_epilogue_gets_a_buffer_per_panel(capsys):
    """One core: the epilogue's panel loop is made an scf.forall all the same (no parallel
    decision there), which bufferizes each panel of Y into a buffer of its own (an scf.for
    carried the whole of Y: 4 MB written and read back in BERT d256's feed-forward, 5.2 ->
    4.1 ms); the build runs it serially, without OpenMP. Equal to NumPy."""
    target = "llvm -mcpu=haswell -num-cores=1"
    sch = Schedule(linear_relu(M, N, K))
    apply_rules(sch, target)
    text = str(sch.trace)
    at = re.findall(r"sch\.reverse_compute_at\(block=b\d+, loop=(l\d+)\)", text)
    assert at and at == re.findall(r"sch\.parallel\(loop=(l\d+)\)", text), text
    after, rt = ir_after_stage(sch.mod, "simplify", capsys, target=target)
    allocs = re.findall(r"memref\.alloc\(\) .*: (memref<[0-9x]+xf32>)", after)
    assert f"memref<{M}x64xf32>" in allocs and f"memref<{M}x{N}xf32>" not in allocs, allocs
    llvm, _ = ir_after_stage(sch.mod, "to-llvm", capsys, target=target)
    assert "omp." not in llvm and "__kmpc" not in llvm
    _check_linear_relu(rt, N, seed=2)
