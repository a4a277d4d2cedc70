"""Compaction and retention of a data directory as a Spark job: one task per partition.

The driver lists the partitions and checks the configs (a bad value fails before any task
runs); each task runs the log manager on its partition (storage/log/log_manager.py): the
partition's lock, the cleaning passes in bounded memory (the offset map holds at most
`dedupe_buffer_bytes` worth of keys per task, as log.cleaner.dedupe.buffer.size does; more keys
mean more passes), the swap, the checkpoints. The data directory must be reachable at the same
path from every executor (local[*], or a shared file system).
"""

from __future__ import annotations

from typing import Iterable, Mapping

from ..storage.log.log_directory import PartitionDir
from ..storage.log.log_manager import LogManager
from ..storage.log.offset_map import DEFAULT_DEDUPE_BUFFER_BYTES

COMPACTION_SCHEMA = ("topic string, partition int, passes int, first_dirty long, "
                     "cleaned_to long, records_read long, records_kept long, bytes_read long, "
                     "bytes_written long, skipped string")
RETENTION_SCHEMA = ("topic string, partition int, segments_deleted int, bytes_deleted long, "
                    "log_start_offset long, log_end_offset long")


def compact(spark, path: str, *, topics: Iterable[str] | None = None,
            configs: Mapping[str, str] | None = None,
            dedupe_buffer_bytes: int = DEFAULT_DEDUPE_BUFFER_BYTES):
    """Compact every compacted topic under `path` (or `topics`); `configs` (Kafka names) override
    the topic configs for this run. Returns a DataFrame, one row per partition."""
    settings = (list(topics) if topics is not None else None, dict(configs or {}),
                dedupe_buffer_bytes)
    rows = _run(spark, path, settings, _compact_task)
    return spark.createDataFrame(rows, COMPACTION_SCHEMA)


def retain(spark, path: str, *, topics: Iterable[str] | None = None,
           configs: Mapping[str, str] | None = None):
    """Apply retention to every partition under `path` (or `topics`); a DataFrame of what went."""
    settings = (list(topics) if topics is not None else None, dict(configs or {}),
                DEFAULT_DEDUPE_BUFFER_BYTES)
    return spark.createDataFrame(_run(spark, path, settings, _retain_task), RETENTION_SCHEMA)


def _manager(path: str, settings) -> LogManager:
    topics, configs, dedupe_buffer_bytes = settings
    return LogManager(path, topics=topics, overrides=configs,
                      dedupe_buffer_bytes=dedupe_buffer_bytes)


def _run(spark, path: str, settings, task) -> list[tuple]:
    manager = _manager(path, settings)     # on the driver: paths, topics and configs checked
    found = manager.partitions()
    for part in found:
        manager.config(part)
    parts = [(p.path, p.topic, p.partition) for p in found]
    if not parts:
        return []
    rdd = spark.sparkContext.parallelize(parts, len(parts))
    return rdd.map(lambda part: task(path, settings, part)).collect()


def _compact_task(path: str, settings, part: tuple[str, str, int]) -> tuple:
    done = _manager(path, settings).compact_partition(PartitionDir(*part))
    passes = done.passes
    return (done.topic, done.partition, sum(p.cleaned for p in passes),
            passes[0].first_dirty if passes else None, done.end_offset,
            sum(p.records_read for p in passes), sum(p.records_kept for p in passes),
            sum(p.bytes_read for p in passes), sum(p.bytes_written for p in passes),
            done.skipped)


def _retain_task(path: str, settings, part: tuple[str, str, int]) -> tuple:
    result = _manager(path, settings).retain_partition(PartitionDir(*part))
    return (result.topic, result.partition, len(result.deleted), result.deleted_bytes,
            result.log_start_offset, result.log_end_offset)
