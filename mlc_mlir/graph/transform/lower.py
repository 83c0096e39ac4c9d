"""Lower graph functions to destination-passing tensor programs of calls.

After :func:`mlc_mlir.graph.legalize.legalize`, a graph function holds only calls,
constants and allocations. This pass rewrites each one, in place, into a function the
build compiles like any tensor program (docs/conventions.md):

    func.func @main(%x: tensor<?x64xf32> {mlc.shape = ["n", 64]}, ...)
        -> tensor<?x10xf32> attributes {mlc.graph}
      %gv = "mlc.dataflow"() ({ ... "mlc.call_tir"(%x, ...) {callee = @linear0} ... })

becomes

    func.func @main(%x: ..., %out0: tensor<?x10xf32> {mlc.shape = ["n", 10]})
        -> tensor<?x10xf32> attributes {mlc.lowered_graph}
      %n = tensor.dim %x, %c0
      %e = tensor.empty(%n) : tensor<?x128xf32>        // the call's output, one per call
      %lv0 = func.call @linear0(%x, %w0, %b0, %e)      // @linear0 is now private
      ...

- ``mlc.call_tir`` of a tensor-form program: ``tensor.empty`` + ``func.call`` (tensor
  casts where static and dynamic types meet); of a memref-form program: the call on
  ``bufferization.to_buffer`` views and a ``memref.alloc`` output.
- ``mlc.call_dps`` of environment function ``"env.f"``: a call of an external function
  ``@mlc_env_<k>`` on fully dynamic strided memrefs (``llvm.emit_c_interface``); the
  executor registers a ctypes callback under that name.
- ``mlc.constant`` -> ``arith.constant`` (bufferized to a ``memref.global``);
  ``mlc.alloc_tensor`` -> ``tensor.empty``; ``mlc.dataflow`` regions are inlined.

Symbolic dimensions are read from the parameters that carry them (``tensor.dim``); an
output dimension no parameter determines is a :class:`GraphError`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from mlir import ir
from mlir.dialects import arith, bufferization, func, tensor

from .reshape_view import RESHAPE_ATTR
from ..ir.analysis import arg_attr, fail, func_name, graph_functions, value_shapes, walk_ops
from ...errors import GraphError
from ...irutil import symbol_ops
from ...runtime.vm import EnvCall, GraphSignature, TensorSpec
from ...tensor_types import Shape, dtype_of_element, format_shape, shape_attr

__all__ = ["lower_graph_functions"]


def lower_graph_functions(module: ir.Module, *, keep_kernels: bool = False
                          ) -> tuple[dict[str, GraphSignature], list[EnvCall]]:
    """Lower every graph function of ``module`` in place (call inside the shared context).

    ``keep_kernels``: the calls of tensor programs are marked ``no_inline``, so each
    program stays a function of its own through code generation (what ``mlc.graph.build``
    does: the vector stages and LLVM then work one kernel at a time, instead of on one
    function holding a whole model, which costs time superlinear in its size).

    Returns:
        The signature of each lowered function, and the external functions that stand for
        environment functions.

    Raises:
        GraphError: a graph op that was not legalized, a callee that is missing, or an
            output shape that the inputs do not determine.
    """
    lowering = _Lowering(module, keep_kernels)
    sigs = {}
    for fop in graph_functions(module):
        sig = lowering.function(fop)
        sigs[sig.name] = sig
    return sigs, list(lowering.env_calls.values())


def _dyn_memref(rank: int, elem: ir.Type) -> ir.MemRefType:
    dyn = ir.ShapedType.get_dynamic_size()
    layout = ir.StridedLayoutAttr.get(dyn, [dyn] * rank)
    return ir.MemRefType.get([dyn] * rank, elem, layout)


class _Lowering:
    def __init__(self, module: ir.Module, keep_kernels: bool = False):
        self.module = module
        self.keep_kernels = keep_kernels
        self.funcs = symbol_ops(module)
        self.env_calls: dict[tuple, EnvCall] = {}

    # -- one function ------------------------------------------------------------------
    def function(self, fop: ir.Operation) -> GraphSignature:
        name = func_name(fop)
        shapes = value_shapes(fop)
        block = fop.regions[0].blocks[0]
        self.block = block
        self.sizes: dict[int | str, ir.Value] = {}
        self.sources: dict[str, tuple[ir.Value, int]] = {}
        inputs = []
        for i, arg in enumerate(block.arguments):
            shape, dtype = shapes[arg]
            for d, dim in enumerate(shape):
                if isinstance(dim, str):
                    self.sources.setdefault(dim, (arg, d))
            pname = arg_attr(fop, i, "mlc.name")
            inputs.append(TensorSpec(ir.StringAttr(pname).value if pname is not None else f"arg{i}",
                                     shape, dtype))
        ret = block.operations[len(block.operations) - 1]
        outputs = []
        for k, v in enumerate(ret.operands):
            shape, dtype = shapes[v]
            missing = [d for d in shape if isinstance(d, str) and d not in self.sources]
            if missing:
                raise fail(ret, f"output {k} of @{name} has shape {format_shape(shape)}: dimension(s) "
                                f"{', '.join(missing)} are not determined by any parameter")
            outputs.append(TensorSpec(f"out{k}", shape, dtype))
        self._inline_dataflow(block)
        for op in list(block.operations):
            if op.name.startswith("mlc."):
                self._lower_op(op, shapes)
        for op in walk_ops(fop):
            if op.name.startswith("mlc."):
                raise fail(op, "is nested in a region that graph lowering does not handle")
        self._finish_signature(fop, inputs, outputs, ret)
        return GraphSignature(name, tuple(inputs), tuple(outputs))

    def _inline_dataflow(self, block: ir.Block) -> None:
        for op in list(block.operations):
            if op.name != "mlc.dataflow":
                continue
            inner = list(op.regions[0].blocks[0].operations)
            out = inner[-2]
            for o in inner[:-2]:
                o.move_before(op)
            for r, v in zip(op.results, out.operands):
                r.replace_all_uses_with(v)
            op.erase()

    def _finish_signature(self, fop: ir.Operation, inputs: list[TensorSpec], outputs: list[TensorSpec],
                          ret: ir.Operation) -> None:
        block = fop.regions[0].blocks[0]
        attrs = [_arg_attrs(spec) for spec in inputs]
        result_types = [v.type for v in ret.operands]
        for spec, t in zip(outputs, result_types):
            block.add_argument(t, ir.Location.name(spec.name))
            attrs.append(_arg_attrs(spec))
        in_types = [a.type for a in block.arguments]
        fop.attributes["function_type"] = ir.TypeAttr.get(ir.FunctionType.get(in_types, result_types))
        fop.attributes["arg_attrs"] = ir.ArrayAttr.get(attrs)
        if "mlc.graph" in fop.attributes:
            del fop.attributes["mlc.graph"]
        fop.attributes["mlc.lowered_graph"] = ir.UnitAttr.get()

    # -- sizes ---------------------------------------------------------------------------
    def _size(self, dim: int | str) -> ir.Value:
        """An ``index`` value of ``dim``, created once at the top of the function."""
        if dim not in self.sizes:
            with ir.InsertionPoint.at_block_begin(self.block), ir.Location.unknown():
                if isinstance(dim, int):
                    self.sizes[dim] = arith.ConstantOp(ir.IndexType.get(), dim).result
                else:
                    src, d = self.sources[dim]
                    c = arith.ConstantOp(ir.IndexType.get(), d).result
                    self.sizes[dim] = tensor.DimOp(src, c).result
        return self.sizes[dim]

    def _dynamic_sizes(self, op: ir.Operation, shape: Shape, t: ir.Type) -> list[ir.Value]:
        rt = ir.ShapedType(t)
        out = []
        for i in range(rt.rank):
            if rt.is_dynamic_dim(i):
                dim = shape[i]
                if isinstance(dim, str) and dim.startswith("?"):
                    raise fail(op, f"result dimension {i} of type {t} is dynamic without a name: give "
                                   "the op an mlc.shape attribute (e.g. [\"n\", 128])")
                if isinstance(dim, str) and dim not in self.sources:
                    raise fail(op, f"result shape {format_shape(shape)}: dimension {dim} is not "
                                   "determined by any parameter of the function")
                out.append(self._size(dim))
        return out

    # -- ops -----------------------------------------------------------------------------
    def _lower_op(self, op: ir.Operation, shapes: dict) -> None:
        kind = op.name[4:]
        if kind in ("dataflow", "output"):
            raise fail(op, "is not where graph lowering expects it")
        with ir.InsertionPoint(op), op.location:
            if kind == "constant":
                new = arith.ConstantOp(op.results[0].type, op.attributes["value"]).result
            elif kind == "alloc_tensor":
                t = op.results[0].type
                new = tensor.EmptyOp(self._mixed_sizes(op, shapes[op.results[0]][0], t),
                                     ir.RankedTensorType(t).element_type).result
            elif kind == "call_tir":
                new = self._call_tir(op, shapes)
            elif kind == "call_dps":
                new = self._call_env(op, shapes)
            else:
                raise fail(op, "has no lowering to calls: run LegalizeOps (mlc.graph.transform) first, "
                               "or add it to the legalization op map")
        op.results[0].replace_all_uses_with(new)
        op.erase()

    def _mixed_sizes(self, op: ir.Operation, shape: Shape, t: ir.Type) -> list[int | ir.Value]:
        rt = ir.ShapedType(t)
        dyn = iter(self._dynamic_sizes(op, shape, t))
        return [next(dyn) if rt.is_dynamic_dim(i) else rt.get_dim_size(i) for i in range(rt.rank)]

    def _call_tir(self, op: ir.Operation, shapes: dict) -> ir.Value:
        name = ir.FlatSymbolRefAttr(op.attributes["callee"]).value
        if name not in self.funcs:
            raise fail(op, f"calls @{name}, which is not a function of the module")
        callee = self.funcs[name]
        callee.attributes["sym_visibility"] = ir.StringAttr.get("private")
        ftype = ir.FunctionType(ir.TypeAttr(callee.attributes["function_type"]).value)
        params = list(ftype.inputs)
        rtype = op.results[0].type
        if (self.keep_kernels and RESHAPE_ATTR in callee.attributes and len(op.operands) == 1
                and [op.operands[0].type, rtype] == params and ir.RankedTensorType(rtype).has_static_shape
                and not any(u.owner.name == "func.return" for u in op.results[0].uses)):
            return _reshape_view(op.operands[0], ir.RankedTensorType(rtype))  # (reshape_view.py)
        shape = shapes[op.results[0]][0]
        if all(isinstance(p, ir.MemRefType) for p in params):
            return self._call_memref(op, name, list(op.operands), params, rtype, shape)
        empty = tensor.EmptyOp(self._mixed_sizes(op, shape, rtype), ir.RankedTensorType(rtype).element_type)
        args = [_tensor_cast(v, p) for v, p in zip([*op.operands, empty.result], params)]
        call = func.CallOp(list(ftype.results), ir.FlatSymbolRefAttr.get(name), args)
        if self.keep_kernels:
            call.attributes["no_inline"] = ir.UnitAttr.get()
        return _tensor_cast(call.results[0], rtype)

    def _call_memref(self, op: ir.Operation, name: str, inputs: list[ir.Value], params: list[ir.Type],
                     rtype: ir.Type, shape: Shape) -> ir.Value:
        """Call a function on memrefs: inputs as read-only buffers, a fresh output buffer."""
        args = []
        for v, p in zip(inputs, params):
            rt = ir.RankedTensorType(v.type)
            buf = bufferization.ToBufferOp(ir.MemRefType.get(rt.shape, rt.element_type), v, read_only=True)
            args.append(_memref_cast(buf.result, p))
        rt = ir.RankedTensorType(rtype)
        out_type = ir.MemRefType.get(rt.shape, rt.element_type)
        sizes = self._dynamic_sizes(op, shape, rtype)
        alloc = ir.Operation.create("memref.alloc", results=[out_type], operands=sizes, attributes={
            "operandSegmentSizes": ir.DenseI32ArrayAttr.get([len(sizes), 0])}).result
        args.append(_memref_cast(alloc, params[-1]))
        func.CallOp([], ir.FlatSymbolRefAttr.get(name), args)
        return bufferization.ToTensorOp(rtype, alloc, restrict=True, writable=True).result

    def _call_env(self, op: ir.Operation, shapes: dict) -> ir.Value:
        env_name = ir.StringAttr(op.attributes["callee"]).value
        values = [*op.operands, op.results[0]]
        sig = []
        for v in values:
            rt = ir.RankedTensorType(v.type)
            sig.append((rt.rank, str(rt.element_type)))
        key = (env_name, tuple(sig))
        if key not in self.env_calls:
            symbol = f"mlc_env_{len(self.env_calls)}"
            params = [_dyn_memref(r, ir.Type.parse(e)) for r, e in sig]
            with ir.InsertionPoint(self.module.body), ir.Location.unknown():
                decl = func.FuncOp(symbol, (params, []), visibility="private")
                decl.attributes["llvm.emit_c_interface"] = ir.UnitAttr.get()
                decl.attributes["mlc.env_func"] = ir.StringAttr.get(env_name)
            self.funcs[symbol] = decl.operation
            self.env_calls[key] = EnvCall(symbol, env_name,
                                          tuple((r, dtype_of_element(ir.Type.parse(e), error=GraphError)) for r, e in sig))
        call = self.env_calls[key]
        params = [_dyn_memref(r, ir.RankedTensorType(v.type).element_type) for (r, _), v in zip(call.args, values)]
        return self._call_memref(op, call.symbol, list(op.operands), params, op.results[0].type,
                                 shapes[op.results[0]][0])


def _arg_attrs(spec: TensorSpec) -> ir.DictAttr:
    attrs = {"mlc.name": ir.StringAttr.get(spec.name)}
    if any(isinstance(d, str) for d in spec.shape):
        attrs["mlc.shape"] = shape_attr(spec.shape)
    return ir.DictAttr.get(attrs)


def _reshape_view(v: ir.Value, out_type: ir.RankedTensorType) -> ir.Value:
    """``v`` read in row-major order as ``out_type``: collapsed to one dim, expanded again
    (views once bufferized; :mod:`.reshape_view`)."""
    in_type = ir.RankedTensorType(v.type)
    flat = v
    if in_type.rank != 1:
        flat_type = ir.RankedTensorType.get([math.prod(in_type.shape)], in_type.element_type)
        flat = tensor.CollapseShapeOp(flat_type, v, [list(range(in_type.rank))]).result
    if out_type.rank == 1:
        return flat
    return tensor.ExpandShapeOp(out_type, flat, [list(range(out_type.rank))], [], list(out_type.shape)).result


def _tensor_cast(v: ir.Value, t: ir.Type) -> ir.Value:
    if str(v.type) == str(t):
        return v
    return tensor.CastOp(t, v).result


def _memref_cast(v: ir.Value, t: ir.Type) -> ir.Value:
    if str(v.type) == str(t):
        return v
    return ir.Operation.create("memref.cast", results=[t], operands=[v]).result

