"""Freed kernel buffers stay in the heap (runtime/heap.py): a kernel whose three
intermediates (16 MB, or 40 MB: above glibc's largest mmap threshold) are malloc'ed and
freed on every call page-faults them in once, not on every call; ``MLC_KEEP_HEAP=0`` leaves
glibc's malloc as it is (16 MB blocks freed at the heap's top are past its trim threshold,
given back to the OS, and faulted in again on the next call; 40 MB blocks are mapped and
unmapped on every call)."""

import json
import os
import subprocess
import sys

import pytest

_CHILD = r"""
import json, resource, numpy as np, mlc_mlir as mlc
from mlc_mlir import te
from mlc_mlir.runtime.heap import keep_heap
from mlc_mlir.schedule.rules import default_schedule
import sys
n = int(sys.argv[1])  # f32 elements
x = te.placeholder((n,), name="x")
t = te.compute((n,), lambda i: x[i] + 1.0, name="t")
u = te.compute((n,), lambda i: t[i] * 2.0, name="u")
v = te.compute((n,), lambda i: u[i] - 1.0, name="v")
y = te.compute((n,), lambda i: v[i] + t[i], name="y")
mod = te.create_prim_func([x, y], name="f")
sch = mlc.Schedule(mod)
for name in ("t", "u", "v", "y"):  # loops of their own: t, u, v are 16 MB buffers
    sch.vectorize(sch.split(sch.get_loops(sch.get_block(name, "f"))[0], [None, 16])[1])
rt = mlc.build(sch.mod)
a = np.ones(n, "float32"); out = np.zeros(n, "float32")
for _ in range(3):
    rt["f"](a, out)
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(10):
    rt["f"](a, out)
faults = (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / 10
print(json.dumps({"kept": keep_heap(), "faults_per_call": faults, "ok": bool((out == 5.0).all())}))
"""


def _run(env_extra: dict, n: int) -> dict:
    env = dict(os.environ, MLC_CACHE_DIR="off", **env_extra)
    proc = subprocess.run([sys.executable, "-c", _CHILD, str(n)], env=env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt")
@pytest.mark.parametrize("n", [1 << 22, 10 << 20], ids=["16MB", "40MB"])
def test_kernel_buffers_stay_in_the_heap_between_calls(n):
    kept, plain = _run({}, n), _run({"MLC_KEEP_HEAP": "0"}, n)
    assert kept["ok"] and plain["ok"]
    assert kept["kept"] is True and plain["kept"] is False
    pages = n * 4 // 4096  # the intermediate's 4 KiB pages
    assert plain["faults_per_call"] > pages / 2, plain  # mmap'ed and unmapped on every call
    assert kept["faults_per_call"] < pages / 20, kept
