"""The abstract loop nest a schedule edits: loops per block, shared loops, init placement.

Nothing here touches MLIR. Each block of a tensor program starts with one loop per
iteration dim (outermost first, in the op's dim order). Primitives rewrite these lists;
:mod:`.emit` turns the final state into a transform script. A loop (:class:`Loop`) may be
shared by several blocks (after ``compute_at``/``reverse_compute_at``); for each block it
iterates one or more of that block's dims (several after ``fuse``) with a given extent.

The step of loop ``l`` for dim ``d`` of block ``B`` is the product of the extents of the
loops of ``d`` inside ``l`` in ``B``'s path (times ``B.inner_tile[d]`` after blockize):
the tile size that ``transform.structured.tile_using_for`` gets for that loop.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from ..errors import ScheduleError
from .payload import BlockInfo

__all__ = ["Loop", "BlockState", "FuncState", "MAX_VECTOR_ELEMENTS", "MAX_UNROLL"]

MAX_VECTOR_ELEMENTS = 512
MAX_UNROLL = 256
LOOP_KINDS = ("serial", "parallel", "vectorized", "unrolled", "bound")


@dataclass
class Loop:
    """One loop: ``parts[block]`` lists the ``(dim, extent)`` it iterates for that block."""

    uid: int
    name: str
    parts: dict[str, tuple[tuple[int, int | None], ...]]
    kind: str = "serial"
    thread: str | None = None
    #: after ``peel``: ``{block: {dim: extent of the last, partial tile}}`` (None: dynamic)
    peel: dict[str, dict[int, int | None]] | None = None
    #: the outer loop of a split whose factors do not divide the extent: ``{block: {dim:
    #: (t, p)}}``, its last iteration covers ``t`` of the ``p`` units of the others
    tail: dict[str, dict[int, tuple[int, int]]] | None = None

    @property
    def extent(self) -> int | None:
        for parts in self.parts.values():
            exts = [e for _, e in parts]
            return None if None in exts else math.prod(exts)
        return 1

    @property
    def blocks(self) -> list[str]:
        return list(self.parts)


@dataclass
class BlockState:
    """A block's place in the loop nest.

    ``base[d]`` is the extent of dim ``d`` the block's path iterates (the full extent, or
    the tile of its producer/consumer after compute_at) and whether it is exact (no
    partial tile above it). ``init_level`` is the number of path loops that enclose the
    init fill (``None``: together with the block). ``inner_tile[d]`` is the extent of
    dim ``d`` kept inside the op by blockize. ``block_wide``: a ``"shared"`` cache sized by
    ``compute_at`` to the thread block's region (threadIdx loops relaxed, window offsets
    included) instead of one iteration's tile (the emitted per-thread tile is widened by
    the CUDA build): its own loops are only fused and split for cooperative fetching.
    """

    info: BlockInfo
    path: list[int]
    base: list[tuple[int | None, bool]]
    inner_tile: list[int] = field(default_factory=list)
    init_level: int | None = None
    blockized: bool = False
    tensorized: str | None = None
    cache_scope: str | None = None
    block_wide: bool = False

    @property
    def name(self) -> str:
        return self.info.name


@dataclass
class FuncState:
    """The loop nest of every block of one function."""

    func: str
    blocks: dict[str, BlockState] = field(default_factory=dict)
    loops: dict[int, Loop] = field(default_factory=dict)
    aliases: dict[str, tuple[str, str]] = field(default_factory=dict)
    caches: list[tuple[str, str, int, str, str]] = field(default_factory=list)
    #: after ``rfactor``: (block, its partial-sums block, lanes, position of the lanes, its dims)
    rfactors: list[tuple[str, str, int, int, int]] = field(default_factory=list)

    # -- construction ------------------------------------------------------------------
    def add_block(self, info: BlockInfo, new_uid) -> BlockState:
        names = list(info.loop_names) or default_loop_names(info.ndims)
        path = []
        for d, ext in enumerate(info.extents):
            uid = new_uid()
            self.loops[uid] = Loop(uid, names[d], {info.name: ((d, ext),)})
            path.append(uid)
        state = BlockState(info, path, [(e, e is not None) for e in info.extents], [1] * info.ndims)
        self.blocks[info.name] = state
        return state

    # -- queries ---------------------------------------------------------------------
    def owners(self, uid: int) -> list[str]:
        return [b for b, s in self.blocks.items() if uid in s.path]

    def block_of_loop(self, uid: int, what: str) -> BlockState:
        """The single block whose path holds loop ``uid`` (ScheduleError if shared)."""
        owners = self.owners(uid)
        loop = self.loops[uid]
        if len(owners) != 1:
            raise ScheduleError(f"{what}: loop {loop.name} is shared by blocks {owners} (after compute_at); "
                                "schedule it before compute_at/reverse_compute_at")
        return self.blocks[owners[0]]

    def step(self, block: BlockState, index: int, dim: int) -> int | None:
        """Tile size of ``block``'s dim ``dim`` inside loop ``block.path[index]`` (a loop
        inside whose last iteration is partial covers ``(extent - 1) * step + last``)."""
        size = block.inner_tile[dim]
        for uid in reversed(block.path[index + 1:]):
            loop = self.loops[uid]
            for d, e in loop.parts.get(block.name, ()):
                if d == dim:
                    if e is None:
                        return None
                    t = loop.tail.get(block.name, {}).get(dim) if loop.tail is not None else None
                    size = (e - 1) * size + t[0] * size // t[1] if t else size * e
        return size

    def tile_extent(self, block: BlockState, index: int, dim: int,
                    rem: frozenset[int] = frozenset()) -> tuple[int | None, bool]:
        """``(extent, exact)`` of dim ``dim`` iterated by ``block.path[index]`` and below.

        Inside a peeled loop the tiles are full (the main loop), or, for the peeled loops
        in ``rem``, the last partial tile (the remainder).
        """
        ext, exact = block.base[dim]
        for i in range(index):
            loop = self.loops[block.path[i]]
            for d, _ in loop.parts.get(block.name, ()):
                if d == dim:
                    s = self.step(block, i, dim)
                    if loop.peel is not None and s is not None:
                        r = loop.peel.get(block.name, {}).get(dim)
                        if loop.uid in rem:
                            ext, exact = (r, exact) if r else (s, False)
                        else:
                            ext, exact = (s if ext is None else min(s, ext)), True
                        continue
                    if ext is not None and s is not None and ext <= s:
                        continue  # one tile: the whole extent (an attached block's tile)
                    if ext is None or s is None or ext % s:
                        exact = False
                    ext = s if ext is None or s is None else min(s, ext)
        return ext, exact

    def trip_count(self, block: BlockState, index: int, rem: frozenset[int] = frozenset()) -> int | None:
        """Static trip count of ``block.path[index]``, or None when it depends on a bound
        (``rem``: peeled loops taken in their remainder, see :meth:`tile_extent`)."""
        total = 1
        for d, _ in self.loops[block.path[index]].parts.get(block.name, ()):
            ext, exact = self.tile_extent(block, index, d, rem)
            step = self.step(block, index, d)
            if ext is None or step is None or not exact:
                return None
            total *= -(-ext // step)
        return total

    def last_of_dim(self, block: BlockState, index: int) -> bool:
        dims = {d for d, _ in self.loops[block.path[index]].parts[block.name]}
        for uid in block.path[index + 1:]:
            if dims & {d for d, _ in self.loops[uid].parts.get(block.name, ())}:
                return False
        return True

    def init_level(self, block: BlockState) -> int:
        """Number of path loops around the init fill, as emitted."""
        first_red = next((i for i, uid in enumerate(block.path)
                          if any(block.info.is_reduction(d) for d, _ in self.loops[uid].parts[block.name])),
                         len(block.path))
        level = self.attach_depth(block) if block.init_level is None else block.init_level
        return min(level, first_red)

    def init_tile(self, block: BlockState) -> tuple[int, list[int]] | None:
        """Where the init fill sits as emitted and its static (upper-bound) tile shape:
        ``(depth, sizes)``, the fill being under ``block.path[depth - 1]`` (depth 0: not
        tiled, the whole output); None when a size is dynamic.

        The fill sits under ``init_level`` loops, or under the loop its block is fused
        into (compute_at) when that is deeper.
        """
        level = self.init_level(block)
        depth = max(level, self.attach_depth(block)) if level >= 1 else 0
        sizes = []
        for d in block.info.maps[-1]:
            if d is None:
                return None
            ext, _ = self.tile_extent(block, depth, d)
            if ext is None:
                return None
            sizes.append(ext)
        return depth, sizes

    def attach_depth(self, block: BlockState) -> int:
        """How many leading loops of ``block`` are made by a later block (its consumer):
        ``block`` is fused into the innermost of them."""
        n = 0
        for uid in block.path:
            if not any(self.blocks[b].info.order > block.info.order for b in self.owners(uid)):
                break
            n += 1
        return n

    def implicit_suffix(self, block: BlockState) -> int:
        """How many innermost loops stay inside the linalg op instead of becoming scf loops."""
        if block.blockized:
            return 0
        path = block.path
        if path and self.loops[path[-1]].kind == "vectorized":
            return 1
        floor = max(self.attach_depth(block), self.init_level(block))
        n, last_dim = 0, None
        for i in range(len(path) - 1, floor - 1, -1):
            loop = self.loops[path[i]]
            parts = loop.parts[block.name]
            if (len(self.owners(loop.uid)) > 1 or loop.kind != "serial" or loop.peel is not None or len(parts) != 1
                    or not self.last_of_dim(block, i) or (last_dim is not None and parts[0][0] >= last_dim)):
                break
            last_dim = parts[0][0]
            n += 1
        return n

    # -- validation ------------------------------------------------------------------
    def validate(self) -> None:
        """Raise ScheduleError when the state cannot be emitted as a transform script."""
        for block in self.blocks.values():
            self._validate_block(block)
        for loop in self.loops.values():
            self._validate_shared(loop)

    def _reads(self, consumer: BlockState, producer: str, *, views: bool = True) -> bool:
        """Whether ``consumer`` reads ``producer``'s result (with ``views``: also through a
        reshape of it; such a producer is fused where it is attached even while its
        reader's init is placed by ``structured.fuse``, which does not fuse through views)."""
        info = consumer.info
        kinds = ("block", "view") if views else ("block",)
        return any(s.kind in kinds and s.name == producer for s in info.sources[:info.n_inputs])

    def _validate_shared(self, loop: Loop) -> None:
        """Blocks under one loop are fused into the loop made by the last of them in
        program order: each of the others must produce an input of a later one."""
        under = sorted((self.blocks[b] for b in loop.parts), key=lambda b: b.info.order, reverse=True)
        for i, block in enumerate(under[1:], 1):
            if not any(self._reads(later, block.name) for later in under[:i]):
                raise ScheduleError(f"loop {loop.name}: block {block.name!r} does not produce an input of a "
                                    f"later block under it ({', '.join(b.name for b in under[:i])}); "
                                    "such a shared loop is not supported")

    def _validate_block(self, block: BlockState) -> None:
        name = block.name
        for i, uid in enumerate(block.path):
            loop = self.loops[uid]
            if loop.kind == "vectorized" and i != len(block.path) - 1:
                raise ScheduleError(f"block {name!r}: vectorized loop {loop.name} must stay the innermost loop")
            if loop.kind != "serial" and loop.kind != "unrolled":
                for d, _ in loop.parts[name]:
                    if block.info.is_reduction(d):
                        raise ScheduleError(f"block {name!r}: loop {loop.name} is a reduction loop and cannot be "
                                            f"{loop.kind}")
        if block.block_wide:
            for uid in block.path:
                loop = self.loops[uid]
                if len(self.owners(uid)) == 1 and (loop.kind != "serial" or loop.peel is not None):
                    raise ScheduleError(f"block {name!r}: loop {loop.name} spans the thread block's region of the "
                                        "shared copy, which all threads fetch together; fuse the copy's loops and "
                                        "split them [None, threads] or [None, threads, vector] (then bind and "
                                        "vectorize those) instead")
        peeled_dims: dict[int, str] = {}
        for uid in block.path:
            if self.loops[uid].peel is not None:
                for d, _ in self.loops[uid].parts[name]:
                    if d in peeled_dims:
                        raise ScheduleError(f"block {name!r}: loops {peeled_dims[d]} and {self.loops[uid].name} "
                                            "both peel the same dim; peel one loop per dim")
                    peeled_dims[d] = self.loops[uid].name
        for i, uid in enumerate(block.path[:len(block.path) - self.implicit_suffix(block)]):
            for d, _ in self.loops[uid].parts[name]:
                if self.step(block, i, d) is None:
                    raise ScheduleError(f"block {name!r}: loop {self.loops[uid].name} needs a static tile size but "
                                        f"the loops inside it on the same dim have dynamic extents")
        level = self.init_level(block)
        shared = self.attach_depth(block)
        if block.info.has_init and level > shared:
            for other in self.blocks.values():
                if other is not block and self._reads(block, other.name, views=False) \
                        and set(other.path) & set(block.path):
                    raise ScheduleError(f"block {name!r}: its init is placed below its own loops while block "
                                        f"{other.name!r} is attached to its loops; decompose_reduction at "
                                        "the attach loop instead")
            for uid in block.path[shared:level]:
                if len(self.loops[uid].parts[name]) != 1:
                    raise ScheduleError(f"block {name!r}: the init is placed below the fused loop "
                                        f"{self.loops[uid].name}; decompose_reduction there is not supported")


def default_loop_names(n: int) -> list[str]:
    """TVMScript-like loop names: i, j, k, l... (i0, i1... past 8 dims)."""
    letters = "ijklmnop"
    return list(letters[:n]) if n <= len(letters) else [f"i{d}" for d in range(n)]
