"""cache_read / cache_write: copy a block's input into, or its output out of, a new
buffer tagged with a storage scope (``"global"``, ``"shared"``, ``"local"`` or a custom
tag such as ``"global.A_reg"``).

The copy is a new block (a ``linalg.copy`` marked ``mlc.block`` and ``mlc.scope``) that
other primitives schedule like any block (``compute_at(A_reg, k)``). Emission: a
``nofold`` ``transform.structured.pad`` of the operand, rewritten into an allocation and a
``linalg.copy`` (``rewrite_in_destination_passing_style``); for ``cache_write`` the pad's
``copy_back_op`` is the write-back copy and the init fill moves onto the new buffer. The
scope is an attribute only (no memref memory space), so the program builds for the CPU;
the CUDA build turns ``"shared"`` copies into workgroup memory fetched by the whole
thread block (:mod:`mlc_mlir.compiler.gpu_shared`) and keeps ``"local"`` tiles per thread.

Cooperative fetching (course ch.6)::

    A_shared = sch.cache_read(block_C, 0, "shared")
    sch.compute_at(A_shared, k0)
    inner = sch.fuse(*sch.get_loops(A_shared)[-2:])
    _, tx, vec = sch.split(inner, [None, nthread, 4])
    sch.vectorize(vec)
    sch.bind(tx, "threadIdx.x")

The split of a shared copy's fused loop records the distribution (the copy's loops leave
the loop nest: the build spreads the block-wide tile over all threads of the block, and
``vectorize`` makes each thread fetch ``vec`` consecutive elements).
A copy moved under a loop writes a buffer of the tile's shape (:mod:`.buffers`): with
``compute_at`` a ``"local"`` cache of B is a packed, contiguous tile.
"""

from __future__ import annotations

import dataclasses

from ..errors import ScheduleError
from .payload import BlockInfo, Source
from .state import Loop
from .trace import BlockRV, LoopRV

__all__ = ["CachePrimitives"]


def _copy_info(name: str, func: str, order: float, shape: tuple, src: Source, dst: Source,
               element_type: str) -> BlockInfo:
    ident = tuple(range(len(shape)))
    return BlockInfo(name=name, func=func, order=order, op_name="linalg.copy", extents=tuple(shape),
                     iters=("parallel",) * len(shape), maps=(ident, ident), shapes=(tuple(shape), tuple(shape)),
                     sources=(src, dst), n_inputs=1, has_init=False, element_type=element_type,
                     loop_names=tuple(f"ax{d}" for d in range(len(shape))))


class CachePrimitives:
    """cache_read and cache_write."""

    def _split_shared_copy(self, fstate, block, uid: int, vals: list, loop, factors) -> list[LoopRV]:
        """``split`` of the fused loop of a ``"shared"`` copy: cooperative fetching."""
        old = fstate.loops[uid]
        if block.path[-1] != uid or len(fstate.owners(uid)) != 1:
            raise ScheduleError(f"split: loop {old.name} of shared copy {block.name!r} must be its innermost own "
                                "loop (fuse the copy's loops after compute_at, then split)")
        if not 2 <= len(vals) <= 3 or vals.count(None) > 1:
            raise ScheduleError(f"split: a shared copy's fused loop splits into [None, threads] or "
                                f"[None, threads, vector], got {list(vals)}")
        if any(v is not None and v < 1 for v in vals):
            raise ScheduleError(f"split: factors must be positive, got {list(vals)}")
        block.path.pop()
        del fstate.loops[uid]
        new = []
        for n in range(len(vals)):
            nid = self._new_uid()
            fstate.loops[nid] = Loop(nid, f"{old.name}_{n}", {block.name: ()})
            new.append(nid)
        coop = fstate.__dict__.setdefault("coop", {})
        coop[block.name] = {"loops": new, "factors": list(vals), "vector": 1}
        rvs = [self._loop_rv(fstate, n) for n in new]
        self._record("split", [("loop", loop), ("factors", list(factors))], tuple(rvs))
        return rvs

    def _vectorize_shared_copy(self, fstate, uid: int) -> bool:
        """``vectorize`` of the innermost split of a cooperative fetch; False for other loops."""
        for name, cfg in fstate.__dict__.get("coop", {}).items():
            if uid in cfg["loops"]:
                if uid != cfg["loops"][-1] or len(cfg["loops"]) != 3:
                    raise ScheduleError(f"vectorize: only the innermost of [None, threads, vector] of shared "
                                        f"copy {name!r} can be vectorized")
                lp = fstate.loops[uid]
                if lp.kind != "serial":
                    raise ScheduleError(f"vectorize: loop {lp.name} is already {lp.kind}")
                lp.kind = "vectorized"
                cfg["vector"] = int(cfg["factors"][-1] or 1)
                return True
        return False

    def _cache_checks(self, block, index: int, scope: str, what: str):
        fstate, bstate = self._resolve_block(block, what)
        limit = len(_read_tensors(bstate.info, fstate)) if what == "cache_read" else 1
        if not isinstance(index, int) or not 0 <= index < limit:
            raise ScheduleError(f"{what}: buffer index {index!r} out of range for block {bstate.name!r} "
                                f"({limit} buffer(s))")
        if not isinstance(scope, str) or not scope:
            raise ScheduleError(f"{what}: storage_scope must be a non-empty str, got {scope!r}")
        if bstate.tensorized:
            raise ScheduleError(f"{what}: call it before tensorize of block {bstate.name!r}")
        return fstate, bstate

    def cache_read(self, block: BlockRV, read_buffer_index: int, storage_scope: str) -> BlockRV:
        """Read input tensor ``read_buffer_index`` of ``block`` through a copy in ``storage_scope``.

        The index counts the block's distinct input tensors (TVM's read buffers), not its
        operands. The copy block caches the tensor's first operand; in the CUDA build a
        ``"shared"`` cache also serves the block's other reads of that tensor (the window
        sum's ``A[i+1]``, ``A[i+2]``: one shared buffer of the block's 130 elements).

        Preconditions: a static-shaped input; a scope string. Returns the copy block,
        named ``<buffer>_<scope>`` (``A_shared``, ``A_global.A_reg``), with loops ``ax0...``.

        Schedule (course ch.6)::

            A_reg = sch.cache_read(block_mm, 0, storage_scope="global.A_reg")
            sch.compute_at(A_reg, k)

        IR after (a 16x16 copy of A per ``k`` iteration feeds the tile)::

            scf.for %k ... {
              %a = linalg.copy {mlc.block = "A_global.A_reg", mlc.scope = "global.A_reg"}
                   ins(... tensor<16x16xf32>) outs(... tensor<16x16xf32>)
              linalg.matmul {mlc.block = "matmul"} ins(%a, ...)
            }
        """
        with self._edit():
            fstate, bstate = self._cache_checks(block, read_buffer_index, storage_scope, "cache_read")
            info = bstate.info
            operand = _read_tensors(info, fstate)[read_buffer_index]
            shape = info.shapes[operand]
            if None in shape:
                raise ScheduleError("cache_read: the input has a dynamic shape; only static shapes are cached")
            src = info.sources[operand]
            name = f"{src.name}_{storage_scope}"
            _check_new_name(fstate, name, "cache_read")
            copy = _copy_info(name, fstate.func, info.order - 0.5 / (1 + len(fstate.caches)), shape, src,
                              Source("value", "alloc"), info.element_type)
            sources = list(info.sources)
            sources[operand] = Source("block", name)
            bstate.info = dataclasses.replace(info, sources=tuple(sources))
            fstate.add_block(copy, self._new_uid).cache_scope = storage_scope
            fstate.caches.append(("read", bstate.name, operand, name, storage_scope))
            rv = BlockRV(name, fstate.func)
            self._record("cache_read", [("block", block), ("read_buffer_index", read_buffer_index),
                                        ("storage_scope", storage_scope)], (rv,))
        return rv

    def cache_write(self, block: BlockRV, write_buffer_index: int, storage_scope: str) -> BlockRV:
        """Compute ``block`` into a new buffer in ``storage_scope`` and copy it back with a
        new block ``<name>_<scope>`` (its init, if any, now fills the new buffer).

        Schedule (course ch.6 local blocking)::

            C_local = sch.cache_write(block_C, 0, "local")
            sch.reverse_compute_at(C_local, j1)

        IR after::

            %f = linalg.fill {mlc.block_init = "C"} ... outs(%empty)
            %c = linalg.matmul {mlc.block = "C"} ... outs(%f)
            linalg.copy {mlc.block = "C_local", mlc.scope = "local"} ins(%c) outs(%C)
        """
        with self._edit():
            fstate, bstate = self._cache_checks(block, write_buffer_index, storage_scope, "cache_write")
            info = bstate.info
            shape = info.shapes[-1]
            if None in shape:
                raise ScheduleError("cache_write: the output has a dynamic shape; only static shapes are cached")
            name = f"{bstate.name}_{storage_scope}"
            _check_new_name(fstate, name, "cache_write")
            dst = info.sources[-1] if not info.has_init else Source("value", "init")
            copy = _copy_info(name, fstate.func, info.order + 0.5 / (1 + len(fstate.caches)), shape,
                              Source("block", bstate.name), dst, info.element_type)
            for other in fstate.blocks.values():
                srcs = [Source("block", name) if s.kind == "block" and s.name == bstate.name else s
                        for s in other.info.sources]
                other.info = dataclasses.replace(other.info, sources=tuple(srcs))
            fstate.add_block(copy, self._new_uid).cache_scope = storage_scope
            fstate.caches.append(("write", bstate.name, write_buffer_index, name, storage_scope))
            rv = BlockRV(name, fstate.func)
            self._record("cache_write", [("block", block), ("write_buffer_index", write_buffer_index),
                                         ("storage_scope", storage_scope)], (rv,))
        return rv


def _read_tensors(info: BlockInfo, fstate) -> list[int]:
    """The first operand reading each distinct input tensor of a block, in operand order:
    ``read_buffer_index`` counts tensors, as in TVM (the window sum ``A[i] + A[i+1] +
    A[i+2]`` reads one tensor through three operands; a read cache stands for its tensor)."""
    seen: list[tuple[str, str]] = []
    firsts: list[int] = []
    for i, src in enumerate(info.sources[:info.n_inputs]):
        while src.kind == "block" and src.name in fstate.blocks and fstate.blocks[src.name].cache_scope is not None \
                and fstate.blocks[src.name].info.op_name == "linalg.copy" and any(
                    c[0] == "read" and c[3] == src.name for c in fstate.caches):
            src = fstate.blocks[src.name].info.sources[0]
        key = (src.kind, src.name) if src.kind in ("arg", "block") else ("operand", str(i))
        if key not in seen:
            seen.append(key)
            firsts.append(i)
    return firsts


def _check_new_name(fstate, name: str, what: str) -> None:
    if name in fstate.blocks or name in fstate.aliases:
        raise ScheduleError(f"{what}: a block named {name!r} already exists (this buffer is already cached "
                            "in that scope)")
