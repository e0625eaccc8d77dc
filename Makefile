# The two commands of the quickstart: `make run` (the main job) and `make test`.
# Both create .venv and install the project with its training, ray and serve extras and the tested versions
# (constraints.txt pins torch 2.13.0; where pip finds a CPU wheel of it, as on this project's
# machines, that is what it takes).
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp
# The twin's compiled core (digital_twin/native.py): rebuilt when any twin source changes; the
# twin runs its pure-Python sources when this fails (no C compiler) or is out of date.
NATIVE := digital_twin/_compiled/SOURCES.sha256
TWIN_SOURCES := $(shell find digital_twin -name '*.py' -not -path 'digital_twin/_compiled*')
# Real traces are read from ACO_ENV_TRACES; default to ../shared/traces when it exists.
ACO_ENV_TRACES ?= $(wildcard $(abspath ../shared/traces))
export ACO_ENV_TRACES
# Python caches compiled modules (__pycache__, git-ignored) unless PYTHONDONTWRITEBYTECODE is set, as
# some machines set it: then every test worker and every command a test starts compiles the package
# again (about 8 % of the fast layer's CPU). The targets here keep Python's default.
unexport PYTHONDONTWRITEBYTECODE

.PHONY: install run test test-fast test-slow test-base smoke bench results reproduce lint clean

$(STAMP): pyproject.toml constraints.txt
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -c constraints.txt -e '.[train,test,ray,serve]'
	touch $(STAMP)

$(NATIVE): $(STAMP) $(TWIN_SOURCES)
	$(PY) -m digital_twin.compile_core || echo "warning: the twin's compiled core did not build; the pure-Python twin runs"

install: $(STAMP) $(NATIVE)

run: install  ## the main job on the default scenario
	$(VENV)/bin/aco-env run

# The test layers (tests/layers.py): `fast` is the library's core tests (no child process, no Ray,
# no training), `rest` everything else that is not slow; together they are the default suite.
# No test asserts a wall time (tests/hang_guard.py): a loaded machine makes them slower, never red.
PYTEST := $(PY) -m pytest -q -n auto --dist loadgroup

smoke: install  ## seconds, for every save: lint, then the tests marked smoke (one of each kind of thing)
	$(VENV)/bin/ruff check .
	ACO_ENV_TEST_LAYER=fast $(PY) -m pytest -q -p no:randomly -o addopts=--strict-markers -m smoke tests

test-fast: install  ## the fast layer alone: invariants, env checkers, scenario and trace parsing
	ACO_ENV_TEST_LAYER=fast $(PYTEST)

# `make test`: the layering contracts and the types are checked beside the tests (their reports follow
# the tests'), and both layers run as one pytest run, so that both cores stay busy from the first test
# to the last. Every step runs whatever the others give; the last line names the steps that failed.
test: install  ## layering contracts and types beside the whole default suite, both layers in one run (slow tests deselected)
	@checks=$$(mktemp -d); trap 'rm -rf "$$checks"' EXIT; \
	( $(VENV)/bin/lint-imports > $$checks/lint-imports.log 2>&1 || touch $$checks/lint-imports.failed; \
	  $(VENV)/bin/mypy > $$checks/mypy.log 2>&1 || touch $$checks/mypy.failed ) & \
	tests=""; \
	ACO_ENV_TEST_LAYER= $(PYTEST) || tests=" tests"; \
	wait; \
	failed=""; \
	for step in lint-imports mypy; do \
		echo "--- $$step"; cat $$checks/$$step.log; \
		if [ -e $$checks/$$step.failed ]; then failed="$$failed $$step"; fi; \
	done; \
	failed="$$failed$$tests"; \
	if [ -n "$$failed" ]; then echo "make test: FAILED:$$failed (each step's failures are listed above it)"; exit 1; fi; \
	echo "make test: every step passed (lint-imports, mypy, the tests)"

test-slow: install  ## only the slow tests
	$(PY) -m pytest -q -m slow

# The base install (no train, ray or serve extra: no torch, SB3, FastAPI, Ray) with the test tools,
# in a venv of its own: the fast layer must pass there too (tests/optional_extras.py).
VENV_BASE ?= .venv-base
test-base:  ## the fast layer in a base install without torch (creates $(VENV_BASE))
	test -x $(VENV_BASE)/bin/python || python3 -m venv $(VENV_BASE)
	$(VENV_BASE)/bin/python -m pip install --quiet --disable-pip-version-check -c constraints.txt -e '.[test]'
	ACO_ENV_TEST_LAYER=fast $(VENV_BASE)/bin/python -m pytest -q -n auto --dist loadgroup

bench: install  ## benchmarks: docs/benchmarks.json, and the generated tables of docs/benchmarks.md
	$(VENV)/bin/aco-env bench --out docs/benchmarks.json --markdown docs/benchmarks.md

results: install  ## the generated tables of docs/results.md, from the results folders in docs/results/
	$(VENV)/bin/aco-env results --from docs/results --page docs/results.md

reproduce: install  ## the reference's benchmarks, its setting and the full twin; docs/reproduction.md
	$(VENV)/bin/aco-env reproduce --out docs

lint: install
	$(VENV)/bin/ruff check .

clean:
	rm -rf $(VENV) $(VENV_BASE) .pytest_cache .hypothesis build *.egg-info digital_twin/_compiled
