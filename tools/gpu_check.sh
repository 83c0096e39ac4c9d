#!/usr/bin/env bash
# One run that tells everything about CUDA on this machine (issue "CUDA on a real GPU"):
# the GPU, the toolkit, every GPU test (pytest, one timeout per test) and benchmarks/bench_cuda.py
# (vector add and window sum bandwidth, matmul 1024/4096 hand-scheduled and tuned, against
# PyTorch CUDA in the same process). Writes its logs and summary.txt to $OUT_DIR.
#
#     make gpu-check                  # or: OUT_DIR=gpu_check_out bash tools/gpu_check.sh
#
# Environment: PYTHON (default: .venv/bin/python if present, else python3), OUT_DIR
# (default gpu_check_out), TEST_TIMEOUT (seconds per test, 300), BENCH_TIMEOUT (seconds, 300),
# SUITE_TIMEOUT (seconds for all the tests, 1800), TUNE_TRIALS (tuned matmul 4096 candidates,
# 16; 0 skips), JOBS (pytest workers, 4).
set -u
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-$( [ -x .venv/bin/python ] && echo .venv/bin/python || echo python3 )}
OUT_DIR=${OUT_DIR:-gpu_check_out}
mkdir -p "$OUT_DIR"
SUMMARY="$OUT_DIR/summary.txt"
: > "$SUMMARY"
say() { echo "$*" | tee -a "$SUMMARY"; }

say "# gpu_check $(date -u +%FT%TZ) on $(hostname)"
say "## GPU"
if command -v nvidia-smi >/dev/null; then
    nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv,noheader 2>&1 | tee -a "$SUMMARY"
else
    say "nvidia-smi: not found"
fi
say "## toolkit and packages"
"$PYTHON" - <<'PY' 2>&1 | tee -a "$SUMMARY"
import platform
from mlc_mlir.compiler.cuda import cuda_driver, device_arch
from mlc_mlir.compiler.gpu_pipeline import cuda_toolkit
print("python", platform.python_version(), "| driver", "yes" if cuda_driver() is not None else "NO",
      "| arch", device_arch(), "| toolkit (ptxas)", cuda_toolkit())
try:
    import torch
    print("torch", torch.__version__, "| cuda", torch.cuda.is_available(),
          torch.cuda.get_device_name(0) if torch.cuda.is_available() else "")
except ImportError:
    print("torch: not installed (DLPack and benchmark comparisons are skipped)")
PY

say "## GPU tests"
TESTS=$(ls tests/python/test_cuda_*.py tests/python/test_deploy_cuda.py tests/python/test_tune_cuda.py)
timeout "${SUITE_TIMEOUT:-1800}" "$PYTHON" -m pytest -p no:cacheprovider -rfEs -n "${JOBS:-4}" \
    --timeout "${TEST_TIMEOUT:-300}" --junitxml "$OUT_DIR/gpu_tests.xml" $TESTS > "$OUT_DIR/gpu_tests.log" 2>&1
say "pytest exit status $?"
grep -E "^(FAILED|ERROR|SKIPPED)|passed|failed" "$OUT_DIR/gpu_tests.log" | tail -40 | tee -a "$SUMMARY"

say "## benchmarks/bench_cuda.py"
timeout "${BENCH_TIMEOUT:-300}" "$PYTHON" benchmarks/bench_cuda.py --tune-trials "${TUNE_TRIALS:-16}" \
    > "$OUT_DIR/bench_cuda.log" 2>&1
say "bench_cuda exit status $?"
tail -30 "$OUT_DIR/bench_cuda.log" | tee -a "$SUMMARY"
