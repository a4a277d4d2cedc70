# Two commands for a newcomer: `make demo` and `make test`. Both build .venv when it is missing.
# `make cluster-demo` runs the demo's kind of queries on a Spark standalone cluster on this machine.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
SHARED ?= ../shared

export PYSPARK_PYTHON := $(abspath $(PY))
export PYSPARK_DRIVER_PYTHON := $(abspath $(PY))
export SEGMENTLOG_SHARED := $(abspath $(SHARED))

.PHONY: demo cluster-demo test test-fast bench clean venv kafka-jars

venv: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	# compat mode puts the repository on sys.path, so Spark's discovery of top-level
	# pyspark_* modules (pkgutil.iter_modules) sees pyspark_segmentlog
	$(PY) -m pip install -q -e '.[test,bench]' --config-settings editable_mode=compat
	touch $(STAMP)

demo: $(STAMP)
	$(PY) -m segmentlog_source.demo

cluster-demo: $(STAMP)
	$(PY) -m segmentlog_source.devtools.cluster_demo

# The jars of the Kafka tests (a broker, DumpLogSegments, Spark's Kafka source), from Maven
# Central into ~/.cache/segmentlog/jars once, with a progress line. When that fails the rest of
# the suite still runs, and only tests/kafka fails, saying why.
kafka-jars: $(STAMP)
	-$(PY) -m segmentlog_source.devtools.kafka.jars

test: $(STAMP) kafka-jars
	$(PY) -m pytest -n 2 --dist loadgroup -q

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
