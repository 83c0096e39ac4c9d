"""Tensor intrinsics (course ch.6 ``tvm.tir.TensorIntrin``): a computation pattern and the
micro-kernel that implements it, for ``sch.tensorize``.

``desc`` is a tensor program with one block (for example a 16x16x16 matmul); ``impl`` is
a ``func.func`` in the same destination-passing tensor form (inputs..., output) -> output
that computes the same thing. ``tensorize`` replaces a tile whose computation matches
``desc`` by a ``func.call`` of ``impl`` (the function is copied into the module).
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir
from mlir.dialects import func

from ..irutil import symbol_ops, walk_ops
from ..context import mlc_context
from ..errors import ScheduleError
from ..ir import Module
from .payload import read_blocks

__all__ = ["TensorIntrin", "apply_tensorize", "tile_signature"]

_REGISTRY: dict[str, TensorIntrin] = {}


@dataclass(frozen=True)
class TensorIntrin:
    """A registered intrinsic: ``desc`` (pattern) and ``impl`` (kernel), both MLIR text."""

    name: str
    desc: str
    impl: str
    impl_func: str
    signature: tuple

    @staticmethod
    def register(name: str, desc: Module | str, impl: Module | str, *, override: bool = False) -> TensorIntrin:
        """Register intrinsic ``name``.

        Args:
            name: the name ``tensorize`` refers to.
            desc: a module (or MLIR text) whose single tensor program has one block: the
                computation the intrinsic performs, with static shapes.
            impl: a module (or text) with one ``func.func`` taking the block's inputs and
                output tensors and returning the output: the implementation.
            override: replace an existing registration of ``name``.

        Raises:
            ScheduleError: ``name`` already registered, or desc/impl malformed.
        """
        if not isinstance(name, str) or not name:
            raise ScheduleError(f"TensorIntrin.register: name must be a non-empty str, got {name!r}")
        if name in _REGISTRY and not override:
            raise ScheduleError(f"TensorIntrin.register: {name!r} is already registered (pass override=True)")
        desc_mod = desc if isinstance(desc, Module) else Module.parse(desc)
        impl_mod = impl if isinstance(impl, Module) else Module.parse(impl)
        with mlc_context():
            blocks = read_blocks(desc_mod.mlir_module)
        if len(blocks) != 1:
            raise ScheduleError(f"TensorIntrin.register({name!r}): desc must hold exactly one block, found "
                                f"{[b for _, b in blocks]}")
        info = next(iter(blocks.values()))
        if None in info.extents:
            raise ScheduleError(f"TensorIntrin.register({name!r}): desc must have static shapes")
        funcs = impl_mod.functions
        if len(funcs) != 1:
            raise ScheduleError(f"TensorIntrin.register({name!r}): impl must hold exactly one func.func, found "
                                f"{funcs}")
        fn = impl_mod[funcs[0]]
        ftype = fn.function_type
        ins = [str(t) for t in ftype.inputs]
        outs = [str(t) for t in ftype.results]
        expected = [f"tensor<{'x'.join(str(s) for s in shp)}x{info.element_type}>" for shp in info.shapes]
        if ins != expected or outs != expected[-1:]:
            raise ScheduleError(f"TensorIntrin.register({name!r}): impl @{funcs[0]} has type {ftype}; expected "
                                f"({', '.join(expected)}) -> {expected[-1]}")
        intrin = TensorIntrin(name, str(desc_mod), str(impl_mod), funcs[0], _signature(info))
        _REGISTRY[name] = intrin
        return intrin

    @staticmethod
    def get(name: str) -> TensorIntrin:
        """The intrinsic registered as ``name`` (ScheduleError if none)."""
        if name not in _REGISTRY:
            raise ScheduleError(f"unknown tensor intrinsic {name!r}; registered: {sorted(_REGISTRY)}")
        return _REGISTRY[name]

    def impl_op(self) -> ir.Operation:
        """A fresh copy of the implementation ``func.func`` (inside the shared context)."""
        mod = ir.Module.parse(self.impl)
        return mod.body.operations[0].operation.clone()


def _signature(info) -> tuple:
    """What a tile must have to match: iterator kinds, maps, shapes, element type, body."""
    return (info.iters, info.maps, info.shapes, info.element_type, info.n_inputs, info.body)


def tile_signature(info, tile: list[int]) -> tuple:
    """The signature of a tile of ``info``'s block with extents ``tile``."""
    shapes = tuple(tuple(tile[d] if d is not None else None for d in m) for m in info.maps)
    return (info.iters, info.maps, shapes, info.element_type, info.n_inputs, info.body)


def apply_tensorize(module: ir.Module) -> None:
    """Replace each op marked ``mlc.tensorize = "<intrin>"`` by a ``func.call`` of that
    intrinsic's implementation (copied into ``module`` once). Inside the context."""
    marked = [op for op in walk_ops(module.operation) if "mlc.tensorize" in op.attributes]
    if not marked:
        return
    existing = symbol_ops(module, None)
    for op in marked:
        intrin = TensorIntrin.get(ir.StringAttr(op.attributes["mlc.tensorize"]).value)
        if intrin.impl_func not in existing:
            impl = intrin.impl_op()
            module.body.append(impl)
            impl.attributes["sym_visibility"] = ir.StringAttr.get("private")
            existing[intrin.impl_func] = impl
        with ir.InsertionPoint(op), op.location:
            call = func.CallOp(list(op.results.types), ir.FlatSymbolRefAttr.get(intrin.impl_func),
                               list(op.operands))
        call.operation.attributes["mlc.tensorized"] = ir.StringAttr.get(intrin.name)
        for old, new in zip(op.results, call.results):
            old.replace_all_uses_with(new)
        op.erase()
