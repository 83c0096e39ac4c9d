"""Ahead-of-time code generation: a lowered module -> one shared library, kernels compiled in parallel.

The JIT (:mod:`.cpu_backend`) compiles a whole module on one thread, and on large modules it
is slower than LLVM's own tools on the same code (ResNet-18 at 224: 12 s, against 6.5 s
through opt and llc on one core, 5 s on two). This path compiles the LLVM dialect module
the JIT would get into
the library format of ``export_library`` (:mod:`.export`, :mod:`mlc_mlir.runtime.library_format`),
which :func:`mlc_mlir.runtime.load_module` loads::

    lowered module (LLVM dialect), minus the JIT's fast entries
      weights (dense_resource globals) -> external declarations     -> code.mlir
                                       -> their bytes, .incbin'd    -> weights.s + weights.bin
      code.mlir -> mlir-translate -> llvm-split (one part per function group)
                -> opt -O<n> | llc -O<n> -relocation-model=pic per part, in parallel (the host's cores)
      cc -shared  parts + weights + the export's C entries (:mod:`.export_c`)  -> lib.so

The result is a :class:`LibraryModule` with sources (:class:`AotModule`): ``get_source``
reads ``code.mlir`` (the LLVM dialect without the weights' bytes) and ``source.mlir``
next to the library, ``"asm"`` disassembles the library. The compile cache
(:mod:`.compile_cache`) stores that directory as it is.
"""

from __future__ import annotations

import binascii
import logging
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from mlir import ir

from ..context import mlc_context
from ..errors import BuildError, MlcError
from ..irutil import sym_name
from ..runtime.library_format import abi_layout, encode, graph_metadata
from ..runtime.loader import LibraryModule, load_module
from ..runtime.vm import Executable
from ..target import Target
from ..toolchain import tool_path
from .alloc_check import GETTER_SYMBOL
from .export import PROVIDED_SYMBOLS, VERSION_SCRIPT, llc_flags, export_library, find_c_compiler
from .export_c import c_source, check_symbol_name
from .pipeline import Compilation

__all__ = ["write_library", "load_library", "code_text", "CodeText", "AotModule", "build_jobs", "LIBRARY", "CODE",
           "SOURCE", "AOT_MIN_CODE", "resource_spans"]

log = logging.getLogger(__name__)

#: the files of a library directory
LIBRARY, CODE, SOURCE = "lib.so", "code.mlir", "source.mlir"
#: without a compile cache, modules with more code than this (LLVM dialect text, characters)
#: are compiled into a library (kernels in parallel) rather than by the JIT: ResNet-18 (224,
#: 4.4 MB since its convolutions have row-copy im2cols) built in 21.2 s by the JIT, 14.1 s
#: this way; MobileNet-v2 (224, 3.4 MB) 15.5 -> 10.8 s; a BERT layer (d 768, 2.5 MB) 5.6
#: -> 5.3 s; a GPT-2 block (1.3 MB) the same either way (3.7-4.3 s; 2 cores). With its
#: convolutions in bands ResNet-18 is 1.9 MB: on a 2-core Zen 3 the JIT took 30.4 s, this
#: way 13.9 s (the GPT-2 block, 1.1 MB, 7.3 / 7.4 s; BERT d256, 1.3 MB, 6.0 / 5.7 s)
AOT_MIN_CODE = 1_000_000
#: functions per llvm-split part: more parts than cores balance uneven kernels
_PARTS_PER_JOB = 3
#: and at least this much code (LLVM dialect text) per part: a small module is one part
_CODE_PER_PART = 500_000
_RESOURCE = re.compile(r"dense_resource<(\"(?:[^\"\\]|\\.)*\"|[^>]+)>")


def build_jobs() -> int:
    """Parallel code generation jobs: ``$MLC_BUILD_JOBS``, else the cores this process may run on."""
    env = os.environ.get("MLC_BUILD_JOBS", "")
    if env.isdigit() and int(env) >= 1:
        return int(env)
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _run(argv: list[str], stdin: str | None = None) -> str:
    proc = subprocess.run(argv, input=stdin, capture_output=True, text=True)
    if proc.returncode != 0:
        raise BuildError(f"code generation: {' '.join(argv)} failed (exit {proc.returncode}):\n"
                         f"{proc.stderr[-4000:]}")
    return proc.stdout


@dataclass(frozen=True)
class _Weight:
    """A constant global whose bytes live in the weights object: symbol, resource, alignment."""

    symbol: str
    resource: str
    alignment: int


def _is_resource(attr: ir.Attribute) -> bool:
    try:
        ir.DenseResourceElementsAttr(attr)
    except (ValueError, TypeError):
        return False
    return True


@dataclass
class CodeText:
    """A lowered module as the library build compiles it (:func:`code_text`)."""

    #: the module's text: weights as external declarations, no fast entries
    code: str
    weights: list[_Weight]
    #: the globals holding the weights (their bytes: :func:`_weight_bytes`)
    holders: list[ir.Operation]
    #: whether the module defines the allocation-flag getter (:mod:`.alloc_check`)
    has_getter: bool
    #: functions with a body
    functions: int


def code_text(lowered: ir.Module) -> CodeText:
    """The code of ``lowered`` without its weights' bytes (inside the shared context).

    Printed op by op (a clone of the whole module would copy every function first).
    """
    weights: list[_Weight] = []
    holders: list[ir.Operation] = []
    has_getter, functions = False, 0
    external = ir.Attribute.parse("#llvm.linkage<external>")
    attrs_text = ", ".join(f"{a.name} = {a.attr}" for a in lowered.operation.attributes)
    lines = [f"module attributes {{{attrs_text}}} {{" if attrs_text else "module {"]
    for op in lowered.body.operations:
        op = op.operation
        name = sym_name(op) if "sym_name" in op.attributes else ""
        if name.startswith("mlc_pyfn_"):  # the JIT's fast entries: the C file has its own
            continue
        if op.name == "llvm.func" and len(op.regions[0].blocks):
            functions += 1
            has_getter = has_getter or name == GETTER_SYMBOL
        if op.name == "llvm.mlir.global" and "value" in op.attributes and _is_resource(op.attributes["value"]):
            m = _RESOURCE.match(str(op.attributes["value"]))
            assert m is not None, op.attributes["value"]
            align = ir.IntegerAttr(op.attributes["alignment"]).value if "alignment" in op.attributes else 16
            weights.append(_Weight(name, m.group(1).strip('"'), max(align, 16)))
            holders.append(op)
            decl = op.clone()
            del decl.attributes["value"]
            decl.attributes["linkage"] = external
            decl.attributes["dso_local"] = ir.UnitAttr.get()
            lines.append(decl.get_asm(use_local_scope=True))
        else:
            lines.append(op.get_asm(use_local_scope=True))
    lines.append("}\n")
    return CodeText("\n".join(lines), weights, holders, has_getter, functions)


def resource_spans(data: bytes) -> list[tuple[str, int, int]]:
    """(name, start, end) of each blob's hex (after ``0x``) in a printed module's resource section
    (``name: "0x<alignment><bytes>"`` lines after ``{-#``); [] without one. No regular
    expression runs over the hex: ResNet-18's is 93 MB."""
    split = data.rfind(b"{-#")
    if split < 0 or not data[-64:].rstrip().endswith(b"#-}"):
        return []
    spans, pos = [], split
    while (colon := data.find(b': "0x', pos)) >= 0:
        name = data[data.rfind(b"\n", split, colon) + 1:colon].strip().strip(b'"').decode()
        end = data.find(b'"', colon + 5)
        spans.append((name, colon + 5, end))
        pos = end + 1
    return spans


def _weight_bytes(holders: Sequence[ir.Operation]) -> dict[str, bytes]:
    """resource name -> bytes of the weights ``holders`` hold (the bindings give no access to a
    blob but its printed text: hex, after the blob's 4-byte alignment)."""
    if not holders:
        return {}
    module = ir.Module.create()
    for op in holders:
        op.clone(ip=ir.InsertionPoint(module.body))
    data = module.operation.get_asm(large_elements_limit=None, assume_verified=True, binary=True)
    view = memoryview(data)
    return {name: binascii.a2b_hex(view[start + 8:end]) for name, start, end in resource_spans(data)}


def _weights_asm(weights: Sequence[_Weight], blobs: dict[str, bytes], bin_path: str) -> str:
    """An assembly file defining each weight symbol over its bytes in ``bin_path`` (one .incbin each)."""
    lines = ['\t.section .rodata.mlc_weights,"a",@progbits']
    offset = 0
    with open(bin_path, "wb") as f:
        for w in weights:
            data = blobs.get(w.resource)
            if data is None:
                raise BuildError(f"code generation: the bytes of resource {w.resource!r} (@{w.symbol}) were "
                                 "not found in the module")
            f.write(data)
            lines += [f"\t.globl {w.symbol}", f"\t.hidden {w.symbol}", f"\t.type {w.symbol},@object",
                      f"\t.balign {w.alignment}", f"{w.symbol}:",
                      f'\t.incbin "{bin_path}", {offset}, {len(data)}' if data else "\t.zero 1",
                      f"\t.size {w.symbol}, {len(data)}"]
            offset += len(data)
    lines.append('\t.section .note.GNU-stack,"",@progbits')
    return "\n".join(lines) + "\n"


def _symbols(objects: Sequence[str]) -> tuple[set[str], set[str]]:
    """(defined, undefined) global symbols of ``objects``."""
    out = _run([tool_path("llvm-nm"), "--format=posix", "--extern-only", *objects])
    defined: set[str] = set()
    undefined: set[str] = set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) >= 2 and not line.endswith(":"):
            (undefined if parts[1] in ("U", "w", "v") else defined).add(parts[0])
    return defined, undefined - defined


def _compile_parts(ll: str, tmp: str, flags: list[str], opt_level: int, jobs: int, text: CodeText) -> list[str]:
    """``ll`` split into parts, each through opt and llc; the objects (in parallel, ``jobs`` at a time)."""
    parts = max(1, min(text.functions, jobs * _PARTS_PER_JOB, len(text.code) // _CODE_PER_PART)) if jobs > 1 else 1
    if parts > 1:
        _run([tool_path("llvm-split"), f"-j{parts}", "--round-robin", "-o", os.path.join(tmp, "part"), ll])
        inputs = [os.path.join(tmp, f"part{i}") for i in range(parts)]
    else:
        inputs = [ll]

    def compile_one(src: str) -> str:
        opt_bc, obj = src + ".opt.bc", src + ".o"
        _run([tool_path("opt"), f"-O{opt_level}", *flags, src, "-o", opt_bc])
        _run([tool_path("llc"), f"-O{opt_level}", "-filetype=obj", "-relocation-model=pic", *flags, opt_bc,
              "-o", obj])
        return obj

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        return list(pool.map(compile_one, inputs))


def write_library(lowered: ir.Module, state: Compilation, out_dir: str, *, target: Target, opt_level: int = 3,
                  source: str = "", graph: bool = False, jobs: int | None = None, text: CodeText | None = None) -> str:
    """Compile ``lowered`` (the CPU pipeline's LLVM dialect module) into ``out_dir/lib.so``; also
    write ``code.mlir`` and ``source.mlir`` there. Returns the library's path.

    ``text``: :func:`code_text` of ``lowered``, when the caller has it already.

    Raises:
        BuildError: a function name that cannot be a symbol, code calling MLIR's runtime
            libraries, no C compiler, a failing tool.
    """
    for name in state.signatures:
        check_symbol_name(name)
    jobs = jobs or build_jobs()
    cc = find_c_compiler()
    with mlc_context():
        text = text or code_text(lowered)
        blobs = _weight_bytes(text.holders)
    weights, has_getter = text.weights, text.has_getter
    Path(out_dir, CODE).write_text(text.code)
    Path(out_dir, SOURCE).write_text(source)
    flags = llc_flags(target)
    with tempfile.TemporaryDirectory(prefix="mlc-aot-") as tmp:
        ll = os.path.join(tmp, "code.ll")
        _run([tool_path("mlir-translate"), "--mlir-to-llvmir", os.path.join(out_dir, CODE), "-o", ll])
        weights_s = os.path.join(tmp, "weights.s")
        Path(weights_s).write_text(_weights_asm(weights, blobs, os.path.join(tmp, "weights.bin")))
        del blobs
        objects = _compile_parts(ll, tmp, flags, opt_level, jobs, text)
        defined, undefined = _symbols(objects)
        mlir_runtime = sorted(s for s in undefined - PROVIDED_SYMBOLS
                              if s.startswith(("_mlir", "mgpu", "print", "rtclock", "mlirAsync")))
        if mlir_runtime:
            raise BuildError(f"code generation: the compiled code calls {mlir_runtime} from MLIR's runtime "
                             "libraries, which a library does not carry")
        openmp = any(s.startswith(("__kmpc_", "omp_")) for s in undefined)
        abi = abi_layout() if state.plans else None
        plans = dict(state.plans) if abi is not None else {}
        meta = encode(kind="graph" if graph else "module", target=str(target), signatures=state.signatures,
                      plans=plans, abi=abi, alloc_check=has_getter, openmp=openmp,
                      graph=(graph_metadata(state.graph_signatures, state.extent_checks, state.memory_plans)
                             if graph else None))
        entries = os.path.join(tmp, "entries.c")
        Path(entries).write_text(c_source(state.signatures, plans, abi, metadata=meta, has_alloc_flag=has_getter,
                                          memref_copy="memrefCopy" in undefined))
        script = os.path.join(tmp, "exports.map")
        Path(script).write_text(VERSION_SCRIPT)
        include = resources.files("mlc_mlir.runtime") / "include"
        out = os.path.join(out_dir, LIBRARY)
        _run([cc, "-shared", "-fPIC", "-O2", "-std=gnu11", f"-I{include}", "-o", out, *objects, weights_s, entries,
              f"-Wl,--version-script={script}", "-Wl,-Bsymbolic", "-Wl,-z,noexecstack", "-lm"])
    log.debug("library %s: %d parts, %d weights, %d bytes", out, len(objects), len(weights), os.path.getsize(out))
    return out


class AotModule(LibraryModule):
    """A library compiled by this process's build (or found in the compile cache), with its sources.

    ``get_source``: ``"mlir"`` (the module code generation started from), ``"llvm-dialect"``
    (after the pipeline; the weights are external declarations, their bytes are in the
    library), ``"llvm"`` (that, translated), ``"asm"`` (the library disassembled).
    """

    #: the LLVM dialect module of a fresh build (None from the compile cache)
    _lowered: ir.Module | None = None

    @classmethod
    def adopt(cls, rt: LibraryModule, lowered: ir.Module | None = None) -> AotModule:
        """``rt`` (from ``load_module``) as an AotModule: the same loaded code and state;
        ``lowered``: the LLVM dialect module it was compiled from (for ``.o``/``.ll`` exports)."""
        new = cls(rt.path, rt.metadata, lookup=rt._lookup, signatures=rt.signatures, target=rt.target,
                  after_call=rt._after, keep_alive=rt._keep_alive, fast_plans=rt._fast_plans)
        new._lowered = lowered
        return new

    def _file(self, name: str) -> Path:
        path = Path(self.path).parent / name
        if not path.is_file():
            raise BuildError(f"get_source: {path} is gone (the compile cache was cleared?); rebuild the module")
        return path

    def get_source(self, fmt: str = "llvm") -> str:
        """Source of the compiled code (see the class docstring)."""
        if fmt == "mlir":
            return self._file(SOURCE).read_text()
        if fmt == "llvm-dialect":
            return self._file(CODE).read_text()
        if fmt in ("llvm", "ll"):
            return _run([tool_path("mlir-translate"), "--mlir-to-llvmir", str(self._file(CODE))])
        if fmt in ("asm", "s"):
            path = str(self._file(os.path.basename(self.path)))
            out = _run([tool_path("llvm-objdump"), "-d", "--no-show-raw-insn", "--symbolize-operands", path])
            return out.replace(path, "<library>")
        raise MlcError(f"get_source: unknown format {fmt!r}; use 'mlir', 'llvm-dialect', 'llvm' or 'asm'")

    def _export_library(self, path: str, graph: Any = None) -> None:
        """``.so``: a copy of the library; ``.o`` / ``.ll``: the export's own path on the lowered
        module, which a fresh build keeps (a module from the compile cache has the library only)."""
        if path.endswith((".o", ".ll")):
            if self._lowered is None:
                raise BuildError(f"export_library({path!r}): this module came from the compile cache, which keeps "
                                 "the shared library only: export a .so, or build with cache=False for the "
                                 "object code or LLVM IR")
            export_library(self, path, graph)
            return
        if not os.path.isfile(self.path):
            raise BuildError(f"export_library: {self.path} is gone (the compile cache was cleared?); rebuild")
        super()._export_library(path, graph)

    def __repr__(self) -> str:
        return f"<mlc.compiler.AotModule {self.path} functions={self.functions}>"


def load_library(path: str, lowered: ir.Module | None = None) -> AotModule:
    """Load a library written by :func:`write_library` (``load_module``, then its sources attached)."""
    loaded = load_module(path)
    rt = loaded.rt if isinstance(loaded, Executable) else loaded
    assert isinstance(rt, LibraryModule), type(rt)
    return AotModule.adopt(rt, lowered)
