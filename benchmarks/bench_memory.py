"""Peak memory of a model call: our default build against torch eager and ONNX Runtime, on
the models of ``bench_models.py`` (ResNet-18, MobileNet-v2, a GPT-2 block, BERT layers).

Each (model, batch, runner) runs in a process of its own, on one thread: the runner is set
up (our build, torch's model, ONNX Runtime's session), then its first call is watched:
the figure is how far the bytes glibc's malloc has handed out (``mallinfo2``: heap blocks
in use and mmap'ed blocks, read by a thread every 0.2 ms during the call, and after it)
rise above what they were before the call: what a call allocates besides the loaded model,
its weights and its input (intermediates, kernel scratch, the output; an arena such as ONNX
Runtime's counts as the blocks it takes from malloc). Resident memory would not tell: a
call reuses pages its setup freed. Our build's plan (``ex.memory_plan``) is printed next
to it. Ratios are ours over the peer's (below 1: less memory).

Run: python benchmarks/bench_memory.py [--models resnet18,mobilenet_v2] [--batches 1,8]
Needs torch, glibc (2.33 or later); ONNX Runtime from the ``bench`` extra.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import subprocess
import sys
import threading
import time

from bench_models import MODELS, _model

RUNNERS = ("ours", "torch eager", "onnxruntime")


class _MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in
                ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks",
                 "keepcost")]


_mallinfo2 = getattr(ctypes.CDLL(None), "mallinfo2", None)  # glibc 2.33 or later
if _mallinfo2 is not None:
    _mallinfo2.restype = _MallInfo2


def _in_use() -> int:
    """Bytes malloc has handed out and not had back (heap blocks in use + mmap'ed blocks)."""
    info = _mallinfo2()
    return info.uordblks + info.hblkhd


def _call_rise_mb(run) -> float:
    """How far one call of ``run`` raises the bytes malloc has handed out (MB), at its peak
    (read by a thread every 0.2 ms during the call, and after it)."""
    before = _in_use()
    peak = [before]
    stop = threading.Event()

    def watch() -> None:
        while not stop.is_set():
            peak[0] = max(peak[0], _in_use())
            time.sleep(0.0002)

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        run()
    finally:
        stop.set()
        watcher.join()
    return (max(peak[0], _in_use()) - before) / 2**20


def _child(name: str, batch: int, runner: str) -> dict:
    import torch

    torch.set_num_threads(1)
    model, inputs = _model(name, batch, False)
    arrays = [t.numpy() for t in inputs]
    out: dict = {"model": name, "batch": batch, "runner": runner}
    if runner == "ours":
        import mlc_mlir as mlc

        ex = mlc.graph.build(mlc.frontend.from_exported_program(torch.export.export(model, inputs)), "llvm")
        fn = mlc.graph.VirtualMachine(ex, mlc.cpu())["main"]
        out["plan_mb"] = ex.memory_plan["main"].peak_bytes / 2**20
        run = lambda: fn(*arrays)  # noqa: E731
    elif runner == "torch eager":
        def run():
            with torch.no_grad():
                model(*inputs)
    else:
        import onnxruntime as ort

        path = f"/tmp/bench_memory_{os.getpid()}.onnx"
        torch.onnx.export(model, inputs, path, dynamo=True, verbose=False)
        opts = ort.SessionOptions()
        opts.intra_op_num_threads, opts.inter_op_num_threads = 1, 1
        sess = ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])
        os.unlink(path)
        feed = dict(zip([i.name for i in sess.get_inputs()], arrays))
        run = lambda: sess.run(None, feed)  # noqa: E731
    out["call_mb"] = _call_rise_mb(run)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="resnet18,mobilenet_v2,gpt2,bert256,bert768")
    parser.add_argument("--batches", default="1,8")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        name, batch, runner = args.child.split(":")
        print("RESULT " + json.dumps(_child(name, int(batch), runner)))
        return 0
    if _mallinfo2 is None:
        print("bench_memory: needs glibc's mallinfo2 (glibc 2.33 or later)")
        return 1
    from bench_common import host_report

    print(host_report())
    print("| model | batch | ours (MB) | planned (ex.memory_plan) | torch eager | ONNX Runtime | ours / ORT |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for name in args.models.split(","):
        for batch in (int(b) for b in args.batches.split(",")):
            res = {}
            for runner in RUNNERS:
                env = dict(os.environ, OMP_NUM_THREADS="1")
                proc = subprocess.run([sys.executable, __file__, "--child", f"{name}:{batch}:{runner}"], env=env,
                                      capture_output=True, text=True)
                line = next((ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")), None)
                res[runner] = json.loads(line[len("RESULT "):]) if line else {}
                if line is None:
                    print(f"{name} batch {batch} {runner}: failed\n{proc.stderr[-1000:]}", flush=True)
            ours, eager, ort = (res[r] for r in RUNNERS)
            mb = lambda r, k="call_mb": f"{r[k]:.1f}" if k in r else "failed"  # noqa: E731
            ratio = f"{ours['call_mb'] / ort['call_mb']:.2f}x" if ours.get("call_mb") and ort.get("call_mb") else "-"
            print(f"| {MODELS[name]} | {batch} | {mb(ours)} | {mb(ours, 'plan_mb')} | {mb(eager)} | {mb(ort)} | "
                  f"{ratio} |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
