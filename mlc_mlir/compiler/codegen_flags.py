"""What LLVM needs to vectorize and fuse multiply-adds: aliasing, fast-math and target facts.

Three build stages of the CPU pipeline (:func:`mlc_mlir.compiler.pipeline.cpu_stages`):

``fastmath`` (before ``to-llvm``)
    ``#arith.fastmath<flags>`` on every floating-point ``arith`` op; ``convert-arith-to-llvm``
    turns it 1:1 into LLVM fast-math flags. The build option ``fastmath="contract"`` (the
    default) lets LLVM fuse ``a * b + c`` into one FMA (one rounding instead of two: within
    1e-6 relative of NumPy, which itself uses FMA kernels); ``"none"`` keeps IEEE
    semantics bit for bit; ``"fast"`` or ``"reassoc"`` also let LLVM reorder sums, which
    changes results more and, on reduction loops, makes the loop vectorizer pick the
    reduction loop (3-4x slower in this build).

``noalias`` (after ``to-llvm``)
    ``llvm.noalias`` on the aligned-pointer argument of each memref of a public function
    (field 1 of the ``3 + 2 * rank`` LLVM arguments of a rank-r memref). The runtime
    guarantees it: a call is refused when an output overlaps any other argument, and
    inputs are only read. (``llvm.noalias`` on ``func.func`` memref arguments would be
    dropped by ``convert-func-to-llvm``, which expands each memref into its fields.)

``target`` (after ``to-llvm``)
    ``target_cpu`` / ``target_features`` on every ``llvm.func`` when the target string
    names ``-mcpu`` / ``-mattr``, so the JIT compiles for that CPU and its features.
"""

from __future__ import annotations

from collections.abc import Mapping

from mlir import ir

from ..irutil import symbol_ops
from ..errors import BuildError
from ..target import Target
from ..runtime.signature import FuncSignature

__all__ = ["FASTMATH_FLAGS", "check_fastmath", "set_fastmath", "set_noalias", "set_target_attrs"]

#: flags ``#arith.fastmath`` accepts (``none``: IEEE; ``fast``: all of them)
FASTMATH_FLAGS = ("none", "reassoc", "nnan", "ninf", "nsz", "arcp", "contract", "afn", "fast")

_FLOAT_OPS = frozenset({"arith.addf", "arith.subf", "arith.mulf", "arith.divf", "arith.negf", "arith.remf",
                        "arith.maximumf", "arith.minimumf", "arith.maxnumf", "arith.minnumf"})


def check_fastmath(fastmath: str) -> str:
    """``fastmath`` normalised (``"contract"``, ``"contract,afn"``...); BuildError if unknown."""
    if not isinstance(fastmath, str):
        raise BuildError(f"fastmath must be a str such as 'contract' or 'none', got {type(fastmath).__name__}")
    flags = [f.strip() for f in fastmath.split(",") if f.strip()]
    bad = [f for f in flags if f not in FASTMATH_FLAGS]
    if bad or not flags:
        raise BuildError(f"fastmath={fastmath!r}: unknown flag(s) {bad or [fastmath]}; use a comma-separated "
                         f"list of {list(FASTMATH_FLAGS)}")
    return ",".join(flags)


def set_fastmath(module: ir.Module, fastmath: str) -> None:
    """Put ``#arith.fastmath<fastmath>`` on every floating-point arith op (``"none"``: nothing)."""
    if fastmath == "none":
        return
    attr = ir.Attribute.parse(f"#arith.fastmath<{fastmath}>")

    def visit(op: ir.Operation) -> ir.WalkResult:
        if op.name in _FLOAT_OPS:
            op.attributes["fastmath"] = attr
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)


def _arg_attr_dicts(op: ir.Operation, n: int) -> list[dict[str, ir.Attribute]]:
    if "arg_attrs" not in op.attributes:
        return [{} for _ in range(n)]
    arr = ir.ArrayAttr(op.attributes["arg_attrs"])
    out = []
    for i in range(n):
        d = ir.DictAttr(arr[i])
        out.append({d[j].name: d[j].attr for j in range(len(d))})
    return out


def set_noalias(module: ir.Module, signatures: Mapping[str, FuncSignature]) -> None:
    """``llvm.noalias`` on the aligned pointer of each memref argument of the public functions.

    Runs on the LLVM dialect: each ``llvm.func @name`` of ``signatures`` has the expanded
    descriptor arguments (allocated, aligned, offset, sizes..., strides...) per memref.
    """
    for name, op in symbol_ops(module, "llvm.func", defined=True).items():
        if name not in signatures:
            continue
        n = len(op.regions[0].blocks[0].arguments)
        aligned, idx = set(), 0
        for spec in signatures[name].args:
            aligned.add(idx + 1)
            idx += 3 + 2 * len(spec.shape)
        if idx != n:
            raise BuildError(f"noalias: @{name} has {n} LLVM arguments, expected {idx} for its memref descriptors")
        attrs = _arg_attr_dicts(op, n)
        for i in aligned:
            attrs[i]["llvm.noalias"] = ir.UnitAttr.get()
        op.attributes["arg_attrs"] = ir.ArrayAttr.get([ir.DictAttr.get(a) for a in attrs])


def set_target_attrs(module: ir.Module, target: Target) -> None:
    """``target_cpu`` / ``target_features`` on every defined ``llvm.func`` (if the target sets them)."""
    cpu, feats = target.llvm_function_attrs()
    if cpu is None:
        return
    cpu_attr = ir.StringAttr.get(cpu)
    feat_attr = ir.Attribute.parse("#llvm.target_features<[" + ", ".join(f'"{f}"' for f in feats) + "]>")
    for op in symbol_ops(module, "llvm.func", defined=True).values():
        op.attributes["target_cpu"] = cpu_attr
        if feats:
            op.attributes["target_features"] = feat_attr
