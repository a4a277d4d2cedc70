"""Shared test fixtures: the one way to reach ../shared, and the one SparkSession."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def shared_dir() -> Path:
    """The read-only reference material (fixtures, docs, tools) beside the repository.

    Tests that need it fail loudly when it is missing: they never skip.
    """
    path = Path(os.environ.get("SEGMENTLOG_SHARED", REPO.parent / "shared"))
    if not (path / "fixtures").is_dir():
        raise RuntimeError(
            f"the shared reference material is missing: expected {path}/fixtures "
            "(set SEGMENTLOG_SHARED to its location)")
    return path


def shared_fixture(*parts: str) -> Path:
    path = shared_dir().joinpath("fixtures", *parts)
    if not path.exists():
        raise RuntimeError(f"shared fixture missing: {path}")
    return path


def read_segmentlog(spark, path, **options):
    """spark.read.format("segmentlog") with `options`, loaded from `path` (a fresh load())."""
    reader = spark.read.format("segmentlog")
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader.load(str(path))


@pytest.fixture(scope="session")
def shared() -> Path:
    return shared_dir()


# Why the `spark` session of this process has no Kafka connector (empty: it has it, or no session
# started yet). tests/kafka fails with this reason; every other test runs without the connector.
SPARK_KAFKA_MISSING: list[str] = []


def spark_kafka_jars() -> list[str]:
    """Spark's own Kafka source (`format("kafka")`, for tests/kafka), fetched into the jar cache
    if needed; [] when that fails (the reason goes to SPARK_KAFKA_MISSING)."""
    from segmentlog_source.devtools.kafka import jars

    try:
        return [str(p) for p in jars.jar_paths("spark-kafka")]
    except (jars.JarsUnavailable, OSError) as err:
        SPARK_KAFKA_MISSING.append(str(err))
        return []


# The same for Spark's Avro functions (from_avro, tests/values), fetched like the Kafka connector.
SPARK_AVRO_MISSING: list[str] = []


def spark_avro_jars() -> list[str]:
    from segmentlog_source.devtools.kafka import jars

    try:
        return [str(p) for p in jars.jar_paths("spark-avro")]
    except (jars.JarsUnavailable, OSError) as err:
        SPARK_AVRO_MISSING.append(str(err))
        return []


@pytest.fixture(scope="session")
def spark():
    """One local SparkSession per test process: local[2], workers on this interpreter, and
    Spark's Kafka connector on its classpath when the jar cache has it."""
    import sys

    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    builder = (SparkSession.builder.master("local[2]")
               .appName("segmentlog-tests")
               .config("spark.ui.enabled", "false")
               .config("spark.sql.shuffle.partitions", "2")
               .config("spark.sql.session.timeZone", "UTC")
               .config("spark.driver.memory", "2g"))
    kafka_jars = spark_kafka_jars() + spark_avro_jars()
    if kafka_jars:  # only the first session of a process reads spark.jars
        builder = builder.config("spark.jars", ",".join(kafka_jars))
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    import segmentlog_source

    segmentlog_source.register(session)
    yield session
    session.stop()


@pytest.fixture(scope="session")
def s3(tmp_path_factory):
    """A real S3-compatible server (moto) on loopback for this test process, behind the counting
    and fault-injecting proxy of segmentlog_source/devtools/s3_server.py."""
    from segmentlog_source.devtools.s3_server import S3Server

    with S3Server(log_dir=tmp_path_factory.mktemp("s3-server")) as server:
        yield server
