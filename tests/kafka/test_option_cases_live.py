"""The option table (tests/spark/option_cases.py) through Spark's own Kafka source against the
live broker, and through segmentlog reading that broker's log directory while it runs: the
same records, the same options; both DataFrames compared row for row, or both errors.

The broker gets the topics the table names (orders: 2 partitions with committed and aborted
transactions, orders-eu, clicks; CreateTime from option_cases.START_MS, 1 s apart), from one
KafkaClient run. Spark's side needs kafka.bootstrap.servers, which a batch read requires
(KafkaSourceProvider.scala:334-337): the test broker's address replaces the table's
connection settings (it speaks PLAINTEXT; the table's SASL_SSL settings only show that
segmentlog ignores them). Where the table says Spark's Kafka source differs (`kafka`), the test
checks that it does, in the way the table says: rows where segmentlog refuses, an error where
segmentlog reads, or the same rows cut into other Spark partitions.
"""

from __future__ import annotations

import json

import pytest

from segmentlog_source.devtools.kafka.java_client import KafkaClient
from tests.kafka.broker_topics import SMALL_SEGMENTS
from tests.kafka.reads import Read, collect, kafka_read
# the one normalisation of the Kafka tests: a record without headers is NULL in Spark's Kafka
# source and [] in segmentlog (a segmentlog bug, KNOWN_DIFFERENCE says more)
from tests.kafka.test_broker_writes import without_known_difference
from tests.spark.option_cases import (CONNECTION, READ_CASES, SAME, SAME_ROWS, START_MS, Case,
                                      Error)

pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("kafka")]

TOPICS = ("orders", "orders-eu", "clicks")


def _produce_commands() -> list[list]:
    ts = ("--base-ts", START_MS)
    orders = ("orders", "--partitions", 2, "--batch", 10, *ts)
    return [
        ["create-topic", "orders", "--partitions", 2, *SMALL_SEGMENTS],
        ["produce", *orders, "--count", 240, "--prefix", "plain", "--value-bytes", 40],
        ["produce", *orders, "--count", 40, "--txn", "commit", "--prefix", "c1"],
        ["produce", *orders, "--count", 40, "--txn", "abort", "--prefix", "a1", "--codec", "lz4"],
        ["interleave", "orders", "--partitions", 2, "--count", 20, *ts],
        ["produce", *orders, "--count", 200, "--prefix", "plain2", "--codec", "zstd"],
        ["create-topic", "orders-eu"],
        ["produce", "orders-eu", "--count", 60, "--batch", 10, *ts],
        ["create-topic", "clicks", *SMALL_SEGMENTS],
        ["produce", "clicks", "--count", 90, "--batch", 10, "--value-bytes", 40, *ts],
    ]


@pytest.fixture(scope="module")
def live(broker, kafka_spark):
    """The broker, running, with the table's topics. The session's earlier phases stop it
    (conftest.py: broker_reads, adoption); this module runs after them and starts it again
    over the same directory, then leaves it as it found it."""
    restarted = not broker.running
    if restarted:
        broker.start()
    KafkaClient(broker.bootstrap).run(_produce_commands())
    yield broker
    if restarted:
        broker.stop()


def _expected_kinds(case: Case) -> tuple[str, str]:
    """("rows" or "error") for Spark's Kafka source and for segmentlog, as the table says."""
    ours = "error" if isinstance(case.outcome, Error) else "rows"
    if case.kafka == SAME or case.kafka.startswith(SAME_ROWS):
        return ours, ours
    kind = case.kafka.split(":", 1)[0].split()[0]
    assert kind in ("rows", "error"), f"{case.id}: the table's `kafka` must start with one"
    return kind, ours


def _kafka_options(case: Case) -> dict:
    # kafka_read sets the broker's address; the other connection settings would need a
    # secured broker
    return {k: v for k, v in case.options.items() if k not in CONNECTION}


def _spans(spark, read_options: dict, fmt: str, broker=None) -> list[tuple]:
    """(topic, partition, first offset, last offset, rows) of each Spark partition of a read."""
    from pyspark.sql import functions as F

    reader = spark.read.format(fmt)
    if broker is not None:
        reader = reader.option("paths", json.dumps(_paths(broker)))
    for name, value in read_options.items():
        reader = reader.option(name, value)
    df = reader.load()
    return sorted(tuple(r) for r in df.groupBy(F.spark_partition_id().alias("task"))
                  .agg(F.first("topic"), F.first("partition"), F.min("offset"),
                       F.max("offset"), F.count("*")).drop("task").collect())


def _describe(read: Read) -> str:
    return read.error if read.error else f"{len(read.rows)} rows"


def _ours(spark, broker, options: dict) -> Read:
    """segmentlog on the table's partition directories of the running broker (the others hold
    what the session's earlier phases left, some of it damaged on purpose)."""
    return collect(spark.read.format("segmentlog"),
                   {**options, "paths": json.dumps(_paths(broker))})


def _paths(broker) -> list[str]:
    return sorted(str(p) for t in TOPICS for p in broker.data_dir.glob(f"{t}-[0-9]*"))


@pytest.mark.parametrize("case", READ_CASES, ids=lambda c: c.id)
def test_the_same_options_through_sparks_kafka_source(kafka_spark, live, case):
    spark = kafka_spark
    kafka = kafka_read(spark, live, _kafka_options(case))
    ours = _ours(spark, live, case.options)
    expected = _expected_kinds(case)
    got = tuple("error" if r.error else "rows" for r in (kafka, ours))
    assert got == expected, f"Spark: {_describe(kafka)}; segmentlog: {_describe(ours)}"
    if got != ("rows", "rows"):
        return
    assert ours.rows, "the case must select some rows to mean anything"
    if case.kafka != SAME and not case.kafka.startswith(SAME_ROWS):
        return
    assert kafka.schema == ours.schema
    assert kafka.rows == without_known_difference(ours.rows)
    if case.outcome.max_records is not None and case.kafka == SAME:
        # each partition's offset range cut as Spark cuts it: the same Spark partitions
        # (KafkaOffsetRangeCalculator.scala:63-106)
        options = _kafka_options(case)
        assert _spans(spark, options, "segmentlog", live) == _spans(
            spark, {**options, "kafka.bootstrap.servers": live.bootstrap}, "kafka")


def test_every_topic_of_the_table_is_served(live):
    for topic in TOPICS:
        assert any(live.data_dir.glob(f"{topic}-0/*.log"))
