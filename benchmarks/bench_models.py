"""Real models side by side: our default build, torch eager, torch.compile (inductor, CPU)
and ONNX Runtime (TVM when installed is not wired in yet), on ResNet-18 (224),
MobileNet-v2 (224), a GPT-2 block (seq 128, d 768, 12 heads) and BERT encoder layers
(``nn.TransformerEncoderLayer``, seq 128, d 256 and 768), at batch 1 and 8, on 1 and 2
threads.

Each (model, batch, threads) runs in a child process of its own (the thread counts of
OpenMP, torch and ONNX Runtime are fixed when they start), which times every runner in
interleaved rounds and reports medians, the build / compile / session-creation time of
each, the largest difference to torch eager (relative to its largest value), the
process's peak memory after each runner's first call and our build's planned peak
(``ex.memory_plan``: the buffers between kernels and the largest kernel scratch, weights,
inputs and outputs aside). In each round each runner first
idles 0.3 s (past the OpenMP workers' default spin of 200 ms, so no runner's threads
compete with the next one's), makes one call (its weights back in cache), then three
back-to-back calls whose median is the round's figure (a served model's steady state). Ratios are our time over the
peer's (below 1: faster). The host is printed first.

With ``--tune-trials N`` also our build after ``mlc.tune.tune_model`` (N trials shared by
the model's kernels, measured on the configuration's thread count, its model-level check on:
a kernel that makes the model slower goes back to the rules), timed in the same rounds; its
tuning time (the budget) is reported next to it.

Run: python benchmarks/bench_models.py [--quick] [--models resnet18,gpt2] [--batches 1] [--threads 2]
     [--no-compile] (skip torch.compile, whose first call compiles for minutes) [--tune-trials 64]
Needs torch; ONNX Runtime from the ``bench`` extra (``onnxruntime``, ``onnx``, ``onnxscript``).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

MODELS = {
    "resnet18": "ResNet-18 224",
    "mobilenet_v2": "MobileNet-v2 224",
    "gpt2": "GPT-2 block s128 d768 h12",
    "bert256": "BERT layer s128 d256",
    "bert768": "BERT layer s128 d768",
}


#: per round and runner: back-to-back calls timed (their median), after an idle pause
_CALLS = 3
_IDLE_S = 0.3


def _model(name: str, batch: int, quick: bool):
    import torch
    from torch import nn

    from mlc_mlir.testing import models

    g = torch.Generator().manual_seed(0)
    if name == "resnet18":
        size = 64 if quick else 224
        return models.seeded(models.ResNet18()).eval(), (torch.randn(batch, 3, size, size, generator=g),)
    if name == "mobilenet_v2":
        size = 64 if quick else 224
        return models.seeded(models.MobileNetV2()).eval(), (torch.randn(batch, 3, size, size, generator=g),)
    seq = 32 if quick else 128
    if name == "gpt2":
        d, heads = (256, 4) if quick else (768, 12)
        return models.seeded(models.GPT2Block(d, heads, block_size=seq)).eval(), (torch.randn(batch, seq, d, generator=g),)
    d = 256 if name == "bert256" else 768
    layer = nn.TransformerEncoderLayer(d, d // 64, dim_feedforward=4 * d, batch_first=True)
    return models.seeded(layer).eval(), (torch.randn(batch, seq, d, generator=g),)


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _ort_session(ort, path: str, threads: int):
    """An ONNX Runtime CPU session on `threads` intra-op threads, its weights read in."""
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    # its workers would spin after each run and take the cores from the runner timed next
    opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])


def _child(name: str, batch: int, threads: int, quick: bool, use_compile: bool, rounds: int,
           tune_trials: int = 0) -> dict:
    import numpy as np
    import torch

    import mlc_mlir as mlc

    torch.set_num_threads(threads)
    model, inputs = _model(name, batch, quick)
    arrays = [t.numpy() for t in inputs]
    with torch.no_grad():
        ref = model(*inputs).numpy()
    out: dict = {"model": name, "batch": batch, "threads": threads, "quick": quick, "runners": {}}
    runners = {}

    start = time.perf_counter()
    ep = torch.export.export(model, inputs)
    mod = mlc.frontend.from_exported_program(ep)
    ex = mlc.graph.build(mod, "llvm")
    vm = mlc.graph.VirtualMachine(ex, mlc.cpu())
    fn = vm["main"]
    got = fn(*arrays).numpy()
    out["runners"]["ours"] = {"setup_s": time.perf_counter() - start, "peak_mb": _peak_mb(),
                              "plan_mb": ex.memory_plan["main"].peak_bytes / 2**20,
                              "rel": float(np.abs(got - ref).max() / np.abs(ref).max())}
    runners["ours"] = lambda: fn(*arrays)

    if tune_trials:
        start = time.perf_counter()
        with tempfile.TemporaryDirectory(prefix="bench_models_tune_") as work:
            tuned = mlc.tune.tune_model(mod, f"llvm --num-cores={threads}", max_trials_global=tune_trials,
                                        work_dir=work, seed=0, progress=False)
        tune_s = time.perf_counter() - start
        n_tuned = sum("mlc.tuned" in tuned[f].op.attributes for f in tuned.functions)
        tuned_fn = mlc.graph.VirtualMachine(mlc.graph.build(tuned, "llvm"), mlc.cpu())["main"]
        res = tuned_fn(*arrays).numpy()
        out["runners"]["ours tuned"] = {"setup_s": time.perf_counter() - start, "tune_s": tune_s,
                                        "kernels_tuned": n_tuned, "peak_mb": _peak_mb(),
                                        "rel": float(np.abs(res - ref).max() / np.abs(ref).max())}
        runners["ours tuned"] = lambda: tuned_fn(*arrays)

    def eager():
        with torch.no_grad():
            model(*inputs)
    runners["torch eager"] = eager
    out["runners"]["torch eager"] = {"setup_s": 0.0, "peak_mb": _peak_mb(), "rel": 0.0}

    if use_compile:
        try:
            start = time.perf_counter()
            compiled = torch.compile(model)
            with torch.no_grad():
                res = compiled(*inputs).numpy()

            def run_compiled():
                with torch.no_grad():
                    compiled(*inputs)
            runners["torch.compile"] = run_compiled
            out["runners"]["torch.compile"] = {"setup_s": time.perf_counter() - start, "peak_mb": _peak_mb(),
                                               "rel": float(np.abs(res - ref).max() / np.abs(ref).max())}
        except Exception as exc:  # noqa: BLE001 - a peer that fails is reported, not fatal
            out["runners"]["torch.compile"] = {"error": f"{type(exc).__name__}: {str(exc)[:120]}"}
    try:
        import onnxruntime as ort

        start = time.perf_counter()
        # the export writes its weights next to the model (`.onnx.data`): a directory of its
        # own, removed whole once the session has loaded them
        with tempfile.TemporaryDirectory(prefix="bench_models_onnx_") as work:
            path = os.path.join(work, "model.onnx")
            torch.onnx.export(model, inputs, path, dynamo=True, verbose=False)
            sess = _ort_session(ort, path, threads)
        names = [i.name for i in sess.get_inputs()]
        feed = dict(zip(names, arrays))
        res = sess.run(None, feed)[0]
        runners["onnxruntime"] = lambda: sess.run(None, feed)
        out["runners"]["onnxruntime"] = {"setup_s": time.perf_counter() - start, "peak_mb": _peak_mb(),
                                         "rel": float(np.abs(res - ref).max() / np.abs(ref).max())}
    except ImportError:
        out["runners"]["onnxruntime"] = {"error": "not installed (pip install mlc-mlir[bench])"}
    except Exception as exc:  # noqa: BLE001
        out["runners"]["onnxruntime"] = {"error": f"{type(exc).__name__}: {str(exc)[:120]}"}

    times: dict[str, list[float]] = {k: [] for k in runners}
    for _ in range(rounds):  # interleaved: drift of a shared machine hits every runner alike
        for key, run in runners.items():
            # idle past the OpenMP workers' spin (KMP_BLOCKTIME, 200 ms) so that the last
            # runner's threads do not compete; one call to bring this runner's weights
            # back into cache, then the median of back-to-back calls (a served model)
            time.sleep(_IDLE_S)
            run()
            calls = []
            for _ in range(_CALLS):
                start = time.perf_counter()
                run()
                calls.append(time.perf_counter() - start)
            times[key].append(statistics.median(calls))
    for key, ts in times.items():
        out["runners"][key]["median_ms"] = 1e3 * statistics.median(ts)
    return out


def _label(r: dict) -> str:
    return MODELS[r["model"]] + (" (quick: small inputs)" if r.get("quick") else "")


def _table(results: list[dict]) -> str:
    lines = ["| model | batch | threads | ours (ms) | torch eager | torch.compile | ONNX Runtime | ours/eager | "
             "ours/ORT | build (s) | peak MB (ours) | planned MB | max rel. diff |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in results:
        rs = r["runners"]

        def ms(key):
            v = rs.get(key, {})
            return f"{v['median_ms']:.2f}" if "median_ms" in v else v.get("error", "-")[:40]
        ours = rs["ours"].get("median_ms")
        eager = rs["torch eager"].get("median_ms")
        ort_ms = rs.get("onnxruntime", {}).get("median_ms")
        lines.append(f"| {_label(r)} | {r['batch']} | {r['threads']} | {ms('ours')} | {ms('torch eager')} | "
                     f"{ms('torch.compile')} | {ms('onnxruntime')} | {ours / eager:.2f}x | "
                     f"{f'{ours / ort_ms:.2f}x' if ort_ms else '-'} | {rs['ours']['setup_s']:.1f} | "
                     f"{rs['ours']['peak_mb']:.0f} | {rs['ours']['plan_mb']:.1f} | {rs['ours']['rel']:.1e} |")
    tuned = [r for r in results if "ours tuned" in r["runners"]]
    if tuned:
        lines += ["", "| model | batch | threads | tuned (ms) | tuned/default | tuned/eager | tuned/ORT | tuning (s) | "
                  "kernels kept tuned | max rel. diff |", "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in tuned:
        rs = r["runners"]
        t = rs["ours tuned"]
        ms = t["median_ms"]
        ort_ms = rs.get("onnxruntime", {}).get("median_ms")
        lines.append(f"| {_label(r)} | {r['batch']} | {r['threads']} | {ms:.2f} | {ms / rs['ours']['median_ms']:.2f}x | "
                     f"{ms / rs['torch eager']['median_ms']:.2f}x | {f'{ms / ort_ms:.2f}x' if ort_ms else '-'} | "
                     f"{t['tune_s']:.0f} | {t['kernels_tuned']} | {t['rel']:.1e} |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--batches", default="1,8")
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--quick", action="store_true", help="small inputs (a smoke run)")
    parser.add_argument("--no-compile", action="store_true", help="skip torch.compile")
    parser.add_argument("--tune-trials", type=int, default=0,
                        help="also time our build after mlc.tune.tune_model with this many trials (0: off)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    unknown = [m for m in args.models.split(",") if m not in MODELS]
    if unknown and not args.child:
        parser.error(f"unknown model(s) {', '.join(unknown)}; choose from {', '.join(MODELS)}")
    if args.child:
        name, batch, threads = args.child.split(":")
        print("RESULT " + json.dumps(_child(name, int(batch), int(threads), args.quick, not args.no_compile,
                                            args.rounds, args.tune_trials)))
        return 0
    user_blocktime = os.environ.get("KMP_BLOCKTIME")
    from bench_common import host_report  # (sets KMP_BLOCKTIME=0 for the kernel benchmarks)

    print(host_report())
    results = []
    for name in args.models.split(","):
        for batch in (int(b) for b in args.batches.split(",")):
            for threads in (int(t) for t in args.threads.split(",")):
                env = dict(os.environ, OMP_NUM_THREADS=str(threads))
                if user_blocktime is None:
                    # our OpenMP workers spin between a model's kernels as by default: with
                    # bench_common's KMP_BLOCKTIME=0 they slept after each kernel and each of
                    # BERT's 20 kernels woke them again (d256 batch 8: 14.9 ms against 9.4)
                    env.pop("KMP_BLOCKTIME", None)
                cmd = [sys.executable, __file__, "--child", f"{name}:{batch}:{threads}", "--rounds", str(args.rounds)]
                cmd += ["--quick"] if args.quick else []
                cmd += ["--no-compile"] if args.no_compile else []
                cmd += ["--tune-trials", str(args.tune_trials)] if args.tune_trials else []
                proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
                line = next((ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")), None)
                if line is None:
                    print(f"{name} batch {batch} threads {threads}: failed\n{proc.stderr[-2000:]}", flush=True)
                    continue
                results.append(json.loads(line[len("RESULT "):]))
                print("\n".join(ln for ln in _table(results[-1:]).splitlines()
                                if ln and not ln.startswith(("| model", "| ---"))), flush=True)
    print()
    print(_table(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
