"""Build stages that keep bad input from crashing the process (assertions abort in this build).

- :func:`reject_unsupported` (before bufferization): calls to body-less functions on
  tensors, and ``i1`` (bool) buffers, which the upstream memref-to-LLVM conversion
  cannot lower (it aborts), become a :class:`~mlc_mlir.errors.BuildError` naming them.
- :func:`check_allocations` (after the to-LLVM stage): every heap allocation of compiled
  code is checked; see :mod:`.alloc_check`.
"""

from __future__ import annotations

from mlir import ir

from ..irutil import sym_name, symbol_ops
from ..errors import BuildError

__all__ = ["reject_unsupported"]


def _types_of(op: ir.Operation) -> list[ir.Type]:
    types = [r.type for r in op.results]
    for region in op.regions:
        for block in region.blocks:
            types.extend(a.type for a in block.arguments)
    return types


def _is_i1_buffer(t: ir.Type) -> bool:
    if not isinstance(t, (ir.RankedTensorType, ir.MemRefType, ir.UnrankedTensorType, ir.UnrankedMemRefType)):
        return False
    elem = ir.ShapedType(t).element_type
    return isinstance(elem, ir.IntegerType) and ir.IntegerType(elem).width == 1


def _func_name(op: ir.Operation) -> str:
    while op is not None and op.name != "func.func":
        op = op.parent
    return "?" if op is None else sym_name(op)


def reject_unsupported(module: ir.Module) -> None:
    """Raise :class:`BuildError` for what the CPU lowering cannot compile (instead of aborting).

    - a graph op (``mlc.*``): graph modules are built by ``mlc.graph.build``;
    - a ``func.call`` of a declaration (a function without a body) with tensor arguments
      or results: its buffers cannot be bufferized across an unknown body;
    - a tensor or memref of ``i1`` (bool) elements: store booleans as ``i8`` (a NumPy
      ``bool`` array is one byte per element: pass ``arr.view(np.int8)``).
    """
    decls = symbol_ops(module, defined=False)

    problems: list[str] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        problem = _problem(op, decls)
        if problem is None:
            return ir.WalkResult.ADVANCE
        problems.append(problem)
        return ir.WalkResult.INTERRUPT

    module.operation.walk(visit)
    if problems:
        raise BuildError(problems[0])


def _problem(op: ir.Operation, decls: dict[str, ir.Operation]) -> str | None:
    if op.name.startswith("mlc."):
        return (f"@{_func_name(op)} holds the graph op {op.name}: this is a graph module; build it with "
                "mlc.graph.build(mod) and run it with mlc.graph.VirtualMachine (mlc.build compiles tensor "
                "programs)")
    if op.name == "func.call":
        callee = ir.FlatSymbolRefAttr(op.attributes["callee"]).value
        tensors = [str(v.type) for v in [*op.operands, *op.results]
                   if isinstance(v.type, (ir.RankedTensorType, ir.UnrankedTensorType))]
        if callee in decls and tensors:
            return (f"@{_func_name(op)} calls @{callee}, a function declaration without a body, on "
                    f"tensors ({', '.join(tensors)}); give @{callee} a body (tensor programs are "
                    "compiled together), or call it through the graph layer's call_dps_packed")
    bad = [t for t in _types_of(op) + [v.type for v in op.operands] if _is_i1_buffer(t)]
    if bad:
        return (f"element type i1 (bool) is not supported in compiled buffers: {bad[0]} in "
                f"@{_func_name(op)} ({op.name}); use i8 (NumPy: arr.view(np.int8))")
    return None
