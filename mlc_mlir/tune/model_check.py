"""``tune_model``'s last step: the tuned kernels are kept only where the model runs faster.

The tuner times each kernel alone, with its inputs hot in cache. Inside the model a kernel
runs after the one that produced its input and is compiled into the graph's function
(its weights become globals), and a kernel that was fastest alone can be slower there: the
course MLP at batch 64 once came out 1.7x NumPy's time with a kernel that had timed equal
to the rules' own alone (0.9x with the rules' kernel). So the model is timed on random
inputs, with all tuned kernels, then with each tuned kernel in turn given back to the
default rules; a kernel is given back when the model runs at least :data:`MARGIN` faster
without it. Last, what is left is kept only if it runs at least :data:`MARGIN` faster than
the model with every kernel the rules' own (timed before and after the tuned ones, the
faster of the two): each give-back alone cannot see small losses add up (ResNet-18 after 32
trials, 3 kernels kept tuned, ran 1.06x the default's time in the benchmark that followed).
Modules whose ``main`` has symbolic shapes (nothing to time them on) are returned as tuned,
with a log line saying why.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import numpy as np
from mlir import ir

from ..context import mlc_context
from ..errors import GraphError, MlcError
from ..graph import build
from ..ir import Module
from ..tensor_types import dtype_of_element

__all__ = ["keep_faster_kernels", "MARGIN"]

log = logging.getLogger("mlc_mlir.tune")

#: a tuned kernel is given back to the default rules when the model runs this much faster without it
MARGIN = 0.02
#: each timing: the best of this many windows of at least WINDOW_MS milliseconds
WINDOWS, WINDOW_MS = 5, 20.0


def keep_faster_kernels(default: Module, tuned: Module, names: list[str], target: str, tuned_attr: str) -> Module:
    """``tuned`` with each kernel of ``names`` given back to ``default``'s (unscheduled: the
    build's default rules) where the model's ``main`` runs faster that way."""
    inputs = _inputs(default)
    if inputs is None or not names:
        return tuned
    try:
        default_timer = _model_timer(default, target)  # (built once: timed before and after)
        before = default_timer(inputs)
        best = _model_timer(tuned, target)(inputs)
    except MlcError as exc:  # the tuned model does not build or run: keep what tune_model made
        log.warning("tune_model: the tuned model could not be timed (%s); kernels kept as tuned", exc)
        return tuned
    current = tuned
    for name in names:
        trial = current.clone()
        trial.update_func(name, default[name])
        with mlc_context():
            attrs = trial[name].op.attributes
            if tuned_attr in attrs:
                del attrs[tuned_attr]
        secs = _model_timer(trial, target)(inputs)
        if secs < best * (1 - MARGIN):
            log.info("tune_model: @%s given back to the default rules: the model runs %.1f us with it, %.1f us "
                     "tuned", name, secs * 1e6, best * 1e6)
            current, best = trial, secs
    baseline = min(before, default_timer(inputs))
    if best >= baseline * (1 - MARGIN):
        log.info("tune_model: every kernel given back to the default rules: the model runs %.1f us tuned, %.1f us "
                 "with the rules' kernels", best * 1e6, baseline * 1e6)
        return default.clone()
    return current


def _inputs(mod: Module) -> list[np.ndarray] | None:
    """Arrays for the lowered ``main(inputs..., outputs...)``: random inputs, empty outputs; or
    None (no ``main``, or a parameter or result that is not a tensor of static shape)."""
    if "main" not in mod.functions:
        log.info("tune_model: no graph function main: the tuned kernels are not checked in the model")
        return None
    rng = np.random.default_rng(0)
    arrays = []
    with mlc_context():
        ftype = mod["main"].function_type
        for is_input, t in [(True, t) for t in ftype.inputs] + [(False, t) for t in ftype.results]:
            if not isinstance(t, ir.RankedTensorType) or not ir.RankedTensorType(t).has_static_shape:
                log.info("tune_model: main has a parameter or result of type %s: the tuned kernels are not checked "
                         "in the model (static shapes only)", t)
                return None
            rt = ir.RankedTensorType(t)
            dtype = np.dtype(dtype_of_element(rt.element_type, error=GraphError))
            shape = tuple(rt.shape)
            if not is_input:
                arrays.append(np.empty(shape, dtype))
            else:
                arrays.append(rng.standard_normal(shape).astype(dtype) if dtype.kind == "f" else np.zeros(shape, dtype))
    return arrays


def _model_timer(mod: Module, target: str) -> Callable[[list[np.ndarray]], float]:
    """``mod`` built once for ``target``; the function returned times its compiled ``main``
    on arrays: seconds per call (the runtime's ``time_evaluator``: arguments marshalled
    once; the best of WINDOWS repeats of at least WINDOW_MS each)."""
    timer = build(mod, target).rt.time_evaluator("main", number=1, repeat=WINDOWS, min_repeat_ms=WINDOW_MS)
    return lambda arrays: timer(*arrays).min
