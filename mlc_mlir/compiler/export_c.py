"""The C half of an exported library: entries, wrappers and metadata around the compiled object.

:func:`c_source` writes one C file that the export links with the object code of the
LLVM-dialect module (:mod:`.export`). Per public function ``@f`` (symbols by assembler
label, so any MLIR symbol name works):

- ``int mlc_call_f(const DLTensor *args, int32_t num_args)``: the C entry of
  ``mlc_runtime.h`` (DLPack tensors in, 0 or an error code out; ``mlc_last_error()``);
- ``_mlir__mlir_ciface_f(void **args)``: the packed wrapper the ExecutionEngine would
  make, so the runtime's ``RuntimeModule`` calls the library as it calls the JIT;
- ``mlc_pyfn_f`` and ``_mlir_mlc_pyfn_addr_f``: the CPython fast entry
  (``METH_FASTCALL``) with the checks of :mod:`.fastcall`'s JIT entries, reading objects
  of the loading process from the table ``mlc_py_table`` that the loader fills;

and once: ``mlc_get_function(name)``, ``mlc_last_error()``, the metadata string
``mlc_module_metadata`` (:mod:`mlc_mlir.runtime.library_format`), the packed getter of the
allocation-failure flag, and ``memrefCopy`` when the code calls it (MLIR's
``libmlir_c_runner_utils``, which the library must not need). No Python header is
needed: the fast entries read NumPy's array fields at the recorded byte offsets. A CUDA
build's file has the packed wrappers only, plus the part of :mod:`.export_cuda`.
"""

from __future__ import annotations

import re

from ..errors import BuildError
from ..runtime.fastcall import FastPlan
from ..runtime.library_format import METADATA_SYMBOL, PY_SLOTS, TABLE_SYMBOL
from ..runtime.signature import FuncSignature
from .fastcall import GIL_RELEASE_BYTES

__all__ = ["c_source", "c_string", "check_symbol_name", "DLPACK_DTYPES"]

_C_CONTIGUOUS, _ALIGNED, _WRITEABLE = 0x0001, 0x0100, 0x0400  # numpy/ndarraytypes.h
_SYMBOL = re.compile(r"^[A-Za-z_.$][A-Za-z0-9_.$]*$")

#: MLIR element type -> accepted DLPack (code, bits): kDLInt 0, kDLUInt 1, kDLFloat 2,
#: kDLBfloat 4, kDLComplex 5, kDLBool 6 (NumPy before 1.25 exported bool as kDLUInt 8)
DLPACK_DTYPES: dict[str, tuple[tuple[int, int], ...]] = {
    "f16": ((2, 16),), "f32": ((2, 32),), "f64": ((2, 64),), "bf16": ((4, 16),),
    "i1": ((6, 8), (1, 8)), "i8": ((0, 8),), "i16": ((0, 16),), "i32": ((0, 32),), "i64": ((0, 64),),
    "index": ((0, 64),), "si8": ((0, 8),), "si16": ((0, 16),), "si32": ((0, 32),), "si64": ((0, 64),),
    "ui8": ((1, 8),), "ui16": ((1, 16),), "ui32": ((1, 32),), "ui64": ((1, 64),),
    "complex<f32>": ((5, 64),), "complex<f64>": ((5, 128),),
}


def check_symbol_name(name: str) -> None:
    """BuildError unless ``name`` can be a symbol of the library (letters, digits, ``_ . $``)."""
    if not _SYMBOL.match(name):
        raise BuildError(f"export_library: function name {name!r} cannot be a C symbol of the library "
                         "(letters, digits, '_', '.', '$'); rename the function")


def c_string(text: str) -> str:
    """``text`` as adjacent C string literals (escaped, 96 characters a line)."""
    out, line = [], []
    for ch in text.encode():
        if ch in (0x22, 0x5C):
            line.append("\\" + chr(ch))
        elif 0x20 <= ch < 0x7F and ch != 0x3F:  # '?' escaped: no trigraphs
            line.append(chr(ch))
        else:
            line.append(f"\\{ch:03o}")
        if len(line) >= 96:
            out.append('"' + "".join(line) + '"')
            line = []
    out.append('"' + "".join(line) + '"')
    return "\n    ".join(out)


def _itemsize(elem: str) -> int:
    bits = {"f16": 16, "bf16": 16, "i1": 8, "complex<f32>": 64, "complex<f64>": 128}.get(elem)
    if bits is None:
        m = re.fullmatch(r"[su]?i(\d+)|f(\d+)|index", elem)
        if m is None:
            return 0
        bits = 64 if elem == "index" else int(m.group(1) or m.group(2))
    return max(1, bits // 8)


def _memref_types(ranks: set[int]) -> list[str]:
    out = []
    for r in sorted(ranks):
        tail = f" int64_t sizes[{r}]; int64_t strides[{r}];" if r else ""
        out.append(f"typedef struct {{ void *allocated; void *aligned; int64_t offset;{tail} }} mlc_memref_{r};")
    return out


def _dl_entry(i: int, sig: FuncSignature, has_flag: bool) -> list[str]:
    """``int mlc_call_<name>(const DLTensor *args, int32_t num_args)``: checks, descriptors, call."""
    n = len(sig.args)
    names = ", ".join(a.name for a in sig.args)
    label = f"mlc_call_{sig.name}"
    lines = [f'int mlc_call{i}(const DLTensor *args, int32_t num_args) __asm__("{label}");',
             f"int mlc_call{i}(const DLTensor *args, int32_t num_args) {{",
             f"  if (num_args != {n}) return mlc_fail(-1, \"@%s takes {n} arguments ({names}), got %d\", "
             f"mlc_name{i}, (int)num_args);"]
    symbols: dict[str, str] = {}
    for k, spec in enumerate(sig.args):
        r = len(spec.shape)
        size = _itemsize(spec.elem)
        where = f"argument {k} ({spec.name})"
        dl = DLPACK_DTYPES.get(spec.elem)
        lines += [f"  mlc_memref_{r} d{k};", f"  uintptr_t lo{k}, hi{k};", "  {",
                  f"    const DLTensor *t = &args[{k}];", "    int64_t span = 1, st = 1;",
                  f"    if (t->device.device_type != 1) return mlc_fail(-1, \"@%s {where}: device type %d, "
                  f"not the CPU (kDLCPU)\", mlc_name{i}, (int)t->device.device_type);",
                  f"    if (t->ndim != {r}) return mlc_fail(-1, \"@%s {where}: expected {r} dimensions, got %d\", "
                  f"mlc_name{i}, (int)t->ndim);"]
        if dl is None or not size:
            lines.append(f"    return mlc_fail(-1, \"@%s {where}: element type {spec.elem} has no DLPack dtype\", "
                         f"mlc_name{i});")
        else:
            ok = " || ".join(f"(t->dtype.code == {c} && t->dtype.bits == {b})" for c, b in dl)
            lines.append(f"    if (!({ok}) || t->dtype.lanes != 1) return mlc_fail(-1, \"@%s {where}: expected "
                         f"element type {spec.elem}, got DLPack code %d bits %d lanes %d\", mlc_name{i}, "
                         "(int)t->dtype.code, (int)t->dtype.bits, (int)t->dtype.lanes);")
        for d, (want, sym) in enumerate(zip(spec.shape, spec.symbols)):
            if want is not None:
                lines.append(f"    if (t->shape[{d}] != {want}) return mlc_fail(-1, \"@%s {where}: dimension {d} "
                             f"is %lld, expected {want}\", mlc_name{i}, (long long)t->shape[{d}]);")
            elif sym and sym in symbols:
                lines.append(f"    if (t->shape[{d}] != {symbols[sym]}) return mlc_fail(-1, \"@%s {where}: "
                             f"dimension {d} is %lld but {sym} = %lld from an earlier argument\", mlc_name{i}, "
                             f"(long long)t->shape[{d}], (long long){symbols[sym]});")
            elif sym:
                symbols[sym] = f"t{k}_{d}"
                lines.insert(3, f"  int64_t t{k}_{d} = 0;")
                lines.append(f"    t{k}_{d} = t->shape[{d}];")
        for d in range(r - 1, -1, -1):
            declared = spec.strides[d] if spec.strides is not None else None
            if spec.strides is None:  # identity layout: C-contiguous (strides NULL or compact)
                lines += [f"    if (t->strides && t->shape[{d}] > 1 && t->strides[{d}] != st) return mlc_fail(-1, "
                          f"\"@%s {where}: not C-contiguous\", mlc_name{i});",
                          f"    d{k}.strides[{d}] = st;"]
            else:
                lines.append(f"    d{k}.strides[{d}] = t->strides ? t->strides[{d}] : st;")
                if declared is not None:
                    lines.append(f"    if (t->shape[{d}] > 1 && d{k}.strides[{d}] != {declared}) return mlc_fail("
                                 f"-1, \"@%s {where}: stride {d} is %lld elements, the function's layout has "
                                 f"{declared}\", mlc_name{i}, (long long)d{k}.strides[{d}]);")
            lines += [f"    d{k}.sizes[{d}] = t->shape[{d}];", f"    st *= t->shape[{d}];",
                      f"    span = t->shape[{d}] == 0 || span == 0 ? 0 : span + (t->shape[{d}] - 1) * "
                      f"(d{k}.strides[{d}] < 0 ? -d{k}.strides[{d}] : d{k}.strides[{d}]);"]
        off = spec.offset or 0
        lines += ["    char *data = (char *)t->data + t->byte_offset;",
                  f"    if ((uintptr_t)data % {size or 1}) return mlc_fail(-1, \"@%s {where}: data not aligned to "
                  f"its {size}-byte elements\", mlc_name{i});",
                  f"    d{k}.allocated = data; d{k}.aligned = data - {off * size}; d{k}.offset = {off};",
                  f"    lo{k} = (uintptr_t)data; hi{k} = lo{k} + (uintptr_t)(span * {size});", "  }"]
    for o, spec in enumerate(sig.args):
        if not spec.is_output:
            continue
        for k in range(n):
            if k != o:
                lines.append(f"  if (lo{o} < hi{k} && lo{k} < hi{o}) return mlc_fail(-1, \"@%s: output argument "
                             f"{o} ({spec.name}) overlaps argument {k} ({sig.args[k].name}) in memory\", "
                             f"mlc_name{i});")
    lines.append(f"  mlc_k{i}({', '.join(f'&d{k}' for k in range(n))});")
    if has_flag:
        lines += ["  { int64_t *flag = mlc_alloc_flag(); if (*flag) { long long b = (long long)*flag; *flag = 0;",
                  f"    return mlc_fail(-2, \"@%s: could not allocate an intermediate buffer of %lld bytes\", "
                  f"mlc_name{i}, b); }} }}"]
    return [*lines, "  return 0;", "}"]


def _py_entry(i: int, plan: FastPlan, abi: dict[str, int], dtype_slot: dict[str, int]) -> list[str]:
    """``mlc_pyfn_<name>``: the JIT entry of :mod:`.fastcall`, in C (same checks, same fallback)."""
    n = len(plan.dims)
    items = abi["tuple_items"]
    lines = [f'void *mlc_pyfn{i}(void *self, void *const *args, int64_t nargs) __asm__("{plan.entry}");',
             f"void *mlc_pyfn{i}(void *self, void *const *args, int64_t nargs) {{",
             "  void **T = mlc_py_table;", f"  if (nargs != {n}) goto fallback;"]
    symbols: dict[str, str] = {}
    for k, dims in enumerate(plan.dims):
        r = len(dims)
        mask = _C_CONTIGUOUS | _ALIGNED | (_WRITEABLE if plan.outputs[k] else 0)
        lines += [f"  char *p{k}; int64_t *s{k}; mlc_memref_{r} d{k};", "  {", f"    void *o = args[{k}];"]
        if abi.get("wrapper_data", -1) >= 0:  # an exact mlc NDArray: the NumPy array in its slot
            lines.append(f"    if (MLC_LOAD(void *, o, {abi['ob_type']}) == T[7] && MLC_LOAD(void *, o, "
                         f"{abi['wrapper_data']})) o = MLC_LOAD(void *, o, {abi['wrapper_data']});")
        lines += [
                  f"    if (MLC_LOAD(void *, o, {abi['ob_type']}) != T[0]) goto fallback;",
                  f"    if (MLC_LOAD(int32_t, o, {abi['nd']}) != {r} || MLC_LOAD(void *, o, {abi['descr']}) != "
                  f"T[{dtype_slot[str(plan.dtypes[k])]}] || (MLC_LOAD(int32_t, o, {abi['flags']}) & {mask}) != "
                  f"{mask}) goto fallback;",
                  f"    p{k} = MLC_LOAD(char *, o, {abi['data']});",
                  f"    s{k} = MLC_LOAD(int64_t *, o, {abi['dims']});"]
        for d, want in enumerate(dims):
            if isinstance(want, int):
                lines.append(f"    if (s{k}[{d}] != {want}) goto fallback;")
            elif want in symbols:
                lines.append(f"    if (s{k}[{d}] != {symbols[want]}) goto fallback;")
            elif not want.startswith("?"):
                symbols[want] = f"s{k}[{d}]"
        lines.append("  }")
    for k, dims in enumerate(plan.dims):
        r = len(dims)
        size = plan.dtypes[k].itemsize
        nbytes = " * ".join([str(size), *(f"s{k}[{d}]" for d in range(r))])
        lines += [f"  uintptr_t lo{k} = (uintptr_t)p{k}, hi{k} = lo{k} + (uintptr_t)({nbytes});",
                  f"  d{k}.allocated = p{k}; d{k}.aligned = p{k}; d{k}.offset = 0;"]
        for d in range(r - 1, -1, -1):
            stride = "1" if d == r - 1 else f"d{k}.strides[{d + 1}] * s{k}[{d + 1}]"
            lines += [f"  d{k}.sizes[{d}] = s{k}[{d}];", f"  d{k}.strides[{d}] = {stride};"]
    for o in range(n):
        if plan.outputs[o]:
            for k in range(n):
                if k != o:
                    lines.append(f"  if (lo{o} < hi{k} && lo{k} < hi{o}) goto fallback;")
    call = f"mlc_k{i}({', '.join(f'&d{k}' for k in range(n))});"
    total = " + ".join(f"(hi{k} - lo{k})" for k in range(n)) or "0"
    lines += [f"  if ({total} > {GIL_RELEASE_BYTES}) {{",
              f"    void *state = ((mlc_save_t)T[3])(); {call} ((mlc_restore_t)T[4])(state);",
              f"  }} else {{ {call} }}",
              f"  {{ void *after = MLC_LOAD(void *, self, {items + 8});",
              "    if (after != T[1]) { void *r = ((mlc_vectorcall_t)T[2])(after, 0, 0, 0);",
              "      if (!r) return 0; ((mlc_ref_t)T[6])(r); } }",
              "  ((mlc_ref_t)T[5])(T[1]);", "  return T[1];",
              "fallback:",
              f"  return ((mlc_vectorcall_t)T[2])(MLC_LOAD(void *, self, {items}), args, (size_t)nargs, 0);", "}",
              f'void mlc_pyaddr{i}(void **args) __asm__("_mlir_{plan.address_getter}");',
              f"void mlc_pyaddr{i}(void **args) {{ *(void **)args[0] = (void *)&mlc_pyfn{i}; }}"]
    return lines


_PRELUDE = r"""/* Generated by mlc-mlir's export_library: entries of the compiled functions (see mlc_runtime.h). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include "mlc_runtime.h"

#define MLC_LOAD(T, p, off) (*(T *)((char *)(p) + (off)))
typedef void *(*mlc_vectorcall_t)(void *, void *const *, size_t, void *);
typedef void *(*mlc_save_t)(void);
typedef void (*mlc_restore_t)(void *);
typedef void (*mlc_ref_t)(void *);

static __thread char mlc_error[512];
const char *mlc_last_error(void) { return mlc_error; }
static int mlc_fail(int code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(mlc_error, sizeof mlc_error, fmt, ap);
  va_end(ap);
  return code;
}
"""

_MEMREF_COPY = r"""
/* MLIR's memrefCopy (libmlir_c_runner_utils), so the library needs no MLIR library. */
typedef struct { int64_t rank; void *descriptor; } mlc_unranked;
void memrefCopy(int64_t elem_size, mlc_unranked *src_arg, mlc_unranked *dst_arg) {
  int64_t rank = src_arg->rank;
  int64_t *src = (int64_t *)src_arg->descriptor, *dst = (int64_t *)dst_arg->descriptor;
  char *src_ptr = (char *)(intptr_t)src[1] + src[2] * elem_size;
  char *dst_ptr = (char *)(intptr_t)dst[1] + dst[2] * elem_size;
  if (rank == 0) { memcpy(dst_ptr, src_ptr, (size_t)elem_size); return; }
  int64_t *sizes = src + 3, *src_strides = src + 3 + rank, *dst_strides = dst + 3 + rank;
  int64_t index[rank > 0 ? rank : 1];
  for (int64_t d = 0; d < rank; ++d) { if (sizes[d] == 0) return; index[d] = 0; }
  int64_t read = 0, write = 0;
  for (;;) {
    memcpy(dst_ptr + write * elem_size, src_ptr + read * elem_size, (size_t)elem_size);
    for (int64_t axis = rank - 1; axis >= 0; --axis) {
      read += src_strides[axis]; write += dst_strides[axis];
      if (++index[axis] < sizes[axis]) break;
      if (axis == 0) return;
      index[axis] = 0;
      read -= sizes[axis] * src_strides[axis]; write -= sizes[axis] * dst_strides[axis];
    }
  }
}
"""


def c_source(signatures: dict[str, FuncSignature], plans: dict[str, FastPlan], abi: dict[str, int] | None, *,
             metadata: str, has_alloc_flag: bool, memref_copy: bool, cuda: str | None = None) -> str:
    """The C file of an exported library (see the module docstring).

    ``cuda``: the CUDA part (:func:`.export_cuda.cuda_c_source`) of a CUDA build, whose
    functions take device pointers and run only after the loader set up their ``mgpu*``
    table: such a library has no ``mlc_call_*`` C entries (``mlc_get_function`` finds none).
    """
    for name in signatures:
        check_symbol_name(name)
    dtypes = sorted({str(d) for p in plans.values() for d in p.dtypes})
    dtype_slot = {d: len(PY_SLOTS) + j for j, d in enumerate(dtypes)}
    ranks = {len(a.shape) for s in signatures.values() for a in s.args}
    out = [_PRELUDE, f"const char {METADATA_SYMBOL}[] =\n    {c_string(metadata)};",
           f"void *{TABLE_SYMBOL}[{max(1, len(PY_SLOTS) + len(dtypes))}];", *_memref_types(ranks)]
    if has_alloc_flag:
        out += ['extern int64_t *mlc_alloc_flag(void) __asm__("__mlc_alloc_flag_address");',
                'void mlc_alloc_packed(void **args) __asm__("_mlir___mlc_alloc_flag_address");',
                "void mlc_alloc_packed(void **args) { *(void **)args[0] = mlc_alloc_flag(); }"]
    if memref_copy:
        out.append(_MEMREF_COPY)
    if cuda is not None:
        out.append(cuda)
    table = []
    for i, sig in enumerate(signatures.values()):
        params = ", ".join(["void *"] * len(sig.args)) or "void"
        unpack = ", ".join(f"*(void **)args[{k}]" for k in range(len(sig.args)))
        out += [f'extern void mlc_k{i}({params}) __asm__("_mlir_ciface_{sig.name}");',
                f'void mlc_packed{i}(void **args) __asm__("_mlir__mlir_ciface_{sig.name}");',
                f"void mlc_packed{i}(void **args) {{ (void)args; mlc_k{i}({unpack}); }}"]
        if cuda is not None:
            continue
        out += [f"static const char mlc_name{i}[] = {c_string(sig.name)};", *_dl_entry(i, sig, has_alloc_flag)]
        if abi is not None and sig.name in plans:
            out += _py_entry(i, plans[sig.name], abi, dtype_slot)
        table.append(f"  {{mlc_name{i}, mlc_call{i}}},")
    out += ["static const struct { const char *name; MLCFunction fn; } mlc_functions[] = {", *table,
            "  {0, 0}};",
            "MLCFunction mlc_get_function(const char *name) {",
            "  for (int i = 0; mlc_functions[i].name; ++i)",
            "    if (strcmp(mlc_functions[i].name, name) == 0) return mlc_functions[i].fn;",
            "  mlc_fail(-1, \"no function %s in this library\", name);" if cuda is None else
            "  mlc_fail(-1, \"%s: this library holds CUDA code, which has no C entries: load it with "
            "mlc.runtime.load_module\", name);", "  return 0;", "}"]
    return "\n".join(out) + "\n"
