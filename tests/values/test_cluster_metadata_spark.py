"""valueFormat=kafka-internal on a KRaft `__cluster_metadata` partition through Spark: every
record type decoded into columns, hostile values as value_error, no planted secret in any
column (raw `value` included), and a read that would not redact refused."""

from __future__ import annotations

import pytest
from pyspark.sql import functions as F

from segmentlog_source.values.kafka_internal.metadata_records import (MetadataRecordError,
                                                                      decode_metadata)
from tests.conftest import read_segmentlog
from tests.values import metadata_samples as ms
from tests.values.test_cluster_metadata import assert_no_secret, write_log

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def metadata_partition(tmp_path_factory):
    values = ([v for *_, v in ms.every_type(per_version=2)] + ms.secret_records()
              + ms.hostile()[:40])
    part = tmp_path_factory.mktemp("data") / "__cluster_metadata-0"
    write_log(part / "00000000000000000000.log", values)
    return part, values


def _expected(values):
    out = []
    for v in values:
        try:
            out.append(decode_metadata(v))
        except MetadataRecordError:
            out.append(None)
    return out


def test_metadata_records_decode_into_columns(spark, metadata_partition):
    part, values = metadata_partition
    df = read_segmentlog(spark, part, valueFormat="kafka-internal")
    assert df.columns[-3:] == ["key_decoded", "value_decoded", "value_error"]
    rows = df.orderBy("offset").collect()
    expected = _expected(values)
    assert len(rows) == len(values)
    assert sum(1 for e in expected if e is None) > 30
    for row, record in zip(rows, expected):
        if record is None:
            assert row.value_error and row.value_decoded is None and row.value is None
            continue
        assert row.value_error is None
        assert row.key_decoded.record_type == record.record_type
        assert row.key_decoded.version == record.api_key
        meta = row.value_decoded.metadata
        assert (row.value_decoded.version, meta.record_type) == (record.version,
                                                                  record.record_type)
        if record.record_type == "CONFIG_RECORD" and not meta.redacted:
            assert meta.config.value == record.fields["value"]
            assert bytes(row.value) == bytes(values[row.offset])
    topics = df.where("key_decoded.record_type = 'PARTITION_CHANGE_RECORD'").select(
        "value_decoded.metadata.topic_id", "value_decoded.metadata.partition").collect()
    assert topics and all(r.topic_id is not None for r in topics)


def test_no_column_shows_a_secret(spark, metadata_partition):
    part, _ = metadata_partition
    df = read_segmentlog(spark, part, valueFormat="kafka-internal")
    rows = df.collect()
    assert_no_secret(repr(rows))
    assert_no_secret(b"".join(bytes(r.value) for r in rows if r.value is not None))
    redacted = df.where(F.size("value_decoded.metadata.redacted") > 0)
    assert redacted.where("value is not null").count() == 0
    configs = df.where("value_decoded.metadata.config.value = '(redacted)'").count()
    assert configs >= len(ms.SENSITIVE_CONFIGS) + 1


def test_the_metadata_log_is_read_only_decoded(spark, metadata_partition):
    part, _ = metadata_partition
    with pytest.raises(Exception, match="read only with valueFormat=kafka-internal"):
        read_segmentlog(spark, part).collect()


def test_a_stream_reads_the_metadata_log_decoded_too(spark, metadata_partition, tmp_path):
    part, values = metadata_partition
    stream = (spark.readStream.format("segmentlog").option("startingOffsets", "earliest")
              .option("valueFormat", "kafka-internal").load(str(part)))
    query = (stream.select("offset", "key_decoded.record_type", "value", "value_error")
             .writeStream.format("memory").queryName("metadata_stream")
             .option("checkpointLocation", str(tmp_path / "cp"))
             .trigger(availableNow=True).start())
    query.awaitTermination(120)
    rows = spark.sql("select * from metadata_stream order by offset").collect()
    expected = _expected(values)
    assert [r.offset for r in rows] == list(range(len(values)))
    assert [r.record_type for r in rows] == [None if e is None else e.record_type
                                             for e in expected]
    assert_no_secret(b"".join(bytes(r.value) for r in rows if r.value is not None))
    with pytest.raises(Exception, match="read only with valueFormat=kafka-internal"):
        spark.readStream.format("segmentlog").load(str(part)).writeStream.format(
            "memory").queryName("refused").option(
            "checkpointLocation", str(tmp_path / "cp2")).trigger(availableNow=True).start(
            ).awaitTermination(60)


def test_failfast_names_the_offset_and_dropmalformed_drops(spark, metadata_partition):
    part, values = metadata_partition
    expected = _expected(values)
    first_bad = next(i for i, e in enumerate(expected) if e is None)
    with pytest.raises(Exception, match=f"topic __cluster_metadata partition 0 offset "
                       f"{first_bad}: the value does not decode"):
        read_segmentlog(spark, part, valueFormat="kafka-internal", mode="FAILFAST").collect()
    kept = read_segmentlog(spark, part, valueFormat="kafka-internal", mode="DROPMALFORMED")
    assert kept.count() == sum(1 for e in expected if e is not None)


def test_no_write_reaches_the_metadata_log(spark, metadata_partition, tmp_path):
    """A write to topic __cluster_metadata (the option, or a row's topic column) is refused
    before anything is written: in a data directory holding `__cluster_metadata-0` it would
    have appended to the broker's metadata log (it used to)."""
    part, _ = metadata_partition
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    copy = data_dir / part.name
    copy.mkdir()
    for f in part.iterdir():
        (copy / f.name).write_bytes(f.read_bytes())
    before = {f.name: f.read_bytes() for f in copy.iterdir()}
    rows = spark.createDataFrame([("__cluster_metadata", b"v")], "topic string, value binary")
    with pytest.raises(Exception, match="KRaft's metadata log"):
        rows.select("value").write.format("segmentlog").mode("append").option(
            "topic", "__cluster_metadata").save(str(data_dir))
    with pytest.raises(Exception, match="KRaft's metadata log"):
        rows.write.format("segmentlog").mode("append").save(str(data_dir))
    with pytest.raises(Exception, match="it is KRaft's metadata log directory"):
        rows.select("value").write.format("segmentlog").mode("append").option(
            "topic", "events").save(str(copy))
    assert {f.name: f.read_bytes() for f in copy.iterdir()} == before
    assert sorted(p.name for p in data_dir.iterdir()) == [part.name]


def test_views_without_values_read_the_metadata_log(spark, metadata_partition):
    """view=batches, view=segments and includePayload=false show no value, so they read the
    metadata log as they read any partition (all three used to be refused, the views with
    any valueFormat), and hold no secret."""
    part, values = metadata_partition
    batches = read_segmentlog(spark, part, view="batches").collect()
    assert sum(b.recordCount for b in batches) == len(values)
    assert_no_secret(repr(batches))
    segments = read_segmentlog(spark, part, view="segments").collect()
    assert [(s.topic, s.partition) for s in segments] == [("__cluster_metadata", 0)]
    assert_no_secret(repr(segments))
    bare = read_segmentlog(spark, part, includePayload="false")
    assert "value" not in bare.columns and bare.count() == len(values)
    assert_no_secret(repr(bare.collect()))
