"""Peeling rows and columns of one block (four copies: full tiles, partial rows, partial
columns, the corner), and the default rules on column counts whose divisors cannot fill the
register tile (127, 100, 72, 1000): full whole-vector tiles with the partial last one
peeled. Numerics against NumPy; the IR of the main loop has no masks."""

import numpy as np
import pytest

import mlc_mlir as mlc
from mlc_mlir.schedule import Schedule, Trace
from mlc_mlir.schedule.rules import apply_rules
from mlc_mlir.testing.programs import linear


def linear_relu(m: int, n: int, k: int) -> mlc.Module:
    return linear(m, n, k)


def run(mod: mlc.Module, m: int, n: int, k: int, rng) -> None:
    x, w = rng.standard_normal((m, k)).astype("float32"), rng.standard_normal((k, n)).astype("float32")
    out = np.zeros((m, n), "float32")
    mlc.build(mod)["linear"](x, w, out)
    np.testing.assert_allclose(out, np.maximum(x @ w, 0), rtol=1e-4, atol=1e-4)


def peel_both(m: int, n: int, k: int, mr: int = 6, nr: int = 16) -> Schedule:
    sch = Schedule(linear_relu(m, n, k))
    b = sch.get_block("Y")
    i, j, kk = sch.get_loops(b)
    i0, i1 = sch.split(i, [None, mr])
    j0, j1 = sch.split(j, [None, nr])
    sch.reorder(i0, j0, kk, i1, j1)
    sch.peel(i0)
    sch.peel(j0)
    sch.vectorize(j1)
    sch.unroll(i1)
    sch.reverse_compute_at(sch.get_block("C"), j0)
    sch.decompose_reduction(b, kk)
    return sch


@pytest.mark.parametrize("m,n,k", [(127, 127, 127), (13, 37, 9), (6, 17, 5), (7, 16, 3), (128, 120, 64),
                                   (24, 17, 64), (26, 20, 40), (24, 19, 64)])
def test_rows_and_columns_peeled_equal_numpy(rng, m, n, k):
    run(peel_both(m, n, k).mod, m, n, k, rng)


def test_main_loop_has_no_masks():
    text = str(peel_both(127, 127, 32).mod)
    main = text.split('{mlc.loop = "k"}')[0]  # the first k loop: the full 6 x 16 tiles
    assert "scf.for %arg3 = %c0 to %c126 step %c6" in main and "to %c112 step %c16" in main
    assert "vector.mask" not in main and "create_mask" not in main
    assert main.count("vector.fma") == 6  # 6 rows x one k step, on vector<16xf32>
    assert "vector.maskedload" in text or "vector.transfer_read" in text  # the remainders


def test_peeled_trace_replays_to_the_same_ir():
    sch = peel_both(127, 127, 32)
    again = Schedule(linear_relu(127, 127, 32)).replay(Trace.from_json(sch.trace.as_json(), sch.mod))
    assert str(again.mod) == str(sch.mod)


def test_same_dim_peeled_twice_is_refused():
    sch = Schedule(linear_relu(64, 64, 8))
    i, j, k = sch.get_loops(sch.get_block("Y"))
    i0, i1 = sch.split(i, [None, 6])
    sch.peel(i0)
    i10, _ = sch.split(i1, [None, 4])
    with pytest.raises(mlc.ScheduleError, match="both peel the same dim"):
        sch.peel(i10)


@pytest.mark.parametrize("cores", [1, 2])
@pytest.mark.parametrize("m,n,k", [(127, 127, 127), (100, 100, 100), (64, 72, 32), (301, 120, 64), (6, 1000, 40),
                                   (1, 1000, 64), (3, 120, 50)])
def test_rules_on_odd_columns_equal_numpy(rng, cores, m, n, k):
    sch = Schedule(linear_relu(m, n, k))
    apply_rules(sch, f"llvm -num-cores={cores}")
    run(sch.mod, m, n, k, rng)


def test_rules_peel_the_columns_where_divisors_cannot_fill_the_tile():
    for n, peels in [(127, 2), (1000, 2), (128, 1), (10, 1)]:  # (rows 64: 64 % 6 peels the rows)
        sch = Schedule(linear_relu(64, n, 16))
        apply_rules(sch, "llvm -mcpu=haswell -num-cores=1")
        assert str(sch.trace).count("sch.peel(") == peels, (n, str(sch.trace))


def test_tuner_can_turn_the_column_peel_off():
    """The column peel is a decision (tunable, ``peel_cols``): with the other option the
    column tile is a divisor again, and the result still equals NumPy."""
    sch = Schedule(linear_relu(127, 127, 16))
    apply_rules(sch, "llvm -mcpu=haswell -num-cores=1", tunable=True)
    assert "sch.peel(" in str(sch.trace) and 'label="Y.peel_cols", decision=1)' in str(sch.trace)
    sch2 = Schedule(linear_relu(127, 127, 16))
    apply_rules(sch2, "llvm -mcpu=haswell -num-cores=1", decide={"peel_cols": 0})
    assert str(sch2.trace).count("sch.peel(") == 1 and 'label="Y.peel_cols", decision=0)' in str(sch2.trace)
    run(sch2.mod, 127, 127, 16, np.random.default_rng(0))


def test_odd_rows_on_two_cores_share_the_full_tiles():
    """127 rows on 2 cores: the 126 rows of full tiles first (their 21 tiles shared by the
    cores: a parallel loop inside the peeled one), then the last row; the tiles in the
    parallel loop have constant sizes (no masks), and the result equals NumPy."""
    sch = Schedule(linear_relu(127, 200, 64))
    apply_rules(sch, "llvm -mcpu=haswell -num-cores=2")
    trace = str(sch.trace)
    assert "factors=[None, 126]" in trace and trace.count("sch.peel(") == 2 and "sch.parallel(" in trace
    text = str(sch.mod)
    main = text.split("scf.forall.in_parallel")[0]
    assert "scf.forall" in main and "vector.mask" not in main and "affine.min" not in main
    run(sch.mod, 127, 200, 64, np.random.default_rng(1))


def _k_loops(text: str) -> list[str]:
    """The bodies of the k loops of ``text``, in order (main tiles first)."""
    return [p.rsplit("scf.for", 1)[1] for p in text.split('{mlc.loop = "k"}')[:-1]]


@pytest.mark.parametrize("n,width", [(17, 1), (20, 4), (24, 8), (19, 16)])
def test_partial_column_tile_is_vectorized_at_its_width(n, width):
    """The partial column tile (n % 16 columns) is vectorized at its own width when that is a
    power of two (unmasked: its accumulators are loop-carried vectors after the build's
    vector-opt stage); other widths keep the masked 16-lane form."""
    main, rest = _k_loops(str(peel_both(24, n, 64).mod))
    assert "vector.fma" in main and main.count("vector<16xf32>") and "vector<16xi1>" not in main
    assert f"-> vector<{width}xf32>" in rest or f": vector<{width}xf32>" in rest
    if width < 16:
        assert "vector<16xf32>" not in rest.split("vector.fma", 1)[1]


def test_partial_column_accumulators_stay_in_registers(capfd):
    """Built, the one-column tile of 24 x 17 accumulates in loop-carried vectors (before: a
    masked load and store of the result buffer at every k step)."""
    mlc.build(peel_both(24, 17, 64).mod, print_after_all=True)
    err = capfd.readouterr().err
    after = err.split("IR Dump After vector-opt //----- //", 1)[1].split("// -----// IR Dump After", 1)[0]
    loops = [line for line in after.splitlines() if "scf.for" in line and "iter_args" in line]
    assert any("vector<1x16xf32>" in line for line in loops), loops
    assert any("vector<1x1xf32>" in line for line in loops), loops
    assert "vector.maskedstore" not in after.split("vector<1x1xf32>", 1)[1].split("scf.yield", 1)[0]
