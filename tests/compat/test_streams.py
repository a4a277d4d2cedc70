"""Streams on every supported PySpark: readStream with Trigger.AvailableNow (PySpark's stream
reader API of 4.0/4.1 and the one with read limits of 4.2 on), the read limits where this PySpark
has them (their one-line refusal at start() where it does not), and writeStream (Arrow batches
from 4.1 on, Rows on 4.0)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
from pyspark.sql import functions as F

from segmentlog_source.cli.generate import generate_log
from tests.compat.helpers import assert_refused, has
from tests.conftest import read_segmentlog as read
from tests.spark import stream_query as sq

pytestmark = pytest.mark.spark


def _generate(path: Path, records: int, seed: int) -> None:
    generate_log(str(path), topics=["t"], partitions=2, records=records, value_size=20,
                 key_size=4, records_per_batch=10, segment_bytes=4096, seed=seed, quiet=True)


def _keyed(rows) -> list[tuple]:
    return sorted((r.partition, r.offset, r.value) for r in rows)


def _stream(spark, source: Path, base: Path, name: str, **options):
    """An AvailableNow query from the earliest offsets of `source` into parquet under `base`
    (a sink that restarts from its checkpoint, which the memory sink does not)."""
    reader = spark.readStream.format("segmentlog").option("startingOffsets", "earliest")
    for key, value in options.items():
        reader = reader.option(key, value)
    query = (reader.load(str(source)).writeStream.format("parquet")
             .option("checkpointLocation", str(base / name / "checkpoint"))
             .trigger(availableNow=True).start(str(base / name / "out")))
    query.awaitTermination()
    assert query.exception() is None
    return query


def _output(spark, base: Path, name: str) -> list[tuple]:
    return _keyed(spark.read.parquet(str(base / name / "out")).collect())


def test_read_stream_available_now_then_what_was_appended(spark, tmp_path):
    source = tmp_path / "log"
    _generate(source, 300, seed=1)
    _stream(spark, source, tmp_path, "first")
    assert _output(spark, tmp_path, "first") == _keyed(read(spark, source).collect())
    _generate(source, 100, seed=2)        # appended to the same partitions
    # a restart from the checkpoint reads only what was appended
    _stream(spark, source, tmp_path, "first")
    everything = _keyed(read(spark, source).collect())
    assert len(everything) == 400
    assert _output(spark, tmp_path, "first") == everything
    # a new query (another checkpoint) starts from the earliest offsets again
    _stream(spark, source, tmp_path, "second")
    assert _output(spark, tmp_path, "second") == everything


LIMITS = {"maxOffsetsPerTrigger": "40", "minOffsetsPerTrigger": "1", "maxTriggerDelay": "1s"}


@pytest.mark.parametrize("option", sorted(LIMITS))
def test_read_limit(spark, tmp_path, option):
    source = tmp_path / "log"
    _generate(source, 200, seed=3)

    def run():
        return _stream(spark, source, tmp_path, "limited", **{option: LIMITS[option]})
    if not has("read limits"):
        assert_refused(run, "read limits", option=option)
        return
    query = run()
    assert _output(spark, tmp_path, "limited") == _keyed(read(spark, source).collect())
    sizes = [p["numInputRows"] for p in query.recentProgress if p["numInputRows"]]
    if option == "maxOffsetsPerTrigger":
        assert len(sizes) >= 5 and max(sizes) <= 40, sizes


def test_write_stream_then_read_back(spark, tmp_path):
    """Keys, values, headers and timestamps through writeStream (Rows on PySpark 4.0)."""
    total = sq.write_inputs(tmp_path / "in", files=4, rows_per_file=30)
    ids = (spark.readStream.schema("id long").option("maxFilesPerTrigger", 1)
           .json(str(tmp_path / "in")))
    rows = ids.select(
        (F.col("id") % 5).cast("string").alias("key"),
        F.col("id").cast("string").alias("value"),
        F.array(F.struct(F.lit("h").alias("key"),
                         F.col("id").cast("string").cast("binary").alias("value"))
                ).alias("headers"),
        F.timestamp_millis(F.lit(1_700_000_000_000) + F.col("id") * 1001).alias("timestamp"))
    query = (rows.writeStream.format("segmentlog").option("topic", "s")
             .option("numPartitions", "3")
             .option("checkpointLocation", str(tmp_path / "checkpoint"))
             .trigger(availableNow=True).start(str(tmp_path / "out")))
    query.awaitTermination()
    assert query.exception() is None
    back = read(spark, tmp_path / "out", includeHeaders="true").collect()
    got = sorted((int(r.value), r.key, [(h.key, h.value) for h in r.headers],
                  r.timestamp.replace(tzinfo=dt.timezone.utc)) for r in back)
    epoch = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
    assert got == [(i, str(i % 5).encode(), [("h", str(i).encode())],
                    epoch + dt.timedelta(milliseconds=1_700_000_000_000 + i * 1001))
                   for i in range(total)]
    # per partition in input order, as the default partitioner routes the keys
    by_partition: dict[int, list[int]] = {}
    for r in sorted(back, key=lambda r: (r.partition, r.offset)):
        by_partition.setdefault(r.partition, []).append(int(r.value))
    sq.check_prefix(by_partition, total)
