// RUN: mlir-opt %s -mlir-print-op-generic | FileCheck %s --check-prefix=GENERIC
// RUN: mlir-opt %s -split-input-file --mlir-print-debuginfo | FileCheck %s --check-prefix=DEBUG
// RUN: mlir-opt %s -canonicalize --mlir-print-ir-before-all --mlir-print-ir-after-all -o /dev/null 2>&1 | FileCheck %s --check-prefix=IR
// RUN: mlir-opt %s -mlir-print-local-scope -mlir-disable-threading --verify-each | FileCheck %s --check-prefix=LOCAL

// GENERIC: "func.func"() <{function_type = (i32) -> i32, sym_name = "id"}>
// DEBUG: #[[LOC:.*]] = loc("{{.*}}print-flags.mlir":0:0)
// DEBUG: #[[LOC1:.*]] = loc("{{.*}}print-flags.mlir":18:1)
// IR: IR Dump Before Canonicalizer (canonicalize)
// IR: func.func @id
// IR: IR Dump After Canonicalizer (canonicalize)
// LOCAL: affine_map<(d0) -> (d0 + 1)>
// DEBUG: {{^}}// {{-----}}
// DEBUG: %arg0: index loc("{{.*}}print-flags.mlir":25:18)
// DEBUG: #[[LOC2:.*]] = loc("{{.*}}print-flags.mlir":22:9)
// DEBUG: #[[LOC3:.*]] = loc("{{.*}}print-flags.mlir":25:1)

func.func @id(%a: i32) -> i32 {
  return %a : i32
}

// -----

#map = affine_map<(d0) -> (d0 + 1)>
func.func @apply(%i: index) -> index {
  %0 = affine.apply #map(%i)
  return %0 : index
}
