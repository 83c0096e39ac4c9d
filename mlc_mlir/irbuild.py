"""Transform scripts built through the bindings' builders, and their one application.

The build stages that rewrite IR with the transform dialect build their scripts with this
module (``unroll-jam``, ``map-to-gpu``; ``vector-opt``'s is one static text) and apply
them through it:

- :func:`transform_script`: a module ``{transform.with_named_sequence}`` holding
  ``transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly})``
  whose body a callback builds with ``mlir.dialects.transform`` builders;
- :func:`match`, :func:`foreach`: the two builders those callbacks share;
- :func:`apply_transform`: the one call of the upstream interpreter, which turns its
  diagnostics into the caller's error type.

A callback such as (``tloop``: ``mlir.dialects.transform.loop``)::

    def body(root):
        two = ir.IntegerAttr.get(ir.IntegerType.get_signless(64), 2)
        loops = match(root, ops=["scf.for"], attrs={"mlc.unroll_jam": two})
        foreach(loops, lambda loop: tloop.LoopUnrollAndJamOp(loop, factor=2))

    script = transform_script(body)

gives (twin tests: ``tests/python/test_irbuild.py``, ``tests/lit/compiler/transform_scripts.py``)::

    module attributes {transform.with_named_sequence} {
      transform.named_sequence @__transform_main(%arg0: !transform.any_op {transform.readonly}) {
        %0 = transform.structured.match ops{["scf.for"]} attributes {mlc.unroll_jam = 2 : i64} in %arg0
            : (!transform.any_op) -> !transform.any_op
        transform.foreach %0 : !transform.any_op {
        ^bb0(%arg1: !transform.any_op):
          transform.loop.unroll_and_jam %arg1 {factor = 2 : i64} : !transform.any_op
        }
        transform.yield
      }
    }

Call everything inside the shared context (``mlc_context()``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from mlir import ir
from mlir.dialects import transform
from mlir.dialects.transform import interpreter, structured

from .irutil import diagnostic_lines, diagnostics_text, symbol_ops

__all__ = ["ENTRY_POINT", "apply_transform", "foreach", "match", "transform_script"]

#: the named sequence the interpreter starts from
ENTRY_POINT = "__transform_main"


def transform_script(body: Callable[[ir.Value], object], *, loc: ir.Location | None = None) -> ir.Module:
    """A transform module whose ``@__transform_main`` is built by ``body(root)``.

    Emits ``module attributes {transform.with_named_sequence}`` with one
    ``transform.named_sequence @__transform_main`` taking the payload root as a read-only
    ``!transform.any_op``; ``body`` is called with that handle, inside the sequence's
    block, and ``transform.yield`` is appended after it. Every op gets ``loc`` (default
    unknown), which the interpreter's diagnostics show: a name such as
    ``ir.Location.name("unroll-jam")`` says which stage's script failed. Returns the module.
    """
    loc = loc or ir.Location.unknown()
    script = ir.Module.create(loc=loc)
    script.operation.attributes["transform.with_named_sequence"] = ir.UnitAttr.get()
    any_op = transform.AnyOpType.get()
    with ir.InsertionPoint(script.body), loc:
        seq = transform.NamedSequenceOp(ENTRY_POINT, [any_op], [],
                                        arg_attrs=[{"transform.readonly": ir.UnitAttr.get()}])
        with ir.InsertionPoint(seq.body):
            body(seq.bodyTarget)
            transform.YieldOp([])
    return script


def match(target: ir.Value, *, ops: Sequence[str] | None = None,
          interface: structured.MatchInterfaceEnum | None = None,
          attrs: Mapping[str, ir.Attribute] | None = None) -> ir.Value:
    """Emit ``transform.structured.match`` of the ops under ``target`` with the given names,
    interface and attributes (each optional); returns the ``!transform.any_op`` handle."""
    names = ir.ArrayAttr.get([ir.StringAttr.get(o) for o in ops]) if ops else None
    op_attrs = ir.DictAttr.get(dict(attrs)) if attrs else None
    return structured.MatchOp(transform.AnyOpType.get(), target, ops=names, interface=interface,
                              op_attrs=op_attrs).result


def foreach(handle: ir.Value, body: Callable[[ir.Value], object]) -> None:
    """Emit ``transform.foreach %handle`` whose body ``body(one)`` builds for each payload op
    (``one``: a handle to that op); ``transform.yield`` is appended. No results."""
    loop = transform.ForeachOp([], [handle])
    with ir.InsertionPoint(loop.body):
        body(loop.bodyTargets[0])
        transform.YieldOp([])


def _entry(script: ir.Module) -> ir.Operation | None:
    return symbol_ops(script, "transform.named_sequence").get(ENTRY_POINT)


def apply_transform(payload: ir.Module | ir.Operation, script: ir.Module, *,
                    error: Callable[[str], Exception], message: str) -> None:
    """Apply ``@__transform_main`` of ``script`` to ``payload`` (a module or one op) in place.

    On failure raises ``error(f"{message}:\\n{diagnostics}")``: the diagnostics the
    interpreter reported, else the exception's own text.
    """
    entry = _entry(script)
    if entry is None:
        raise error(f"{message}: the script has no transform.named_sequence @{ENTRY_POINT}")
    diags: list[str] = []

    def handler(diag: ir.DiagnosticInfo) -> bool:
        diags.extend(diagnostic_lines(diag))
        return True

    hook = script.context.attach_diagnostic_handler(handler)
    try:
        interpreter.apply_named_sequence(payload, entry, script)
    except (ValueError, ir.MLIRError) as exc:
        detail = "\n".join(diags) or (diagnostics_text(exc) if isinstance(exc, ir.MLIRError) else str(exc))
        raise error(f"{message}:\n{detail}") from None
    finally:
        hook.detach()
