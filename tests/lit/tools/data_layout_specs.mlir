// A module with two data layout specs: MLIR's verifier reports the error but succeeds, and
// the Python bindings then abort on the uncollected error. mlc-opt's Python path (an
// --mlc-* pass, a transform script, stdin) refuses the text before MLIR reads it: exit
// code 1 and an error at the module, not a killed interpreter.
// RUN: mlc-opt %s --split-input-file --mlc-remove-unused --verify-diagnostics
// RUN: not mlc-opt %s --split-input-file --mlc-remove-unused 2>&1 | filecheck %s
// RUN: not mlc-opt %s --split-input-file --mlc-remove-unused 2>/dev/null | filecheck %s --check-prefix=OUT
// RUN: not mlc-opt --mlc-remove-unused < %s 2>&1 | filecheck %s --check-prefix=STDIN

// CHECK: data_layout_specs.mlir:[[# @LINE + 3]]:1: error: module carries 2 data layout specs (#dlti.dl_spec: 'dlti.dl_spec', 'foo.spec')
// STDIN: <stdin>:[[# @LINE + 2]]:1: error: module carries 2 data layout specs
// expected-error @+1 {{module carries 2 data layout specs (#dlti.dl_spec: 'dlti.dl_spec', 'foo.spec'); MLIR allows at most one}}
module attributes {dlti.dl_spec = #dlti.dl_spec<"dlti.endianness" = "little">, foo.spec = #dlti.dl_spec<"dlti.endianness" = "big">} {
}

// -----

// Aliases of a spec count too.
// CHECK: data_layout_specs.mlir:[[# @LINE + 4]]:3: error: module carries 2 data layout specs (#dlti.dl_spec: 'a.x', 'b.y')
#spec = #dlti.dl_spec<"dlti.stack_alignment" = 128 : i64>
module {
  // expected-error @+1 {{module carries 2 data layout specs}}
  module @inner attributes {a.x = #spec, b.y = #dlti<dl_spec<>>} {
  }
}

// -----

// One spec per module parses and runs.
// OUT: // -----
// OUT: // -----
// OUT: module attributes {dlti.dl_spec = #dlti.dl_spec<"dlti.endianness" = "little">}
// OUT-NEXT: module @inner attributes {dlti.dl_spec = #dlti.dl_spec<"dlti.stack_alignment" = 128 : i64>}
module attributes {dlti.dl_spec = #dlti.dl_spec<"dlti.endianness" = "little">} {
  module @inner attributes {dlti.dl_spec = #dlti.dl_spec<"dlti.stack_alignment" = 128 : i64>} {
  }
}
