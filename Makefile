# Two commands for a newcomer: `make run` and `make test`. Needs only python3.11 and make.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
TEST_STAMP := $(VENV)/.installed-test

.PHONY: run test check index clean bench

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e .
	touch $@

$(TEST_STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[test,dev]'
	touch $(STAMP) $@

## make run: create the venv, install, index the bundled memory, open the console
run: $(STAMP)
	@$(BIN)/triage index || echo "(the console will show these problems too)"
	@$(BIN)/triage

## make test: install the test extras into the same venv and run the whole suite
test: $(TEST_STAMP)
	$(BIN)/python -m pytest

## make check: lint, types, then the tests
check: $(TEST_STAMP)
	$(BIN)/ruff check store console tests bench
	$(BIN)/mypy store console
	$(BIN)/python -m pytest

index: $(STAMP)
	$(BIN)/triage index --rebuild

bench: $(TEST_STAMP)
	$(BIN)/python bench/recall_bench.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
