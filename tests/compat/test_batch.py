"""The batch API on every supported PySpark: records of real broker and client logs, the metadata
views, offset and timestamp ranges, decoded values, a write read back, and WHERE pushdown where
this PySpark has it (its one-line refusal where it does not)."""

from __future__ import annotations

import datetime as dt
import io
import json
import os
from pathlib import Path

import fastavro
import pytest
from chispa import assert_df_equality
from pyspark.sql import functions as F

import segmentlog_source
from segmentlog_source.cli.generate import generate_log
from segmentlog_source.spark.register import PUSHDOWN_CONF
from tests.compat.helpers import assert_refused, has
from tests.conftest import read_segmentlog as read, shared_fixture
from tests.fixture_inspect import expected_counts
from tests.spark.test_read_fixtures import comparable, expected_df
from tests.spark.test_read_ranges import _list_offsets as list_offsets
from tests.values.logs import write_partition

pytestmark = pytest.mark.spark

START = 1_700_000_000_000


@pytest.fixture(scope="module")
def log_dir(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("compat-batch")
    generate_log(str(path), topics=["t"], partitions=2, records=600, codec="lz4", value_size=40,
                 key_size=8, headers=1, records_per_batch=20, segment_bytes=4096,
                 timestamp_step_ms=10, transactions=True, seed=11, start_timestamp=START)
    return path


@pytest.fixture(scope="module")
def full(spark, log_dir):
    return read(spark, log_dir).orderBy("partition", "offset").cache()


def test_records_of_a_real_broker_partition(spark):
    partition_dir = shared_fixture("kafka-real", "agelenler-broker-2", "payment-response-0")
    expected = expected_df(spark, "payment-response", 0, partition_dir)
    df = comparable(read(spark, partition_dir, includeHeaders="true"))
    assert_df_equality(df, expected, ignore_nullable=True)


def test_records_of_a_client_written_log_with_headers(spark, tmp_path):
    case = shared_fixture("kafka-clients", "v2-headers")
    partition_dir = tmp_path / "v2-headers-0"
    partition_dir.mkdir()
    for log in case.glob("*.log"):
        os.symlink(log, partition_dir / log.name)
    df = comparable(read(spark, partition_dir, includeHeaders="true"))
    assert_df_equality(df, expected_df(spark, "v2-headers", 0, case), ignore_nullable=True)


def test_views_agree_with_the_records(spark, log_dir, full):
    segments = read(spark, log_dir, view="segments").collect()
    assert len(segments) == len(list(log_dir.glob("t-*/*.log"))) > 4
    batches = read(spark, log_dir, view="batches")
    data = batches.filter(~F.col("isControl"))
    per_partition = {r.partition: r.n for r in
                     data.groupBy("partition").agg(F.sum("recordCount").alias("n")).collect()}
    in_log = {r.partition: r["count"] for r in full.groupBy("partition").count().collect()}
    assert per_partition == in_log


def test_offset_and_timestamp_ranges(spark, log_dir, full):
    start = {"t": {"0": 100, "1": -2}}
    end = {"t": {"0": 240, "1": 200}}
    df = read(spark, log_dir, startingOffsets=json.dumps(start), endingOffsets=json.dumps(end))
    expected = full.filter(((F.col("partition") == 0) & F.col("offset").between(100, 239))
                           | ((F.col("partition") == 1) & (F.col("offset") < 200)))
    assert_df_equality(df.orderBy("partition", "offset"), expected, ignore_nullable=True)
    # Kafka's ListOffsets: from the first offset whose timestamp is at or after `at`
    at = START + 2000
    df = read(spark, log_dir, startingTimestamp=str(at))
    first = list_offsets(log_dir, at)
    expected = full.filter(((F.col("partition") == 0) & (F.col("offset") >= first[("t", 0)]))
                           | ((F.col("partition") == 1) & (F.col("offset") >= first[("t", 1)])))
    assert 0 < expected.count() < full.count()
    assert_df_equality(df.orderBy("partition", "offset"), expected, ignore_nullable=True)


def test_decoded_json_values(spark, tmp_path):
    write_partition(tmp_path, "j", [(b"k", b'{"id": 1, "at": "2024-03-01T10:00:00Z"}'),
                                    (None, b"not json")])
    rows = (spark.read.format("segmentlog").option("valueFormat", "json")
            .option("valueSchema", "id BIGINT, at TIMESTAMP").load(str(tmp_path))
            .orderBy("offset").collect())
    assert (rows[0].value_decoded.id, rows[0].value_decoded.at) == (1, dt.datetime(2024, 3, 1, 10))
    assert rows[1].value_decoded is None and "not JSON" in rows[1].value_error


def _avro(schema: dict, data: list) -> list[tuple[None, bytes]]:
    parsed = fastavro.parse_schema(schema)
    out = []
    for datum in data:
        buf = io.BytesIO()
        fastavro.schemaless_writer(buf, parsed, datum)
        out.append((None, buf.getvalue()))
    return out


def test_decoded_avro_values_with_a_time_of_day(spark, tmp_path):
    """time-micros is Spark's TIME type, which PySpark 4.0 lacks: refused at load() there."""
    schema = {"type": "record", "name": "E", "fields": [
        {"name": "n", "type": "long"},
        {"name": "when", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "at", "type": {"type": "long", "logicalType": "time-micros"}}]}
    write_partition(tmp_path, "a", _avro(schema, [
        {"n": i, "when": 1000 * i, "at": dt.time(10, 30, i, 5)} for i in range(3)]))

    def load():
        return (spark.read.format("segmentlog").option("valueFormat", "avro")
                .option("valueSchema", json.dumps(schema)).load(str(tmp_path)))
    if not has("time type"):
        assert_refused(load, "time type", option="valueSchema")
        return
    rows = load().orderBy("offset").collect()
    assert [(r.value_decoded.n, r.value_decoded.when, r.value_decoded.at) for r in rows] == [
        (i, dt.datetime(1970, 1, 1, 0, 0, i), dt.time(10, 30, i, 5)) for i in range(3)]


def test_batch_write_then_read_back(spark, tmp_path):
    rows = [(f"k{i % 3}".encode(), f"v{i}".encode(),
             [("h", f"{i}".encode())] if i % 2 else [],
             dt.datetime(2024, 1, 1, 0, 0, i)) for i in range(50)]
    df = spark.createDataFrame(rows, "key binary, value binary, "
                               "headers array<struct<key:string,value:binary>>, "
                               "timestamp timestamp")
    out = tmp_path / "out"
    df.write.format("segmentlog").option("topic", "w").option("numPartitions", "2") \
        .mode("append").save(str(out))
    back = read(spark, out, includeHeaders="true").collect()
    got = sorted((r.key, r.value, tuple((h.key, h.value) for h in r.headers or ()), r.timestamp)
                 for r in back)
    assert got == sorted((k, v, tuple(h), ts) for k, v, h, ts in rows)
    assert {r.topic for r in back} == {"w"} and {r.partition for r in back} <= {0, 1}


def test_where_pushdown(spark, log_dir, full):
    def load():
        return read(spark, log_dir, pushdown="true")
    if not has("pushdown"):
        assert_refused(load, "pushdown", option="pushdown")
        assert_refused(lambda: segmentlog_source.register(spark, pushdown=True), "pushdown")
        assert spark.conf.get(PUSHDOWN_CONF, None) is None     # nothing was set
        return
    where = (F.col("offset") >= 200) & (F.col("partition") == 1)
    # PySpark calls pushFilters (and refuses it without its conf): the filter reaches the reader
    with pytest.raises(Exception, match=PUSHDOWN_CONF.replace(".", r"\.")):
        load().filter(where).count()
    spark.conf.set(PUSHDOWN_CONF, "true")
    try:
        df = load().filter(where)
        assert_df_equality(df.orderBy("offset"), full.filter(where), ignore_nullable=True)
    finally:
        spark.conf.unset(PUSHDOWN_CONF)


def test_real_broker_partition_counts_through_the_whole_directory(spark):
    data_dir = shared_fixture("kafka-real", "agelenler-broker-2")
    counts = {(r.topic, r.partition): r["count"]
              for r in read(spark, data_dir).groupBy("topic", "partition").count().collect()}
    assert counts == expected_counts(data_dir)
