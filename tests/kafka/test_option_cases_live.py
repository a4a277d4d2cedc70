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
import re

import pytest

from segmentlog_source.devtools.kafka.java_client import KafkaClient
from tests.kafka.broker_topics import SMALL_SEGMENTS
from tests.kafka.reads import Read, collect, kafka_read
from tests.spark.option_cases import (CODEC_IDS, CONNECTION, READ_CASES, SAME, SAME_ROWS,
                                      START_MS, WRITE_CASES, Case, Error, WriteCase, batches_of,
                                      write_input)

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
        # the sink cases' topics (the test broker creates none by itself)
        *(["create-topic", _sink_topic(case)] for case in WRITE_CASES),
    ]


def _sink_topic(case: WriteCase) -> str:
    return f"sink-{case.id}"


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


def _first_word(note: str) -> str:
    """What a `kafka` note of the table says Spark does: its first word."""
    return re.match(r"\w+", note).group(0)


def _expected_kinds(case: Case) -> tuple[str, str]:
    """("rows" or "error") for Spark's Kafka source and for segmentlog, as the table says."""
    ours = "error" if isinstance(case.outcome, Error) else "rows"
    if case.kafka == SAME or case.kafka.startswith(SAME_ROWS):
        return ours, ours
    kind = _first_word(case.kafka)
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
    assert kafka.rows == ours.rows
    if case.outcome.max_records is not None and case.kafka == SAME:
        # each partition's offset range cut as Spark cuts it: the same Spark partitions
        # (KafkaOffsetRangeCalculator.scala:63-106)
        options = _kafka_options(case)
        assert _spans(spark, options, "segmentlog", live) == _spans(
            spark, {**options, "kafka.bootstrap.servers": live.bootstrap}, "kafka")


def _write(writer, options: dict, path=None) -> str | None:
    """The write's error (its first line), or None when it wrote."""
    for name, value in options.items():
        writer = writer.option(name, value)
    try:
        writer.save(path) if path else writer.save()
    except Exception as err:  # noqa: BLE001 - a failure is the write's outcome
        return str(err).split("\n", 1)[0]
    return None


def _codecs(partition_dirs) -> set[int]:
    return {b[0] for d in partition_dirs for f in sorted(d.glob("*.log")) for b in batches_of(f)}


@pytest.mark.parametrize("case", WRITE_CASES, ids=lambda c: c.id)
def test_the_same_sink_options_through_sparks_kafka_sink(kafka_spark, live, case: WriteCase,
                                                         tmp_path):
    """Spark's Kafka sink into the broker and segmentlog's writer into a directory, from the
    same rows with the same options (each case its own topic): both refuse, or both write
    batches of the same codec; where the table says Spark differs, it does."""
    spark = kafka_spark
    topic = _sink_topic(case)
    options = {**_kafka_options(case), "topic": topic}
    # (a record that cannot be sent, as a transactional producer's before initTransactions,
    # fails after delivery.timeout.ms, 120 s by default: the outcome is the same after 6 s)
    theirs = _write(write_input(spark).write.format("kafka")
                    .option("kafka.bootstrap.servers", live.bootstrap)
                    .option("kafka.request.timeout.ms", "5000")
                    .option("kafka.delivery.timeout.ms", "6000"), options)
    ours = _write(write_input(spark).write.format("segmentlog").mode("append"), options,
                  str(tmp_path / "out"))
    wanted_ours = "error" if isinstance(case.outcome, Error) else "written"
    wanted_theirs = wanted_ours if case.kafka == SAME else _first_word(case.kafka)
    got = ("error" if theirs else "written", "error" if ours else "written")
    assert got == (wanted_theirs, wanted_ours), f"Spark: {theirs}; segmentlog: {ours}"
    if got == ("written", "written") and case.kafka == SAME:
        assert _codecs(live.data_dir.glob(f"{topic}-*")) == _codecs(
            (tmp_path / "out").glob(f"{topic}-*")) == {CODEC_IDS[case.outcome.codec]}


def test_every_topic_of_the_table_is_served(live):
    for topic in TOPICS:
        assert any(live.data_dir.glob(f"{topic}-0/*.log"))
