"""valueFormat=kafka-internal through Spark: real `__consumer_offsets` fixture partitions read
as decoded columns, no record left undecoded, and the committed offsets queried with SQL
lie inside the fixture's own topic partitions."""

from __future__ import annotations

from functools import reduce

import pytest
from pyspark.sql import DataFrame, functions as F

from tests.conftest import shared_fixture

pytestmark = pytest.mark.spark


def test_consumer_offsets_decode_into_columns(spark):
    root = shared_fixture("kafka-real")
    # three clusters' (the other fixtures: tests/values/test_kafka_internal.py, without Spark)
    dirs = [p for name in ("agelenler-food-ordering", "donaldy-kafka-2.7.1", "ronem123-rupia")
            for p in sorted((root / name).glob("__consumer_offsets-*"))]
    assert len(dirs) == 6
    expected = sum(1 for d in dirs for line in (d / "inspect.txt").read_text().splitlines()
                   if line.startswith("record\t"))
    # one read per fixture: two clusters may both hold __consumer_offsets-44
    df = reduce(DataFrame.unionByName, [
        spark.read.format("segmentlog").option("valueFormat", "kafka-internal").load(str(d))
        for d in dirs])
    assert df.columns[-3:] == ["key_decoded", "value_decoded", "value_error"]
    counts = df.select(F.count("*").alias("n"),
                       F.count("value_error").alias("errors"),
                       F.count("key_decoded").alias("keys")).first()
    assert (counts.n, counts.errors, counts.keys) == (expected, 0, expected)
    commits = (df.where("key_decoded.record_type = 'offset_commit' and value_decoded is not null")
               .select("key_decoded.group", "key_decoded.topic", "key_decoded.partition",
                       "value_decoded.offset_commit.offset",
                       "value_decoded.offset_commit.commit_timestamp"))
    assert commits.count() >= 20
    assert commits.where("offset < 0 or commit_timestamp is null or `group` is null").count() == 0
    # the fixture with the topics its groups consumed: their offsets within those logs
    data_dir = root / "agelenler-food-ordering"
    ends = {(r.topic, r.partition): (r.first, r.last) for r in (
        spark.read.format("segmentlog").option("includePayload", "false").load(str(data_dir))
        .groupBy("topic", "partition").agg(F.min("offset").alias("first"),
                                           F.max("offset").alias("last")).collect())}
    own = (spark.read.format("segmentlog").option("valueFormat", "kafka-internal")
           .option("subscribe", "__consumer_offsets").load(str(data_dir))
           .where("key_decoded.record_type = 'offset_commit' and value_decoded is not null")
           .select("key_decoded.topic", "key_decoded.partition",
                   "value_decoded.offset_commit.offset").collect())
    checked = [r for r in own if (r.topic, r.partition) in ends]
    assert checked
    for r in checked:
        first, last = ends[(r.topic, r.partition)]
        assert first <= r.offset <= last + 1, r


def test_remote_log_metadata_decodes_into_columns(spark):
    """The tiered fixture's __remote_log_metadata (a Kafka 4.4 broker's): no key, every value
    a remote_log_metadata struct; each copy's COPY_SEGMENT_STARTED row names the offsets of
    the segment its COPY_SEGMENT_FINISHED update completes."""
    from pathlib import Path

    data_dir = (Path(__file__).resolve().parents[1] / "fixtures" / "tiered"
                / "kafka-4.4-local-tiered-storage" / "broker-data")
    df = (spark.read.format("segmentlog").option("valueFormat", "kafka-internal")
          .load(str(data_dir)).select("offset", "key_decoded", "value_decoded", "value_error",
                                      "value_decoded.remote_log_metadata.*"))
    rows = df.collect()
    assert rows and all(r.key_decoded is None and r.value_error is None for r in rows)
    started = {r.segment_id: r for r in rows if r.record_type == "segment"}
    finished = [r for r in rows if r.record_type == "segment_update"
                and r.state == "COPY_SEGMENT_FINISHED"]
    assert finished and {r.segment_id for r in finished} <= set(started)
    for r in started.values():
        assert r.state == "COPY_SEGMENT_STARTED" and 0 <= r.start_offset <= r.end_offset
        assert r.segment_leader_epochs and r.segment_size > 0 and r.max_timestamp is not None
    assert {r.topic for r in started.values()} == {"tiered", "tiered3"}
