/* Run an MLP exported by mlc-mlir (export_mlp.py) on one 8x8 digits image, from C.
 *
 *   ./deploy_mlp build/mlp.so build/image.bin      ->  class 3
 *
 * The library is loaded with dlopen; its graph function "main" (x: (n, 64) float32 ->
 * logits: (n, 10)) is called through the C entry of mlc_runtime.h with DLPack tensors.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#include "mlc_runtime.h"

#define PIXELS 64
#define CLASSES 10

static DLTensor tensor(float *data, int32_t ndim, int64_t *shape) {
  DLTensor t = {0};
  t.data = data;
  t.device.device_type = kDLCPU;
  t.ndim = ndim;
  t.dtype.code = kDLFloat;
  t.dtype.bits = 32;
  t.dtype.lanes = 1;
  t.shape = shape;
  t.strides = NULL; /* C-contiguous */
  return t;
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s MODEL.so IMAGE.bin (64 float32 pixels in [0, 1])\n", argv[0]);
    return 2;
  }
  float image[PIXELS], logits[CLASSES];
  FILE *f = fopen(argv[2], "rb");
  if (!f || fread(image, sizeof(float), PIXELS, f) != PIXELS) {
    fprintf(stderr, "cannot read %d float32 values from %s\n", PIXELS, argv[2]);
    return 1;
  }
  fclose(f);

  void *lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    fprintf(stderr, "dlopen: %s\n", dlerror());
    return 1;
  }
  MLCFunction (*get_function)(const char *) = (MLCFunction(*)(const char *))dlsym(lib, "mlc_get_function");
  const char *(*last_error)(void) = (const char *(*)(void))dlsym(lib, "mlc_last_error");
  if (!get_function || !last_error) {
    fprintf(stderr, "%s is not a library exported by mlc-mlir\n", argv[1]);
    return 1;
  }
  MLCFunction run = get_function("main");
  if (!run) {
    fprintf(stderr, "%s\n", last_error());
    return 1;
  }

  int64_t x_shape[2] = {1, PIXELS}, y_shape[2] = {1, CLASSES};
  DLTensor args[2] = {tensor(image, 2, x_shape), tensor(logits, 2, y_shape)}; /* inputs, then outputs */
  if (run(args, 2) != 0) {
    fprintf(stderr, "main: %s\n", last_error());
    return 1;
  }
  int best = 0;
  for (int k = 1; k < CLASSES; ++k)
    if (logits[k] > logits[best]) best = k;
  printf("logits:");
  for (int k = 0; k < CLASSES; ++k) printf(" %.4f", logits[k]);
  printf("\nclass %d\n", best);
  dlclose(lib);
  return 0;
}
