// The `mlc` graph dialect: the Relax-level ops of the MLC course (ch.3, ch.5, ch.7).
//
// Graph functions are `func.func` on ranked tensors whose body holds these ops, usually
// inside one `mlc.dataflow` region. Generic syntax only (IRDL has no custom assembly).
//
// What IRDL checks here: operand/result kinds (ranked tensors, `index` sizes) and the
// presence and kind of attributes. What it cannot express is checked in Python
// (mlc_mlir/graph/verify.py, `mlc-opt --mlc-verify-graph`): shapes, callees, the
// dataflow region's layout and purity.
//
// One IRDL constraint value per operand: an SSA constraint used twice means "the same
// type" (an `irdl.operands(a: %t, b: %t)` would force a and b to have equal types).
//
// Variadic lists of *different* tensor types cannot be declared with one variadic group
// either: every element of a variadic group is checked against the same constraint value,
// which unifies (all elements must have one type). Calls, `mlc.output` and
// `mlc.dataflow` therefore declare a fixed number of optional slots, each with its own
// constraint (16 call arguments, 8 dataflow outputs), and carry the standard
// `operandSegmentSizes` / `resultSegmentSizes` attribute (one 0/1 entry per slot; the
// Python builder writes it).
//
// IRDL cannot declare traits, so an IRDL op can neither be a terminator nor pure. The
// dataflow region therefore ends in two ops:
//     "mlc.output"(%gv, ...) : (...) -> ()   // the values visible after the region
//     "omp.terminator"() : () -> ()          // a pure, parent-agnostic upstream terminator
// and `mlc.dataflow` returns the `mlc.output` operands as its results.
//
// Optional discardable attribute on any op with a dynamic result: `mlc.shape`, an array
// of i64 / string (a string is a symbolic dimension, e.g. ["n", 128]).
irdl.dialect @mlc {
  // ---- linear algebra -------------------------------------------------------------
  // matmul(lhs, rhs): NumPy matmul rules (batch dims broadcast).
  irdl.operation @matmul {
    %lhs_t = irdl.base "!builtin.tensor"
    %rhs_t = irdl.base "!builtin.tensor"
    %res_t = irdl.base "!builtin.tensor"
    irdl.operands(lhs: %lhs_t, rhs: %rhs_t)
    irdl.results(res: %res_t)
  }
  // ---- elementwise binary ops, NumPy broadcasting -----------------------------------
  irdl.operation @add {
    %lhs_t = irdl.base "!builtin.tensor"
    %rhs_t = irdl.base "!builtin.tensor"
    %res_t = irdl.base "!builtin.tensor"
    irdl.operands(lhs: %lhs_t, rhs: %rhs_t)
    irdl.results(res: %res_t)
  }
  irdl.operation @subtract {
    %lhs_t = irdl.base "!builtin.tensor"
    %rhs_t = irdl.base "!builtin.tensor"
    %res_t = irdl.base "!builtin.tensor"
    irdl.operands(lhs: %lhs_t, rhs: %rhs_t)
    irdl.results(res: %res_t)
  }
  irdl.operation @multiply {
    %lhs_t = irdl.base "!builtin.tensor"
    %rhs_t = irdl.base "!builtin.tensor"
    %res_t = irdl.base "!builtin.tensor"
    irdl.operands(lhs: %lhs_t, rhs: %rhs_t)
    irdl.results(res: %res_t)
  }
  irdl.operation @divide {
    %lhs_t = irdl.base "!builtin.tensor"
    %rhs_t = irdl.base "!builtin.tensor"
    %res_t = irdl.base "!builtin.tensor"
    irdl.operands(lhs: %lhs_t, rhs: %rhs_t)
    irdl.results(res: %res_t)
  }
  // ewise_fma(a, b, c) = a * b + c, same shapes.
  irdl.operation @ewise_fma {
    %a_t = irdl.base "!builtin.tensor"
    %b_t = irdl.base "!builtin.tensor"
    %c_t = irdl.base "!builtin.tensor"
    %res_t = irdl.base "!builtin.tensor"
    irdl.operands(a: %a_t, b: %b_t, c: %c_t)
    irdl.results(res: %res_t)
  }
  // ---- unary / layout ---------------------------------------------------------------
  irdl.operation @relu {
    %x_t = irdl.base "!builtin.tensor"
    %res_t = irdl.base "!builtin.tensor"
    irdl.operands(x: %x_t)
    irdl.results(res: %res_t)
  }
  // ---- neural-network ops (NCHW data, OIHW kernels) ---------------------------------
  // conv2d(x, w) {strides, dilation = array<i64: h, w>}; optional (not declared, so IR
  // written before them stays valid): padding = array<i64: top, left, bottom, right>,
  // groups = i64 (w is (O, C/groups, KH, KW)).
  irdl.operation @conv2d {
    %x_t = irdl.base "!builtin.tensor"
    %w_t = irdl.base "!builtin.tensor"
    %res_t = irdl.base "!builtin.tensor"
    %strides = irdl.base "#builtin.dense_array"
    %dilation = irdl.base "#builtin.dense_array"
    irdl.attributes { "strides" = %strides, "dilation" = %dilation }
    irdl.operands(x: %x_t, w: %w_t)
    irdl.results(res: %res_t)
  }
  // max_pool2d(x) {pool_size, strides, dilation = array<i64: h, w>}; optional: padding =
  // array<i64: top, left, bottom, right>, ceil_mode = bool (torch's rule).
  irdl.operation @max_pool2d {
    %x_t = irdl.base "!builtin.tensor"
    %res_t = irdl.base "!builtin.tensor"
    %pool = irdl.base "#builtin.dense_array"
    %strides = irdl.base "#builtin.dense_array"
    %dilation = irdl.base "#builtin.dense_array"
    irdl.attributes { "pool_size" = %pool, "strides" = %strides, "dilation" = %dilation }
    irdl.operands(x: %x_t)
    irdl.results(res: %res_t)
  }
  // batch_norm(x, gamma, beta, mean, var) {axis = i64, epsilon = f64}: inference form.
  irdl.operation @batch_norm {
    %x_t = irdl.base "!builtin.tensor"
    %g_t = irdl.base "!builtin.tensor"
    %b_t = irdl.base "!builtin.tensor"
    %m_t = irdl.base "!builtin.tensor"
    %v_t = irdl.base "!builtin.tensor"
    %res_t = irdl.base "!builtin.tensor"
    %axis = irdl.base "#builtin.integer"
    %eps = irdl.base "#builtin.float"
    irdl.attributes { "axis" = %axis, "epsilon" = %eps }
    irdl.operands(x: %x_t, gamma: %g_t, beta: %b_t, mean: %m_t, var: %v_t)
    irdl.results(res: %res_t)
  }
  // layer_norm(x, gamma, beta) {axes = array<i64: ...> (trailing dims), epsilon = f64}.
  irdl.operation @layer_norm {
    %x_t = irdl.base "!builtin.tensor"
    %g_t = irdl.base "!builtin.tensor"
    %b_t = irdl.base "!builtin.tensor"
    %res_t = irdl.base "!builtin.tensor"
    %axes = irdl.base "#builtin.dense_array"
    %eps = irdl.base "#builtin.float"
    irdl.attributes { "axes" = %axes, "epsilon" = %eps }
    irdl.operands(x: %x_t, gamma: %g_t, beta: %b_t)
    irdl.results(res: %res_t)
  }
  // avg_pool2d(x) {pool_size, strides, padding (top, left, bottom, right), dilation =
  // array<i64>}; optional: ceil_mode, count_include_pad = bool (torch's divisor).
  irdl.operation @avg_pool2d {
    %x_t = irdl.base "!builtin.tensor"
    %res_t = irdl.base "!builtin.tensor"
    %pool = irdl.base "#builtin.dense_array"
    %strides = irdl.base "#builtin.dense_array"
    %padding = irdl.base "#builtin.dense_array"
    %dilation = irdl.base "#builtin.dense_array"
    irdl.attributes { "pool_size" = %pool, "strides" = %strides, "padding" = %padding, "dilation" = %dilation }
    irdl.operands(x: %x_t)
    irdl.results(res: %res_t)
  }
  // adaptive_avg_pool2d(x) {output_size = array<i64: oh, ow> (optional: the input's H, W)}:
  // torch's windows [floor(i*H/oh), ceil((i+1)*H/oh)).
  irdl.operation @adaptive_avg_pool2d {
    %x_t = irdl.base "!builtin.tensor"
    %res_t = irdl.base "!builtin.tensor"
    irdl.operands(x: %x_t)
    irdl.results(res: %res_t)
  }
  // gelu_tanh / silu(x): float activations, elementwise (tanh-approximated GELU, x * sigmoid(x)).
  irdl.operation @gelu_tanh {
    %x_t = irdl.base "!builtin.tensor"
    %res_t = irdl.base "!builtin.tensor"
    irdl.operands(x: %x_t)
    irdl.results(res: %res_t)
  }
  irdl.operation @silu {
    %x_t = irdl.base "!builtin.tensor"
    %res_t = irdl.base "!builtin.tensor"
    irdl.operands(x: %x_t)
    irdl.results(res: %res_t)
  }
  // log_softmax(x) {axis = i64}: x - max - log(sum(exp(x - max))) along `axis`.
  irdl.operation @log_softmax {
    %x_t = irdl.base "!builtin.tensor"
    %res_t = irdl.base "!builtin.tensor"
    %axis = irdl.base "#builtin.integer"
    irdl.attributes { "axis" = %axis }
    irdl.operands(x: %x_t)
    irdl.results(res: %res_t)
  }
  // gelu / sigmoid / tanh(x): float activations, elementwise.
  irdl.operation @gelu {
    %x_t = irdl.base "!builtin.tensor"
    %res_t = irdl.base "!builtin.tensor"
    irdl.operands(x: %x_t)
    irdl.results(res: %res_t)
  }
  irdl.operation @sigmoid {
    %x_t = irdl.base "!builtin.tensor"
    %res_t = irdl.base "!builtin.tensor"
    irdl.operands(x: %x_t)
    irdl.results(res: %res_t)
  }
  irdl.operation @tanh {
    %x_t = irdl.base "!builtin.tensor"
    %res_t = irdl.base "!builtin.tensor"
    irdl.operands(x: %x_t)
    irdl.results(res: %res_t)
  }
  // permute_dims(x) {axes = array<i64: ...>}: res.shape[i] = x.shape[axes[i]].
  irdl.operation @permute_dims {
    %x_t = irdl.base "!builtin.tensor"
    %res_t = irdl.base "!builtin.tensor"
    %axes = irdl.base "#builtin.dense_array"
    irdl.attributes { "axes" = %axes }
    irdl.operands(x: %x_t)
    irdl.results(res: %res_t)
  }
  // reshape(x): the new shape is the result type (plus `mlc.shape` when dynamic).
  irdl.operation @reshape {
    %x_t = irdl.base "!builtin.tensor"
    %res_t = irdl.base "!builtin.tensor"
    irdl.operands(x: %x_t)
    irdl.results(res: %res_t)
  }
  // softmax(x) {axis = i64}: exp(x - max) / sum along `axis`.
  irdl.operation @softmax {
    %x_t = irdl.base "!builtin.tensor"
    %res_t = irdl.base "!builtin.tensor"
    %axis = irdl.base "#builtin.integer"
    irdl.attributes { "axis" = %axis }
    irdl.operands(x: %x_t)
    irdl.results(res: %res_t)
  }
  // ---- tensor ops -------------------------------------------------------------------
  // comparisons (bool results) and logical ops, NumPy broadcasting; bitwise_* on bool
  irdl.operation @equal {
    %lhs_t = irdl.base "!builtin.tensor"
    %rhs_t = irdl.base "!builtin.tensor"
    %res_t = irdl.base "!builtin.tensor"
    irdl.operands(lhs: %lhs_t, rhs: %rhs_t)
    irdl.results(res: %res_t)
  }
  irdl.operation @not_equal {
    %lhs_t = irdl.base "!builtin.tensor"
    %rhs_t = irdl.base "!builtin.tensor"
    %res_t = irdl.base "!builtin.tensor"
    irdl.operands(lhs: %lhs_t, rhs: %rhs_t)
    irdl.results(res: %res_t)
  }
  irdl.operation @less {
    %lhs_t = irdl.base "!builtin.tensor"
    %rhs_t = irdl.base "!builtin.tensor"
    %res_t = irdl.base "!builtin.tensor"
    irdl.operands(lhs: %lhs_t, rhs: %rhs_t)
    irdl.results(res: %res_t)
  }
  irdl.operation @less_equal {
    %lhs_t = irdl.base "!builtin.tensor"
    %rhs_t = irdl.base "!builtin.tensor"
    %res_t = irdl.base "!builtin.tensor"
    irdl.operands(lhs: %lhs_t, rhs: %rhs_t)
    irdl.results(res: %res_t)
  }
  irdl.operation @greater {
    %lhs_t = irdl.base "!builtin.tensor"
    %rhs_t = irdl.base "!builtin.tensor"
    %res_t = irdl.base "!builtin.tensor"
    irdl.operands(lhs: %lhs_t, rhs: %rhs_t)
    irdl.results(res: %res_t)
  }
  irdl.operation @greater_equal {
    %lhs_t = irdl.base "!builtin.tensor"
    %rhs_t = irdl.base "!builtin.tensor"
    %res_t = irdl.base "!builtin.tensor"
    irdl.operands(lhs: %lhs_t, rhs: %rhs_t)
    irdl.results(res: %res_t)
  }
  irdl.operation @logical_and {
    %lhs_t = irdl.base "!builtin.tensor"
    %rhs_t = irdl.base "!builtin.tensor"
    %res_t = irdl.base "!builtin.tensor"
    irdl.operands(lhs: %lhs_t, rhs: %rhs_t)
    irdl.results(res: %res_t)
  }
  irdl.operation @logical_or {
    %lhs_t = irdl.base "!builtin.tensor"
    %rhs_t = irdl.base "!builtin.tensor"
    %res_t = irdl.base "!builtin.tensor"
    irdl.operands(lhs: %lhs_t, rhs: %rhs_t)
    irdl.results(res: %res_t)
  }
  irdl.operation @bitwise_and {
    %lhs_t = irdl.base "!builtin.tensor"
    %rhs_t = irdl.base "!builtin.tensor"
    %res_t = irdl.base "!builtin.tensor"
    irdl.operands(lhs: %lhs_t, rhs: %rhs_t)
    irdl.results(res: %res_t)
  }
  irdl.operation @bitwise_or {
    %lhs_t = irdl.base "!builtin.tensor"
    %rhs_t = irdl.base "!builtin.tensor"
    %res_t = irdl.base "!builtin.tensor"
    irdl.operands(lhs: %lhs_t, rhs: %rhs_t)
    irdl.results(res: %res_t)
  }
  irdl.operation @logical_not {
    %x_t = irdl.base "!builtin.tensor"
    %res_t = irdl.base "!builtin.tensor"
    irdl.operands(x: %x_t)
    irdl.results(res: %res_t)
  }
  // where(cond, x1, x2): three-way broadcast
  irdl.operation @where {
    %cond_t = irdl.base "!builtin.tensor"
    %x1_t = irdl.base "!builtin.tensor"
    %x2_t = irdl.base "!builtin.tensor"
    %res_t = irdl.base "!builtin.tensor"
    irdl.operands(cond: %cond_t, x1: %x1_t, x2: %x2_t)
    irdl.results(res: %res_t)
  }
  // elementwise math: power/maximum/minimum broadcast; unary functions; clip {min, max = f64|i64};
  // astype {dtype = "float32"}; full_like {fill_value, dtype?}
  irdl.operation @power {
    %lhs_t = irdl.base "!builtin.tensor"
    %rhs_t = irdl.base "!builtin.tensor"
    %res_t = irdl.base "!builtin.tensor"
    irdl.operands(lhs: %lhs_t, rhs: %rhs_t)
    irdl.results(res: %res_t)
  }
  irdl.operation @maximum {
    %lhs_t = irdl.base "!builtin.tensor"
    %rhs_t = irdl.base "!builtin.tensor"
    %res_t = irdl.base "!builtin.tensor"
    irdl.operands(lhs: %lhs_t, rhs: %rhs_t)
    irdl.results(res: %res_t)
  }
  irdl.operation @minimum {
    %lhs_t = irdl.base "!builtin.tensor"
    %rhs_t = irdl.base "!builtin.tensor"
    %res_t = irdl.base "!builtin.tensor"
    irdl.operands(lhs: %lhs_t, rhs: %rhs_t)
    irdl.results(res: %res_t)
  }
  irdl.operation @exp {
    %x_t = irdl.base "!builtin.tensor"
    %res_t = irdl.base "!builtin.tensor"
    irdl.operands(x: %x_t)
    irdl.results(res: %res_t)
  }
  irdl.operation @log {
    %x_t = irdl.base "!builtin.tensor"
    %res_t = irdl.base "!builtin.tensor"
    irdl.operands(x: %x_t)
    irdl.results(res: %res_t)
  }
  irdl.operation @sqrt {
    %x_t = irdl.base "!builtin.tensor"
    %res_t = irdl.base "!builtin.tensor"
    irdl.operands(x: %x_t)
    irdl.results(res: %res_t)
  }
  irdl.operation @rsqrt {
    %x_t = irdl.base "!builtin.tensor"
    %res_t = irdl.base "!builtin.tensor"
    irdl.operands(x: %x_t)
    irdl.results(res: %res_t)
  }
  irdl.operation @erf {
    %x_t = irdl.base "!builtin.tensor"
    %res_t = irdl.base "!builtin.tensor"
    irdl.operands(x: %x_t)
    irdl.results(res: %res_t)
  }
  irdl.operation @negative {
    %x_t = irdl.base "!builtin.tensor"
    %res_t = irdl.base "!builtin.tensor"
    irdl.operands(x: %x_t)
    irdl.results(res: %res_t)
  }
  irdl.operation @abs {
    %x_t = irdl.base "!builtin.tensor"
    %res_t = irdl.base "!builtin.tensor"
    irdl.operands(x: %x_t)
    irdl.results(res: %res_t)
  }
  irdl.operation @floor {
    %x_t = irdl.base "!builtin.tensor"
    %res_t = irdl.base "!builtin.tensor"
    irdl.operands(x: %x_t)
    irdl.results(res: %res_t)
  }
  irdl.operation @ceil {
    %x_t = irdl.base "!builtin.tensor"
    %res_t = irdl.base "!builtin.tensor"
    irdl.operands(x: %x_t)
    irdl.results(res: %res_t)
  }
  irdl.operation @sin {
    %x_t = irdl.base "!builtin.tensor"
    %res_t = irdl.base "!builtin.tensor"
    irdl.operands(x: %x_t)
    irdl.results(res: %res_t)
  }
  irdl.operation @cos {
    %x_t = irdl.base "!builtin.tensor"
    %res_t = irdl.base "!builtin.tensor"
    irdl.operands(x: %x_t)
    irdl.results(res: %res_t)
  }
  irdl.operation @clip {
    %x_t = irdl.base "!builtin.tensor"
    %res_t = irdl.base "!builtin.tensor"
    irdl.operands(x: %x_t)
    irdl.results(res: %res_t)
  }
  irdl.operation @astype {
    %x_t = irdl.base "!builtin.tensor"
    %res_t = irdl.base "!builtin.tensor"
    irdl.operands(x: %x_t)
    irdl.results(res: %res_t)
  }
  irdl.operation @full_like {
    %x_t = irdl.base "!builtin.tensor"
    %res_t = irdl.base "!builtin.tensor"
    irdl.operands(x: %x_t)
    irdl.results(res: %res_t)
  }
  // reductions {axis = array<i64> (absent: all), keepdims = bool}; cumsum {axis?, dtype?}
  irdl.operation @sum {
    %x_t = irdl.base "!builtin.tensor"
    %res_t = irdl.base "!builtin.tensor"
    irdl.operands(x: %x_t)
    irdl.results(res: %res_t)
  }
  irdl.operation @mean {
    %x_t = irdl.base "!builtin.tensor"
    %res_t = irdl.base "!builtin.tensor"
    irdl.operands(x: %x_t)
    irdl.results(res: %res_t)
  }
  irdl.operation @max {
    %x_t = irdl.base "!builtin.tensor"
    %res_t = irdl.base "!builtin.tensor"
    irdl.operands(x: %x_t)
    irdl.results(res: %res_t)
  }
  irdl.operation @min {
    %x_t = irdl.base "!builtin.tensor"
    %res_t = irdl.base "!builtin.tensor"
    irdl.operands(x: %x_t)
    irdl.results(res: %res_t)
  }
  irdl.operation @prod {
    %x_t = irdl.base "!builtin.tensor"
    %res_t = irdl.base "!builtin.tensor"
    irdl.operands(x: %x_t)
    irdl.results(res: %res_t)
  }
  irdl.operation @any {
    %x_t = irdl.base "!builtin.tensor"
    %res_t = irdl.base "!builtin.tensor"
    irdl.operands(x: %x_t)
    irdl.results(res: %res_t)
  }
  irdl.operation @all {
    %x_t = irdl.base "!builtin.tensor"
    %res_t = irdl.base "!builtin.tensor"
    irdl.operands(x: %x_t)
    irdl.results(res: %res_t)
  }
  irdl.operation @cumsum {
    %x_t = irdl.base "!builtin.tensor"
    %res_t = irdl.base "!builtin.tensor"
    irdl.operands(x: %x_t)
    irdl.results(res: %res_t)
  }
  // layout: broadcast_to (target shape = result type), expand_dims/squeeze {axis},
  // strided_slice {axes, begin, end, strides}, tril/triu {k}; take(x, indices) {axis?}
  irdl.operation @broadcast_to {
    %x_t = irdl.base "!builtin.tensor"
    %res_t = irdl.base "!builtin.tensor"
    irdl.operands(x: %x_t)
    irdl.results(res: %res_t)
  }
  irdl.operation @expand_dims {
    %x_t = irdl.base "!builtin.tensor"
    %res_t = irdl.base "!builtin.tensor"
    irdl.operands(x: %x_t)
    irdl.results(res: %res_t)
  }
  irdl.operation @squeeze {
    %x_t = irdl.base "!builtin.tensor"
    %res_t = irdl.base "!builtin.tensor"
    irdl.operands(x: %x_t)
    irdl.results(res: %res_t)
  }
  irdl.operation @strided_slice {
    %x_t = irdl.base "!builtin.tensor"
    %res_t = irdl.base "!builtin.tensor"
    irdl.operands(x: %x_t)
    irdl.results(res: %res_t)
  }
  irdl.operation @tril {
    %x_t = irdl.base "!builtin.tensor"
    %res_t = irdl.base "!builtin.tensor"
    irdl.operands(x: %x_t)
    irdl.results(res: %res_t)
  }
  irdl.operation @triu {
    %x_t = irdl.base "!builtin.tensor"
    %res_t = irdl.base "!builtin.tensor"
    irdl.operands(x: %x_t)
    irdl.results(res: %res_t)
  }
  irdl.operation @take {
    %x_t = irdl.base "!builtin.tensor"
    %indices_t = irdl.base "!builtin.tensor"
    %res_t = irdl.base "!builtin.tensor"
    irdl.operands(x: %x_t, indices: %indices_t)
    irdl.results(res: %res_t)
  }
  // concat(tensors...) {axis = i64}: up to 16 tensors (one optional slot each, as the
  // calls; `operandSegmentSizes` written by the builder), joined along a static axis.
  irdl.operation @concat {
    %a0 = irdl.base "!builtin.tensor"
    %a1 = irdl.base "!builtin.tensor"
    %a2 = irdl.base "!builtin.tensor"
    %a3 = irdl.base "!builtin.tensor"
    %a4 = irdl.base "!builtin.tensor"
    %a5 = irdl.base "!builtin.tensor"
    %a6 = irdl.base "!builtin.tensor"
    %a7 = irdl.base "!builtin.tensor"
    %a8 = irdl.base "!builtin.tensor"
    %a9 = irdl.base "!builtin.tensor"
    %a10 = irdl.base "!builtin.tensor"
    %a11 = irdl.base "!builtin.tensor"
    %a12 = irdl.base "!builtin.tensor"
    %a13 = irdl.base "!builtin.tensor"
    %a14 = irdl.base "!builtin.tensor"
    %a15 = irdl.base "!builtin.tensor"
    %res_t = irdl.base "!builtin.tensor"
    irdl.operands(
        a0: optional %a0, a1: optional %a1, a2: optional %a2, a3: optional %a3,
        a4: optional %a4, a5: optional %a5, a6: optional %a6, a7: optional %a7,
        a8: optional %a8, a9: optional %a9, a10: optional %a10, a11: optional %a11,
        a12: optional %a12, a13: optional %a13, a14: optional %a14, a15: optional %a15)
    irdl.results(res: %res_t)
  }
  // ---- values -----------------------------------------------------------------------
  // constant {value = dense<...> | dense_resource<...>}: a bound parameter or literal.
  irdl.operation @constant {
    %res_t = irdl.base "!builtin.tensor"
    %v = irdl.any
    irdl.attributes { "value" = %v }
    irdl.results(res: %res_t)
  }
  // alloc_tensor: a fresh, uninitialised tensor of the result type (dynamic sizes from
  // `mlc.shape`). Side-effecting: allowed in a graph function, not inside `mlc.dataflow`
  // (course ch.3, `R.alloc_tensor`).
  irdl.operation @alloc_tensor {
    %res_t = irdl.base "!builtin.tensor"
    irdl.results(res: %res_t)
  }
  // ---- calls (destination-passing) --------------------------------------------------
  // call_tir(args...) {callee = @tensor_program}: allocate the result, call the tensor
  // program with (args..., result), return the result (course `R.call_tir`).
  irdl.operation @call_tir {
    %a0 = irdl.base "!builtin.tensor"
    %a1 = irdl.base "!builtin.tensor"
    %a2 = irdl.base "!builtin.tensor"
    %a3 = irdl.base "!builtin.tensor"
    %a4 = irdl.base "!builtin.tensor"
    %a5 = irdl.base "!builtin.tensor"
    %a6 = irdl.base "!builtin.tensor"
    %a7 = irdl.base "!builtin.tensor"
    %a8 = irdl.base "!builtin.tensor"
    %a9 = irdl.base "!builtin.tensor"
    %a10 = irdl.base "!builtin.tensor"
    %a11 = irdl.base "!builtin.tensor"
    %a12 = irdl.base "!builtin.tensor"
    %a13 = irdl.base "!builtin.tensor"
    %a14 = irdl.base "!builtin.tensor"
    %a15 = irdl.base "!builtin.tensor"
    %res_t = irdl.base "!builtin.tensor"
    %sym = irdl.base "#builtin.symbol_ref"
    irdl.attributes { "callee" = %sym }
    irdl.operands(
        a0: optional %a0, a1: optional %a1, a2: optional %a2, a3: optional %a3,
        a4: optional %a4, a5: optional %a5, a6: optional %a6, a7: optional %a7,
        a8: optional %a8, a9: optional %a9, a10: optional %a10, a11: optional %a11,
        a12: optional %a12, a13: optional %a13, a14: optional %a14, a15: optional %a15)
    irdl.results(res: %res_t)
  }
  // call_dps(args...) {callee = "env.name"}: the same for an environment function
  // registered with `mlc.register_func` (`R.call_dps_packed`). (A callee accepting both a
  // string and a symbol would need `irdl.any_of` of two `irdl.base`: that aborts the
  // IRDL loader in LLVM 22, "unknown IRDL constraint".)
  irdl.operation @call_dps {
    %a0 = irdl.base "!builtin.tensor"
    %a1 = irdl.base "!builtin.tensor"
    %a2 = irdl.base "!builtin.tensor"
    %a3 = irdl.base "!builtin.tensor"
    %a4 = irdl.base "!builtin.tensor"
    %a5 = irdl.base "!builtin.tensor"
    %a6 = irdl.base "!builtin.tensor"
    %a7 = irdl.base "!builtin.tensor"
    %a8 = irdl.base "!builtin.tensor"
    %a9 = irdl.base "!builtin.tensor"
    %a10 = irdl.base "!builtin.tensor"
    %a11 = irdl.base "!builtin.tensor"
    %a12 = irdl.base "!builtin.tensor"
    %a13 = irdl.base "!builtin.tensor"
    %a14 = irdl.base "!builtin.tensor"
    %a15 = irdl.base "!builtin.tensor"
    %res_t = irdl.base "!builtin.tensor"
    %str = irdl.base "#builtin.string"
    irdl.attributes { "callee" = %str }
    irdl.operands(
        a0: optional %a0, a1: optional %a1, a2: optional %a2, a3: optional %a3,
        a4: optional %a4, a5: optional %a5, a6: optional %a6, a7: optional %a7,
        a8: optional %a8, a9: optional %a9, a10: optional %a10, a11: optional %a11,
        a12: optional %a12, a13: optional %a13, a14: optional %a14, a15: optional %a15)
    irdl.results(res: %res_t)
  }
  // ---- dataflow blocks --------------------------------------------------------------
  // dataflow: one single-block region of pure graph ops ending in `mlc.output` +
  // `omp.terminator`; its results are the `mlc.output` operands (`R.dataflow()`).
  irdl.operation @dataflow {
    %r0 = irdl.base "!builtin.tensor"
    %r1 = irdl.base "!builtin.tensor"
    %r2 = irdl.base "!builtin.tensor"
    %r3 = irdl.base "!builtin.tensor"
    %r4 = irdl.base "!builtin.tensor"
    %r5 = irdl.base "!builtin.tensor"
    %r6 = irdl.base "!builtin.tensor"
    %r7 = irdl.base "!builtin.tensor"
    %r = irdl.region with size 1
    irdl.results(
        r0: optional %r0, r1: optional %r1, r2: optional %r2, r3: optional %r3,
        r4: optional %r4, r5: optional %r5, r6: optional %r6, r7: optional %r7)
    irdl.regions(body: %r)
  }
  // output(values...): the values a dataflow region exposes (`R.output`).
  irdl.operation @output {
    %v0 = irdl.base "!builtin.tensor"
    %v1 = irdl.base "!builtin.tensor"
    %v2 = irdl.base "!builtin.tensor"
    %v3 = irdl.base "!builtin.tensor"
    %v4 = irdl.base "!builtin.tensor"
    %v5 = irdl.base "!builtin.tensor"
    %v6 = irdl.base "!builtin.tensor"
    %v7 = irdl.base "!builtin.tensor"
    irdl.operands(
        v0: optional %v0, v1: optional %v1, v2: optional %v2, v3: optional %v3,
        v4: optional %v4, v5: optional %v5, v6: optional %v6, v7: optional %v7)
  }
}
