"""segmentlog_source.compact and .retain as Spark jobs (one task per partition): the same
result as the log manager in one process, reported one row per partition; bad configs fail on
the driver before any task runs."""

from __future__ import annotations

import shutil

import pytest

import segmentlog_source
from segmentlog_source.cli.generate import generate_log
from segmentlog_source.errors import BadOptionError
from segmentlog_source.storage.log.checkpoints import read_offset_checkpoint
from segmentlog_source.storage.log.log_manager import LogManager
from tests.storage.written_logs import assert_no_verify_errors

pytestmark = pytest.mark.spark
CONFIGS = {"cleanup.policy": "compact", "delete.retention.ms": "0"}


def contents(data_dir):
    return {str(f.relative_to(data_dir)): f.read_bytes() for f in sorted(data_dir.rglob("*"))
            if f.is_file() and f.suffix in (".log", ".index", ".timeindex", ".txnindex")}


def test_compact_as_a_spark_job_equals_the_log_manager(spark, tmp_path):
    source = tmp_path / "source"
    generate_log(str(source), topics=["a", "b"], partitions=2, records=4000, key_size=3,
                 value_size=50, segment_bytes=30_000, transactions=True, codec="zstd", seed=11)
    for name in ("spark", "local"):
        shutil.copytree(source, tmp_path / name)
    rows = segmentlog_source.compact(spark, str(tmp_path / "spark"), configs=CONFIGS).collect()
    LogManager(str(tmp_path / "local"), overrides=CONFIGS).compact()
    assert contents(tmp_path / "spark") == contents(tmp_path / "local")
    checkpoint = read_offset_checkpoint(str(tmp_path / "spark" / "cleaner-offset-checkpoint"))
    assert checkpoint == read_offset_checkpoint(
        str(tmp_path / "local" / "cleaner-offset-checkpoint"))
    assert sorted((r.topic, r.partition) for r in rows) == [("a", 0), ("a", 1), ("b", 0),
                                                           ("b", 1)]
    for r in rows:
        assert r.passes == 1 and r.cleaned_to == checkpoint[(r.topic, r.partition)]
        assert 0 < r.records_kept < r.records_read and r.bytes_written < r.bytes_read
    assert_no_verify_errors(tmp_path / "spark")
    with pytest.raises(BadOptionError, match="delete.retention.ms"):
        segmentlog_source.compact(spark, str(tmp_path / "spark"),
                                  configs={"delete.retention.ms": "tomorrow"})


def test_retain_as_a_spark_job(spark, tmp_path):
    generate_log(str(tmp_path / "d"), topics=["e"], partitions=3, records=3000, value_size=50,
                 segment_bytes=20_000, seed=5)
    rows = segmentlog_source.retain(spark, str(tmp_path / "d"),
                                    configs={"retention.bytes": "25000",
                                             "retention.ms": "-1"}).collect()
    assert len(rows) == 3
    for r in rows:
        assert r.segments_deleted > 0 and r.log_start_offset > 0
    assert_no_verify_errors(tmp_path / "d")
