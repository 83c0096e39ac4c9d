"""What an exported library carries besides its code: the metadata, as data (no MLIR).

``rt.export_library(path)`` (the compiler's ``mlc_mlir.compiler.export``) writes one shared
library whose C string ``mlc_module_metadata`` is this JSON object, and
:func:`mlc_mlir.runtime.load_module` reads it back::

    {"format": "mlc-mlir-library", "version": 1, "kind": "module" | "graph", "target": "llvm ...",
     "functions": [{"name": "mm_relu", "args": [ArgSpec fields...]}, ...],
     "fast": {"abi": {"ob_type": 8, "data": 16, ..., "tuple_items": 24},
              "dtypes": ["float32", ...], "plans": [{"name", "dims", "dtypes", "outputs"}, ...]},
     "alloc_check": true, "openmp": false,
     "graph": {"functions": [{"name", "inputs": [...], "outputs": [...]}],
               "extent_checks": {"main": [["n", 2, "@kern argument 0 dimension 0"], ...]},
               "memory_plan": {"main": {"intermediates": 20, "buffers": 3, ...}}},
     "cuda": {"arch": "sm_90", "format": "bin" | "isa", "images": 1,
              "entries": ["mgpuLaunchKernel", ...]}}

``cuda`` is there for a CUDA build only (version 2: a runtime that reads version 1 only
refuses the library instead of calling into a table it would not fill). Its code calls
the ``mgpu*`` entries of MLIR's ``gpu-to-llvm`` host code; the library defines them as
forwarders through its table ``mlc_mgpu_table`` (one slot per ``entries`` name, in that
order), which the loader fills with the functions of
:class:`~mlc_mlir.runtime.mgpu.KernelRuntime` before ``mlc_cuda_load()`` loads the
``images`` kernel binaries (cubin, or PTX for ``"isa"``) that the library's constructors
recorded when it was opened (:mod:`.cuda_library`).

The fast entries of the library (``mlc_pyfn_<name>``, CPython ``METH_FASTCALL`` functions
written in C at export time) read NumPy's array fields at the ``abi`` offsets of the
exporting process and compare objects with the addresses in the library's table
``mlc_py_table``: the loader fills the table in its own process (:data:`PY_SLOTS`, then one
dtype per ``fast.dtypes`` entry) and uses the entries only when its own layout
(:func:`abi_layout`) equals the recorded one; otherwise every call takes the checked path.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import RuntimeError_
from .fastcall import FastPlan, ndarray_layout, wrapper_layout
from .signature import ArgSpec, FuncSignature
from .vm import GraphSignature, MemoryPlan, TensorSpec

__all__ = ["FORMAT", "VERSION", "METADATA_SYMBOL", "TABLE_SYMBOL", "MGPU_TABLE_SYMBOL", "CUDA_LOAD_SYMBOL",
           "PTX_SYMBOL", "PY_SLOTS", "abi_layout", "encode", "decode", "Metadata", "CudaInfo"]

FORMAT = "mlc-mlir-library"
#: the newest format version this runtime reads: 1 (CPU libraries), 2 (with a ``cuda`` part)
VERSION = 2
#: the C symbols of an exported library that the loader reads
METADATA_SYMBOL = "mlc_module_metadata"
TABLE_SYMBOL = "mlc_py_table"
#: CUDA libraries: the table of ``mgpu*`` functions, the kernel loader, the kernels' PTX
MGPU_TABLE_SYMBOL = "mlc_mgpu_table"
CUDA_LOAD_SYMBOL = "mlc_cuda_load"
PTX_SYMBOL = "mlc_cuda_ptx"
#: the first entries of the library's table: objects and C-API functions of the loading process
PY_SLOTS = ("numpy.ndarray", "None", "PyObject_VectorcallDict", "PyEval_SaveThread", "PyEval_RestoreThread",
            "Py_IncRef", "Py_DecRef", "mlc_mlir.runtime.NDArray")


def abi_layout() -> dict[str, int] | None:
    """Byte offsets the fast entries read in this process (NumPy's array fields, a tuple's
    first item, the array in an ``NDArray``: -1 when unknown), or None when NumPy's layout
    does not read back (no fast entries)."""
    lay = ndarray_layout()
    if lay is None:
        return None
    wrapper = wrapper_layout()
    return {**lay, "tuple_items": tuple.__basicsize__, "wrapper_data": -1 if wrapper is None else wrapper}


@dataclass(frozen=True)
class CudaInfo:
    """The ``cuda`` part of the metadata: the chip and binary format of the kernels, how many
    kernel images the library holds, the ``mgpu*`` functions its table forwards to."""

    arch: str
    format: str
    images: int
    entries: tuple[str, ...]


class Metadata:
    """The decoded metadata of a library: signatures, fast plans, graph signatures."""

    def __init__(self, obj: dict[str, Any]):
        self.kind: str = obj["kind"]
        self.target: str = obj["target"]
        self.signatures = {f["name"]: _signature(f) for f in obj["functions"]}
        fast = obj.get("fast") or {}
        self.abi: dict[str, int] | None = fast.get("abi")
        self.dtypes = [np.dtype(d) for d in fast.get("dtypes", [])]
        self.plans = {p["name"]: FastPlan(p["name"], tuple(tuple(d) for d in p["dims"]),
                                          tuple(np.dtype(d) for d in p["dtypes"]), tuple(p["outputs"]))
                      for p in fast.get("plans", [])}
        self.alloc_check: bool = bool(obj.get("alloc_check"))
        self.openmp: bool = bool(obj.get("openmp"))
        graph = obj.get("graph") or {}
        self.graph_signatures = {g["name"]: GraphSignature(g["name"], _specs(g["inputs"]), _specs(g["outputs"]))
                                 for g in graph.get("functions", [])}
        self.extent_checks = {name: tuple((c[0], int(c[1]), c[2]) for c in checks)
                              for name, checks in graph.get("extent_checks", {}).items()}
        self.memory_plan = {name: MemoryPlan.from_json(plan) for name, plan in graph.get("memory_plan", {}).items()}
        cuda = obj.get("cuda")
        self.cuda = None if cuda is None else CudaInfo(str(cuda["arch"]), str(cuda["format"]), int(cuda["images"]),
                                                       tuple(cuda["entries"]))


def encode(*, kind: str, target: str, signatures: dict[str, FuncSignature], plans: dict[str, FastPlan],
           abi: dict[str, int] | None, alloc_check: bool, openmp: bool,
           graph: dict[str, Any] | None = None, cuda: CudaInfo | None = None) -> str:
    """The metadata JSON of a library (see the module docstring); ``graph`` from :func:`graph_metadata`.

    A CPU library is written as version 1 (every runtime since the format exists reads it),
    a CUDA library as version 2.
    """
    dtypes = sorted({str(d) for p in plans.values() for d in p.dtypes})
    obj: dict[str, Any] = {
        "format": FORMAT, "version": 1 if cuda is None else 2, "kind": kind, "target": target,
        "functions": [{"name": s.name, "args": [_arg_json(a) for a in s.args]} for s in signatures.values()],
        "fast": {"abi": abi, "dtypes": dtypes,
                 "plans": [{"name": p.name, "dims": [list(d) for d in p.dims], "dtypes": [str(d) for d in p.dtypes],
                            "outputs": list(p.outputs)} for p in plans.values()]},
        "alloc_check": alloc_check, "openmp": openmp}
    if graph is not None:
        obj["graph"] = graph
    if cuda is not None:
        obj["cuda"] = {"arch": cuda.arch, "format": cuda.format, "images": cuda.images,
                       "entries": list(cuda.entries)}
    return json.dumps(obj, separators=(",", ":"))


def graph_metadata(signatures: dict[str, GraphSignature], extent_checks: dict[str, tuple],
                   memory_plan: dict[str, MemoryPlan] | None = None) -> dict[str, Any]:
    """The ``graph`` part of the metadata of a built graph (an :class:`~.vm.Executable`)."""
    def specs(items: tuple[TensorSpec, ...]) -> list[dict[str, Any]]:
        return [{"name": t.name, "shape": list(t.shape), "dtype": t.dtype} for t in items]

    return {"functions": [{"name": g.name, "inputs": specs(g.inputs), "outputs": specs(g.outputs)}
                          for g in signatures.values()],
            "extent_checks": {name: [list(c) for c in checks] for name, checks in extent_checks.items()},
            "memory_plan": {name: plan.to_json() for name, plan in (memory_plan or {}).items()}}


def decode(text: str, where: str) -> Metadata:
    """The metadata of the library at ``where`` from its JSON text.

    Raises:
        RuntimeError_: not this project's format, or a newer version than this runtime reads.
    """
    try:
        obj = json.loads(text)
    except ValueError as exc:
        raise RuntimeError_(f"{where}: the library's metadata is not JSON ({exc})") from None
    if not isinstance(obj, dict) or obj.get("format") != FORMAT:
        raise RuntimeError_(f"{where}: not a library exported by mlc-mlir (metadata format "
                            f"{obj.get('format') if isinstance(obj, dict) else None!r})")
    if obj.get("version") not in range(1, VERSION + 1):
        raise RuntimeError_(f"{where}: library format version {obj.get('version')!r}; this runtime reads "
                            f"versions 1 to {VERSION} (export it again with this version of mlc-mlir)")
    try:
        return Metadata(obj)
    except (KeyError, TypeError, IndexError, ValueError) as exc:
        raise RuntimeError_(f"{where}: malformed library metadata ({type(exc).__name__}: {exc})") from None


def _arg_json(a: ArgSpec) -> dict[str, Any]:
    return {"name": a.name, "elem": a.elem, "shape": list(a.shape), "symbols": list(a.symbols),
            "is_output": a.is_output, "strides": None if a.strides is None else list(a.strides),
            "offset": a.offset}


def _signature(f: dict[str, Any]) -> FuncSignature:
    args = tuple(ArgSpec(a["name"], a["elem"], tuple(a["shape"]), tuple(a["symbols"]), bool(a["is_output"]),
                         None if a["strides"] is None else tuple(a["strides"]), a["offset"]) for a in f["args"])
    return FuncSignature(f["name"], args)


def _specs(items: list[dict[str, Any]]) -> tuple[TensorSpec, ...]:
    return tuple(TensorSpec(t["name"], tuple(t["shape"]), t["dtype"]) for t in items)
