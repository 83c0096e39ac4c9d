# `make demo`: set up .venv if missing, run the course's end-to-end flow on a real model.
# `make test`: set up .venv if missing, run every test (pytest + lit).
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.mlc-installed

.PHONY: setup demo test pytest lit bench clean

setup: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test]'
	if ls /opt/wheels/torch-*+cpu-*.whl >/dev/null 2>&1; then $(PY) -m pip install -q --find-links /opt/wheels 'torch==2.13.0'; fi
	touch $(STAMP)

demo: setup
	$(PY) examples/mlp_digits.py

test: setup pytest lit

pytest: setup
	$(PY) -m pytest tests/python

lit: setup
	$(VENV)/bin/lit -q tests/lit

.PHONY: fuzz
# `make fuzz`: a long random Hypothesis search (tests/python/test_fuzz.py); replay with MLC_FUZZ_SEED=<seed>.
fuzz: setup
	MLC_FUZZ_EXAMPLES=$${MLC_FUZZ_EXAMPLES:-300} MLC_FUZZ_SEED=$${MLC_FUZZ_SEED:-$$(date +%s)} $(PY) -m pytest -q tests/python/test_fuzz.py

bench: setup
	$(PY) benchmarks/bench_matmul.py
	$(PY) benchmarks/bench_mlp_fusion.py

clean:
	rm -rf .lit-out .pytest_cache
