"""``BindParams``: parameters of a graph function become constants (course ch.3).

    mod = mlc.graph.transform.BindParams("main", {"w0": w0, "b0": b0})(mod)
    vm["main"](x)                       # instead of vm["main"](x, w0, b0)
"""

from __future__ import annotations

from typing import Any

import numpy as np
from mlir import ir
from mlir.dialects import tensor

from ...context import mlc_context
from ...errors import GraphError
from ...ir import Module
from ...runtime import as_numpy
from ..builder.emit import constant_attr
from ..ir.analysis import arg_attr, clone_module, func_name, is_graph_function, walk_ops
from ...tensor_types import Shape, dtype_of_element, format_shape, shape_attr, shape_from_attr

__all__ = ["BindParams"]


class BindParams:
    """Bind parameters of graph function ``func_name`` to constant arrays.

    Each bound parameter becomes an ``mlc.constant`` (a ``dense_resource`` blob named after
    the parameter above 16 elements, so the weights are not printed inline) and leaves the
    signature: ``vm["main"](x)`` instead of ``vm["main"](x, w0, b0, w1, b1)``. A symbolic
    dimension fixed by a bound array is replaced by its value everywhere in the function.

    Before (``BindParams("main", {"w": w})``, ``w`` of shape (4, 8))::

        func.func @main(%x: tensor<1x8xf32> {mlc.name = "x"}, %w: tensor<4x8xf32> {mlc.name = "w"})

    After::

        func.func @main(%x: tensor<1x8xf32> {mlc.name = "x"})
          %w = "mlc.constant"() {value = dense_resource<w> : tensor<4x8xf32>} : () -> tensor<4x8xf32>

    Args:
        func_name: the graph function.
        params: parameter name (``mlc.name``) -> array (NumPy, NDArray, DLPack).
    """

    def __init__(self, func_name: str, params: dict[str, Any]):
        if not isinstance(params, dict):
            raise GraphError(f"BindParams: params must be a dict name -> array, got {type(params).__name__}")
        self.func_name = func_name
        self.params = {}
        for k, v in params.items():
            try:
                self.params[k] = np.ascontiguousarray(as_numpy(v))
            except Exception as exc:  # noqa: BLE001 - any value NumPy cannot view
                raise GraphError(f"BindParams: parameter {k!r}: cannot read the array: {exc}") from None

    def __call__(self, mod: Module) -> Module:
        """A copy of ``mod`` with the parameters bound."""
        if not isinstance(mod, Module):
            raise GraphError(f"BindParams expects an mlc.Module, got {type(mod).__name__}")
        work = clone_module(mod)
        fop = work[self.func_name].op
        with mlc_context():
            if not is_graph_function(fop):
                raise GraphError(f"BindParams: @{self.func_name} is not a graph function")
            _bind(fop, self.params)
        return work


def _param_names(fop: ir.Operation) -> list[str]:
    block = fop.regions[0].blocks[0]
    names = []
    for i in range(len(block.arguments)):
        attr = arg_attr(fop, i, "mlc.name")
        names.append(ir.StringAttr(attr).value if attr is not None else f"arg{i}")
    return names


def _param_shape(fop: ir.Operation, i: int, t: ir.Type) -> Shape:
    attr = arg_attr(fop, i, "mlc.shape")
    if attr is not None:
        return shape_from_attr(attr, error=GraphError)
    rt = ir.RankedTensorType(t)
    return tuple(None if rt.is_dynamic_dim(d) else rt.get_dim_size(d) for d in range(rt.rank))


def _bind(fop: ir.Operation, params: dict[str, np.ndarray]) -> None:
    name = func_name(fop)
    block = fop.regions[0].blocks[0]
    names = _param_names(fop)
    unknown = sorted(set(params) - set(names))
    if unknown:
        raise GraphError(f"BindParams: @{name} has no parameter(s) {unknown}; its parameters: {names}")
    symbols: dict[str, int] = {}
    bound: list[int] = []
    for i, (pname, arg) in enumerate(zip(names, block.arguments)):
        if pname not in params:
            continue
        arr = params[pname]
        want = _param_shape(fop, i, arg.type)
        dtype = dtype_of_element(ir.RankedTensorType(arg.type).element_type, error=GraphError)
        if str(arr.dtype) != dtype:
            raise GraphError(f"BindParams: parameter {pname!r} of @{name} is {dtype}, the array is {arr.dtype}")
        shown = format_shape(tuple("?" if d is None else d for d in want))
        if arr.ndim != len(want):
            raise GraphError(f"BindParams: parameter {pname!r} of @{name} has shape {shown}, the array {arr.shape}")
        for d, (w, got) in enumerate(zip(want, arr.shape)):
            if isinstance(w, int) and w != got:
                raise GraphError(f"BindParams: parameter {pname!r} of @{name} has shape {shown}, the array "
                                 f"{arr.shape}")
            if isinstance(w, str) and symbols.setdefault(w, got) != got:
                raise GraphError(f"BindParams: parameter {pname!r}: dimension {d} is {got} but {w} = "
                                 f"{symbols[w]} from another parameter")
        with ir.InsertionPoint.at_block_begin(block), ir.Location.name(pname):
            ttype = ir.RankedTensorType.get(list(arr.shape), ir.RankedTensorType(arg.type).element_type)
            const = ir.Operation.create("mlc.constant", results=[ttype],
                                        attributes={"value": constant_attr(arr, pname, ttype)}).result
            value = const if str(ttype) == str(arg.type) else tensor.CastOp(arg.type, const).result
        arg.replace_all_uses_with(value)
        bound.append(i)
    _drop_arguments(fop, bound)
    if symbols:
        _substitute(fop, symbols)


def _drop_arguments(fop: ir.Operation, indices: list[int]) -> None:
    block = fop.regions[0].blocks[0]
    ftype = ir.FunctionType(ir.TypeAttr(fop.attributes["function_type"]).value)
    attrs = list(ir.ArrayAttr(fop.attributes["arg_attrs"])) if "arg_attrs" in fop.attributes else None
    for i in sorted(indices, reverse=True):
        block.erase_argument(i)
        if attrs is not None:
            del attrs[i]
    inputs = [a.type for a in block.arguments]
    fop.attributes["function_type"] = ir.TypeAttr.get(ir.FunctionType.get(inputs, list(ftype.results)))
    if attrs is not None:
        fop.attributes["arg_attrs"] = ir.ArrayAttr.get(attrs)


def _subst_shape(attr: ir.Attribute, symbols: dict[str, int]) -> ir.Attribute:
    shape = shape_from_attr(attr, error=GraphError)
    return shape_attr(tuple(symbols.get(d, d) if isinstance(d, str) else d for d in shape))


def _substitute(fop: ir.Operation, symbols: dict[str, int]) -> None:
    """Replace bound symbols by their values in every ``mlc.shape`` of the function."""
    if "arg_attrs" in fop.attributes:
        new = []
        for a in ir.ArrayAttr(fop.attributes["arg_attrs"]):
            d = ir.DictAttr(a)
            entries = {n.name: n.attr for n in d}
            if "mlc.shape" in entries:
                entries["mlc.shape"] = _subst_shape(entries["mlc.shape"], symbols)
            new.append(ir.DictAttr.get(entries))
        fop.attributes["arg_attrs"] = ir.ArrayAttr.get(new)
    for op in walk_ops(fop):
        if "mlc.shape" in op.attributes:
            op.attributes["mlc.shape"] = _subst_shape(op.attributes["mlc.shape"], symbols)
