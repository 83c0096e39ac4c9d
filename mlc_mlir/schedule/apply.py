"""Apply a transform script to a module with the upstream transform interpreter."""

from __future__ import annotations

from mlir import ir

from ..irutil import symbol_ops
from ..context import diagnostics_text, mlc_context
from ..errors import ScheduleError
from ..irbuild import ENTRY_POINT, apply_transform
from ..parse_guard import guarded_parse
from ..ir import Module
from .buffers import compact_cache_buffers
from .intrin import apply_tensorize
from .isolate import dry_run_in_child, is_provably_safe

__all__ = ["apply_transform_script", "run_transform", "ENTRY_POINT"]



def _entry(tmod: ir.Module) -> ir.Operation:
    if "transform.with_named_sequence" not in tmod.operation.attributes:
        raise ScheduleError("transform script: the module needs the `transform.with_named_sequence` attribute")
    entry = symbol_ops(tmod, "transform.named_sequence").get(ENTRY_POINT)
    if entry is not None:
        return entry
    raise ScheduleError(f"transform script: no `transform.named_sequence @{ENTRY_POINT}` found")


def run_transform(payload: ir.Module, tmod: ir.Module, *, what: str = "schedule") -> None:
    """Apply ``@__transform_main`` of ``tmod`` to ``payload`` in place (inside the context),
    then replace tensorized tiles by their kernels (:mod:`.intrin`) and give each tile of a
    cache buffer its own allocation (:mod:`.buffers`).

    Raises ScheduleError with the interpreter's diagnostics when the script fails.
    """
    _entry(tmod)  # ScheduleError naming what the script lacks
    apply_transform(payload, tmod, error=ScheduleError, message=f"{what}: the transform script failed")
    apply_tensorize(payload)
    compact_cache_buffers(payload)
    try:
        payload.operation.verify()
    except ir.MLIRError as exc:
        raise ScheduleError(f"{what}: the transformed module does not verify:\n{diagnostics_text(exc)}") from None


def apply_transform_script(mod: Module, script_text: str, *, isolate: bool | None = None) -> Module:
    """Apply a hand-written transform script to a copy of ``mod``; return the copy.

    A script that uses ops beyond matching, tiling, fusion and vectorization cannot be
    proven unable to abort the upstream interpreter: it is tried first in a child process
    (:mod:`.isolate`; ``isolate=True`` forces that, ``False`` skips it), so a crash becomes
    a ``ScheduleError``.

    The script is a module with the ``transform.with_named_sequence`` attribute holding
    ``transform.named_sequence @__transform_main(%root: !transform.any_op)``. Knobs
    (``transform.tune.knob``) must have a ``selected`` value.

    Example::

        script = '''
        module attributes {transform.with_named_sequence} {
          transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
            %y = transform.structured.match attributes{mlc.block = "Y"} in %root
                : (!transform.any_op) -> !transform.any_op
            %t, %l = transform.structured.tile_using_for %y tile_sizes [0, 4]
                : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
            transform.yield
          }
        }'''
        new_mod = mlc.schedule.apply_transform_script(mod, script)

    Raises:
        ScheduleError: the script does not parse, has no entry point, fails (the
            message carries the interpreter's diagnostics) or crashes its trial process.
    """
    if not isinstance(mod, Module):
        raise ScheduleError(f"apply_transform_script expects an mlc.Module, got {type(mod).__name__}")
    if not isinstance(script_text, str):
        raise ScheduleError(f"apply_transform_script expects the script as text, got {type(script_text).__name__}")
    out = mod.clone()
    with mlc_context():
        try:
            tmod = guarded_parse(script_text, report=False)
        except ir.MLIRError as exc:
            raise ScheduleError(f"transform script does not parse:\n{diagnostics_text(exc)}") from None
        _entry(tmod)
        if isolate or (isolate is None and not is_provably_safe(tmod)):
            dry_run_in_child(out.operation.get_asm(print_generic_op_form=True, large_elements_limit=None,
                                                   enable_debug_info=True), script_text)
        run_transform(out.mlir_module, tmod, what="apply_transform_script")
    return out
