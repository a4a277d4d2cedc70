"""Retention while reading: a batch read planned before retention deleted its segments, a stream
whose next micro-batch starts in deleted segments, retention between a micro-batch's plan and its
read, and a real streaming query across runs. A reader either reads what it planned or gets a
clear data-loss signal (failOnDataLoss); with failOnDataLoss=false it goes on from the log start.
"""

from __future__ import annotations

import pickle
import shutil

import pyarrow as pa
import pytest

from segmentlog_source.errors import DataLossError
from segmentlog_source.plan.options import parse_read_options
from segmentlog_source.plan.predicates import fold
from segmentlog_source.plan.read_plan import plan_read
from segmentlog_source.spark.reader import GroupScan, ScanSettings
from segmentlog_source.storage.log.log_manager import LogManager
from segmentlog_source.storage.log.partition_log import PartitionLog
from tests.spark.stream_logs import GrowingLog, Stream

KEEP_BYTES = 1000   # retention.bytes that keeps the newest segment or two of a GrowingLog


def retain(root, retention_bytes=KEEP_BYTES) -> int:
    """retention.bytes applied (times never expire here); the new log start offset."""
    manager = LogManager(str(root), overrides={"retention.bytes": str(retention_bytes),
                                               "retention.ms": "-1"})
    return manager.retain()[0].log_start_offset


def grown(root, batches: int = 30) -> GrowingLog:
    log = GrowingLog(root, segment_bytes=1024)
    for _ in range(batches):
        log.append(5)
    return log


def scan(plan, opts) -> list[int]:
    settings = ScanSettings(fold([]), opts.read_committed, opts.verify_checksums, True, False,
                            opts.fail_on_data_loss)
    offsets = []
    for group in plan.groups:
        for batch in GroupScan(pickle.loads(pickle.dumps(group)), settings):
            offsets += batch.column("offset").cast(pa.int64()).to_pylist()
    return offsets


@pytest.mark.parametrize("fail_on_data_loss", ["true", "false"])
def test_a_batch_read_planned_before_retention(tmp_path, fail_on_data_loss):
    grown(tmp_path).close()
    opts = parse_read_options({"path": str(tmp_path), "failOnDataLoss": fail_on_data_loss})
    plan = plan_read(opts, fold([]))
    start = retain(tmp_path)
    assert 0 < start < 150
    if fail_on_data_loss == "true":
        with pytest.raises(DataLossError) as info:
            scan(plan, opts)
        assert "t-0" in str(info.value) and "is gone since the read was planned" in str(info.value)
        assert "00000000000000000000.log" in str(info.value)
    else:   # the deleted segments' rows are missing, every other row is there once
        assert scan(plan, opts) == list(range(start, 150))


def test_a_stream_goes_on_when_retention_deletes_what_it_already_read(tmp_path):
    log = grown(tmp_path)
    stream = Stream(tmp_path, startingOffsets="earliest")
    assert [r[2] for r in stream.trigger()] == list(range(150))
    log.close()
    assert retain(tmp_path) > 0
    log = GrowingLog(tmp_path, segment_bytes=1024)
    log.append(7)
    assert [r[2] for r in stream.trigger()] == list(range(150, 157))
    log.close()


@pytest.mark.parametrize("fail_on_data_loss", ["true", "false"])
def test_a_stream_whose_next_records_were_deleted(tmp_path, fail_on_data_loss):
    log = grown(tmp_path, 2)
    stream = Stream(tmp_path, startingOffsets="earliest", failOnDataLoss=fail_on_data_loss)
    assert [r[2] for r in stream.trigger()] == list(range(10))
    for _ in range(40):
        log.append(5)
    log.close()
    start = retain(tmp_path)
    assert start > 10
    if fail_on_data_loss == "true":
        with pytest.raises(DataLossError):
            stream.trigger()
    else:
        assert [r[2] for r in stream.trigger()] == list(range(start, 210))


def test_retention_between_a_micro_batch_plan_and_its_read(tmp_path):
    log = grown(tmp_path, 2)
    stream = Stream(tmp_path, startingOffsets="earliest")
    stream.trigger()
    for _ in range(40):
        log.append(5)
    log.close()
    reader = stream.reader
    end = reader.latestOffset(stream.offset, reader.getDefaultReadLimit())
    partitions = reader.partitions(stream.offset, end)
    start = retain(tmp_path)
    with pytest.raises(DataLossError, match="is gone since the read was planned"):
        for partition in partitions:
            list(reader.read(pickle.loads(pickle.dumps(partition))))
    assert PartitionLog.open(str(tmp_path / "t-0")).log_start_offset == start


@pytest.mark.spark
def test_a_running_query_across_retention(spark, tmp_path):
    """Three availableNow runs of one query (its checkpoint carries the offsets): retention of
    segments it read, then of segments it had not read yet (failOnDataLoss=false: on from the
    log start, as Spark's Kafka source goes on)."""
    source = tmp_path / "in"
    log = grown(source, 20)
    log.close()

    def run():
        query = (spark.readStream.format("segmentlog").option("startingOffsets", "earliest")
                 .option("failOnDataLoss", "false").load(str(source))
                 .selectExpr("offset", "CAST(value AS STRING) AS value")
                 .writeStream.format("parquet").trigger(availableNow=True)
                 .option("checkpointLocation", str(tmp_path / "checkpoint"))
                 .start(str(tmp_path / "out")))
        query.awaitTermination()
        assert query.exception() is None
        return sorted(r.offset for r in spark.read.parquet(str(tmp_path / "out")).collect())

    assert run() == list(range(100))
    assert retain(source) > 0                       # only segments the query has read
    log = GrowingLog(source, segment_bytes=1024)
    log.append(5)
    log.close()
    assert run() == list(range(105))
    log = GrowingLog(source, segment_bytes=1024)
    for _ in range(30):
        log.append(5)
    log.close()
    start = retain(source)                          # and now some it has not read
    assert start > 105
    assert run() == list(range(105)) + list(range(start, 255))
    shutil.rmtree(tmp_path / "checkpoint")
