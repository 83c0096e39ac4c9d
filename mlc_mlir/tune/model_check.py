"""``tune_model``'s last step: the tuned kernels are kept only where the model runs faster.

The tuner times each kernel alone, with its inputs hot in cache. Inside the model a kernel
runs after the one that produced its input and is compiled into the graph's function
(its weights become globals), and a kernel that was fastest alone can be slower there: the
course MLP at batch 64 once came out 1.7x NumPy's time with a kernel that had timed equal
to the rules' own alone (0.9x with the rules' kernel). So the model is timed on random
inputs, with all tuned kernels, then with each tuned kernel in turn given back to the
default rules; a kernel is given back when the model runs at least :data:`MARGIN` faster
without it. Modules whose ``main`` has symbolic shapes (nothing to time them on) are
returned as tuned, with a log line saying why.
"""

from __future__ import annotations

import logging
import time
from typing import Any, Callable

import numpy as np
from mlir import ir

from ..context import mlc_context
from ..errors import MlcError
from ..ir import Module

__all__ = ["keep_faster_kernels", "MARGIN"]

log = logging.getLogger("mlc_mlir.tune")

#: a tuned kernel is given back to the default rules when the model runs this much faster without it
MARGIN = 0.02
#: each timing: the best of this many windows of about WINDOW_S seconds
WINDOWS, WINDOW_S = 5, 0.02


def keep_faster_kernels(default: Module, tuned: Module, names: list[str], target: str, tuned_attr: str) -> Module:
    """``tuned`` with each kernel of ``names`` given back to ``default``'s (unscheduled: the
    build's default rules) where the model's ``main`` runs faster that way."""
    inputs = _inputs(default)
    if inputs is None or not names:
        return tuned
    try:
        best = _time_model(tuned, inputs, target)
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
        secs = _time_model(trial, inputs, target)
        if secs < best * (1 - MARGIN):
            log.info("tune_model: @%s given back to the default rules: the model runs %.1f us with it, %.1f us "
                     "tuned", name, secs * 1e6, best * 1e6)
            current, best = trial, secs
    return current


def _inputs(mod: Module) -> list[np.ndarray] | None:
    """Random arrays for ``main``'s parameters, or None (no ``main``, symbolic or non-tensor parameters)."""
    from ..graph.ir.expr import dtype_of_element

    if "main" not in [f for f in mod.functions]:
        log.info("tune_model: no graph function main: the tuned kernels are not checked in the model")
        return None
    rng = np.random.default_rng(0)
    arrays = []
    with mlc_context():
        for t in mod["main"].function_type.inputs:
            if not isinstance(t, ir.RankedTensorType) or not ir.RankedTensorType(t).has_static_shape:
                log.info("tune_model: main has a parameter of type %s: the tuned kernels are not checked in the "
                         "model (static shapes only)", t)
                return None
            rt = ir.RankedTensorType(t)
            dtype = np.dtype(dtype_of_element(rt.element_type))
            shape = tuple(rt.shape)
            arrays.append(rng.standard_normal(shape).astype(dtype) if dtype.kind == "f" else np.zeros(shape, dtype))
    return arrays


def _time_model(mod: Module, inputs: list[np.ndarray], target: str) -> float:
    from ..graph import VirtualMachine, build
    from ..runtime import cpu

    fn = VirtualMachine(build(mod, target), cpu())["main"]
    return _best_time(lambda: fn(*inputs))


def _best_time(call: Callable[[], Any]) -> float:
    call()
    t0 = time.perf_counter()
    call()
    once = max(time.perf_counter() - t0, 1e-7)
    number = max(1, int(WINDOW_S / once))
    best = float("inf")
    for _ in range(WINDOWS):
        t0 = time.perf_counter()
        for _ in range(number):
            call()
        best = min(best, (time.perf_counter() - t0) / number)
    return best
