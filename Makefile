# PHANTOM -- the README's two commands are `make run` and `make test`; both set everything up first.
SHELL := /bin/bash
PYTHON ?= python3.11
VENV ?= .venv
BIN := $(VENV)/bin
export DAGSTER_HOME ?= $(CURDIR)/.dagster_home
export PHANTOM_DATA_DIR ?= $(CURDIR)/data
UI_PORT ?= 3000
# dbt: no anonymous usage pings (no network here), quiet version checks.
export DBT_SEND_ANONYMOUS_USAGE_STATS := false
export DO_NOT_TRACK := 1
# The UI (make ui) re-parses the dbt project on load with the `dbt` it finds on PATH.
export PATH := $(CURDIR)/$(BIN):$(PATH)

DBT_SOURCES := $(shell find dbt_project -path dbt_project/target -prune -o \( -name '*.sql' -o -name '*.yml' \) -print 2>/dev/null)

.PHONY: setup run test test-all ui lint bench scale-demo scale-demo-packages mutants
.DEFAULT_GOAL := run

$(BIN)/.installed: requirements.txt requirements.lock pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --disable-pip-version-check -r requirements.txt -c requirements.lock
	$(BIN)/pip install -q --disable-pip-version-check --no-deps -e .
	touch $@

# `make test` / `make lint` also need pyproject's optional extras: `tracking` (wandb; the tests run
# it offline), `test` (pytest, hypothesis, ruff, datasets) and `signing` (cryptography: the tests
# sign and verify certificates), pinned by the same lock.
$(BIN)/.installed-dev: $(BIN)/.installed
	$(BIN)/pip install -q --disable-pip-version-check -c requirements.lock -e '.[tracking,test,signing]'
	touch $@

dbt_project/target/manifest.json: $(BIN)/.installed $(DBT_SOURCES)
	$(BIN)/dbt parse --quiet --project-dir dbt_project --profiles-dir dbt_project

$(DAGSTER_HOME)/dagster.yaml: orchestration/dagster.yaml
	mkdir -p $(DAGSTER_HOME)
	cp orchestration/dagster.yaml $@

## setup: virtualenv + pinned dependencies, dbt manifest, DAGSTER_HOME
setup: $(BIN)/.installed dbt_project/target/manifest.json $(DAGSTER_HOME)/dagster.yaml

## run: the main job on the embedded defaults (simulates demo data if data/incoming is empty)
run: setup
	$(BIN)/phantom run

# Two worker processes (one per core), each test module on one of them (`loadfile`: a module's
# fixtures are built once; xdist 3.8's `loadgroup` ignores `xdist_group` marks under pytest 9);
# the session's built pipeline is shared by all (tests/built_pipeline.py). One BLAS/OpenMP thread
# per process: two workers already fill two cores, and OpenBLAS's own threads on top of them
# spin against each other (the store-sample study: 44 s CPU with two threads, 25 s with one).
# `--no-loadscope-reorder`: hand out files in pyproject's `testpaths` order (longest first); xdist's
# default reorders them by test count, which left the one-test automation file running alone last.
PYTEST := OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 $(BIN)/python -m pytest -n 2 --dist loadfile \
	--no-loadscope-reorder

## test: the fast default suite (everything but the slow deployment tests)
test: setup $(BIN)/.installed-dev
	$(PYTEST) -m "not slow"

## test-all: every test, the deployment ones included (what CI runs)
test-all: setup $(BIN)/.installed-dev
	$(PYTEST)

## mutants: plant each known bug in a copy of the checkout, record the test that catches it
## (docs/mutants.md; the seventeen take ~16 min on 2 cores: the pipeline-level ones build the tiny pipeline)
mutants: setup $(BIN)/.installed-dev
	$(BIN)/python -m tests.mutants

## ui: the Dagster UI on http://127.0.0.1:3000 (UI_PORT=...); Ctrl-C or SIGTERM stops every
## process of it within seconds (orchestration/devserver.py says why that needs a wrapper)
ui: setup
	$(BIN)/python -m orchestration.devserver $(BIN)/dagster dev -w workspace.yaml -h 127.0.0.1 -p $(UI_PORT)

lint: setup $(BIN)/.installed-dev
	$(BIN)/ruff check phantom_assets orchestration tests
	$(BIN)/ruff format --check phantom_assets orchestration tests

bench: setup
	$(BIN)/phantom bench fingerprint
	$(BIN)/phantom bench env

## scale-demo: Redis + Postgres + two Celery workers in a temp dir, a training slice on them, teardown
## (logs kept in $(PHANTOM_DATA_DIR)/logs/scale-demo-<time>/). Checks its system packages first.
scale-demo: scale-demo-packages setup
	$(BIN)/python -m orchestration.scale_out.demo

scale-demo-packages:
	@command -v redis-server >/dev/null && { command -v pg_ctl >/dev/null || ls /usr/lib/postgresql/*/bin/pg_ctl >/dev/null 2>&1; } \
	  || { echo "make scale-demo needs redis-server and postgresql: apt-get install redis-server postgresql (Debian/Ubuntu)" >&2; exit 2; }
