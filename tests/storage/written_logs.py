"""Checks for logs segmentlog wrote: read back by kafka-python (the independent decoder),
`segmentlog verify`, and indexes compared byte for byte with the ones rebuilt from the `.log`;
plus a helper that stages batches the way a Spark task does."""

from __future__ import annotations

from pathlib import Path
from typing import Mapping, Sequence

from kafka.record import MemoryRecords

from segmentlog_source.cli.verify import verify_paths
from segmentlog_source.format.record_encoder import encode_batches
from segmentlog_source.format.records import Record, RecordColumns
from segmentlog_source.storage.commit.staging import (StagedFile, StagedFileWriter, make_job_dir,
                                                      task_file_prefix)
from segmentlog_source.storage.log.log_directory import parse_partition_dir_name
from segmentlog_source.storage.log.segment_indexer import rebuild_index_bytes


def kafka_python_rows(partition_dir: Path) -> list[tuple]:
    """(offset, timestamp, timestamp type, key, value, headers) of every record, in log order."""
    return [row for log in sorted(partition_dir.glob("*.log"))
            for row in decoded_rows(log.read_bytes(), str(log))]


def decoded_rows(data: bytes, where: str = "") -> list[tuple]:
    """The rows of batches laid end to end (a `.log` or a staged file), by kafka-python."""
    rows, records = [], MemoryRecords(data)
    while (batch := records.next_batch()) is not None:
        assert batch.validate_crc(), f"{where}: CRC mismatch at offset {batch.base_offset}"
        for r in batch:
            rows.append((r.offset, r.timestamp, batch.timestamp_type, r.key, r.value,
                         tuple((k, v) for k, v in r.headers)))
    return rows


def partition_dirs(data_dir: Path) -> list[Path]:
    return sorted(p for p in data_dir.iterdir()
                  if p.is_dir() and parse_partition_dir_name(p.name) is not None)


def assert_valid_log(data_dir: Path, restart_offsets: Mapping[str, Sequence[int]] = {}, *,
                     interval: int = 4096) -> None:
    """No `segmentlog verify` error, and every segment's indexes equal the ones rebuilt from its
    `.log` with index.interval.bytes `interval`. `restart_offsets[partition dir name]`: where a
    writer closed and reopened the log, which restarts the index byte counter as a broker
    restart does; verify, which cannot know them, only warns about those partitions."""
    for report in verify_paths([str(data_dir)], index_interval_bytes=interval):
        allowed = report.warnings if Path(report.path).name in restart_offsets else []
        problems = [str(p) for p in report.problems if p not in allowed]
        assert not problems, problems
    for part in partition_dirs(data_dir):
        for log in sorted(part.glob("*.log")):
            base = int(log.name.split(".")[0])
            restarts = restart_offsets.get(part.name, ())
            index, time_index = rebuild_index_bytes(log.read_bytes(), base, interval,
                                                    restart_offsets=restarts)
            assert log.with_suffix(".index").read_bytes() == index, f"{log}: .index"
            assert log.with_suffix(".timeindex").read_bytes() == time_index, f"{log}: .timeindex"


def assert_no_verify_errors(data_dir: Path, *, interval: int = 4096) -> None:
    """`segmentlog verify` finds no error (warnings allowed: a log written by many commits was
    reopened between them, and its indexes look like a restarted broker's)."""
    errors = [str(e) for r in verify_paths([str(data_dir)], index_interval_bytes=interval)
              for e in r.errors]
    assert not errors, errors


def stage(log_dir: Path, job: str, rows: Mapping[tuple[str, int], Sequence[bytes]], *,
          task: int = 0, timestamp: int = 1_700_000_000_000, codec: int = 0,
          max_records: int | None = 3) -> list[StagedFile]:
    """Stage values (keyless, one timestamp) per partition as one task would: v2 batches of at
    most `max_records` records, offsets from 0."""
    directory = make_job_dir(str(log_dir), job)
    prefix = task_file_prefix(task, 0, task)
    files = []
    for (topic, partition), values in rows.items():
        records = [Record(i, timestamp, None, v) for i, v in enumerate(values)]
        encoded = encode_batches(RecordColumns.from_records(records), max_records=max_records,
                                 codec=codec)
        writer = StagedFileWriter(directory, prefix, topic, partition)
        writer.write(encoded.data, len(encoded.headers), len(records))
        files.append(writer.finish())
    return files


def values_of(partition_dir: Path) -> list[bytes]:
    return [row[4] for row in kafka_python_rows(partition_dir)]
