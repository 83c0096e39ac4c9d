"""``rfactor``: a reduction split into partial sums along a new spatial dim (course / TVM
``sch.rfactor``), so that the partial sums of a contiguous reduction run in vector lanes.

A mixin of :class:`~mlc_mlir.schedule.Schedule`. Emission: upstream
``transform.structured.split_reduction`` (``inner_parallel``) before anything is tiled
(:mod:`.emit`): the block's inputs are expanded (``K -> K/f x f``), a new block
``<name>_rf`` computes the ``f`` partial sums of every output element, and the block
itself becomes their final reduction. ``x @ w.T`` (both operands contiguous along ``k``)
then vectorizes along the lanes of ``k`` with its accumulators in registers.
"""

from __future__ import annotations

from ..errors import ScheduleError
from .payload import BlockInfo, Source, compose_groups
from .state import BlockState, default_loop_names
from .trace import BlockRV, LoopRV

__all__ = ["RFactorPrimitives"]


class RFactorPrimitives:
    """rfactor."""

    def rfactor(self, loop: LoopRV, factor_axis: int | None = None) -> BlockRV:
        """Compute the reduction of ``loop``'s block as ``f`` partial sums, ``f`` the
        extent of ``loop``: a new block ``<name>_rf`` (returned) whose output has a new last
        dim of ``f`` lanes (``factor_axis``: only that position, the output's rank, is
        supported), and the block itself reduces them.

        Preconditions: ``loop`` is the inner loop of a split of the block's only reduction
        dim, its last iteration dim, ``f`` divides the extent; the block is not attached,
        decomposed, cached or blockized; its body does not read its loop indices
        (``linalg.index``). ``<name>_rf`` keeps the block's loops (the split's inner loop
        becomes its new spatial dim); the block gets fresh loops over its output dims and
        the lanes.

        IR before (``Y = x @ w.T``, ``x: 64x784``, ``w: 128x784``, k split by 8)::

            %y = linalg.generic {iterator_types = ["parallel", "parallel", "reduction"]}
                 ins(%x, %w : tensor<64x784xf32>, tensor<128x784xf32>) outs(%fill : tensor<64x128xf32>)

        Schedule::

            i, j, k = sch.get_loops(sch.get_block("Y"))
            k0, k1 = sch.split(k, factors=[None, 8])
            y_rf = sch.rfactor(k1)
            i, j, k0, l = sch.get_loops(y_rf)
            sch.vectorize(l)

        IR after::

            %xe = tensor.expand_shape %x [[0], [1, 2]] ... into tensor<64x98x8xf32>
            %we = tensor.expand_shape %w [[0], [1, 2]] ... into tensor<128x98x8xf32>
            %rf = linalg.generic {iterator_types = ["parallel", "parallel", "reduction", "parallel"]}
                  ins(%xe, %we) outs(%zeros : tensor<64x128x8xf32>) {mlc.block = "Y_rf"}
            %y = linalg.generic {iterator_types = ["parallel", "parallel", "reduction"]}
                 ins(%rf : tensor<64x128x8xf32>) outs(%fill : tensor<64x128xf32>) {mlc.block = "Y"}
        """
        fstate, uid = self._resolve_loop(loop, "rfactor")
        with self._edit():
            block = fstate.block_of_loop(uid, "rfactor")
            info = block.info
            out_rank = len(info.maps[-1])
            if factor_axis not in (None, out_rank, -1):
                raise ScheduleError(f"rfactor: factor_axis={factor_axis!r}: only the last axis ({out_rank}) of the "
                                    "partial sums is supported")
            f, kdim = self._rfactor_checks(fstate, block, uid)
            rf_info, new_info = _rf_infos(info, kdim, f)
            rf = BlockState(rf_info, list(block.path), _rf_base(block.base, kdim, f), [1] * rf_info.ndims)
            for u in block.path:
                lp = fstate.loops[u]
                parts = lp.parts.pop(info.name)
                lp.parts[rf_info.name] = tuple((kdim if u == uid else kdim + 1 if d == kdim else d, e)
                                               for d, e in parts)
            del fstate.blocks[info.name]
            fstate.blocks[rf_info.name] = rf
            fstate.add_block(new_info, self._new_uid)
            fstate.rfactors.append((info.name, rf_info.name, f, out_rank, rf_info.ndims))
            rv = BlockRV(rf_info.name, fstate.func)
            self._record("rfactor", [("loop", loop), ("factor_axis", factor_axis)], (rv,))
        return rv

    def _rfactor_checks(self, fstate, block: BlockState, uid: int) -> tuple[int, int]:
        info = block.info
        lp = fstate.loops[uid]
        reduce = [d for d in range(info.ndims) if info.is_reduction(d)]
        if len(lp.parts[info.name]) != 1 or reduce != [info.ndims - 1]:
            raise ScheduleError(f"rfactor: block {info.name!r} must have one reduction dim, its last, and loop "
                                f"{lp.name} must iterate only it")
        kdim, f = lp.parts[info.name][0]
        if kdim != reduce[0] or f is None or block.path[-1] != uid and any(
                d == kdim for u in block.path[block.path.index(uid) + 1:] for d, _ in fstate.loops[u].parts[info.name]):
            raise ScheduleError(f"rfactor: loop {lp.name} must be the innermost loop of the reduction dim of block "
                                f"{info.name!r}, with a static extent")
        ext = info.extents[kdim]
        outer = [u for u in block.path if u != uid and any(d == kdim for d, _ in fstate.loops[u].parts[info.name])]
        if ext is None or ext % f or len(outer) != 1:
            raise ScheduleError(f"rfactor: the reduction of block {info.name!r} (extent {ext}) must be split once "
                                f"into [{None}, {f}] with {f} dividing it")
        if (info.has_init and block.init_level is not None) or block.cache_scope or block.blockized or any(
                len(fstate.owners(u)) > 1 for u in block.path) or any(c[1] == info.name for c in fstate.caches):
            raise ScheduleError(f"rfactor: block {info.name!r} is attached, decomposed, cached or blockized; "
                                "rfactor it first")
        if any(fstate.loops[u].kind != "serial" or fstate.loops[u].peel is not None for u in block.path):
            raise ScheduleError(f"rfactor: the loops of block {info.name!r} must still be serial")
        if any(None in m for m in info.maps[:info.n_inputs]):  # (upstream's split_reduction aborts on it)
            raise ScheduleError(f"rfactor: block {info.name!r} reads an input at an index that is not a loop "
                                "index (a constant, such as log_softmax's max[i, 0]): splitting its reduction "
                                "is not supported")
        if "linalg.index" in info.body:  # upstream's split_reduction keeps linalg.index k: k's lanes would be lost
            raise ScheduleError(f"rfactor: the body of block {info.name!r} reads its loop indices (linalg.index, "
                                "e.g. cumsum's k <= i): splitting its reduction into partial sums is not supported")
        return f, kdim


def _rf_infos(info: BlockInfo, kdim: int, f: int) -> tuple[BlockInfo, BlockInfo]:
    """The BlockInfo of the partial sums (``<name>_rf``: the lanes ``l`` take the place of
    ``k``, the reduction ``k0`` comes last) and of the final reduction."""
    n, k = info.ndims, info.extents[kdim]
    ins_maps, ins_shapes, ins_sources = [], [], []
    for m, shape, src in zip(info.maps[:info.n_inputs], info.shapes[:info.n_inputs], info.sources[:info.n_inputs]):
        mm, ss, groups = [], [], []
        for d, s in zip(m, shape):
            groups.append((tuple(range(len(mm), len(mm) + (2 if d == kdim else 1))), (len(groups),)))
            mm += [n, kdim] if d == kdim else [d]
            ss += [k // f, f] if d == kdim else [s]
        ins_maps.append(tuple(mm))
        ins_shapes.append(tuple(ss))
        # the emission reads an input split along k through an expand_shape: a block's
        # result is then read through a view of it (which compute_at fuses through)
        split = kdim in m and src.kind in ("block", "view")
        ins_sources.append(Source("view", src.name, src.index, tuple(groups) if src.kind == "block"
                                  else compose_groups(tuple(groups), src.groups)) if split else src)
    out_map, out_shape = info.maps[-1], info.shapes[-1]
    rf_name = f"{info.name}_rf"
    names = list(info.loop_names) or default_loop_names(n)
    rf = BlockInfo(name=rf_name, func=info.func, order=info.order - 0.5, op_name="linalg.generic",
                   extents=tuple(f if d == kdim else e for d, e in enumerate(info.extents)) + (k // f,),
                   iters=info.iters[:kdim] + ("parallel", "reduction"), maps=(*ins_maps, out_map + (kdim,)),
                   shapes=(*ins_shapes, tuple(out_shape) + (f,)),
                   sources=(*ins_sources, Source("init", rf_name)), n_inputs=info.n_inputs,
                   has_init=True, element_type=info.element_type,
                   loop_names=(*names[:kdim], f"{names[kdim]}_rf", names[kdim]))
    r = len(out_map)
    final = BlockInfo(name=info.name, func=info.func, order=info.order, op_name="linalg.generic",
                      extents=tuple(info.extents[d] for d in out_map) + (f,), iters=("parallel",) * r + ("reduction",),
                      maps=(tuple(range(r + 1)), tuple(range(r))), shapes=(tuple(out_shape) + (f,), tuple(out_shape)),
                      sources=(Source("block", rf_name), info.sources[-1]), n_inputs=1, has_init=info.has_init,
                      element_type=info.element_type,
                      loop_names=tuple(names[d] for d in out_map) + (f"{names[kdim]}_rf",))
    return rf, final


def _rf_base(base: list, kdim: int, f: int) -> list:
    out = list(base)
    ext, exact = out[kdim]
    out[kdim] = (f, True)
    return out + [(ext // f if ext is not None else None, exact)]
