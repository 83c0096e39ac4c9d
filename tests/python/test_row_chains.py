"""Row chains (schedule/rule_rows.py): softmax, safe_softmax and layer_norm computed a few
rows at a time, every block at the result's row loop, against NumPy on odd
shapes, one and two cores, every ``rows`` choice; ``torch._safe_softmax`` (scaled dot-product
attention's softmax, a fully masked row 0) imported by both frontends against torch; and
the ``hoist-allocs`` stage (a row's buffers allocated once around the row loop)."""

import warnings

import numpy as np
import pytest

import mlc_mlir as mlc
from mlc_mlir import te, topi
from mlc_mlir.compiler.loop_allocs import hoist_loop_allocs
from mlc_mlir.context import mlc_context
from mlc_mlir.schedule.payload import read_blocks
from mlc_mlir.schedule.rule_rows import takes_row_chain
from mlc_mlir.schedule.rules import apply_rules, default_schedule
from mlc_mlir.target import Target

AVX2 = "llvm -mcpu=haswell"


def _softmax(x, safe=False):
    m = x.max(-1, keepdims=True)
    with np.errstate(invalid="ignore"):
        e = np.exp(x - m)
        out = e / e.sum(-1, keepdims=True)
    return np.where(np.isneginf(m), 0.0, out) if safe else out


def _layer_norm(x, g, b, eps=1e-5):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * g + b


def _program(kind, shape):
    a = te.placeholder(shape, "float32", name="a")
    if kind == "layer_norm":
        g = te.placeholder(shape[-1:], "float32", name="g")
        b = te.placeholder(shape[-1:], "float32", name="b")
        return te.create_prim_func([a, g, b, topi.nn.layer_norm(a, g, b, [-1], 1e-5)])
    fn = {"softmax": topi.nn.softmax, "safe_softmax": topi.nn.safe_softmax}[kind]
    return te.create_prim_func([a, fn(a, -1)])


def _inputs(kind, shape, rng):
    x = (rng.standard_normal(shape) * 3).astype("float32")
    if kind == "safe_softmax":
        x.reshape(-1, shape[-1])[1] = -np.inf  # a fully masked row
        x.reshape(-1, shape[-1])[2, ::2] = -np.inf
    if kind == "layer_norm":
        return [x, rng.uniform(0.5, 1.5, shape[-1:]).astype("float32"),
                rng.uniform(-1, 1, shape[-1:]).astype("float32")]
    return [x]


def _reference(kind, args):
    if kind == "layer_norm":
        return _layer_norm(*args)
    return _softmax(args[0], safe=kind == "safe_softmax")


def _run(mod, target, args):
    rt = mlc.build(mod, target)
    out = mlc.runtime.array(np.zeros(args[0].shape, "float32"))
    rt[mod.functions[0]](*[mlc.runtime.array(a) for a in args], out)
    return out.numpy()


def _is_row_chain(mod, target):
    with mlc_context():
        blocks = sorted(read_blocks(mod.mlir_module).values(), key=lambda b: b.order)
    return takes_row_chain(blocks, Target.of(target))


@pytest.mark.parametrize("kind", ["softmax", "safe_softmax", "layer_norm"])
@pytest.mark.parametrize("shape", [(5, 3, 32), (2, 7, 64), (24, 48), (1, 6, 128)])
@pytest.mark.parametrize("cores", [1, 2])
def test_row_chains_equal_numpy(kind, shape, cores):
    target = f"{AVX2} --num-cores={cores}"
    mod = _program(kind, shape)
    assert _is_row_chain(mod, target)
    sch = apply_rules(mlc.Schedule(mod), target, tunable=True)
    assert "compute_at" in str(sch.trace) and "rfactor" in str(sch.trace)
    args = _inputs(kind, shape, np.random.default_rng(sum(shape)))
    np.testing.assert_allclose(_run(sch.mod, target, args), _reference(kind, args), rtol=2e-5, atol=2e-6)


@pytest.mark.parametrize("kind", ["softmax", "safe_softmax", "layer_norm"])
@pytest.mark.parametrize("shape", [(1, 4, 16, 32), (1, 1, 8, 64), (2, 3, 8, 32)])
def test_default_schedule_of_a_batch_of_one(kind, shape):
    # the build's path (the pre-rule rewrites, then the rules): attention's scores at batch one
    # were once left unscheduled with a warning (a view of 1 / sum through which compute_at
    # found no producer)
    target = f"{AVX2} --num-cores=2"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        mod = default_schedule(_program(kind, shape), target)
    assert "scf.forall" in mod.script() or "scf.for" in mod.script()
    args = _inputs(kind, shape, np.random.default_rng(7))
    np.testing.assert_allclose(_run(mod, target, args), _reference(kind, args), rtol=2e-5, atol=2e-6)


@pytest.mark.parametrize("rows", [1, 2, 3, 6])
def test_every_rows_choice(rows):
    target = f"{AVX2} --num-cores=2"
    mod = _program("safe_softmax", (2, 6, 40))
    sch = apply_rules(mlc.Schedule(mod), target, decide={"rows": rows, "parallel": 0})
    args = _inputs("safe_softmax", (2, 6, 40), np.random.default_rng(rows))
    np.testing.assert_allclose(_run(sch.mod, target, args), _reference("safe_softmax", args), rtol=2e-5, atol=2e-6)


def test_rows_not_whole_vectors_keep_the_block_rules():
    # a row of 20 elements is no whole number of AVX2's 8 lanes: the blocks are scheduled
    # one by one, as before, and still equal NumPy
    mod = _program("softmax", (6, 20))
    assert not _is_row_chain(mod, AVX2)
    args = _inputs("softmax", (6, 20), np.random.default_rng(0))
    np.testing.assert_allclose(_run(default_schedule(mod, AVX2), AVX2, args), _reference("softmax", args),
                               rtol=2e-5, atol=2e-6)


_LOOP_ALLOCS = """
func.func @f(%x: memref<8x128xf32>, %y: memref<8x128xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  scf.forall (%p) in (2) {
    scf.for %r = %c0 to %c8 step %c1 {
      %row = memref.alloc() {alignment = 64 : i64} : memref<128xf32>
      %acc = memref.alloc() : memref<16xf32>
      "test.use"(%row, %acc) : (memref<128xf32>, memref<16xf32>) -> ()
      memref.dealloc %row : memref<128xf32>
      memref.dealloc %acc : memref<16xf32>
    }
    %kept = memref.alloc() : memref<4xf32>
    "test.use"(%kept) : (memref<4xf32>) -> ()
    memref.dealloc %kept : memref<4xf32>
  }
  %out = scf.for %r = %c0 to %c8 step %c1 iter_args(%b = %y) -> (memref<8x128xf32>) {
    %yielded = memref.alloc() : memref<8x128xf32>
    scf.yield %yielded : memref<8x128xf32>
  }
  return
}
"""


def test_hoist_allocs_out_of_serial_loops_only():
    from mlir import ir

    from mlc_mlir.irutil import walk_ops
    with mlc_context() as ctx:
        ctx.allow_unregistered_dialects = True
        module = ir.Module.parse(_LOOP_ALLOCS)
        assert hoist_loop_allocs(module) == 2

        def parents(name):  # the type of each buffer allocated (freed) -> the op around it
            return {str((op.results if name == "memref.alloc" else op.operands)[0].type): op.parent.name
                    for op in walk_ops(module, [name])}

        allocs, deallocs = parents("memref.alloc"), parents("memref.dealloc")
    # the row's two buffers: once per iteration of the parallel loop (each thread's own),
    # around the row loop; the parallel loop's own buffer stays; a yielded one stays
    assert allocs == {"memref<128xf32>": "scf.forall", "memref<16xf32>": "scf.forall",
                      "memref<4xf32>": "scf.forall", "memref<8x128xf32>": "scf.for"}
    assert deallocs == {"memref<128xf32>": "scf.forall", "memref<16xf32>": "scf.forall", "memref<4xf32>": "scf.forall"}
