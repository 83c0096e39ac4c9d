"""The CUDA part of an exported library: the host code's ``mgpu*`` calls, without MLIR's runtime.

The host code of a CUDA build (``gpu-to-llvm``) calls ``mgpu*`` functions, which the JIT
binds to :class:`~mlc_mlir.runtime.mgpu.KernelRuntime` (NVIDIA's ``cuda-python``) instead
of ``libmlir_cuda_runtime.so``. An exported library cannot bind them at link time, so the C
file defines each one the object calls as a forwarder through ``mlc_mgpu_table``, which the
loader fills with the same ``KernelRuntime`` functions (:mod:`mlc_mlir.runtime.cuda_library`)::

    void mgpuLaunchKernel(void *a0, int64_t a1, ...) {      /* one per mgpu* the code calls */
      ((void (*)(void *, int64_t, ...))mlc_mgpu_table[k])(a0, a1, ...); }

The kernel binaries are ``internal constant`` arrays of the object, handed to
``mgpuModuleLoad`` (cubin) or ``mgpuModuleLoadJIT`` (PTX) by its global constructors, which
run when the library is opened, before any table can be filled: those two only record the
image (no CUDA call, so opening the library needs no GPU) and return a slot as the module
handle; ``mlc_cuda_load()``, called by the loader after filling the table, loads the
recorded images through the table's ``mgpuModuleLoad``; ``mgpuModuleGetFunction`` looks
kernels up in the slot's module. The kernels stay loaded as long as the process (as the
library's code: the loader never closes a library), so ``mgpuModuleUnload`` (the
destructor, at exit) does nothing. ``mlc_cuda_image(i, &data, &size)`` gives the recorded
images and ``mlc_cuda_ptx`` the kernels' PTX, for inspection.
"""

from __future__ import annotations

import ctypes
from typing import Any

from ..errors import BuildError
from ..runtime.library_format import CUDA_LOAD_SYMBOL, MGPU_TABLE_SYMBOL, PTX_SYMBOL, CudaInfo
from ..runtime.mgpu import ENTRY_POINTS
from .export_c import c_string

__all__ = ["cuda_info", "cuda_c_source"]

#: defined by hand in the C file (module handles are the library's image slots)
_MODULE_ENTRIES = ("mgpuModuleLoad", "mgpuModuleLoadJIT", "mgpuModuleUnload", "mgpuModuleGetFunction")


def _c_type(ctype: Any) -> str:
    """The C spelling of a ctypes type of :data:`ENTRY_POINTS` (None: ``void``)."""
    if ctype is None:
        return "void"
    code = ctype._type_
    if code == "P":
        return "void *"
    if code == "z":
        return "const char *"
    if code in "bBhHiIlLqQ":
        return f"{'u' if code.isupper() else ''}int{8 * ctypes.sizeof(ctype)}_t"
    raise BuildError(f"internal: no C type for {ctype!r} in runtime.mgpu.ENTRY_POINTS")


def cuda_info(rt: Any, undefined: set[str]) -> CudaInfo:
    """What the library's metadata says about the kernels of ``rt`` (a ``CudaModule``) and the
    ``mgpu*`` functions its object calls (``undefined``: the object's undefined symbols).

    Raises:
        BuildError: the object calls an ``mgpu*`` function that the runtime does not provide.
    """
    calls = sorted(s for s in undefined if s.startswith("mgpu"))
    unknown = [s for s in calls if s not in ENTRY_POINTS]
    if unknown:
        raise BuildError(f"export_library: the CUDA host code calls {unknown}, which mlc_mlir.runtime.mgpu does "
                         f"not provide (it has {sorted(ENTRY_POINTS)})")
    entries = sorted({s for s in calls if s not in _MODULE_ENTRIES} | {"mgpuModuleLoad", "mgpuModuleGetFunction"})
    images = sum(1 for op in rt._lowered.body.operations if op.operation.name == "gpu.binary")
    return CudaInfo(rt.cuda.arch, rt.cuda.format, images, tuple(entries))


def _forwarder(name: str, slot: int) -> list[str]:
    result, *params = ENTRY_POINTS[name]
    ret = _c_type(result)
    types = [_c_type(p) for p in params]
    decl = ", ".join(f"{t}{'' if t.endswith('*') else ' '}a{k}" for k, t in enumerate(types)) or "void"
    args = ", ".join(f"a{k}" for k in range(len(types)))
    fail = "return 0;" if ret != "void" else "return;"
    call = f"f({args})"
    return [f"{ret} {name}({decl}) {{",
            f"  {ret} (*f)({', '.join(types) or 'void'}) = ({ret} (*)({', '.join(types) or 'void'}))"
            f"{MGPU_TABLE_SYMBOL}[{slot}];",
            f"  if (!f) {{ mlc_cuda_unset(\"{name}\"); {fail} }}",
            f"  {'return ' if ret != 'void' else ''}{call};", "}"]


_MODULES = r"""
/* Kernel images: recorded by the constructors, loaded by mlc_cuda_load() (see export_cuda.py). */
typedef struct { const void *data; uint64_t size; void *module; } mlc_image;
static mlc_image mlc_images[@IMAGES@];
static int mlc_num_images, mlc_images_dropped;
static void mlc_cuda_unset(const char *name) {
  mlc_fail(-1, "%s: the CUDA functions of this library are not set up (load it with "
           "mlc.runtime.load_module)", name);
}
void *mgpuModuleLoad(void *data, uint64_t size) {
  if (mlc_num_images == @IMAGES@) { mlc_images_dropped = 1; return 0; }
  mlc_image *m = &mlc_images[mlc_num_images++];
  m->data = data; m->size = size; m->module = 0;
  return m;
}
void *mgpuModuleLoadJIT(void *data, int opt_level) {  /* PTX, NUL-terminated */
  (void)opt_level;
  return mgpuModuleLoad(data, strlen((const char *)data) + 1);
}
void mgpuModuleUnload(void *module) { (void)module; /* loaded as long as the process */ }
void *mgpuModuleGetFunction(void *module, const char *name) {
  mlc_image *m = (mlc_image *)module;
  void *(*f)(void *, const char *) = (void *(*)(void *, const char *))@TABLE@[@GETFN@];
  if (!f || !m || !m->module) { mlc_cuda_unset("mgpuModuleGetFunction"); return 0; }
  return f(m->module, name);
}
int @LOAD@(void) {
  void *(*load)(const void *, uint64_t) = (void *(*)(const void *, uint64_t))@TABLE@[@LOADFN@];
  if (mlc_images_dropped) return mlc_fail(-1, "more kernel images than the @IMAGES@ the library was exported with");
  if (!load) return mlc_fail(-1, "@LOAD@: the table of CUDA functions is not filled");
  for (int i = 0; i < mlc_num_images; ++i) {
    if (mlc_images[i].module) continue;
    mlc_images[i].module = load(mlc_images[i].data, mlc_images[i].size);
    if (!mlc_images[i].module) return mlc_fail(-1, "loading kernel image %d of %d failed", i, mlc_num_images);
  }
  return mlc_num_images;
}
int mlc_cuda_image(int i, const void **data, uint64_t *size) {
  if (i < 0 || i >= mlc_num_images) return -1;
  *data = mlc_images[i].data; *size = mlc_images[i].size;
  return 0;
}
"""


def cuda_c_source(info: CudaInfo, ptx: str) -> str:
    """The CUDA part of the C file: table, forwarders, image slots, loader, PTX string."""
    slot = {name: k for k, name in enumerate(info.entries)}
    text = (_MODULES.replace("@IMAGES@", str(max(1, info.images))).replace("@TABLE@", MGPU_TABLE_SYMBOL)
            .replace("@LOAD@", CUDA_LOAD_SYMBOL).replace("@GETFN@", str(slot["mgpuModuleGetFunction"]))
            .replace("@LOADFN@", str(slot["mgpuModuleLoad"])))
    out = [f"void *{MGPU_TABLE_SYMBOL}[{len(info.entries)}];", text]
    for name in info.entries:
        if name not in _MODULE_ENTRIES:
            out += _forwarder(name, slot[name])
    out.append(f"const char {PTX_SYMBOL}[] =\n    {c_string(ptx)};")
    return "\n".join(out)
