"""Primitives of tuned (MetaSchedule) traces: ``annotate``/``unannotate``, the ``"root"``
block, ``get_child_blocks`` and ``enter_postproc`` (course ch.4.5, the auto-scheduled trace).

A mixin of :class:`~mlc_mlir.schedule.Schedule`. MetaSchedule's annotations are hints for
its post-processors (``meta_schedule.parallel``, ``meta_schedule.vectorize``,
``meta_schedule.unroll_explicit``, ``pragma_auto_unroll_max_step``...); the printed
trace then applies what they ask with ordinary primitives (``fuse`` + ``parallel``,
``vectorize``). Here annotations are recorded in the trace and kept on the schedule
(``sch.annotations(rv)``), but they do not change the IR: the primitives that follow in
the trace do. ``enter_postproc`` marks where post-processing starts and does nothing else.

Replaying the trace that ``print(sch_tuned.trace)`` shows in course ch.4.5::

    b0 = sch.get_block(name="C", func_name="main")
    b1 = sch.get_block(name="root", func_name="main")
    sch.annotate(block_or_loop=b0, ann_key="meta_schedule.tiling_structure", ann_val="SSRSRS")
    ...
    sch.enter_postproc()
    b27 = sch.get_block(name="root", func_name="main")
    sch.unannotate(block_or_loop=b27, ann_key="meta_schedule.parallel")
    b28, b29 = sch.get_child_blocks(b27)
"""

from __future__ import annotations

from typing import Any

from ..errors import ScheduleError
from .trace import BlockRV, ExprRV, LoopRV

__all__ = ["AnnotationPrimitives", "ROOT_BLOCK"]

#: the name of the implicit block around a tensor program's body (TVM's ``T.block("root")``)
ROOT_BLOCK = "root"

_VALUE_TYPES = (int, float, str, bool, ExprRV)


class AnnotationPrimitives:
    """Annotations, the root block and its children, the post-processing marker."""

    def _annotations(self) -> dict[tuple, dict[str, Any]]:
        if not hasattr(self, "_ann"):
            self._ann = {}
        return self._ann

    def _root_block(self, func_name: str | None) -> BlockRV:
        """``get_block("root")``: the function's root block (one function must be meant)."""
        if func_name is None:
            if len(self._funcs) != 1:
                raise ScheduleError(f"get_block('root'): the module has several tensor programs "
                                    f"{sorted(self._funcs)}; pass func_name")
            func_name = next(iter(self._funcs))
        rv = BlockRV(ROOT_BLOCK, func_name)
        with self._edit(changes_ir=False):
            self._record("get_block", [("name", ROOT_BLOCK), ("func_name", func_name)], (rv,))
        return rv

    def _ann_key(self, target: Any, what: str) -> tuple:
        if isinstance(target, BlockRV):
            if target.name == ROOT_BLOCK:
                if target.func not in self._funcs:
                    raise ScheduleError(f"{what}: unknown function {target.func!r}")
                return ("block", target.func, ROOT_BLOCK)
            fstate, bstate = self._resolve_block(target, what)
            return ("block", fstate.func, bstate.name)
        if isinstance(target, LoopRV):
            fstate, uid = self._resolve_loop(target, what)
            return ("loop", fstate.func, uid)
        raise ScheduleError(f"{what}: block_or_loop must be a BlockRV or a LoopRV, got {type(target).__name__}")

    def annotate(self, block_or_loop: BlockRV | LoopRV, ann_key: str, ann_val: Any) -> None:
        """Attach annotation ``ann_key = ann_val`` to a block or a loop (recorded; no IR change).

        Preconditions: a live block (``"root"`` included) or loop; a string key; an int,
        float, string, bool or sampled value.
        """
        if not isinstance(ann_key, str) or not ann_key:
            raise ScheduleError(f"annotate: ann_key must be a non-empty string, got {ann_key!r}")
        if not isinstance(ann_val, _VALUE_TYPES):
            raise ScheduleError(f"annotate: ann_val must be an int, float, str, bool or sampled value, "
                                f"got {type(ann_val).__name__}")
        key = self._ann_key(block_or_loop, "annotate")
        value = ann_val.value if isinstance(ann_val, ExprRV) else ann_val
        with self._edit(changes_ir=False):
            self._annotations().setdefault(key, {})[ann_key] = value
            self._record("annotate", [("block_or_loop", block_or_loop), ("ann_key", ann_key),
                                      ("ann_val", ann_val)])

    def unannotate(self, block_or_loop: BlockRV | LoopRV, ann_key: str) -> None:
        """Remove annotation ``ann_key`` from a block or a loop.

        Raises:
            ScheduleError: the block or loop has no such annotation.
        """
        key = self._ann_key(block_or_loop, "unannotate")
        anns = self._annotations().get(key, {})
        if ann_key not in anns:
            raise ScheduleError(f"unannotate: {key[0]} has no annotation {ann_key!r} (it has {sorted(anns)})")
        with self._edit(changes_ir=False):
            del anns[ann_key]
            self._record("unannotate", [("block_or_loop", block_or_loop), ("ann_key", ann_key)])

    def annotations(self, block_or_loop: BlockRV | LoopRV) -> dict[str, Any]:
        """The annotations currently on a block or a loop (not recorded)."""
        return dict(self._annotations().get(self._ann_key(block_or_loop, "annotations"), {}))

    def get_child_blocks(self, block: BlockRV) -> list[BlockRV]:
        """The blocks directly under ``block``: for ``"root"``, every block of the function
        in program order (cache blocks included); a leaf block has none."""
        if isinstance(block, BlockRV) and block.name == ROOT_BLOCK:
            fstate = self._funcs.get(block.func)
            if fstate is None:
                raise ScheduleError(f"get_child_blocks: unknown function {block.func!r}")
            names = [b.name for b in sorted(fstate.blocks.values(), key=lambda b: b.info.order)]
        else:
            fstate, _ = self._resolve_block(block, "get_child_blocks")
            names = []
        rvs = [BlockRV(n, fstate.func) for n in names]
        with self._edit(changes_ir=False):
            self._record("get_child_blocks", [("block", block)], tuple(rvs))
        return rvs

    def enter_postproc(self) -> None:
        """Mark the start of post-processing in the trace (no effect on the schedule)."""
        with self._edit(changes_ir=False):
            self._record("enter_postproc", [])
