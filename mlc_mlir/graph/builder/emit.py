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
           "segment_sizes", "encode_attrs", "VARIADIC_OPS"]

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
        if op == "call_tir":
            attrs["callee"] = ir.FlatSymbolRefAttr.get(call.attrs["callee"])
            attrs["operandSegmentSizes"] = segment_sizes(len(operands), CALL_SLOTS, "call_tir")
        elif op == "call_dps":
            attrs["callee"] = ir.StringAttr.get(call.attrs["callee"])
            attrs["operandSegmentSizes"] = segment_sizes(len(operands), CALL_SLOTS, "call_dps_packed")
        else:
            attrs.update(encode_attrs(call.attrs, op))
            if op in VARIADIC_OPS:
                attrs["operandSegmentSizes"] = segment_sizes(len(operands), CALL_SLOTS, op)
        result = create_op(f"mlc.{op}", operands, rtype, attrs, self._loc(name)).result
        self.env[id(call)] = result
        return result


def _is_global_var(op: object) -> bool:
    return isinstance(op, GlobalVar)


#: graph ops whose operands are a list of tensors (IRDL optional slots, like the calls)
VARIADIC_OPS = ("concat",)


def encode_attrs(values: dict, op: str = "op") -> dict[str, ir.Attribute]:
    """A graph op's Python attributes as MLIR attributes, one spelling per Python type:
    a tuple of ints is ``array<i64: ...>`` (with symbolic sizes among them, an array of
    ``i64`` and strings), a bool ``true``/``false``, an int ``i64``, a
    float ``f64``, a string a string; ``None`` is left out (read back by
    :func:`mlc_mlir.graph.ir.analysis.op_attrs`)."""
    out: dict[str, ir.Attribute] = {}
    for key, v in values.items():
        if v is None or key == "shape":  # reshape's shape is its result type
            continue
        if isinstance(v, (tuple, list)):
            ints = all(isinstance(x, (int, np.integer)) and not isinstance(x, bool) for x in v)
            if ints:
                out[key] = ir.DenseI64ArrayAttr.get([int(x) for x in v])
            elif all(isinstance(x, str) or (isinstance(x, (int, np.integer)) and not isinstance(x, bool))
                     for x in v):  # sizes, some symbolic: [0, "seq"]
                i64 = ir.IntegerType.get_signless(64)
                out[key] = ir.ArrayAttr.get([ir.StringAttr.get(x) if isinstance(x, str) else ir.IntegerAttr.get(i64, int(x))
                                             for x in v])
            else:
                raise GraphError(f"{op}: attribute {key}={v!r} must be a tuple of ints (or of ints and "
                                 "symbolic sizes)")
        elif isinstance(v, (bool, np.bool_)):
            out[key] = ir.BoolAttr.get(bool(v))
        elif isinstance(v, (int, np.integer)):
            out[key] = ir.IntegerAttr.get(ir.IntegerType.get_signless(64), int(v))
        elif isinstance(v, (float, np.floating)):
            out[key] = ir.FloatAttr.get_f64(float(v))
        elif isinstance(v, str):
            out[key] = ir.StringAttr.get(v)
        else:
            raise GraphError(f"{op}: attribute {key}={v!r} has no MLIR form (ints, floats, bools, "
                             "strings and tuples of ints do)")
    return out
