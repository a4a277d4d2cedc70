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
