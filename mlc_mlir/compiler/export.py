"""``rt.export_library(path)``: a built module as one shared library (course ``export_library``).

The same code the JIT runs, compiled ahead of time::

    lowered LLVM-dialect module (the JIT's input, JitModule._lowered), minus the JIT's
    fast entries (they embed addresses of this process)
      -> mlir-translate --mlir-to-llvmir -> opt -O3 (the JIT's middle end) -> llc -O3
         -filetype=obj -relocation-model=pic, both with -mcpu/-mattr of the target
                                                           (the object: code and constants)
      -> cc -shared  object + generated C (:mod:`.export_c`: C and Python entries, packed
         wrappers, metadata, memrefCopy when needed)         (the library)

Only the listed symbols are exported (a version script): a kernel called ``main`` stays
local to the library, and the library's own references bind to its own definitions
(``-Bsymbolic``), so two models linked into one program do not call each other's code. OpenMP's ``__kmpc_*`` stay undefined: the loader (or a C program)
provides the OpenMP runtime. A path ending in ``.o`` writes the object alone (no C
compiler needed), and ``.ll`` the LLVM IR. :func:`mlc_mlir.runtime.load_module` reads the
library back without MLIR.

A CUDA build (``CudaModule``) goes the same way: its host code, compiled for the host CPU,
holds the kernel binaries as constants; the C file adds forwarders for the host code's
``mgpu*`` calls and the kernels' PTX (:mod:`.export_cuda`).
"""

from __future__ import annotations

import functools
import logging
import os
import re
import shutil
import subprocess
import tempfile
from importlib import resources
from pathlib import Path
from typing import Any

from mlir import ir

from ..context import mlc_context
from ..errors import BuildError
from ..runtime.library_format import abi_layout, encode, graph_metadata
from ..target import Target
from ..toolchain import tool_path
from .alloc_check import GETTER_SYMBOL
from .export_c import c_source, check_symbol_name
from .export_cuda import cuda_c_source, cuda_info

__all__ = ["export_library", "find_c_compiler", "object_code", "host_triple", "llc_flags", "VERSION_SCRIPT",
           "PROVIDED_SYMBOLS"]

log = logging.getLogger(__name__)

#: the library's exported symbols (everything else is local)
VERSION_SCRIPT = "{ global: mlc_*; _mlir_*; local: *; };\n"
#: undefined symbols of the object that come from MLIR's runtime libraries: the C file defines them
PROVIDED_SYMBOLS = {"memrefCopy"}


def find_c_compiler() -> str:
    """The system C compiler: ``$CC``, else ``cc``, ``gcc`` or ``clang`` on ``PATH``.

    Raises:
        BuildError: none found.
    """
    names = [os.environ["CC"]] if os.environ.get("CC") else ["cc", "gcc", "clang"]
    for name in names:
        found = shutil.which(name)
        if found:
            return found
    raise BuildError(f"export_library needs a C compiler to link the shared library and found none "
                     f"({' or '.join(names)} on PATH{'' if os.environ.get('CC') else ', or $CC'}): install one "
                     "(apt install gcc), or export the object code alone (a path ending in .o)")


def _run(argv: list[str], stdin: str | None = None) -> str:
    proc = subprocess.run(argv, input=stdin, capture_output=True, text=True)
    if proc.returncode != 0:
        raise BuildError(f"export_library: {' '.join(argv)} failed (exit {proc.returncode}):\n{proc.stderr[-4000:]}")
    return proc.stdout


@functools.lru_cache(maxsize=1)
def host_triple() -> str:
    """LLVM's default target triple here (``llc --version``), as the JIT's target machine has it."""
    m = re.search(r"Default target:\s*(\S+)", _run([tool_path("llc"), "--version"]))
    if m is None:
        raise BuildError("export_library: llc --version names no default target triple")
    return m.group(1)


def llc_flags(target: Target) -> list[str]:
    """Triple, ``-mcpu`` and ``-mattr`` for opt and llc: the target's CPU and ``-mattr``
    entries, or the host's (the vectorizer's costs and the instructions depend on them)."""
    cpu, feats = target.llvm_function_attrs()
    if cpu is None:  # the plain host target: LLVM's host detection, as the JIT's
        return [f"-mtriple={host_triple()}", "-mcpu=native"]
    return [f"-mtriple={host_triple()}", f"-mcpu={cpu}", *([f"-mattr={','.join(feats)}"] if feats else [])]


def _exportable_text(lowered: ir.Module) -> str:
    """The lowered module without the JIT's fast entries (they embed this process's addresses)."""
    with mlc_context():
        module = ir.Module.parse(str(lowered))
        for op in list(module.body.operations):
            attrs = op.operation.attributes
            name = ir.StringAttr(attrs["sym_name"]).value if "sym_name" in attrs else ""
            if name.startswith("mlc_pyfn_"):
                op.operation.erase()
        return str(module)


def object_code(rt: Any, out_dir: str) -> tuple[str, str]:
    """Compile the lowered module of ``rt`` (a ``JitModule``) to ``out_dir``: (LLVM IR path, object path).

    A CUDA build's host code (kernels embedded as constants) is compiled for the host CPU, as
    its JIT compiles it.
    """
    target = Target.of("llvm" if _is_cuda(rt) else rt.target)
    ll = os.path.join(out_dir, "module.ll")
    obj = os.path.join(out_dir, "module.o")
    Path(ll).write_text(_run([tool_path("mlir-translate"), "--mlir-to-llvmir"], _exportable_text(rt._lowered)))
    flags = llc_flags(target)
    # the JIT's own O3: LLVM's middle end (opt, for the target's vector width), then codegen
    opt_ll = os.path.join(out_dir, "module.opt.ll")
    _run([tool_path("opt"), "-O3", "-S", *flags, ll, "-o", opt_ll])
    _run([tool_path("llc"), "-O3", "-filetype=obj", "-relocation-model=pic", *flags, opt_ll, "-o", obj])
    return ll, obj


def _is_cuda(rt: Any) -> bool:
    return str(rt.target).split()[:1] == ["cuda"] and getattr(rt, "cuda", None) is not None


def _symbols(obj: str, *, undefined: bool) -> set[str]:
    flag = "--undefined-only" if undefined else "--defined-only"
    out = _run([tool_path("llvm-nm"), flag, "--format=just-symbols", obj])
    return {line.strip() for line in out.splitlines() if line.strip()}


def export_library(rt: Any, path: str, graph: Any = None) -> None:
    """Write ``rt`` (a ``JitModule`` or ``CudaModule``; ``graph``: its ``Executable``) as a
    library at ``path``.

    A CUDA build's library holds the host code, the kernels' binaries (cubin, or PTX when
    no ``ptxas`` was found) and their PTX; its ``mgpu*`` calls go through a table that
    :func:`mlc_mlir.runtime.load_module` fills (:mod:`.export_cuda`). It can be written
    where no GPU is.

    Raises:
        BuildError: a graph calling environment functions, no C compiler, a function name
            that cannot be a symbol, code needing an MLIR runtime library other than
            ``memrefCopy`` (and, for CUDA, the ``mgpu*`` functions of
            :mod:`mlc_mlir.runtime.mgpu`), or a failing tool.
    """
    cuda = _is_cuda(rt)
    if not cuda and not Target.of(rt.target).is_cpu:
        raise BuildError(f"export_library: modules built for {rt.target!r} cannot be exported (CPU targets "
                         "'llvm ...' and CUDA 'cuda ...' can)")
    for name in rt.signatures:
        check_symbol_name(name)
    path = os.fspath(path)
    with tempfile.TemporaryDirectory(prefix="mlc-export-") as tmp:
        ll, obj = object_code(rt, tmp)
        if path.endswith((".o", ".ll")):
            shutil.copyfile(obj if path.endswith(".o") else ll, path)
            return
        undefined = _symbols(obj, undefined=True)
        mlir_runtime = sorted(s for s in undefined - PROVIDED_SYMBOLS
                              if s.startswith(("_mlir", "mgpu", "print", "rtclock", "mlirAsync", "_mlir_ciface"))
                              and not (cuda and s.startswith("mgpu")))
        if mlir_runtime:
            raise BuildError(f"export_library: the compiled code calls {mlir_runtime} from MLIR's runtime "
                             "libraries, which an exported library does not carry")
        openmp = any(s.startswith(("__kmpc_", "omp_")) for s in undefined)
        abi = abi_layout() if rt._fast_plans else None
        plans = dict(rt._fast_plans) if abi is not None else {}
        alloc_flag = GETTER_SYMBOL in _symbols(obj, undefined=False) if cuda else rt._lookup(GETTER_SYMBOL) != 0
        info = cuda_info(rt, undefined) if cuda else None
        meta = encode(kind="graph" if graph is not None else "module", target=str(rt.target),
                      signatures=rt.signatures, plans=plans, abi=abi, alloc_check=alloc_flag, openmp=openmp,
                      graph=(graph_metadata(graph.signatures, graph.extent_checks, graph.memory_plan)
                             if graph is not None else None),
                      cuda=info)
        src = os.path.join(tmp, "entries.c")
        Path(src).write_text(c_source(rt.signatures, plans, abi, metadata=meta,
                                      has_alloc_flag=alloc_flag,
                                      memref_copy="memrefCopy" in undefined,
                                      cuda=cuda_c_source(info, rt.get_source("ptx")) if info else None))
        script = os.path.join(tmp, "exports.map")
        Path(script).write_text(VERSION_SCRIPT)
        include = resources.files("mlc_mlir.runtime") / "include"
        out = os.path.join(tmp, "module.so")
        _run([find_c_compiler(), "-shared", "-fPIC", "-O2", "-std=gnu11", f"-I{include}", "-o", out, obj, src,
              f"-Wl,--version-script={script}", "-Wl,-Bsymbolic", "-Wl,-z,noexecstack", "-lm"])
        shutil.move(out, path)
    log.info("exported %s (%s, %d bytes)", path, ", ".join(rt.signatures), os.path.getsize(path))
