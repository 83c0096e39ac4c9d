"""Write graph expressions as ``mlc`` ops (shared by the builder and the graph passes).

:class:`Emitter` turns a :class:`Call` into one ``mlc.<op>`` operation at the current
insertion point, after its arguments (nested calls are emitted first, constants become
``mlc.constant``). Variables are looked up in ``env`` (expression id -> ``ir.Value``).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from mlir import ir
from mlir.dialects import func

from ...errors import GraphError
from ...ir import GlobalVar
from ...tensor_types import shape_attr, tensor_type
from ..ir.expr import Call, Constant, Expr, Var

__all__ = ["Emitter", "constant_attr", "create_op", "RESOURCE_THRESHOLD", "CALL_SLOTS", "OUTPUT_SLOTS",
           "segment_sizes"]

#: constants with more elements than this are stored as ``dense_resource`` blobs
RESOURCE_THRESHOLD = 16
#: optional operand slots of the call ops / of ``mlc.output`` and ``mlc.dataflow`` (IRDL)
CALL_SLOTS = 16
OUTPUT_SLOTS = 8


def segment_sizes(n: int, slots: int, what: str) -> ir.DenseI32ArrayAttr:
    """``array<i32: 1, ..., 1, 0, ...>``: ``n`` used slots out of ``slots``."""
    if n > slots:
        raise GraphError(f"{what}: {n} values, at most {slots} (one IRDL slot each)")
    return ir.DenseI32ArrayAttr.get([1] * n + [0] * (slots - n))


def constant_attr(data: np.ndarray, name: str, ttype: ir.RankedTensorType) -> ir.Attribute:
    """``dense<...>`` for small arrays, ``dense_resource<name>`` (a blob) above the threshold."""
    data = np.ascontiguousarray(data)
    if data.dtype == np.dtype("bool"):
        return ir.DenseElementsAttr.get(np.packbits(data.reshape(-1), bitorder="little"), type=ttype,
                                        signless=True)
    if data.size <= RESOURCE_THRESHOLD:
        return ir.DenseElementsAttr.get(data, type=ttype)
    blob = data.copy()  # the attribute keeps a reference to this buffer
    return ir.DenseResourceElementsAttr.get_from_buffer(memoryview(blob), name, ttype,
                                                        alignment=max(blob.itemsize, 8))


def create_op(name: str, operands: Sequence[ir.Value], result_type: ir.Type | None,
              attrs: dict[str, ir.Attribute], loc: ir.Location | None = None) -> ir.Operation:
    """``ir.Operation.create`` of an ``mlc`` op at the current insertion point."""
    return ir.Operation.create(name, results=[result_type] if result_type is not None else [],
                               operands=list(operands), attributes=attrs, loc=loc)


class Emitter:
    """Emit expressions at the current insertion point.

    Args:
        env: expression id -> value, for variables (and anything already emitted).
        func_name: the function being written, for error messages.
    """

    def __init__(self, env: dict[int, ir.Value], *, func_name: str = "?"):
        self.env = env
        self.func_name = func_name

    def value(self, expr: Expr) -> ir.Value:
        """The value of ``expr``, emitting it (and its arguments) if needed."""
        key = id(expr)
        if key in self.env:
            return self.env[key]
        if isinstance(expr, Var):
            if expr.value is not None and expr.kind != "param":
                raise GraphError(f"variable {expr.name} is used in @{self.func_name} where it is not "
                                 "defined (a dataflow variable outside its block? use bb.emit_output)")
            raise GraphError(f"variable {expr.name} {expr._type_str()} is used in @{self.func_name} but is "
                             "not one of its parameters")
        if isinstance(expr, Constant):
            return self._constant(expr)
        if isinstance(expr, Call):
            return self.call(expr)
        raise GraphError(f"cannot emit {type(expr).__name__} {expr!r} in a graph")

    def bind(self, var: Var, expr: Expr) -> ir.Value:
        """Emit ``expr`` as the definition of ``var`` (its op gets the location ``loc("name")``)."""
        if isinstance(expr, Call):
            v = self.call(expr, name=var.name)
        else:
            v = self.value(expr)
        self.env[id(var)] = v
        return v

    def _constant(self, c: Constant, name: str | None = None) -> ir.Value:
        ttype = tensor_type(c.shape, c.dtype, error=GraphError)
        attr = getattr(c, "_attr", None)
        if attr is None:
            attr = constant_attr(c.data, c.name or "const", ttype)
            c._attr = attr  # one blob per Constant object
        op = create_op("mlc.constant", [], ttype, {"value": attr}, self._loc(name))
        return op.result

    def _loc(self, name: str | None) -> ir.Location:
        return ir.Location.name(name) if name else ir.Location.unknown()

    def call(self, call: Call, *, name: str | None = None) -> ir.Value:
        """Emit ``call`` as one ``mlc.<op>`` operation; returns its result."""
        operands = [self.value(a) for a in call.args]
        rtype = tensor_type(call.shape, call.dtype, error=GraphError)
        attrs: dict[str, ir.Attribute] = {}
        if any(isinstance(d, str) for d in call.shape):
            attrs["mlc.shape"] = shape_attr(call.shape)
        op = call.op
        if _is_global_var(op):  # a call of a graph function of the module (``relax.Call(gv, ...)``)
            cop = func.CallOp([rtype], ir.FlatSymbolRefAttr.get(str(op)), operands, loc=self._loc(name))
            for k, v in attrs.items():
                cop.attributes[k] = v
            self.env[id(call)] = cop.results[0]
            return cop.results[0]
        if op == "permute_dims":
            attrs["axes"] = ir.DenseI64ArrayAttr.get(list(call.attrs["axes"]))
        elif op == "softmax":
            attrs["axis"] = ir.IntegerAttr.get(ir.IntegerType.get_signless(64), call.attrs["axis"])
        elif op in NN_ATTR_OPS:
            attrs.update(_nn_attrs(call.attrs))
        elif op == "call_tir":
            attrs["callee"] = ir.FlatSymbolRefAttr.get(call.attrs["callee"])
            attrs["operandSegmentSizes"] = segment_sizes(len(operands), CALL_SLOTS, "call_tir")
        elif op == "call_dps":
            attrs["callee"] = ir.StringAttr.get(call.attrs["callee"])
            attrs["operandSegmentSizes"] = segment_sizes(len(operands), CALL_SLOTS, "call_dps_packed")
        result = create_op(f"mlc.{op}", operands, rtype, attrs, self._loc(name)).result
        self.env[id(call)] = result
        return result


def _is_global_var(op: object) -> bool:
    return isinstance(op, GlobalVar)


#: graph ops whose attributes are written generically (tuples of ints, ints, floats)
NN_ATTR_OPS = ("conv2d", "max_pool2d", "batch_norm", "layer_norm")


def _nn_attrs(values: dict) -> dict[str, ir.Attribute]:
    out: dict[str, ir.Attribute] = {}
    for key, v in values.items():
        if isinstance(v, tuple):
            out[key] = ir.DenseI64ArrayAttr.get([int(x) for x in v])
        elif isinstance(v, float):
            out[key] = ir.FloatAttr.get_f64(v)
        else:
            out[key] = ir.IntegerAttr.get(ir.IntegerType.get_signless(64), int(v))
    return out
