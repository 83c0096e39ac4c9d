// Command-line and pipeline mistakes exit 1 with mlir-opt's messages.
// RUN: not mlir-opt %s --no-such-pass 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// RUN: not mlir-opt %s --pass-pipeline='func.func(canonicalize)' 2>&1 | FileCheck %s --check-prefix=ANCHOR
// RUN: not mlir-opt %s --pass-pipeline=canonicalize 2>&1 | FileCheck %s --check-prefix=WRAP
// RUN: not mlir-opt %s -cse --pass-pipeline='builtin.module(cse)' 2>&1 | FileCheck %s --check-prefix=MIX
// RUN: not mlir-opt %s --canonicalize=bogus=1 2>&1 | FileCheck %s --check-prefix=OPTION
// RUN: not mlir-opt %s -o %t/no/such/dir/out.mlir 2>&1 | FileCheck %s --check-prefix=OUTPUT
// RUN: not mlir-opt %s.missing 2>&1 | FileCheck %s --check-prefix=INPUT

// UNKNOWN: Unknown command line argument '--no-such-pass'.
// ANCHOR: pipeline-errors.mlir:0:0: error: can't run 'func.func' pass manager on 'builtin.module' op
// WRAP: <unknown>:0: error: expected pass pipeline to be wrapped with the anchor operation type, e.g. 'builtin.module(...)'
// MIX: <unknown>:0: error: '-pass-pipeline' option can't be used with individual pass options
// OPTION: <unknown>:0: error: <Pass-Options-Parser>: no such option bogus
// OUTPUT: cannot open output file '{{.*}}out.mlir': No such file or directory
// INPUT: cannot open input file '{{.*}}pipeline-errors.mlir.missing': No such file or directory

func.func @f() {
  return
}
