# Two commands for a newcomer: `make demo` and `make test`. Both build .venv when it is missing.
# `make cluster-demo` runs the demo's kind of queries on a Spark standalone cluster on this machine.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
UV     := $(VENV)/bin/uv
UV_VERSION := 0.13.9
ENVS   := $(PY) -m segmentlog_source.devtools.test_envs
SHARED ?= ../shared

export PYSPARK_PYTHON := $(abspath $(PY))
export PYSPARK_DRIVER_PYTHON := $(abspath $(PY))
export SEGMENTLOG_SHARED := $(abspath $(SHARED))

.PHONY: demo cluster-demo docs test test-fast test-matrix test-compat lock bench clean venv kafka-jars

venv: $(STAMP)

# The exact versions of every package the tests use are in conf/constraints/main.txt (the
# package's own dependencies are ranges); uv installs them. `make lock` regenerates the lock files.
$(STAMP): pyproject.toml conf/constraints/main.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q "uv==$(UV_VERSION)"
	# compat mode puts the repository on sys.path, so Spark's discovery of top-level
	# pyspark_* modules (pkgutil.iter_modules) sees pyspark_segmentlog
	$(UV) pip install -q --python $(PY) -c conf/constraints/main.txt \
	    --config-settings editable_mode=compat -e '.[spark,test,bench,docs]'
	touch $(STAMP)

lock: $(STAMP)
	$(PY) -m segmentlog_source.devtools.test_envs lock

demo: $(STAMP)
	$(PY) -m segmentlog_source.demo

cluster-demo: $(STAMP)
	$(PY) -m segmentlog_source.devtools.cluster_demo

# The manual (docs/, mkdocs.yml) served on http://127.0.0.1:8000 while you edit it
docs: $(STAMP)
	$(PY) -m mkdocs serve

# The jars of the Kafka tests (a broker, DumpLogSegments, Spark's Kafka source), from Maven
# Central into ~/.cache/segmentlog/jars once, with a progress line. When that fails the rest of
# the suite still runs, and only tests/kafka fails, saying why.
kafka-jars: $(STAMP)
	-$(PY) -m segmentlog_source.devtools.kafka.jars

# The whole suite on the main pair (Python 3.11, PySpark 4.3), then the compatibility subset
# (tests/compat) on the oldest and the newest supported pairs.
test: $(STAMP) kafka-jars
	$(PY) -m pytest -n 2 --dist loadgroup -q --durations=30
	$(MAKE) --no-print-directory test-compat

test-compat: $(STAMP)
	$(ENVS) run py310-pyspark4.0 py313-pyspark4.3 -- -q tests/compat

# The compatibility subset on every supported PySpark minor (environments built on first use,
# cached in ~/.cache/segmentlog/venvs).
test-matrix: $(STAMP)
	$(ENVS) run py310-pyspark4.0 py310-pyspark4.1 -- -q tests/compat
	$(ENVS) run py312-pyspark4.2 py313-pyspark4.3 -- -q tests/compat
	$(PY) -m pytest -q tests/compat

test-fast: $(STAMP)
	$(PY) -m pytest -q -m "not slow and not spark"

bench: $(STAMP) kafka-jars
	$(PY) -m bench.run

# The large mutation fuzz run of issue #16 (tests/fuzz/): the report goes to bench/results/fuzz.md
.PHONY: fuzz
fuzz: $(STAMP)
	$(PY) -m tests.fuzz.run --mutants 20000 --workers 2 --report bench/results/fuzz.md

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache demo-data
