"""A metadata view's schema may name some of its columns (PySpark 4.3 prunes no column of a
Python source): the rows are the whole view's, those columns only, in the order and spelling
given; on a healthy log read header by header (the compiled walk) and on Kafka's client logs
(every magic and codec, transactions: the batch-by-batch path), with and without CRCs. A
schema that is not part of the view names the option and lists the view's columns."""

from __future__ import annotations

from pathlib import Path

import pytest

from segmentlog_source.cli.generate import generate_log
from segmentlog_source.format.record_encoder import encode_batch
from segmentlog_source.format.records import Record
from segmentlog_source.storage.log.partition_log import PartitionLog
from tests.conftest import read_segmentlog, shared_fixture
from tests.spark.option_cases import segmentlog_message

pytestmark = pytest.mark.spark

CLIENTS = shared_fixture("kafka-clients")

# (view, the schema given, the view's columns it names in that order)
PROJECTIONS = [
    ("batches", "partition int", ["partition"]),
    ("batches", "recordCount int, isControl boolean, partition int",
     ["recordCount", "isControl", "partition"]),
    ("batches", "MAXTIMESTAMP timestamp, codec string, Topic string",
     ["maxTimestamp", "codec", "topic"]),
    ("batches", "producerId bigint, baseSequence int, firstTimestamp timestamp, "
                "timestampType int, magic int, lastOffset bigint, position bigint, size int",
     ["producerId", "baseSequence", "firstTimestamp", "timestampType", "magic",
      "lastOffset", "position", "size"]),
    ("segments", "lastOffset bigint, segment bigint", ["lastOffset", "segment"]),
    ("segments", "maxTimestamp timestamp, timeIndexEntries int, path string",
     ["maxTimestamp", "timeIndexEntries", "path"]),
]


@pytest.fixture(scope="module")
def logs(tmp_path_factory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("view-columns")
    generated = base / "generated"
    generate_log(str(generated), topics=["orders", "clicks"], partitions=2, records=3000,
                 value_size=40, records_per_batch=25, segment_bytes=16 * 1024, seed=5)
    clients = base / "clients"      # the case directories, linked in as partitions
    for case in sorted(p for p in CLIENTS.iterdir() if (p / "inspect.txt").exists()):
        partition_dir = clients / f"{case.name}-0"
        partition_dir.mkdir(parents=True)
        for log in case.glob("*.log"):
            (partition_dir / log.name).symlink_to(log)
    return {"generated": generated, "clients": clients}


def _given(spark, path: Path, view: str, schema: str, **options):
    reader = spark.read.format("segmentlog").schema(schema).option("view", view)
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader.load(str(path))


@pytest.mark.parametrize("verify", ["true", "false"])
@pytest.mark.parametrize("which", ["generated", "clients"])
@pytest.mark.parametrize("view, schema, names", PROJECTIONS,
                         ids=[f"{v}:{n[0]}.." for v, _, n in PROJECTIONS])
def test_a_views_columns_by_schema_are_the_whole_views(spark, logs, which, verify, view,
                                                       schema, names):
    whole = read_segmentlog(spark, logs[which], view=view, verifyChecksums=verify)
    given = _given(spark, logs[which], view, schema, verifyChecksums=verify)
    expected = [tuple(r) for r in whole.select(*names).collect()]
    assert given.columns == [part.split()[0] for part in schema.split(", ")]
    got = [tuple(r) for r in given.collect()]
    assert len(expected) > 10 and sorted(got, key=repr) == sorted(expected, key=repr)


def test_a_projection_answers_a_query_as_the_whole_view_does(spark, logs):
    # the per-partition count the README shows, both ways, with the same range options
    options = dict(verifyChecksums="false", startingOffsets="earliest",
                   endingOffsets='{"orders": {"0": 500, "1": -1}, "clicks": {"0": -1, '
                                  '"1": 40}}')
    whole = read_segmentlog(spark, logs["generated"], view="batches", **options)
    given = _given(spark, logs["generated"], "batches",
                   "partition int, recordCount int, isControl boolean", **options)
    answers = [sorted(tuple(r) for r in df.where("not isControl").groupBy("partition")
                      .sum("recordCount").collect()) for df in (whole, given)]
    assert answers[0] == answers[1] and len(answers[0]) == 2


@pytest.mark.parametrize("schema, says", [
    ("partition int, nope bigint", "has no column nope"),
    ("partition bigint", "partition is int in the batches view, not bigint"),
    ("partition int, PARTITION int", "named twice"),
    ("partition int not null", "declare it without NOT NULL"),
])
def test_a_schema_outside_the_view_names_the_option_and_the_columns(spark, logs, schema, says):
    df = _given(spark, logs["generated"], "batches", schema)
    with pytest.raises(Exception) as err:
        df.collect()
    first = segmentlog_message(err.value)
    assert first.startswith("option schema=") and says in first, first
    assert "recordCount:int" in str(err.value)       # the view's columns, listed below


def test_the_records_view_keeps_sparks_fixed_schema(spark, logs):
    df = spark.read.format("segmentlog").schema("partition int").load(str(logs["generated"]))
    with pytest.raises(Exception) as err:
        df.collect()
    assert "has a fixed schema" in segmentlog_message(err.value)


@pytest.fixture(scope="module")
def huge_timestamp_log(tmp_path_factory) -> Path:
    """Three batches of 5 records; the second's third record is stamped 2^62 ms, beyond what
    a Spark timestamp (microseconds in a long) holds."""
    path = tmp_path_factory.mktemp("huge-timestamp") / "late-0"
    with PartitionLog.open_for_append(str(path), topic="late", partition=0) as log:
        for base in (0, 5, 10):
            records = [Record(base + i, 1_700_000_000_000 + base + i, b"k", b"v")
                       for i in range(5)]
            if base == 5:
                records[2] = records[2]._replace(timestamp=2 ** 62)
            log.append_batches(encode_batch(records, base_offset=base))
    return path.parent


def _batch_at_offset(partition_dir: Path, offset: int) -> tuple[Path, int]:
    """The segment and byte of the batch whose base offset is `offset` (its frames walked)."""
    for segment in sorted(partition_dir.glob("*.log")):
        data, pos = segment.read_bytes(), 0
        while pos + 12 <= len(data):
            if int.from_bytes(data[pos:pos + 8], "big") == offset:
                return segment, pos
            pos += 12 + int.from_bytes(data[pos + 8:pos + 12], "big")
    raise AssertionError(f"no batch at offset {offset} in {partition_dir}")


@pytest.mark.parametrize("verify", ["true", "false"])
@pytest.mark.parametrize("schema", [None, "partition int", "maxTimestamp timestamp"])
def test_a_timestamp_spark_cannot_hold_fails_whether_or_not_it_is_read(
        spark, huge_timestamp_log, verify, schema):
    # (verifyChecksums=false takes the compiled header walk, true the batch-by-batch scan:
    # the same error, naming the file and the batch's byte)
    def load(**options):
        reader = spark.read.format("segmentlog")
        if schema is not None:
            reader = reader.schema(schema)
        reader = reader.option("view", "batches").option("verifyChecksums", verify)
        for key, value in options.items():
            reader = reader.option(key, value)
        return reader.load(str(huge_timestamp_log))

    with pytest.raises(Exception) as err:
        load().collect()
    first = segmentlog_message(err.value)
    segment, position = _batch_at_offset(huge_timestamp_log / "late-0", 5)
    assert first.startswith(f"{segment}: the batch at byte {position} has timestamp "
                            f"{2 ** 62} ms"), first
    # a range that ends before that batch reads the first
    rows = load(endingOffsets='{"late": {"0": 5}}').collect()
    assert len(rows) == 1
    if schema is None:
        assert (rows[0].baseOffset, rows[0].lastOffset) == (0, 4)


def test_a_session_that_reads_timestamp_as_ntz_reads_the_views_as_they_are(spark, logs):
    # spark.sql.timestampType=TIMESTAMP_NTZ makes a DDL's `timestamp` timestamp_ntz; the views'
    # (and Spark's Kafka source's) timestamps stay timestamps with a time zone
    path = logs["generated"]
    expected = {v: read_segmentlog(spark, path, view=v).collect() for v in ("batches",
                                                                             "segments")}
    records = read_segmentlog(spark, path, includePayload="false").count()
    spark.conf.set("spark.sql.timestampType", "TIMESTAMP_NTZ")
    try:
        for view, rows in expected.items():
            df = read_segmentlog(spark, path, view=view)
            assert df.schema["maxTimestamp"].dataType.simpleString() == "timestamp"
            assert df.collect() == rows
        assert read_segmentlog(spark, path, includePayload="false").count() == records
        given = _given(spark, path, "batches", "maxTimestamp timestamp_ltz, partition int")
        assert sorted(given.collect()) == sorted(
            (r.maxTimestamp, r.partition) for r in expected["batches"])
        with pytest.raises(Exception) as err:
            _given(spark, path, "batches", "maxTimestamp timestamp").collect()
        assert "(write timestamp_ltz)" in segmentlog_message(err.value)
    finally:
        spark.conf.unset("spark.sql.timestampType")
