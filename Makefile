# fleetplace — every target sets up what it needs.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: test lint typecheck unit faults fuzz load demo bench bench-engine bench-queues bench-e2e bench-audit clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

lint: $(STAMP)
	$(BIN)/ruff check shared services tests
	$(BIN)/ruff format --check shared services tests

typecheck: $(STAMP)
	$(BIN)/mypy

unit: $(STAMP)
	$(BIN)/pytest

test: lint typecheck unit

# Fault injection on real processes (tests/faults): every scenario, figures as JSON lines.
faults: $(STAMP)
	$(BIN)/pytest -m faults -s -p no:cacheprovider tests/faults

# 100,000 hostile records into a scheduler worker (tests/fuzz), figures as a JSON line.
fuzz: $(STAMP)
	$(BIN)/pytest -m slow -s -p no:cacheprovider tests/fuzz

# 1,000,000 cluster updates at 5,000 clusters and 5,000 placements (tests/load); JSON lines.
load: $(STAMP)
	$(BIN)/python -m tests.load.scheduler

demo: $(STAMP)
	$(BIN)/fleetplace demo

bench: bench-engine bench-queues bench-e2e bench-audit

bench-engine: $(STAMP)
	$(BIN)/python -m tests.bench.engine

bench-queues: $(STAMP)
	$(BIN)/python -m tests.bench.queues

bench-e2e: $(STAMP)
	$(BIN)/python -m tests.bench.e2e

bench-audit: $(STAMP)
	$(BIN)/python -m tests.bench.audit

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache
