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

.PHONY: install run test test-fast test-slow bench reproduce lint clean

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
PYTEST := $(PY) -m pytest -q -n auto --dist loadgroup

test-fast: install  ## the fast layer alone: invariants, env checkers, scenario and trace parsing (under a minute)
	ACO_ENV_TEST_LAYER=fast $(PYTEST)

test: install  ## layering contracts, types, then the fast layer and the rest of the default suite (slow tests deselected)
	$(VENV)/bin/lint-imports
	$(VENV)/bin/mypy
	ACO_ENV_TEST_LAYER=fast $(PYTEST)
	ACO_ENV_TEST_LAYER=rest $(PYTEST)

test-slow: install  ## only the slow tests
	$(PY) -m pytest -q -m slow

bench: install  ## benchmarks; results in docs/benchmarks.md
	$(VENV)/bin/aco-env bench --out docs/benchmarks.json --markdown docs/benchmarks.md

reproduce: install  ## the reference's benchmarks, its setting and the full twin; docs/reproduction.md
	$(VENV)/bin/aco-env reproduce --out docs

lint: install
	$(VENV)/bin/ruff check .

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis build *.egg-info digital_twin/_compiled
