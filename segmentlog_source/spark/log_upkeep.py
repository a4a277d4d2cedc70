"""Compaction and retention of a data directory as a Spark job: one task per partition.

Built on DataFrame operations only (`spark.range` and a Python UDF), never on `sparkContext`,
so the same call runs on a classic session and on a Spark Connect session. Two jobs run:

1. planning, one task: it lists the partitions and checks their configs where the executors
   see the files (a Spark Connect client may not see them at all). A bad value fails there,
   before any partition is touched, and comes back to the caller as the same segmentlog error
   (BadOptionError naming the config, ...), not as a wrapped Python worker traceback;
2. the upkeep, one row of `spark.range` per partition, so one task per partition: each runs the
   log manager on its partition (storage/log/log_manager.py): the partition's lock, the
   cleaning passes in bounded memory (the offset map holds at most `dedupe_buffer_bytes` worth
   of keys per task, as log.cleaner.dedupe.buffer.size does; more keys mean more passes), the
   swap, the checkpoints.

The UDFs are plain (not Arrow) Python UDFs marked nondeterministic: a classic session then needs
no pandas, and the optimizer never runs one twice for a row. The rows are collected before
compact()/retain() return (a DataFrame built from them), so looking at the result again never
runs the upkeep again. The data directory must be reachable at the same path from every
executor (local[*], or a shared file system).
"""

from __future__ import annotations

from typing import Iterable, Mapping

from ..storage.log.log_directory import PartitionDir
from ..storage.log.log_manager import LogManager
from ..storage.log.offset_map import DEFAULT_DEDUPE_BUFFER_BYTES
from ..values.kafka_internal.cluster_configs import metadata_topic_configs
from .one_task import plain_udf, run_in_one_task

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
    rows = _run(spark, path, settings, _compact_task, COMPACTION_SCHEMA)
    return spark.createDataFrame(rows, COMPACTION_SCHEMA)


def retain(spark, path: str, *, topics: Iterable[str] | None = None,
           configs: Mapping[str, str] | None = None):
    """Apply retention to every partition under `path` (or `topics`); a DataFrame of what went."""
    settings = (list(topics) if topics is not None else None, dict(configs or {}),
                DEFAULT_DEDUPE_BUFFER_BYTES)
    return spark.createDataFrame(_run(spark, path, settings, _retain_task, RETENTION_SCHEMA),
                                 RETENTION_SCHEMA)


def _manager(path: str, settings) -> LogManager:
    topics, configs, dedupe_buffer_bytes = settings
    return LogManager(path, topics=topics, overrides=configs,
                      dedupe_buffer_bytes=dedupe_buffer_bytes,
                      metadata_configs=metadata_topic_configs)


def _run(spark, path: str, settings, task, schema: str) -> list[tuple]:
    parts = _plan(spark, path, settings)
    if not parts:
        return []
    run = plain_udf(lambda index: task(path, settings, parts[index]), f"struct<{_struct(schema)}>")
    one_row_each = spark.range(0, len(parts), 1, len(parts))
    return [tuple(r.done) for r in one_row_each.select(run("id").alias("done")).collect()]


def _plan(spark, path: str, settings) -> list[tuple[str, str, int]]:
    """The partitions under `path` with their configs checked, listed by one Spark task."""

    def plan() -> list:
        manager = _manager(path, settings)
        found = manager.partitions()
        for part in found:
            manager.config(part)
        return [(p.path, p.topic, p.partition) for p in found]

    return [tuple(part) for part in run_in_one_task(spark, plan)]


def _struct(schema: str) -> str:
    """A DDL column list ("a int, b long") as the fields of a struct type ("a: int, b: long")."""
    return ", ".join(": ".join(column.split()) for column in schema.split(","))


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
