"""Small tensor programs the tests share (the course's mm_relu and matmul as MLIR text)."""

from __future__ import annotations

import numpy as np

import mlc_mlir as mlc
from mlc_mlir import te

__all__ = ["N", "gather_generic", "mm_relu_text", "matmul_text", "dyn_add_text", "mm_relu", "matmul", "linear", "inputs",
           "build_and_run", "loop_names"]

N = 128


def mm_relu_text(n: int = N, name: str = "mm_relu") -> str:
    """Course ch.2 ``mm_relu``: block ``Y`` = A @ B (with its init), block ``C`` = relu(Y)."""
    t = f"tensor<{n}x{n}xf32>"
    return f"""
func.func @{name}(%A: {t} {{mlc.name = "A"}}, %B: {t} {{mlc.name = "B"}}, %C: {t} {{mlc.name = "C"}})
    -> {t} attributes {{mlc.prim_func}} {{
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : {t}
  %y0 = linalg.fill {{mlc.block_init = "Y"}} ins(%zero : f32) outs(%e : {t}) -> {t}
  %y = linalg.matmul {{mlc.block = "Y"}} ins(%A, %B : {t}, {t}) outs(%y0 : {t}) -> {t}
  %c = linalg.generic {{indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
                       iterator_types = ["parallel", "parallel"]}}
       ins(%y : {t}) outs(%C : {t}) attrs = {{mlc.block = "C"}} {{
  ^bb0(%v: f32, %o: f32):
    %r = arith.maximumf %v, %zero : f32
    linalg.yield %r : f32
  }} -> {t}
  return %c : {t}
}}
"""


def matmul_text(n: int = N, name: str = "main", block: str = "C") -> str:
    """Course ch.4 ``MyModule``: block ``C`` (or ``block``) = A @ B with its init."""
    t = f"tensor<{n}x{n}xf32>"
    return f"""
func.func @{name}(%A: {t}, %B: {t}, %C: {t}) -> {t} attributes {{mlc.prim_func}} {{
  %zero = arith.constant 0.0 : f32
  %c0 = linalg.fill {{mlc.block_init = "{block}"}} ins(%zero : f32) outs(%C : {t}) -> {t}
  %c = linalg.matmul {{mlc.block = "{block}"}} ins(%A, %B : {t}, {t}) outs(%c0 : {t}) -> {t}
  return %c : {t}
}}
"""


def dyn_add_text() -> str:
    """``C[i, j] = A[i, j] + 1`` with a symbolic first dim ``n``."""
    t = "tensor<?x64xf32>"
    return f"""
func.func @add_one(%A: {t} {{mlc.name = "A", mlc.shape = ["n", 64]}},
                   %C: {t} {{mlc.name = "C", mlc.shape = ["n", 64]}}) -> {t} attributes {{mlc.prim_func}} {{
  %one = arith.constant 1.0 : f32
  %c = linalg.generic {{indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
                       iterator_types = ["parallel", "parallel"]}}
       ins(%A : {t}) outs(%C : {t}) attrs = {{mlc.block = "C"}} {{
  ^bb0(%v: f32, %o: f32):
    %r = arith.addf %v, %one : f32
    linalg.yield %r : f32
  }} -> {t}
  return %c : {t}
}}
"""


def gather_generic(in_shape: tuple, out_shape: tuple, in_map: str, *, name: str = "k",
                   body: str = "linalg.yield %in : f32") -> mlc.Module:
    """A tensor program of one all-parallel ``linalg.generic`` (block ``blk``) reading its
    f32 input through the affine map results ``in_map`` (``"d0 * 4 + d1, d2"``) into an
    output indexed plainly; ``body`` may use ``%in`` and ``%cst`` (0.0)."""
    nd = len(out_shape)
    dims = ", ".join(f"d{i}" for i in range(nd))
    ins, outs = "x".join(map(str, in_shape)), "x".join(map(str, out_shape))
    par = ", ".join(['"parallel"'] * nd)
    return mlc.Module.parse(f"""
module {{
  func.func @{name}(%x: tensor<{ins}xf32>, %y: tensor<{outs}xf32>) -> tensor<{outs}xf32> attributes {{mlc.prim_func}} {{
    %cst = arith.constant 0.0 : f32
    %0 = linalg.generic {{indexing_maps = [affine_map<({dims}) -> ({in_map})>, affine_map<({dims}) -> ({dims})>],
        iterator_types = [{par}]}} ins(%x : tensor<{ins}xf32>) outs(%y : tensor<{outs}xf32>) attrs = {{mlc.block = "blk"}} {{
    ^bb0(%in: f32, %out: f32):
      {body}
    }} -> tensor<{outs}xf32>
    return %0 : tensor<{outs}xf32>
  }}
}}""")


def mm_relu(n: int = N) -> mlc.Module:
    """:func:`mm_relu_text` parsed."""
    return mlc.Module.parse(mm_relu_text(n))


def linear(m: int, n: int, k: int, *, relu: bool = True, transposed: bool = False,
           name: str = "linear") -> mlc.Module:
    """``x`` (m x k) times ``w`` (k x n; ``transposed``: n x k, ``x @ w.T``) as te block ``Y``
    over reduce axis ``r``, then ``C = max(Y, 0)`` with ``relu``: function ``name(x, w, out)``."""
    x = te.placeholder((m, k), "float32", name="x")
    w = te.placeholder((n, k) if transposed else (k, n), "float32", name="w")
    r = te.reduce_axis((0, k), "r")
    y = te.compute((m, n), lambda i, j: te.sum(x[i, r] * (w[j, r] if transposed else w[r, j]), axis=r), name="Y")
    if not relu:
        return te.create_prim_func([x, w, y], name=name)
    c = te.compute((m, n), lambda i, j: te.max(y[i, j], 0), name="C")
    return te.create_prim_func([x, w, c], name=name)


def matmul(n: int = N) -> mlc.Module:
    """:func:`matmul_text` parsed."""
    return mlc.Module.parse(matmul_text(n))


def inputs(n: int = N, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Two seeded standard-normal ``n x n`` float32 matrices."""
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((n, n), dtype=np.float32), rng.standard_normal((n, n), dtype=np.float32))


def build_and_run(mod: mlc.Module, func: str, *arrays: np.ndarray) -> np.ndarray:
    """Build ``mod``, run ``func`` in place on ``arrays`` and return the last (output) one."""
    rt = mlc.build(mod, target="llvm")
    rt[func](*arrays)
    return arrays[-1]


def loop_names(mod: mlc.Module) -> list[str]:
    """The ``mlc.loop`` names in the printed module, in order."""
    import re

    return re.findall(r'mlc\.loop = "([^"]+)"', str(mod))
