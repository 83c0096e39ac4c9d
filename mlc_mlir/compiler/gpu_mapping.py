"""Bound loops -> GPU kernels: checks, forall merging, kernel buffers, ``gpu.launch`` mapping.

``sch.bind(loop, "blockIdx.x")`` leaves one ``scf.forall`` per bound loop, each with a
single ``#gpu.block<..>`` / ``#gpu.thread<..>`` mapping. After bufferization this module

1. checks that every computation of a public function sits in a loop nest bound to
   ``blockIdx`` (:func:`find_kernels`, :class:`BuildError` naming the block otherwise);
2. merges perfectly nested bound foralls of one kind into one multi-dimensional forall
   (``blockIdx.y`` around ``blockIdx.x`` -> ``scf.forall (%by, %bx) in (16, 16)``), which is
   what the upstream mapping transforms expect;
3. turns buffers allocated inside a kernel into per-thread ``memref.alloca``;
4. applies ``transform.gpu.map_forall_to_blocks ... generate_gpu_launch`` and
   ``transform.gpu.map_nested_forall_to_threads`` (block sizes from the thread loops)
   to each kernel (:func:`map_kernels`).

Kernel IR before mapping (vector add, ``split`` by 128 and bound)::

    scf.forall (%b) in (8) {
      scf.forall (%t) in (128) { ... linalg.generic {mlc.block = "C"} ... }
        {mapping = [#gpu.thread<x>]}
    } {mapping = [#gpu.block<x>]}

after::

    gpu.launch blocks(%bx, ...) in (%gx = %c8, ...) threads(%tx, ...) in (%sx = %c128, ...) {
      ... linalg.generic {mlc.block = "C"} on (%bx * 128 + %tx) ...
      gpu.terminator
    }
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from mlir import ir
from mlir.dialects import arith, linalg, memref, scf, transform
from mlir.dialects.transform import gpu as tgpu

from ..errors import BuildError, LoweringError
from ..irbuild import apply_transform, match, transform_script
from ..irutil import sym_name

__all__ = ["Kernel", "drop_self_copies", "find_kernels", "merge_bound_loops", "place_kernel_buffers",
           "map_kernels", "mapping_script", "KERNEL_ATTR", "GUARD_ATTR", "MAX_THREADS_PER_BLOCK", "trip_counts"]

MAX_THREADS_PER_BLOCK = 1024
#: attribute numbering the kernel roots, which :func:`mapping_script` matches
KERNEL_ATTR = "mlc.kernel"
#: attribute of the ``scf.if`` that guards the body of a partial tile of a bound loop (the
#: shared-memory stage lifts cooperative copies out of it: :mod:`.gpu_guards`)
GUARD_ATTR = "mlc.guard"
_MAX_BLOCK = {"x": 1024, "y": 1024, "z": 64}
_MAX_GRID = {"x": 2**31 - 1, "y": 65535, "z": 65535}
_AXIS = {"block": "blockIdx", "thread": "threadIdx"}
# Ops that may stay on the host, outside every kernel (index arithmetic, views, buffers).
_HOST_OPS = {"func.return", "memref.alloc", "memref.dealloc", "memref.copy", "memref.dim", "memref.subview",
             "memref.get_global",
             "memref.cast", "memref.expand_shape", "memref.collapse_shape",
             "memref.reinterpret_cast", "memref.extract_strided_metadata", "affine.apply",
             "affine.min", "affine.max"}
# Ops with no side effect that may sit between two nested bound loops.
_PURE_OPS = _HOST_OPS - {"func.return", "memref.alloc", "memref.dealloc", "memref.copy", "memref.get_global"}


@dataclass(frozen=True)
class Kernel:
    """One GPU kernel: its block-bound forall (after merging), grid and block sizes (x, y, z)."""

    forall: ir.Operation
    grid: tuple[int, int, int]
    block: tuple[int, int, int]


def _is_pure(op: ir.Operation) -> bool:
    return op.name in _PURE_OPS or op.name.startswith(("arith.", "index.", "ub."))


def _loop_name(op: ir.Operation) -> str:
    if "mlc.loop" in op.attributes:
        return ir.StringAttr(op.attributes["mlc.loop"]).value
    return "<unnamed>"


def _mapping(op: ir.Operation) -> list[tuple[str, str]]:
    """``[(kind, dim)]`` of a forall: kind ``block``/``thread``, or ``[]`` when unmapped."""
    if "mapping" not in op.attributes:
        return []
    out = []
    for attr in ir.ArrayAttr(op.attributes["mapping"]):
        text = str(attr)
        for kind in ("block", "thread"):
            prefix = f"#gpu.{kind}<"
            if text.startswith(prefix) and text[len(prefix):-1] in ("x", "y", "z"):
                out.append((kind, text[len(prefix):-1]))
                break
        else:
            raise BuildError(f"loop {_loop_name(op)!r} has GPU mapping {text}: the cuda build supports "
                             "#gpu.block<x|y|z> and #gpu.thread<x|y|z> (blockIdx.* / threadIdx.*)")
    return out


def _kind(op: ir.Operation) -> str | None:
    if op.name != "scf.forall":
        return None
    kinds = {k for k, _ in _mapping(op)}
    if len(kinds) > 1:
        raise BuildError(f"loop {_loop_name(op)!r} mixes blockIdx and threadIdx bindings in one loop")
    return kinds.pop() if kinds else "none"


def _block_names(op: ir.Operation) -> list[str]:
    names: list[str] = []

    def visit(o: ir.Operation) -> ir.WalkResult:
        for key in ("mlc.block", "mlc.block_init"):
            if key in o.attributes:
                name = ir.StringAttr(o.attributes[key]).value
                if name not in names:
                    names.append(name)
        return ir.WalkResult.ADVANCE

    op.walk(visit, ir.WalkOrder.PRE_ORDER)
    return names


def _unbound(op: ir.Operation, where: str) -> BuildError:
    if "mlc.block_init" in op.attributes:
        name = ir.StringAttr(op.attributes["mlc.block_init"]).value
        return BuildError(f"the initialization of block {name!r} ({op.name}, {where}) is not bound to GPU "
                          "threads: for target 'cuda' every loop nest must be bound; "
                          f"sch.decompose_reduction(block {name!r}, <its reduction loop>) moves it into the "
                          "bound loops")
    names = _block_names(op)
    what = f"block {names[0]!r}" if names else f"operation {op.name}"
    return BuildError(f"{what} ({where}) is not bound to GPU threads: for target 'cuda' every loop nest "
                      "must be bound, e.g. sch.bind(i0, 'blockIdx.x') and sch.bind(i1, 'threadIdx.x')")


@dataclass(frozen=True)
class _Dim:
    """One dimension of a bound forall: ``lower + iv * step`` for ``iv < count``; a partial
    tile also has a dynamic ``upper`` bound that the iterations must be guarded by."""

    lower: int
    step: int
    count: int
    upper: ir.Value | None = None


def _constant_bound(value: ir.Value) -> int | None:
    """The smallest constant among the results of the ``affine.min`` defining ``value``."""
    owner = value.owner
    if not isinstance(owner, ir.OpView) or owner.operation.name != "affine.min":
        return None
    amap = ir.AffineMapAttr(owner.operation.attributes["map"]).value
    consts = [e.value for e in amap.results if isinstance(e, ir.AffineConstantExpr)]
    return min(consts) if consts else None


def _bounds(op: ir.Operation) -> list[_Dim]:
    """The dimensions of a forall with static bounds, or a partial tile's ``affine.min`` bound."""
    lbs = list(ir.DenseI64ArrayAttr(op.attributes["staticLowerBound"]))
    ubs = list(ir.DenseI64ArrayAttr(op.attributes["staticUpperBound"]))
    steps = list(ir.DenseI64ArrayAttr(op.attributes["staticStep"]))
    dynamic = ir.ShapedType.get_dynamic_size()
    symbolic = BuildError(f"GPU loop {_loop_name(op)!r} has a symbolic trip count: grid and block sizes must "
                          "be static (split symbolic dimensions by a constant factor and bind the inner "
                          "loop only, or use static shapes)")
    if dynamic in lbs or dynamic in steps:
        raise symbolic
    dims, dynamic_ubs = [], iter(list(op.operands))
    for lb, ub, step in zip(lbs, ubs, steps):
        upper = None
        if ub == dynamic:
            upper = next(dynamic_ubs)
            ub = _constant_bound(upper)
            if ub is None:
                raise symbolic
        dims.append(_Dim(lb, step, max(0, -(-(ub - lb) // step)), upper))
    return dims


def trip_counts(op: ir.Operation) -> list[int]:
    """Trip counts of a bound forall (static, or a partial tile's full count)."""
    return [d.count for d in _bounds(op)]


def _ops(block: ir.Block) -> list[ir.Operation]:
    return [o.operation for o in block.operations]


def _check_host_block(block: ir.Block, func_name: str, kernels: list[ir.Operation]) -> None:
    errors: list[BuildError] = []
    for op in _ops(block):
        kind = _kind(op)
        if kind == "block":
            kernels.append(op)
        elif kind == "thread":
            errors.append(BuildError(f"loop {_loop_name(op)!r} of @{func_name} is bound to threadIdx but is "
                                     "not inside a loop bound to blockIdx: bind an outer loop to blockIdx.x"))
        elif kind == "none":
            errors.append(_unbound(op, f"parallel loop {_loop_name(op)!r} of @{func_name}"))
        elif op.name not in _HOST_OPS and not _is_pure(op):
            loop = op.name.startswith("scf.")
            errors.append(_unbound(op, f"loop {_loop_name(op)!r} of @{func_name}" if loop else f"@{func_name}"))
    if errors:
        # A computation is a clearer report than the initialization of a reduction.
        raise next((e for e in errors if "initialization" not in str(e)), errors[0])


def _collect(root: ir.Operation, name: str) -> list[ir.Operation]:
    found: list[ir.Operation] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        if op.name == name:
            found.append(op)
        return ir.WalkResult.ADVANCE

    root.walk(visit, ir.WalkOrder.PRE_ORDER)
    return found


def drop_self_copies(module: ir.Module) -> None:
    """Erase ``memref.copy %x, %x`` (left by bufferizing ``parallel_insert_slice`` in place)."""
    for op in _collect(module.operation, "memref.copy"):
        if op.operands[0] == op.operands[1]:
            op.erase()


def find_kernels(functions: list[ir.Operation]) -> list[ir.Operation]:
    """The outermost block-bound foralls (kernel roots) of ``functions``.

    Raises:
        BuildError: a computation outside every blockIdx-bound loop nest (naming its
            block), a threadIdx loop outside a blockIdx loop, an unmapped parallel loop.
    """
    kernels: list[ir.Operation] = []
    for fn in functions:
        name = sym_name(fn)
        _check_host_block(fn.regions[0].blocks[0], name, kernels)
    return kernels


def _check_kernel_body(root: ir.Operation) -> None:
    errors: list[str] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        if op == root:
            return ir.WalkResult.ADVANCE
        try:
            kind = _kind(op)
        except BuildError as exc:
            errors.append(str(exc))
            return ir.WalkResult.INTERRUPT
        if kind == "block":
            errors.append(f"loop {_loop_name(op)!r} is bound to blockIdx inside loop {_loop_name(root)!r} but "
                          "not perfectly nested in it (other work or loops between them): blockIdx loops "
                          "must be the outermost loops, with nothing between them")
        elif kind == "none":
            errors.append(f"loop {_loop_name(op)!r} is parallel (sch.parallel, CPU threads) inside a GPU "
                          "kernel; bind it to threadIdx or leave it serial")
        elif op.name in ("func.call", "call"):
            callee = op.attributes["callee"] if "callee" in op.attributes else "?"
            errors.append(f"call of {callee} inside a GPU kernel (tensorize micro-kernels and calls are "
                          "not supported by the cuda build)")
        elif op.name.startswith("vector."):
            errors.append(f"{op.name} inside a GPU kernel (a loop vectorized with sch.vectorize under GPU-bound "
                          "loops): the cuda build does not lower vector operations; leave that loop serial "
                          "or bind it to threadIdx")
        elif op.name == "memref.alloc" and not ir.MemRefType(op.results[0].type).has_static_shape:
            errors.append("a buffer with a dynamic shape is allocated inside a GPU kernel")
        return ir.WalkResult.INTERRUPT if errors else ir.WalkResult.ADVANCE

    root.walk(visit, ir.WalkOrder.PRE_ORDER)
    if errors:
        raise BuildError(errors[0])


def _nested_same_kind(op: ir.Operation, kind: str) -> ir.Operation | None:
    """The single forall of ``kind`` perfectly nested in ``op`` (only pure ops beside it)."""
    body = op.regions[0].blocks[0]
    ops = _ops(body)[:-1]  # drop scf.forall.in_parallel
    inner = [o for o in ops if _kind(o) == kind]
    if len(inner) != 1:
        return None
    others = [o for o in ops if o != inner[0]]
    if all(_is_pure(o) for o in others) and ops[-1] == inner[0]:
        return inner[0]
    return None


def _rebuild(outer: ir.Operation, inner: ir.Operation | None) -> ir.Operation:
    """One normalized forall (lower bound 0, step 1, static count) for ``outer`` and, if
    given, the forall perfectly nested in it: ``forall (a) { pure ops; forall (b) { body } }``
    -> ``forall (a, b) { pure ops; body }``. Induction variables of loops that were not
    normalized become ``lower + iv * step``; a partial tile (``forall (%t) in (%min)``)
    runs the count of a full tile with its body under ``scf.if %t < %min``."""
    loops = [outer] + ([inner] if inner is not None else [])
    dims = [_bounds(loop) for loop in loops]
    mapping = [m for loop in loops for m in ir.ArrayAttr(loop.attributes["mapping"])]
    flat = [d for ds in dims for d in ds]
    with ir.InsertionPoint(outer):
        new = scf.ForallOp([0] * len(flat), [d.count for d in flat], [1] * len(flat),
                           mapping=ir.ArrayAttr.get(mapping))
        with ir.InsertionPoint(new.body):
            anchor = scf.InParallelOp().operation
    new.attributes["mlc.loop"] = ir.StringAttr.get(",".join(_loop_name(loop) for loop in loops))
    new_ivs = iter(list(new.body.arguments))
    for loop, loop_dims in zip(loops, dims):
        guards = []
        with ir.InsertionPoint(anchor):
            for old_iv, dim in zip(loop.regions[0].blocks[0].arguments, loop_dims):
                value = next(new_ivs)
                if dim.step != 1:
                    value = arith.MulIOp(value, _index(dim.step)).result
                if dim.lower != 0:
                    value = arith.AddIOp(value, _index(dim.lower)).result
                old_iv.replace_all_uses_with(value)
                if dim.upper is not None:
                    guards.append(arith.CmpIOp(arith.CmpIPredicate.slt, value, dim.upper).result)
            for cond in guards:
                guard = scf.IfOp(cond)
                guard.operation.attributes[GUARD_ATTR] = ir.UnitAttr.get()
                with ir.InsertionPoint(guard.then_block):
                    anchor = scf.YieldOp([]).operation
        for op in _ops(loop.regions[0].blocks[0])[:-1]:
            if inner is None or op != inner:
                op.move_before(anchor)
    outer.erase()
    return new.operation


def _index(value: int) -> ir.Value:
    return arith.ConstantOp(ir.IndexType.get(), value).result


def _normalized(op: ir.Operation) -> bool:
    return all(d.lower == 0 and d.step == 1 and d.upper is None for d in _bounds(op))


def _merge_nest(op: ir.Operation, kind: str) -> ir.Operation:
    while (inner := _nested_same_kind(op, kind)) is not None:
        op = _rebuild(op, inner)
    if not _normalized(op):
        op = _rebuild(op, None)
    dims = [d for _, d in _mapping(op)]
    for d in set(dims):
        if dims.count(d) > 1:
            raise BuildError(f"{_AXIS[kind]}.{d} is bound to more than one of the nested loops "
                             f"{_loop_name(op)!r}")
    return op


def _thread_foralls(root: ir.Operation) -> list[ir.Operation]:
    found: list[ir.Operation] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        if op != root and _kind(op) == "thread":
            found.append(op)
        return ir.WalkResult.ADVANCE

    root.walk(visit, ir.WalkOrder.PRE_ORDER)
    return found


def _inside(op: ir.Operation, ancestor: ir.Operation) -> bool:
    parent = op.parent
    while parent is not None and parent.name != "func.func":
        if parent.operation == ancestor:
            return True
        parent = parent.parent
    return False


def merge_bound_loops(roots: list[ir.Operation]) -> list[Kernel]:
    """Merge nested blockIdx loops, then nested threadIdx loops; compute grid/block sizes.

    Raises:
        BuildError: bound loops that are not perfectly nested (work between two blockIdx
            loops, or between two threadIdx loops), an axis bound twice, sizes over the
            CUDA limits, or a kernel body the build cannot compile (CPU-parallel loops,
            calls, dynamically sized buffers).
    """
    kernels = []
    for root in roots:
        root = _merge_nest(root, "block")
        _check_kernel_body(root)
        threads = _thread_foralls(root)
        for t in [t for t in threads if not any(_inside(t, o) for o in threads if o != t)]:
            _merge_nest(t, "thread")
        threads = _thread_foralls(root)
        for t in threads:
            if any(_inside(t, o) for o in threads if o != t):
                raise BuildError(f"loop {_loop_name(t)!r} is bound to threadIdx inside another threadIdx loop "
                                 "with work between them; threadIdx loops must be perfectly nested")
        kernels.append(Kernel(root, _sizes(root, "block", _MAX_GRID), _block_sizes(root, threads)))
    return kernels


def _sizes(op: ir.Operation, kind: str, limits: dict[str, int]) -> tuple[int, int, int]:
    size = {"x": 1, "y": 1, "z": 1}
    for (_, dim), count in zip(_mapping(op), trip_counts(op)):
        if count > limits[dim]:
            raise BuildError(f"{_AXIS[kind]}.{dim} of loop {_loop_name(op)!r} has {count} iterations; CUDA "
                             f"allows at most {limits[dim]}")
        size[dim] = count
    return size["x"], size["y"], size["z"]


def _block_sizes(root: ir.Operation, threads: list[ir.Operation]) -> tuple[int, int, int]:
    sizes = [_sizes(t, "thread", _MAX_BLOCK) for t in threads] or [(1, 1, 1)]
    block = tuple(max(s[i] for s in sizes) for i in range(3))
    if math.prod(block) > MAX_THREADS_PER_BLOCK:
        raise BuildError(f"the kernel of loop {_loop_name(root)!r} needs {block[0]}x{block[1]}x{block[2]} = "
                         f"{math.prod(block)} threads per block; CUDA allows at most {MAX_THREADS_PER_BLOCK}")
    return block  # type: ignore[return-value]


def place_kernel_buffers(kernels: list[Kernel]) -> None:
    """Buffers allocated inside a kernel become per-thread ``memref.alloca``; copies
    inside a kernel become ``linalg.copy`` (lowered to loops like the computations).

    An allocation inside a threadIdx loop (or in a kernel without threadIdx loops) is
    private to one thread; it is hoisted to the start of that loop's body.

    Raises:
        BuildError: a buffer allocated per block (between the blockIdx and threadIdx
            loops), which would need shared memory.
    """
    for kernel in kernels:
        for copy in _collect(kernel.forall, "memref.copy"):
            with ir.InsertionPoint(copy):
                linalg.copy(copy.operands[0], outs=[copy.operands[1]])
            copy.erase()
        threads = _thread_foralls(kernel.forall)
        for alloc in _collect(kernel.forall, "memref.alloc"):
            owner = next((t for t in threads if _inside(alloc, t)), None)
            if owner is None and threads:
                raise BuildError(f"a buffer of type {alloc.results[0].type} is allocated per GPU block, outside "
                                 f"the threadIdx loops of kernel {_loop_name(kernel.forall)!r}: it would need "
                                 "shared memory, which the cuda build does not support; compute it inside "
                                 "the threadIdx loop (compute_at) instead")
            body = (owner or kernel.forall).regions[0].blocks[0]
            with ir.InsertionPoint.at_block_begin(body):
                alloca = memref.AllocaOp(alloc.results[0].type, [], [])
            alloc.results[0].replace_all_uses_with(alloca.result)
            alloc.erase()


def mapping_script(kernels: list[Kernel]) -> ir.Module:
    """The transform script mapping ``kernels`` (each tagged ``mlc.kernel = i``) to ``gpu.launch``.

    Per kernel ``i`` with block sizes ``(bx, by, bz)`` (twin lit test
    ``tests/lit/compiler/transform_scripts.py``)::

        %f = transform.structured.match ops{["scf.forall"]} attributes {mlc.kernel = i : i64} in %root
        %l = transform.gpu.map_forall_to_blocks %f generate_gpu_launch
        transform.gpu.map_nested_forall_to_threads %l block_dims = [bx, by, bz]
    """
    i64 = ir.IntegerType.get_signless(64)
    any_op = transform.AnyOpType.get()

    def body(root: ir.Value) -> None:
        for i, kernel in enumerate(kernels):
            forall = match(root, ops=["scf.forall"], attrs={KERNEL_ATTR: ir.IntegerAttr.get(i64, i)})
            launch = tgpu.MapForallToBlocks(any_op, forall, generate_gpu_launch=True).result
            tgpu.MapNestedForallToThreads(any_op, launch, block_dims=list(kernel.block))

    return transform_script(body, loc=ir.Location.name("map-to-gpu"))  # diagnostics name the stage


def map_kernels(module: ir.Module, kernels: list[Kernel]) -> None:
    """Apply ``map_forall_to_blocks`` + ``map_nested_forall_to_threads`` to every kernel
    (:func:`mapping_script`).

    Raises:
        LoweringError: the transform interpreter rejected the mapping (with diagnostics).
    """
    if not kernels:
        return
    for i, kernel in enumerate(kernels):
        kernel.forall.attributes[KERNEL_ATTR] = ir.IntegerAttr.get(ir.IntegerType.get_signless(64), i)
    apply_transform(module, mapping_script(kernels), error=LoweringError,
                    message="stage 'map-to-gpu' (transform.gpu mapping) failed")
