# `make demo`: set up .venv if missing (only what the demo needs), run the course's end-to-end
# flow on a real model, print the time taken.
# `make test`: set up .venv if missing (plus the test tools and torch), run every test (pytest + lit
# + the installed-wheel check): all three parts even when one fails, then one summary line per
# part; fails iff a part failed.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
# the package, NumPy, the MLIR/LLVM wheels, OpenMP, scikit-learn (examples extra): what make demo needs
DEMO_STAMP := $(VENV)/.mlc-demo
# and the test tools, benchmark peers and torch: what make test needs
STAMP  := $(VENV)/.mlc-installed

.PHONY: setup setup-demo demo test pytest lit package-check bench bench-tune clean

setup: $(STAMP)
setup-demo: $(DEMO_STAMP)

# torch for the demo's models and the tests: the CPU wheel on this machine's disk when there
# is one, else PyTorch's CPU index (PyPI's torch is the multi-GB CUDA build).
TORCH_FROM := $(if $(wildcard /opt/wheels/torch-*+cpu-*.whl),--find-links /opt/wheels,--index-url https://download.pytorch.org/whl/cpu)

# One pip command per line (pip's progress shows).
$(DEMO_STAMP): pyproject.toml setup.py
	@echo "== setting up $(VENV) for the demo: MLIR/LLVM wheels, NumPy, OpenMP, scikit-learn, torch (CPU)"
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --upgrade pip
	$(PY) -m pip install -e '.[examples]'
	$(PY) -m pip install $(TORCH_FROM) 'torch==2.13.0' \
	  || echo "== torch (CPU) could not be installed: the PyTorch examples and tests will say so and skip"
	touch $(DEMO_STAMP)

$(STAMP): $(DEMO_STAMP)
	@echo "== adding the test tools to $(VENV)"
	$(PY) -m pip install -e '.[test]'
	touch $(STAMP)

# The time includes the setup when .venv had to be made.
# The course's flow on the digits MLP, then models people bring: ResNet-18 and a GPT-2 block.
demo:
	@start=$$(date +%s); $(MAKE) --no-print-directory setup-demo && $(PY) examples/mlp_digits.py \
	  && echo "== ResNet-18 and a GPT-2 block from PyTorch (torch.export -> mlc.graph.build -> VM)" \
	  && if $(PY) -c "import torch" 2>/dev/null; then $(PY) examples/resnet18.py && $(PY) examples/gpt2_block.py; \
	     else echo "(skipped: torch is not installed in $(VENV))"; fi \
	  && echo "== make demo: $$(( $$(date +%s) - start )) s, setup included"

TEST_PARTS := pytest lit package-check
TEST_LOGS  := build/test-logs
# pytest-xdist workers for `make pytest` (both cores; the tuning tests stay together in one
# worker: tests/python/conftest.py); PYTEST_WORKERS=0 runs the suite in one process.
PYTEST_WORKERS ?= 2

# A part's counts, read from its log: pytest's last count line, lit's summary, the package
# check's verdict.
part_counts = case $(1) in \
  pytest) grep -E '[0-9]+ (passed|failed|errors?|skipped)|no tests ran' $(2) | tail -n 1 | tr -d '=' \
          | sed -E 's/^ +//; s/ +$$//';; \
  lit) grep -E '^  [A-Z][A-Za-z ]+: +[0-9]+' $(2) | sed -E 's/^ +//; s/: +/: /; s/ \(.*//' | paste -sd ',' - \
       | sed 's/,/, /g';; \
  *) grep -E '^package check' $(2) | tail -n 1;; \
esac

# Each part runs whatever the others did; its whole output is also kept in $(TEST_LOGS)/.
test: setup
	@mkdir -p $(TEST_LOGS); : > $(TEST_LOGS)/summary; failed=0; \
	for part in $(TEST_PARTS); do \
	  echo "== make $$part"; t0=$$(date +%s); \
	  { $(MAKE) --no-print-directory $$part; echo $$? > $(TEST_LOGS)/$$part.rc; } 2>&1 | tee $(TEST_LOGS)/$$part.log; \
	  if [ "$$(cat $(TEST_LOGS)/$$part.rc)" = 0 ]; then status=passed; else status=FAILED; failed=1; fi; \
	  counts=$$($(call part_counts,$$part,$(TEST_LOGS)/$$part.log)); \
	  printf '%-14s %-7s %5ss  %s\n' $$part $$status $$(( $$(date +%s) - t0 )) "$${counts:-(no counts: see $(TEST_LOGS)/$$part.log)}" \
	    >> $(TEST_LOGS)/summary; \
	done; \
	echo "== make test: one line per part (part, result, wall time, counts; logs in $(TEST_LOGS)/)"; \
	cat $(TEST_LOGS)/summary; exit $$failed

# The venv's pytest script, not `python -m pytest`: the checkout is not put on sys.path, so
# mlc_mlir is imported the way the installed package is.
pytest: setup
	$(VENV)/bin/pytest tests/python $(if $(filter-out 0,$(PYTEST_WORKERS)),-n $(PYTEST_WORKERS))

# -s: a progress line, failures with their output (-v), then the counts per result.
lit: setup
	$(VENV)/bin/lit -sv tests/lit

.PHONY: fuzz
# `make fuzz`: a long random Hypothesis search (tests/python/test_fuzz.py); replay with MLC_FUZZ_SEED=<seed>.
fuzz: setup
	MLC_FUZZ_EXAMPLES=$${MLC_FUZZ_EXAMPLES:-300} MLC_FUZZ_SEED=$${MLC_FUZZ_SEED:-$$(date +%s)} $(PY) -m pytest -q tests/python/test_fuzz.py

# Build the sdist and wheel, install the wheel into a clean temporary venv and run a graph
# model, mlc-opt and examples from outside the checkout (tests/package/check_wheel.py).
package-check: setup
	$(PY) tests/package/check_wheel.py

bench: setup
	$(PY) benchmarks/bench_call.py
	$(PY) benchmarks/bench_matmul.py
	$(PY) benchmarks/bench_mlp_fusion.py
	$(PY) benchmarks/bench_cuda.py

# `make bench-tune`: tuning runs (minutes): trials, wall time, ratios against NumPy, tuning curve.
bench-tune: setup
	$(PY) benchmarks/bench_tune.py

clean:
	rm -rf .lit-out .pytest_cache build dist *.egg-info

.PHONY: mutate
# `make mutate`: mutation testing (cosmic-ray, the `mutate` extra) of the core modules listed in
# tools/mutate.toml, each mutant run against its module's own tests in a scratch copy of the
# tree (build/mutate/); hours for all of them, resumable; `make mutate MODULES="database loop_deps"`
# runs some; MUTATE_ARGS="--source head" mutates the last commit instead of the working tree.
# Scores and surviving mutants: build/mutate/report.md.
MODULES ?=
MUTATE_ARGS ?=
mutate: setup
	$(PY) -c "import cosmic_ray" 2>/dev/null || $(PY) -m pip install -e '.[mutate]'
	nice -n 10 $(PY) tools/mutate.py $(if $(MODULES),--modules $(MODULES)) $(MUTATE_ARGS)

.PHONY: gpu-check
# `make gpu-check`: on a machine with a CUDA GPU, every GPU test and benchmarks/bench_cuda.py
# with timeouts, logs and a summary in gpu_check_out/ (tools/gpu_check.sh).
gpu-check: setup
	$(PY) -m pip install -e '.[cuda]' pytest-timeout
	PYTHON=$(PY) bash tools/gpu_check.sh
