"""``mlc.graph.build``: compile graph functions into an :class:`Executable` (course ``relax.build``).

    ex = mlc.graph.build(mod, target="llvm")
    vm = mlc.graph.VirtualMachine(ex, mlc.cpu())
    out = vm["main"](x, w0, b0, w1, b1)          # an mlc NDArray; out.numpy()

The build verifies the graph, optimizes it (``opt_level``, :mod:`..transform.optimize`: fusion
into fewer tensor programs), legalizes the remaining graph ops, lowers each graph
function to a destination-passing function of calls (:mod:`..transform.lower`) and compiles the
whole module to native code with ``mlc.build``'s pipeline; calls of tensor programs are
inlined first, so a graph made of tensor programs is one compiled function. The code is
compiled ahead of time into a shared library that the persistent compile cache keeps
(:mod:`.cached`: a second build of the same module loads it), or, with the cache off, by the
JIT (a module with more than 10 MB of code into a library, faster there:
:mod:`mlc_mlir.compiler.aot`). Environment functions (``call_dps_packed``) are external
functions of that code, registered on the JIT (always used for them) as ctypes callbacks:
each call hands the registered Python function zero-copy NumPy views of its arguments. An
exception raised inside one is kept and re-raised as :class:`RuntimeError_` when the
compiled call returns.
The virtual machine that runs the result is :mod:`mlc_mlir.runtime.vm` (no MLIR).
"""

from __future__ import annotations

import logging
import os
from typing import Any

from mlir import ir

from ...compiler import Compilation, compile
from ...compiler.compile_cache import cache_root
from ...errors import GraphError
from ...irutil import symbol_ops
from ...target import resolve_tag
from ...ir import Module
from ..ir.analysis import func_name, graph_functions, value_shapes, walk_ops
from .cached import cached_build
from ...runtime.vm import CallbackErrors, Executable, ExtentCheck, make_callback

__all__ = ["build", "static_extent_checks"]

log = logging.getLogger(__name__)


def build(mod: Module, target: str = "llvm", *, opt_level: int = 2, op_map: dict | None = None,
          llvm_opt_level: int = 3, print_after_all: bool = False,
          cache: bool | str | os.PathLike[str] = True) -> Executable:
    """Compile the graph functions of ``mod`` (and the tensor programs they call).

    Args:
        mod: graph functions (``mlc`` dialect) and tensor programs.
        target: ``"llvm"`` (the host CPU).
        opt_level: the *graph* optimisation level (:mod:`..transform.optimize`; ``mlc.build``'s
            ``opt_level`` is the LLVM level, here ``llvm_opt_level``): 0 none (one kernel per graph
            op), 1 ``FuseOps -> LegalizeOps -> FuseTIR``, 2 and 3 also the ewise_fma
            rewrite first.
        op_map: extra legalization rules, graph op name -> function (see ``LegalizeOps``).
        llvm_opt_level: LLVM optimisation level 0-3.
        print_after_all: print the IR after each stage.
        cache: the persistent compile cache (:mod:`mlc_mlir.compiler.compile_cache`): True
            (``$MLC_CACHE_DIR``, else ``$XDG_CACHE_HOME/mlc-mlir`` or ``~/.cache/mlc-mlir``;
            ``MLC_CACHE_DIR=off`` turns it off), False, or a directory. A second build of the
            same module and options loads the first one's library. Builds with an ``op_map``,
            ``print_after_all``, environment functions (``call_dps_packed``) or for CUDA bypass it.

    Raises:
        GraphError: the module has no graph function, fails :func:`verify_graph`, calls an
            environment function that is not registered, or cannot be lowered.
        BuildError: the compilation fails.
    """
    if not isinstance(mod, Module):
        raise GraphError(f"graph.build expects an mlc.Module, got {type(mod).__name__}")
    target = resolve_tag(str(target))  # TVM's tags: "nvidia/tesla-p100" is a cuda target
    kind = target.split()[0] if target.strip() else ""
    if kind not in ("llvm", "cpu", "cuda"):
        raise GraphError(f"graph.build: unsupported target {target!r}; supported: 'llvm', 'cuda'")
    if not graph_functions(mod.mlir_module):
        raise GraphError("graph.build: the module has no graph function (build tensor programs with mlc.build)")
    if kind == "cuda":
        from .cuda import build_graph_cuda  # here, not at the top: graph.vm.cuda imports this module

        return build_graph_cuda(mod, target, opt_level=opt_level, op_map=op_map, llvm_opt_level=llvm_opt_level,
                                print_after_all=print_after_all)

    def fresh(library_dir: str | None) -> Executable:
        errors = CallbackErrors()

        def callbacks(state: Compilation) -> dict[str, Any]:  # environment functions are known once lowered
            return {c.symbol: make_callback(c, errors) for c in state.env_calls}

        built = compile(mod, target, opt_level=llvm_opt_level, graph_opt_level=opt_level, op_map=op_map,
                        print_after_all=print_after_all, callbacks=callbacks, after_call=errors.reraise,
                        library_dir=library_dir)
        state = built.state
        ex = Executable(built.runtime, state.graph_signatures, state.env_calls, errors, mod, state.optimized,
                        state.extent_checks, state.memory_plans)
        for name, plan in ex.memory_plan.items():
            log.info("memory plan of %s: %s", name, plan)
        return ex

    root = cache_root(cache) if op_map is None and not print_after_all else None
    if root is None:
        return fresh(None)
    return cached_build(mod, target, root, opt_level=opt_level, llvm_opt_level=llvm_opt_level, build=fresh)




def static_extent_checks(module: Any) -> dict[str, tuple[ExtentCheck, ...]]:
    """Per graph function: each symbol passed where a called tensor program has a static size.

    ``call_tir`` of ``@kern(tensor<2x3xf32>, ...)`` with ``x: (n, 3)`` is well-typed (a
    dynamic dimension meets a static one) but only correct for ``n == 2``: the executor
    checks that before running the compiled code. Call inside the shared context.
    """
    funcs = symbol_ops(module)
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
