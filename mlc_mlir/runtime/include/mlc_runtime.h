/* mlc_runtime.h: the C interface of a library written by mlc-mlir's export_library.
 *
 *   rt.export_library("model.so")      (mlc.build)       or
 *   ex.export_library("model.so")      (mlc.graph.build)
 *
 * writes one shared library: the compiled code (constants such as a graph's weights
 * included), the metadata, and for each public function NAME of the built module:
 *
 *   int mlc_call_NAME(const DLTensor *args, int32_t num_args);
 *
 * args: every argument of the function, inputs then outputs (destination passing: the
 * caller allocates the outputs; a graph function "main(x) -> y" is mlc_call_main(x, y)).
 * Each tensor is on the CPU (device_type kDLCPU), C-contiguous (strides NULL or compact;
 * a function declared with a strided layout takes those strides), aligned to its element
 * size, of the function's element type and static sizes; a symbolic dimension ("n") must
 * have one value across the arguments; no output may overlap another argument. Returns 0
 * on success, -1 when an argument is refused (nothing was run), -2 when the code could not
 * allocate an intermediate buffer (outputs partly written); mlc_last_error() then says why
 * (per thread). The sizes a function expects are in the metadata (mlc_module_metadata, JSON)
 * and in Python: mlc.runtime.load_module(path).signatures.
 *
 * Link with the library (cc main.c -L. -l:model.so -Wl,-rpath,'$ORIGIN') or dlopen it and
 * look up mlc_get_function / mlc_call_NAME. A library whose code runs parallel loops needs
 * an OpenMP runtime (its __kmpc_* symbols): link the program with -liomp5 or -lomp, or load
 * one first (dlopen with RTLD_GLOBAL); the metadata's "openmp" says whether it does.
 *
 * Lower level: each function also has MLIR's C interface, one pointer per argument to a
 * memref descriptor (MLC_MEMREF below, strides in elements):
 *
 *   void _mlir_ciface_NAME(MLC_MEMREF(float, 2) *a, ...);
 *
 * which checks nothing. The other exported symbols (_mlir_*, mlc_pyfn_*, mlc_py_table) are
 * the Python runtime's.
 */
#ifndef MLC_RUNTIME_H_
#define MLC_RUNTIME_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if !defined(DLPACK_VERSION) && !defined(DLPACK_MAJOR_VERSION)
/* DLPack's tensor (dlpack.h, same layout); include dlpack.h first to use its own definitions. */
typedef enum { kDLCPU = 1, kDLCUDA = 2 } DLDeviceType;
typedef enum { kDLInt = 0, kDLUInt = 1, kDLFloat = 2, kDLBfloat = 4, kDLComplex = 5, kDLBool = 6 } DLDataTypeCode;
typedef struct {
  DLDeviceType device_type;
  int32_t device_id;
} DLDevice;
typedef struct {
  uint8_t code; /* DLDataTypeCode */
  uint8_t bits;
  uint16_t lanes;
} DLDataType;
typedef struct {
  void *data;
  DLDevice device;
  int32_t ndim;
  DLDataType dtype;
  int64_t *shape;
  int64_t *strides; /* in elements; NULL: C-contiguous */
  uint64_t byte_offset;
} DLTensor;
#endif

/* One function of the library: mlc_call_NAME's type. */
typedef int (*MLCFunction)(const DLTensor *args, int32_t num_args);

/* The function called `name` (NULL if the library has none; mlc_last_error() says so). */
MLCFunction mlc_get_function(const char *name);

/* Why the last call on this thread returned non-zero. */
const char *mlc_last_error(void);

/* The library's metadata: a JSON object (signatures of the functions, target, ...). */
extern const char mlc_module_metadata[];

/* MLIR's memref descriptor of `rank` dimensions of `T` (StridedMemRefType). */
#define MLC_MEMREF(T, rank)          \
  struct {                           \
    T *allocated;                    \
    T *aligned;                      \
    int64_t offset;                  \
    int64_t sizes[rank];             \
    int64_t strides[rank];           \
  }

#ifdef __cplusplus
}
#endif

#endif /* MLC_RUNTIME_H_ */
