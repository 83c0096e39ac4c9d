"""``VirtualMachine``: call the graph functions of a built :class:`~.vm_build.Executable`.

    vm = mlc.graph.VirtualMachine(ex, mlc.cpu())
    out = vm["main"](x, w0, b0, w1, b1)          # an mlc NDArray; out.numpy()

The virtual machine checks the inputs, binds symbolic dimensions, checks them against
the static sizes of the tensor programs ``call_tir`` calls (a kernel compiled for
``(2, 3)`` called with ``x: (n, 3)`` needs ``n == 2``), allocates fresh outputs for every
call and returns them as ``mlc.runtime.NDArray``. A call with exact C-contiguous NumPy
inputs runs through generated code: output allocation from the input shapes, then the
compiled function's builtin entry (:mod:`mlc_mlir.compiler.fastcall`), which makes every
check in native code; any call it declines takes :meth:`GraphFunction.call_checked`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ...errors import ArgumentError, GraphError, RuntimeError_
from ...runtime.checks import check_arity, check_array
from ...runtime import Device, NDArray, as_numpy, cpu
from ...tensor_types import format_shape
from ..transform.lower import GraphSignature
from .cuda import CudaGraphFunction
from .vm_build import Executable

__all__ = ["VirtualMachine", "GraphFunction"]


class GraphFunction:
    """A callable graph function of a :class:`VirtualMachine`: ``f(*inputs) -> output(s)``."""

    def __new__(cls, *args: Any, **kwargs: Any) -> GraphFunction:
        # each function a class of its own, so that its __call__ can be generated code
        return object.__new__(type(cls.__name__, (cls,), {"__module__": cls.__module__}))

    def __init__(self, ex: Executable, sig: GraphSignature, device: Device):
        self.signature = sig
        self._compiled = ex.rt[sig.name]
        self._device = device
        self._checks = ex.extent_checks.get(sig.name, ())
        fast = ex.rt.fast_entry(sig.name, self._declined, after=ex.rt._after_call if ex.env_calls else None)
        if fast is not None:  # this instance's own class: its __call__ is generated code
            type(self).__call__ = _fast_call(self, fast)

    def _bind(self, arrays: list[np.ndarray]) -> dict[str, int]:
        sig = self.signature
        symbols: dict[str, int] = {}
        for i, (spec, arr) in enumerate(zip(sig.inputs, arrays)):
            where = f"@{sig.name} input {i} ({spec.name})"
            if arr.ndim != len(spec.shape):
                raise ArgumentError(f"{where}: expected shape {format_shape(spec.shape)}, got {arr.shape}")
            static = [w if isinstance(w, int) else None for w in spec.shape]
            check_array(where, arr, spec.dtype, static, format_shape(spec.shape))
            for d, (want, got) in enumerate(zip(spec.shape, arr.shape)):
                if not isinstance(want, int) and symbols.setdefault(want, got) != got:
                    raise ArgumentError(f"{where}: dimension {d} is {got} but {want} = {symbols[want]} "
                                        "from an earlier input")
        for sym, size, what in self._checks:
            if symbols.get(sym, size) != size:
                i, d = next((i, d) for i, s in enumerate(sig.inputs) for d, w in enumerate(s.shape) if w == sym)
                raise ArgumentError(f"@{sig.name} input {i} ({sig.inputs[i].name}): dimension {d} is "
                                    f"{symbols[sym]}, but {sym} must be {size}: {what} is compiled for "
                                    f"size {size}")
        return symbols

    def _inputs(self, args: tuple) -> list[np.ndarray]:
        sig = self.signature
        check_arity(sig.name, [s.name for s in sig.inputs], args, "input(s)")
        arrays = []
        for i, a in enumerate(args):
            try:
                arrays.append(as_numpy(a))
            except Exception as exc:  # noqa: BLE001 - any failure to view the argument
                raise ArgumentError(f"@{sig.name} input {i} ({sig.inputs[i].name}): {exc}") from None
        return arrays

    def _declined(self, *args: Any) -> None:
        """The builtin's fallback (inputs and outputs): the VM's checks, then the compiled function's."""
        self._bind(self._inputs(args[:len(self.signature.inputs)]))
        self._compiled.call_checked(*args)

    def call_checked(self, *args: Any) -> NDArray | tuple[NDArray, ...]:
        """Run with every check and conversion in Python (the path of every call the fast path declines)."""
        sig = self.signature
        arrays = self._inputs(args)
        symbols = self._bind(arrays)
        outs = []
        for k, spec in enumerate(sig.outputs):
            shape = tuple(d if isinstance(d, int) else symbols[d] for d in spec.shape)
            try:
                outs.append(np.empty(shape, dtype=np.dtype(spec.dtype)))
            except (MemoryError, ValueError) as exc:
                raise RuntimeError_(f"@{sig.name}: cannot allocate output {k} of shape {shape} "
                                    f"{spec.dtype}: {type(exc).__name__}: {exc}") from None
        self._compiled.call_checked(*arrays, *outs)
        results = tuple(NDArray._wrap(o, self._device) for o in outs)
        return results[0] if len(results) == 1 else results

    def __call__(self, *args: Any) -> NDArray | tuple[NDArray, ...]:
        return self.call_checked(*args)

    def __repr__(self) -> str:
        ins = ", ".join(f"{s.name}: {format_shape(s.shape)} {s.dtype}" for s in self.signature.inputs)
        return f"<mlc.graph function @{self.signature.name}({ins})>"


def _fast_call(gf: GraphFunction, fast: Callable[..., None]) -> Callable[..., Any]:
    """``__call__`` of ``gf`` as generated code: allocate outputs from input shapes, call ``fast``.

    Anything unexpected (wrong arity, an input without a usable ``shape``, a fixed extent
    that differs, an allocation that fails) goes to :meth:`GraphFunction.call_checked`,
    which raises the precise error; the builtin checks everything else.
    """
    sig = gf.signature
    n = len(sig.inputs)
    where = {}
    for i, spec in enumerate(sig.inputs):
        for d, dim in enumerate(spec.shape):
            if isinstance(dim, str):
                where.setdefault(dim, f"a{i}.shape[{d}]")
    env = {"_fast": fast, "_empty": np.empty, "_new": object.__new__, "_NDArray": NDArray, "_dev": gf._device}
    names = [f"a{i}" for i in range(n)]
    lines = ["def __call__(self, *args):", f"    if len(args) != {n}:", "        return self.call_checked(*args)",
             "    try:", f"        {''.join(x + ', ' for x in names)}= args"]
    for sym, size, _ in gf._checks:
        lines += [f"        if {where[sym]} != {size}:", "            return self.call_checked(*args)"]
    outs = []
    for k, spec in enumerate(sig.outputs):
        env[f"_dt{k}"] = np.dtype(spec.dtype)
        dims = ", ".join(str(d) if isinstance(d, int) else where[d] for d in spec.shape)
        lines.append(f"        o{k} = _empty(({dims}{',' if len(spec.shape) == 1 else ''}), _dt{k})")
        outs.append(f"o{k}")
    lines += ["    except Exception:", "        return self.call_checked(*args)",
              f"    _fast({', '.join(names + outs)})"]
    for o in outs:  # NDArray._wrap, inlined
        lines += [f"    r{o} = _new(_NDArray)", f"    r{o}.device = _dev", f"    r{o}._data = {o}"]
    lines.append(f"    return {'r' + outs[0] if len(outs) == 1 else '(' + ', '.join('r' + o for o in outs) + ',)'}")
    exec("\n".join(lines) + "\n", env)  # noqa: S102 - code generated from the signature only
    return env["__call__"]


class VirtualMachine:
    """Runs the graph functions of an :class:`Executable` (course ``relax.VirtualMachine``).

    Args:
        ex: the result of :func:`build`.
        device: ``mlc.cpu()`` (the only device graphs run on here).
    """

    def __init__(self, ex: Executable, device: Device | None = None):
        if not isinstance(ex, Executable):
            raise GraphError(f"VirtualMachine expects the Executable of mlc.graph.build, got {type(ex).__name__}")
        device = device or cpu()
        if not isinstance(device, Device) or device.kind not in ("cpu", "cuda"):
            raise GraphError(f"VirtualMachine: graphs run on mlc.cpu() or mlc.cuda(i), got {device!r}")
        if (device.kind == "cuda") != str(ex.rt.target).startswith("cuda"):
            raise GraphError(f"VirtualMachine: the executable was built for {ex.rt.target!r}, not for {device}")
        self.executable = ex
        self.device = device
        self._funcs: dict[str, GraphFunction] = {}

    def __getitem__(self, name: str) -> Callable[..., Any]:
        if name not in self._funcs:
            if name not in self.executable.signatures:
                raise GraphError(f"the executable has no graph function {name!r}; it has "
                                 f"{self.executable.functions}")

            kind = CudaGraphFunction if self.device.kind == "cuda" else GraphFunction
            self._funcs[name] = kind(self.executable, self.executable.signatures[name], self.device)
        return self._funcs[name]

