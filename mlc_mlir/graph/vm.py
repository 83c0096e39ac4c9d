"""``mlc.graph.build`` and ``VirtualMachine``: run graph functions (course ``relax.build``).

    ex = mlc.graph.build(mod, target="llvm")
    vm = mlc.graph.VirtualMachine(ex, mlc.cpu())
    out = vm["main"](x, w0, b0, w1, b1)          # an mlc NDArray; out.numpy()

The build verifies the graph, optimizes it (``opt_level``, :mod:`.optimize`: fusion
into fewer tensor programs), legalizes the remaining graph ops, lowers each graph
function to a destination-passing function of calls (:mod:`.lower`) and compiles the
whole module to native code with ``mlc.build``'s pipeline; calls of tensor programs are
inlined first, so a graph made of tensor programs is one compiled function.
Environment functions (``call_dps_packed``) are external functions of that code,
registered on the JIT as ctypes callbacks: each call hands the registered Python
function zero-copy NumPy views of its arguments. An exception raised inside one is kept
and re-raised as :class:`RuntimeError_` when the compiled call returns.

The virtual machine checks the inputs, binds symbolic dimensions, checks them against
the static sizes of the tensor programs ``call_tir`` calls (a kernel compiled for
``(2, 3)`` called with ``x: (n, 3)`` needs ``n == 2``), allocates fresh outputs for every
call and returns them as ``mlc.runtime.NDArray``. A call with exact C-contiguous NumPy
inputs runs through generated code: output allocation from the input shapes, then the
compiled function's builtin entry (:mod:`mlc_mlir.compiler.fastcall`), which makes every
check in native code; any call it declines takes :meth:`GraphFunction.call_checked`.
"""

from __future__ import annotations

import ctypes
import threading
from collections.abc import Callable
from typing import Any

import numpy as np
from mlir import ir

from ..compiler import RuntimeModule, compile_module, host_target
from ..compiler.pipeline import Compilation, build_stages
from ..errors import ArgumentError, GraphError, RuntimeError_
from ..ir import Module
from ..irutil import check_arity, check_array
from ..runtime import Device, NDArray, as_numpy, cpu, get_func
from ..runtime.memref import descriptor_class, view
from .expr import format_shape
from .analysis import func_name, graph_functions, value_shapes, walk_ops
from .lower import EnvCall, GraphSignature

__all__ = ["build", "Executable", "VirtualMachine", "GraphFunction"]



class _CallbackErrors:
    """Exceptions raised inside environment functions during one compiled call (per thread)."""

    def __init__(self) -> None:
        self._local = threading.local()

    @property
    def errors(self) -> list[tuple[str, BaseException]]:
        if not hasattr(self._local, "errors"):
            self._local.errors = []
        return self._local.errors

    def reraise(self) -> None:
        if self.errors:
            name, exc = self.errors[0]
            self.errors.clear()
            if not isinstance(exc, Exception):  # KeyboardInterrupt, SystemExit: not an error of the call
                raise exc
            raise RuntimeError_(f"environment function {name!r} raised {type(exc).__name__}: {exc}") from exc


def _make_callback(call: EnvCall, errors: _CallbackErrors) -> Any:
    """A ctypes function ``void(desc*...)`` that calls the Python function registered as ``call.name``."""
    dtypes = [np.dtype(d) for _, d in call.args]
    ranks = [r for r, _ in call.args]
    proto = ctypes.CFUNCTYPE(None, *[ctypes.POINTER(descriptor_class(r, dt)) for r, dt in zip(ranks, dtypes)])
    name = call.name

    def callback(*ptrs: Any) -> None:
        if errors.errors:  # an earlier callback of this call failed: skip the rest
            return
        try:
            arrays = [view(p, dt, r) for p, dt, r in zip(ptrs, dtypes, ranks)]
            get_func(name)(*arrays)
        except BaseException as exc:  # noqa: BLE001 - must not unwind through compiled code
            errors.errors.append((name, exc))

    return proto(callback)


class Executable:
    """A built graph module (course ``relax.Executable``): compiled code plus signatures."""

    def __init__(self, rt: RuntimeModule, signatures: dict[str, GraphSignature], env_calls: list[EnvCall],
                 errors: _CallbackErrors, source: Module, optimized: Module | None = None,
                 extent_checks: dict[str, tuple[ExtentCheck, ...]] | None = None):
        self.rt = rt
        #: per graph function: symbols that a called tensor program fixes to a static size
        self.extent_checks = dict(extent_checks or {})
        #: the module after graph optimization and legalization (before lowering)
        self.optimized = optimized
        self.signatures = signatures
        self.env_calls = env_calls
        self._errors = errors
        self.source = source

    @property
    def functions(self) -> list[str]:
        """Names of the graph functions that can be called."""
        return list(self.signatures)

    def get_source(self, fmt: str = "llvm") -> str:
        """The compiled code (``"mlir"``: lowered input, ``"llvm"``, ``"asm"``...; see ``mlc.build``)."""
        return self.rt.get_source(fmt)

    def __repr__(self) -> str:
        return f"<mlc.graph.Executable functions={self.functions}>"


def build(mod: Module, target: str = "llvm", *, opt_level: int = 2, op_map: dict | None = None,
          llvm_opt_level: int = 3, print_after_all: bool = False) -> Executable:
    """Compile the graph functions of ``mod`` (and the tensor programs they call).

    Args:
        mod: graph functions (``mlc`` dialect) and tensor programs.
        target: ``"llvm"`` (the host CPU).
        opt_level: the *graph* optimisation level (:mod:`.optimize`; ``mlc.build``'s
            ``opt_level`` is the LLVM level, here ``llvm_opt_level``): 0 none (one kernel per graph
            op), 1 ``FuseOps -> LegalizeOps -> FuseTIR``, 2 and 3 also the ewise_fma
            rewrite first.
        op_map: extra legalization rules, graph op name -> function (see ``LegalizeOps``).
        llvm_opt_level: LLVM optimisation level 0-3.
        print_after_all: print the IR after each stage.

    Raises:
        GraphError: the module has no graph function, fails :func:`verify_graph`, calls an
            environment function that is not registered, or cannot be lowered.
        BuildError: the compilation fails.
    """
    if not isinstance(mod, Module):
        raise GraphError(f"graph.build expects an mlc.Module, got {type(mod).__name__}")
    if str(target).split()[0] == "cuda":
        from .cuda import build_graph_cuda

        return build_graph_cuda(mod, target, opt_level=opt_level, op_map=op_map, llvm_opt_level=llvm_opt_level,
                                print_after_all=print_after_all)
    if str(target).split()[0] not in ("llvm", "cpu"):
        raise GraphError(f"graph.build: unsupported target {target!r}; supported: 'llvm'")
    state = Compilation()
    state.target = host_target(target)  # BuildError for a target this machine cannot run
    stages = build_stages(state, graph=True, opt_level=opt_level, op_map=op_map, target=target)
    errors = _CallbackErrors()

    def callbacks() -> dict[str, Any]:  # environment functions are known once lowered
        return {c.symbol: _make_callback(c, errors) for c in state.env_calls}

    rt = compile_module(mod, opt_level=llvm_opt_level, print_after_all=print_after_all, target=target,
                        stages=stages, state=state, callbacks=callbacks, after_call=errors.reraise)
    return Executable(rt, state.graph_signatures, state.env_calls, errors, mod, state.optimized,
                      state.extent_checks)


ExtentCheck = tuple[str, int, str]  # (symbol, static size, "@callee argument k dimension d")


def static_extent_checks(module: Any) -> dict[str, tuple[ExtentCheck, ...]]:
    """Per graph function: each symbol passed where a called tensor program has a static size.

    ``call_tir`` of ``@kern(tensor<2x3xf32>, ...)`` with ``x: (n, 3)`` is well-typed (a
    dynamic dimension meets a static one) but only correct for ``n == 2``: the executor
    checks that before running the compiled code. Call inside the shared context.
    """
    funcs = {func_name(op.operation): op.operation for op in module.body.operations
             if op.operation.name == "func.func"}
    out: dict[str, tuple[ExtentCheck, ...]] = {}
    for fop in graph_functions(module):
        shapes = value_shapes(fop)
        inputs = {d for arg in fop.regions[0].blocks[0].arguments if arg in shapes
                  for d in shapes[arg][0] if isinstance(d, str)}
        checks: dict[tuple[str, int], ExtentCheck] = {}
        for op in walk_ops(fop):
            if op.name != "mlc.call_tir" or "callee" not in op.attributes:
                continue
            callee = ir.FlatSymbolRefAttr(op.attributes["callee"]).value
            if callee not in funcs:
                continue
            params = ir.FunctionType(ir.TypeAttr(funcs[callee].attributes["function_type"]).value).inputs
            for k, (v, p) in enumerate(zip([*op.operands, op.results[0]], params)):
                if v not in shapes or not isinstance(p, (ir.RankedTensorType, ir.MemRefType)):
                    continue
                pt = ir.ShapedType(p)
                for d, dim in enumerate(shapes[v][0][:pt.rank]):
                    if isinstance(dim, str) and dim in inputs and not pt.is_dynamic_dim(d):
                        size = pt.get_dim_size(d)
                        checks.setdefault((dim, size), (dim, size, f"@{callee} argument {k} dimension {d}"))
        out[func_name(fop)] = tuple(checks.values())
    return out


class GraphFunction:
    """A callable graph function of a :class:`VirtualMachine`: ``f(*inputs) -> output(s)``."""

    def __init__(self, ex: Executable, sig: GraphSignature, device: Device):
        self.signature = sig
        self._compiled = ex.rt[sig.name]
        self._device = device
        self._checks = ex.extent_checks.get(sig.name, ())
        fast = ex.rt.fast_entry(sig.name, self._declined, after=ex.rt._after_call if ex.env_calls else None)
        if fast is not None:  # this instance's own class, whose __call__ is generated code
            self.__class__ = type("GraphFunction", (GraphFunction,), {"__call__": _fast_call(self, fast)})

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
            from .cuda import CudaGraphFunction

            kind = CudaGraphFunction if self.device.kind == "cuda" else GraphFunction
            self._funcs[name] = kind(self.executable, self.executable.signatures[name], self.device)
        return self._funcs[name]

