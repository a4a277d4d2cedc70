"""Writes and upkeep from a Spark Connect client: a batch write reads back exactly; a stream
from one log into another (readStream and writeStream, Trigger.AvailableNow) run twice while the
input grows copies every record exactly once; compact() and retain() run as Spark jobs on the
server and leave what the log manager leaves in one process."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import segmentlog_source
from segmentlog_source.cli.generate import generate_log
from segmentlog_source.errors import BadOptionError
from segmentlog_source.storage.log.log_manager import LogManager
from tests.spark.test_log_upkeep import contents
from tests.storage.written_logs import assert_no_verify_errors, kafka_python_rows

pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("connect")]


def _write(connect, rows: list[tuple[str, str]], out: Path, topic: str) -> None:
    (connect.createDataFrame(rows, "key string, value string").write.format("segmentlog")
     .mode("append").option("topic", topic).option("numPartitions", "2").save(str(out)))


def _logged(data_dir: Path, topic: str) -> list[tuple[bytes, bytes]]:
    """(key, value) of every record of `topic`, read by kafka-python (offsets contiguous)."""
    found = []
    for part in sorted(data_dir.glob(f"{topic}-*")):
        rows = kafka_python_rows(part)
        assert [r[0] for r in rows] == list(range(len(rows))), part
        found += [(r[3], r[4]) for r in rows]
    return found


def test_a_batch_write_reads_back(connect, tmp_path):
    rows = [(f"k{i % 7}", f"v{i}") for i in range(500)]
    _write(connect, rows, tmp_path, "w")
    assert sorted(_logged(tmp_path, "w")) == sorted((k.encode(), v.encode()) for k, v in rows)
    back = connect.read.format("segmentlog").load(str(tmp_path)).selectExpr(
        "cast(key as string) k", "cast(value as string) v").collect()
    assert sorted((r.k, r.v) for r in back) == sorted(rows)
    assert_no_verify_errors(tmp_path)


def _copy_stream(connect, base: Path) -> None:
    """readStream of topic `in` -> writeStream into topic `out`, until the input is read."""
    query = (connect.readStream.format("segmentlog").option("subscribe", "in")
             .option("startingOffsets", "earliest").option("maxOffsetsPerTrigger", "300")
             .load(str(base / "in"))
             .select("key", "value")
             .writeStream.format("segmentlog").option("topic", "out")
             .option("checkpointLocation", str(base / "checkpoint"))
             .trigger(availableNow=True).start(str(base / "out")))
    query.awaitTermination()
    assert query.exception() is None


def test_a_stream_copies_each_record_exactly_once_across_runs(connect, tmp_path):
    first = [(f"k{i % 3}", f"a{i}") for i in range(400)]
    _write(connect, first, tmp_path / "in", "in")
    _copy_stream(connect, tmp_path)
    assert sorted(_logged(tmp_path / "out", "out")) == sorted(_logged(tmp_path / "in", "in"))
    more = [(f"k{i % 3}", f"b{i}") for i in range(250)]
    _write(connect, more, tmp_path / "in", "in")
    _copy_stream(connect, tmp_path)        # from the checkpoint: only what came since
    copied = _logged(tmp_path / "out", "out")
    assert len(copied) == len(first) + len(more)
    assert sorted(copied) == sorted((k.encode(), v.encode()) for k, v in first + more)
    assert_no_verify_errors(tmp_path / "out")


def test_compact_and_retain_run_on_the_server(connect, tmp_path):
    configs = {"cleanup.policy": "compact", "delete.retention.ms": "0"}
    generate_log(str(tmp_path / "source"), topics=["a"], partitions=2, records=1500,
                 key_size=2, value_size=40, segment_bytes=12_000, transactions=True, seed=4)
    for name in ("connect", "local"):
        shutil.copytree(tmp_path / "source", tmp_path / name)
    rows = segmentlog_source.compact(connect, str(tmp_path / "connect"),
                                     configs=configs).collect()
    LogManager(str(tmp_path / "local"), overrides=configs).compact()
    assert contents(tmp_path / "connect") == contents(tmp_path / "local")
    assert sorted((r.topic, r.partition) for r in rows) == [("a", 0), ("a", 1)]
    assert all(0 < r.records_kept < r.records_read for r in rows)
    with pytest.raises(BadOptionError, match="delete.retention.ms"):
        segmentlog_source.compact(connect, str(tmp_path / "connect"),
                                  configs={"delete.retention.ms": "tomorrow"})

    retained = segmentlog_source.retain(connect, str(tmp_path / "source"),
                                        configs={"retention.bytes": "10000",
                                                 "retention.ms": "-1"}).collect()
    assert len(retained) == 2
    assert all(r.segments_deleted > 0 and r.log_start_offset > 0 for r in retained)
    assert_no_verify_errors(tmp_path / "source")
