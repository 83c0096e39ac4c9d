"""Tensor-form tensor programs -> the memref calling convention used by compiled code.

A public ``func.func`` on tensors in destination-passing style (see docs/conventions.md)

    func.func @f(%a: tensor<4xf32>, %out: tensor<4xf32>) -> tensor<4xf32>

becomes

    func.func @f(%a: memref<4xf32>, %out: memref<4xf32>) attributes {llvm.emit_c_interface} {
      %0 = bufferization.to_tensor %a restrict : memref<4xf32> to tensor<4xf32>
      %1 = bufferization.to_tensor %out restrict writable : ...
      ...
      bufferization.materialize_in_destination %r in restrict writable %out : ...
      return
    }

so that one-shot bufferization writes results straight into the caller's arrays.

Bool tensors are one byte per element in buffers (NumPy's bool layout). te's programs
type them ``tensor<...xi8>`` with the ``mlc.bool`` argument attribute; graph functions
(whose bool values are ``tensor<...xi1>``) and te programs imported into a graph (whose
boundary has the graph's types, ``unrealized_conversion_cast`` to the bytes inside, see
:data:`BOOL_BOUNDARY_ATTR`) are retyped first by :func:`store_bools_as_bytes`. A bool
argument (``i8`` with ``mlc.bool``) is recorded with the element type ``i1``, whose NumPy
dtype is ``bool``: callers pass bool arrays, byte for byte.
"""

from __future__ import annotations

import numpy as np
from mlir import ir
from mlir.dialects import bufferization, func

from ..context import diagnostics_text
from ..irutil import MEMREF_VIEW_OPS, has_identity_layout, sym_name, symbol_ops
from ..errors import BuildError
from ..runtime.signature import ArgSpec, FuncSignature
from ..te.lower import BOOL_ATTR

__all__ = ["to_memref_abi", "public_functions", "store_bools_as_bytes", "BOOL_BOUNDARY_ATTR"]

BOOL_BOUNDARY_ATTR = "mlc.bool_boundary"
"""Function attribute: the function's ``tensor<...xi1>`` values are bools to store as bytes
(:func:`store_bools_as_bytes`); lowered graph functions (``mlc.lowered_graph``) are too."""
_RETYPED_ATTRS = (BOOL_BOUNDARY_ATTR, "mlc.lowered_graph")


def public_functions(module: ir.Module) -> list[ir.Operation]:
    """``func.func`` ops with a body and public visibility."""
    out = []
    for op in symbol_ops(module, defined=True).values():
        vis = op.attributes["sym_visibility"] if "sym_visibility" in op.attributes else None
        if vis is not None and ir.StringAttr(vis).value != "public":
            continue
        out.append(op)
    return out


def _symbols(op: ir.Operation, index: int, rank: int) -> tuple[str | None, ...]:
    if "arg_attrs" not in op.attributes:
        return (None,) * rank
    attrs = ir.DictAttr(ir.ArrayAttr(op.attributes["arg_attrs"])[index])
    if "mlc.shape" not in attrs:
        return (None,) * rank
    dims = ir.ArrayAttr(attrs["mlc.shape"])
    return tuple(ir.StringAttr(d).value if isinstance(d, ir.StringAttr) else None for d in dims)


def _is_bool(op: ir.Operation, index: int, elem: str) -> bool:
    """Whether argument ``index`` holds bools stored as bytes (``i8`` with ``mlc.bool``)."""
    if elem != "i8" or "arg_attrs" not in op.attributes:
        return False
    return BOOL_ATTR in ir.DictAttr(ir.ArrayAttr(op.attributes["arg_attrs"])[index])


def _arg_name(op: ir.Operation, index: int) -> str:
    if "arg_attrs" in op.attributes:
        attrs = ir.DictAttr(ir.ArrayAttr(op.attributes["arg_attrs"])[index])
        if "mlc.name" in attrs:
            return ir.StringAttr(attrs["mlc.name"]).value
    return f"arg{index}"


def _shaped(t: ir.Type) -> tuple[str, tuple[int | None, ...]]:
    st = ir.ShapedType(t)
    shape = tuple(None if st.is_dynamic_dim(i) else st.get_dim_size(i) for i in range(st.rank))
    return str(st.element_type), shape


#: ops that only read the memref operand at the given index
_READS = {"memref.load": 0, "vector.load": 0, "vector.transfer_read": 0, "vector.maskedload": 0,
          "memref.dim": 0, "memref.extract_strided_metadata": 0, "memref.extract_aligned_pointer_as_index": 0,
          "memref.copy": 0, "memref.prefetch": 0, "affine.load": 0, "affine.vector_load": 0,
          "affine.prefetch": 0, "vector.gather": 0}


def _may_write(value: ir.Value) -> bool:
    """Whether memref ``value`` (or a view of it) may be written: every use not known to read."""
    for use in value.uses:
        user, index = use.owner, use.operand_number
        name = user.name
        if name in MEMREF_VIEW_OPS and index == 0:
            if any(_may_write(r) for r in user.results):
                return True
        elif name.startswith("linalg.") and "operandSegmentSizes" in user.attributes:
            n_ins = list(ir.DenseI32ArrayAttr(user.attributes["operandSegmentSizes"]))[0]
            if index >= n_ins:
                return True
        elif _READS.get(name) != index:
            return True
    return False


def signature_of(op: ir.Operation, n_outputs: int | None) -> FuncSignature:
    """The signature of ``op``: its last ``n_outputs`` arguments are outputs.

    ``n_outputs=None`` (memref-form functions): the arguments the body may write are the
    outputs (used as a ``linalg`` init, a store target, a call operand...).
    """
    name = sym_name(op)
    ftype = ir.FunctionType(ir.TypeAttr(op.attributes["function_type"]).value)
    args = []
    n = len(ftype.inputs)
    block = op.regions[0].blocks[0]
    for i, t in enumerate(ftype.inputs):
        if not (isinstance(t, ir.MemRefType) or isinstance(t, ir.RankedTensorType)):
            raise BuildError(f"function @{name}: argument {i} has type {t}; compiled functions take "
                             "ranked tensors or memrefs only")
        elem, shape = _shaped(t)
        if _is_bool(op, i, elem):
            elem = "i1"
        strides, offset = _layout(name, i, t, shape)
        written = _may_write(block.arguments[i]) if n_outputs is None else i >= n - n_outputs
        args.append(ArgSpec(_arg_name(op, i), elem, shape, _symbols(op, i, len(shape)), written, strides, offset))
    return FuncSignature(name, tuple(args))


def _layout(name: str, index: int, t: ir.Type, shape: tuple[int | None, ...]) -> tuple[tuple | None, int | None]:
    """(strides, offset) of a memref argument with a non-identity layout; (None, None) otherwise."""
    if not isinstance(t, ir.MemRefType):
        return None, None
    mt = ir.MemRefType(t)
    if has_identity_layout(mt):
        return None, None
    try:
        strides, offset = mt.get_strides_and_offset()
    except RuntimeError:
        raise BuildError(f"function @{name}: argument {index} has type {t}, whose layout is not strided; "
                         "compiled functions take identity or strided<[...]> layouts") from None
    dyn = ir.ShapedType.get_dynamic_stride_or_offset()
    strides = tuple(None if s == dyn else s for s in strides)
    offset = None if offset == dyn else offset
    canonical, acc = [], 1
    for n in reversed(shape):
        canonical.insert(0, acc)
        acc = acc * n if n is not None else None
    if offset == 0 and None not in shape and list(strides) == canonical:
        return None, None  # strided<[3, 1]> on 2x3 is the identity layout
    return strides, offset


def to_memref_abi(module: ir.Module) -> dict[str, FuncSignature]:
    """Rewrite every public function to the memref ABI; return their signatures.

    Raises:
        BuildError: a tensor function that is not destination-passing (its results are
            not the types of its last arguments) or has several blocks.
    """
    store_bools_as_bytes(module)
    sigs: dict[str, FuncSignature] = {}
    for op in public_functions(module):
        name = sym_name(op)
        ftype = ir.FunctionType(ir.TypeAttr(op.attributes["function_type"]).value)
        inputs, results = list(ftype.inputs), list(ftype.results)
        has_tensor = any(isinstance(t, ir.RankedTensorType) for t in inputs + results)
        if has_tensor:
            _check_dps(name, inputs, results)
            sigs[name] = signature_of(op, len(results))
            _rewrite(op, inputs, results)
        else:
            if results:
                raise BuildError(f"function @{name} returns {results}: compiled memref-form functions "
                                 "must write their outputs into arguments (destination-passing style)")
            sigs[name] = signature_of(op, None)
        op.attributes["llvm.emit_c_interface"] = ir.UnitAttr.get()
    return sigs


def _check_dps(name: str, inputs: list[ir.Type], results: list[ir.Type]) -> None:
    n, k = len(inputs), len(results)
    outs = inputs[n - k:] if k else []
    if k > n or [str(t) for t in outs] != [str(t) for t in results]:
        raise BuildError(f"function @{name} has type ({', '.join(map(str, inputs))}) -> "
                         f"({', '.join(map(str, results))}): a tensor program must be destination-"
                         "passing, its results having the types of its last arguments")
    for t in inputs:
        if not isinstance(t, ir.RankedTensorType):
            raise BuildError(f"function @{name}: argument type {t} is not a ranked tensor")


def _rewrite(op: ir.Operation, inputs: list[ir.Type], results: list[ir.Type]) -> None:
    region = op.regions[0]
    if len(region.blocks) != 1:
        raise BuildError("tensor programs with several blocks are not supported by the build")
    block = region.blocks[0]
    n, k = len(inputs), len(results)
    memrefs = []
    with ir.InsertionPoint.at_block_begin(block):
        for i, arg in enumerate(block.arguments):
            ttype = ir.RankedTensorType(arg.type)
            mtype = ir.MemRefType.get(ttype.shape, ttype.element_type)
            arg.set_type(mtype)
            to_t = bufferization.ToTensorOp(ttype, arg, restrict=True, writable=i >= n - k)
            arg.replace_all_uses_except(to_t.result, to_t.operation)
            memrefs.append(arg)
    ret = block.operations[len(block.operations) - 1]
    with ir.InsertionPoint(ret):
        for i, value in enumerate(ret.operands):
            bufferization.MaterializeInDestinationOp(None, value, memrefs[n - k + i],
                                                     restrict=True, writable=True)
        func.ReturnOp([])
    ret.erase()
    new_type = ir.FunctionType.get([m.type for m in memrefs], [])
    op.attributes["function_type"] = ir.TypeAttr.get(new_type)


# -- bools as bytes ----------------------------------------------------------------------------

def _byte_type(t: ir.Type) -> ir.Type | None:
    """``t`` with ``i8`` elements when it is a ranked tensor or memref of ``i1``, else None."""
    if not isinstance(t, (ir.RankedTensorType, ir.MemRefType)):
        return None
    elem = ir.ShapedType(t).element_type
    if not (isinstance(elem, ir.IntegerType) and ir.IntegerType(elem).width == 1):
        return None
    i8 = ir.IntegerType.get_signless(8)
    if isinstance(t, ir.RankedTensorType):
        rt = ir.RankedTensorType(t)
        return ir.RankedTensorType.get(rt.shape, i8, rt.encoding)
    mt = ir.MemRefType(t)
    return ir.MemRefType.get(mt.shape, i8, mt.layout, mt.memory_space)


def store_bools_as_bytes(module: ir.Module) -> None:
    """Retype the ``i1`` tensors and memrefs of graph functions to ``i8`` (one byte per bool).

    Applies to functions marked ``mlc.lowered_graph`` or :data:`BOOL_BOUNDARY_ATTR` and to
    the environment-function declarations they call: every value of such a type, the
    function types, and ``dense`` constants of bools; casts between bools and their bytes
    (``unrealized_conversion_cast``, ``arith.extui`` / ``trunci`` on whole tensors) become
    no-ops and are removed. A retyped argument gets the ``mlc.bool`` attribute (its dtype
    stays bool). Other functions are left alone: an ``i1`` buffer there is rejected by the
    build's input check. Call inside the module's context.

    Raises:
        BuildError: the retyped module does not verify (an op that reads the ``i1``
            elements themselves, which only a hand-written function has).
    """
    defined = symbol_ops(module, defined=True)
    funcs = [op for op in defined.values() if any(a in op.attributes for a in _RETYPED_ATTRS)]
    if not funcs:
        return
    funcs += _bool_callees(funcs, defined)
    changed = False
    for fop in funcs:
        changed |= _retype_function(fop)
    for decl in symbol_ops(module, defined=False).values():
        if "mlc.env_func" in decl.attributes:
            changed |= _retype_signature(decl, None)
    if not changed:
        return
    try:
        module.operation.verify()
    except ir.MLIRError as exc:
        raise BuildError("storing the bools of graph functions as bytes (i1 -> i8) gave IR that does "
                         f"not verify:\n{diagnostics_text(exc)}") from None


def _bool_callees(roots: list[ir.Operation], defined: dict[str, ir.Operation]) -> list[ir.Operation]:
    """The functions the ``roots`` call (transitively) that take or give ``i1`` tensors:
    kernels kept as functions of their own (``no_inline`` calls of a lowered graph) must be
    retyped with their callers, or the calls would pass bytes where they expect bools."""
    seen = {id(f) for f in roots}
    found: list[ir.Operation] = []
    todo = list(roots)
    while todo:
        calls: list[ir.Operation] = []

        def visit(op: ir.Operation) -> ir.WalkResult:
            if op.name == "func.call":
                calls.append(op)
            return ir.WalkResult.ADVANCE

        todo.pop().walk(visit)
        for call in calls:
            callee = defined.get(ir.FlatSymbolRefAttr(call.attributes["callee"]).value)
            if callee is None or id(callee) in seen:
                continue
            seen.add(id(callee))
            ftype = ir.FunctionType(ir.TypeAttr(callee.attributes["function_type"]).value)
            if any(_byte_type(t) is not None for t in [*ftype.inputs, *ftype.results]):
                found.append(callee)
                todo.append(callee)
    return found


def _retype_function(fop: ir.Operation) -> bool:
    changed = False
    ops: list[ir.Operation] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        ops.append(op)
        return ir.WalkResult.ADVANCE

    fop.walk(visit)
    for op in ops:
        for region in op.regions:
            for block in region.blocks:
                for arg in block.arguments:
                    new = _byte_type(arg.type)
                    if new is not None:
                        arg.set_type(new)
                        changed = True
        for res in op.results:
            new = _byte_type(res.type)
            if new is not None:
                res.set_type(new)
                changed = True
                if op.name == "arith.constant":
                    op.attributes["value"] = _byte_constant(op.attributes["value"], new)
    for op in ops:
        if (op.name in ("builtin.unrealized_conversion_cast", "arith.extui", "arith.trunci")
                and len(op.operands) == 1 and len(op.results) == 1
                and isinstance(op.results[0].type, ir.ShapedType)
                and op.operands[0].type == op.results[0].type):
            op.results[0].replace_all_uses_with(op.operands[0])
            op.erase()
    block = fop.regions[0].blocks[0]
    ret = block.operations[len(block.operations) - 1]
    return _retype_signature(fop, [v.type for v in ret.operands]) or changed


def _retype_signature(fop: ir.Operation, results: list[ir.Type] | None) -> bool:
    """Retype ``fop``'s function type (``results``: the new result types, None to convert
    them) and mark each retyped argument ``mlc.bool``; whether anything changed."""
    ftype = ir.FunctionType(ir.TypeAttr(fop.attributes["function_type"]).value)
    marked = [_byte_type(t) is not None for t in ftype.inputs]
    inputs = [_byte_type(t) or t for t in ftype.inputs]
    if results is None:
        results = [_byte_type(t) or t for t in ftype.results]
    new = ir.FunctionType.get(inputs, results)
    if new == ftype:
        return False
    fop.attributes["function_type"] = ir.TypeAttr.get(new)
    if any(marked):
        old = (list(ir.ArrayAttr(fop.attributes["arg_attrs"])) if "arg_attrs" in fop.attributes
               else [ir.DictAttr.get({})] * len(inputs))
        attrs = []
        for k, a in enumerate(old):
            a = ir.DictAttr(a)
            d = {a[i].name: a[i].attr for i in range(len(a))}
            if marked[k]:
                d[BOOL_ATTR] = ir.UnitAttr.get()
            attrs.append(ir.DictAttr.get(d))
        fop.attributes["arg_attrs"] = ir.ArrayAttr.get(attrs)
    return True


def _byte_constant(attr: ir.Attribute, t: ir.Type) -> ir.Attribute:
    """The ``dense`` bool constant ``attr`` as bytes of type ``t``."""
    dense = ir.DenseElementsAttr(attr)
    if dense.is_splat:
        value = ir.BoolAttr(dense.get_splat_value()).value
        return ir.DenseElementsAttr.get_splat(t, ir.IntegerAttr.get(ir.IntegerType.get_signless(8), int(value)))
    data = np.array(dense).astype(np.int8).reshape(ir.ShapedType(t).shape)
    return ir.DenseElementsAttr.get(data, type=t)
