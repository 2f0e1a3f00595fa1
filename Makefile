# EdgeCron developer commands. `make local` and `make test` are the README's quick start.
SHELL := /bin/bash
PY312 := $(firstword $(wildcard $(HOME)/.pyenv/versions/3.12*/bin/python3.12) $(shell command -v python3.12 2>/dev/null))
VENV := .venv
BIN := $(VENV)/bin
SAM := .venv-sam/bin/sam
PYTEST_FLAGS ?= -q
INTEGRATION_WORKERS ?= 2

.PHONY: setup local test lint typecheck template build build-test unit integration soak e2e typescript sdk-types bench deploy clean iam-permissions

## setup: create .venv with everything the project needs (idempotent)
setup: $(VENV)/.installed

$(VENV)/.installed: requirements-dev.txt pyproject.toml testing/pyproject.toml
	@test -n "$(PY312)" || { echo "Python 3.12 is required (pyenv install 3.12)"; exit 1; }
	@echo "==> creating $(VENV) with $(PY312)"
	@test -x $(BIN)/python || $(PY312) -m venv $(VENV)
	@$(BIN)/pip install --quiet --disable-pip-version-check -r requirements-dev.txt
	@$(BIN)/pip install --quiet --disable-pip-version-check --no-deps -e . -e testing
	@touch $@

## local: set up, then run the local stack (moto + API on 127.0.0.1:3000)
local: setup
	$(BIN)/edgecron local

## test: set up, then lint, type-check, validate the template and run every test layer, all at once:
## e2e spends most of its time waiting on real clocks, so it runs at normal priority and the CPU-bound
## rest (integration in INTEGRATION_WORKERS pytest-xdist processes) takes the cores it leaves idle;
## the browser layer runs last, on a quiet machine, since its pages wait on real fires
test: setup
	@echo "==> lint, types, template and every test layer side by side; each one's output appears when it ends"
	@$(MAKE) --no-print-directory -j --output-sync=target NICE="nice -n 10" lint typecheck template build-test unit integration e2e typescript
	@$(MAKE) --no-print-directory browser
	@echo "==> all checks passed"

lint: setup
	@echo "==> ruff"
	@$(BIN)/ruff check --no-cache .
	@$(BIN)/ruff format --no-cache --check .

typecheck: setup
	@echo "==> mypy"
	@$(BIN)/mypy layers/core/edgecron cli/edgecron_cli cli/edgecron_client functions

## the SAM CLI's own venv (.venv-sam), created once; `template` and `build` both need it
$(SAM):
	@scripts/sam-venv.sh

template: setup $(SAM)
	@echo "==> cfn-lint + sam validate --lint"
	@scripts/sam-validate.sh

build: setup $(SAM)
	@scripts/sam-build.sh

## build-test: build, then check what was built (aarch64 native code only, no second botocore in the
## layer, every requirement present, sizes within budget)
build-test: build
	@echo "==> built layer checks"
	@$(BIN)/pytest $(PYTEST_FLAGS) tests/build

unit: setup
	@echo "==> unit tests"
	@$(NICE) $(BIN)/pytest $(PYTEST_FLAGS) tests/unit

## integration: each pytest-xdist worker has its own in-process moto provisioned from template.yaml
integration: setup
	@echo "==> integration tests (handlers in-process against moto, $(INTEGRATION_WORKERS) workers)"
	@$(NICE) $(BIN)/pytest $(PYTEST_FLAGS) -n $(INTEGRATION_WORKERS) --dist worksteal --durations=10 tests/integration

## The fault-injection simulation over many seeds (a few run in `integration`); SOAK_SEEDS=n: seeds 1..n.
SOAK_SEEDS ?= 50
soak: setup
	@echo "==> fault-injection simulation, $(SOAK_SEEDS) seeds ($(INTEGRATION_WORKERS) workers)"
	@EDGECRON_SOAK_SEEDS=$(SOAK_SEEDS) $(NICE) $(BIN)/pytest $(PYTEST_FLAGS) -n $(INTEGRATION_WORKERS) --dist worksteal -k under_faults tests/integration/test_fault_simulation.py

e2e: setup
	@echo "==> e2e tests (the local stack as a process, real HTTP)"
	@$(BIN)/pytest $(PYTEST_FLAGS) tests/e2e

## typescript: the TypeScript SDK (clients/typescript): its npm packages (npm ci), a type-checked
## build, then its Node tests against a local stack of their own (types in sync with /openapi.json,
## paging, idempotent creates, retries, a signed delivery verified with standardwebhooks)
typescript: setup
	@echo "==> TypeScript SDK (npm ci, tsc, node --test against the local stack)"
	@cd clients/typescript && npm ci --no-audit --no-fund --loglevel=error && npm run --silent build
	@$(BIN)/python -m edgecron_testing.with_local_stack -- npm --prefix clients/typescript run --silent test

## sdk-types: regenerate the TypeScript SDK's openapi.json and src/schema.ts after an API change
sdk-types: setup
	@$(BIN)/python scripts/gen_openapi.py
	@cd clients/typescript && npm ci --no-audit --no-fund --loglevel=error && npm run --silent generate

## browser: the web console in Debian's headless Chromium against the local stack (installs the
## browser and its driver when missing; screenshots in artifacts/browser)
browser: setup
	@scripts/install-browser.sh
	@echo "==> browser tests (the console in headless Chromium)"
	@$(BIN)/pytest $(PYTEST_FLAGS) tests/browser

## iam-permissions: regenerate tests/iam/permissions.json (what each function calls) from the
## integration tests, which then observe every call instead of refusing any
iam-permissions: setup
	EDGECRON_IAM_RECORD=1 $(BIN)/pytest $(PYTEST_FLAGS) tests/integration

## bench: run the benchmarks (prints a table, writes bench/results.json)
bench: setup
	$(BIN)/python -m bench

## deploy: build and deploy to your AWS account. The catch-up runs on every deploy that changes a
## function (its published version changes); the nonce makes it run even when nothing changed.
deploy: build
	.venv-sam/bin/sam deploy --parameter-overrides DeployNonce=$$(date +%s)

clean:
	rm -rf .aws-sam .pytest_cache .mypy_cache .ruff_cache
