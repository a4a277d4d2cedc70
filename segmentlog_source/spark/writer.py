"""`df.write.format("segmentlog").mode("append").save(path)`: staged by tasks, published by the
driver in one commit (storage/commit/committer.py), so a job's rows appear all at once or not at
all.

    writer()   driver: options and input schema checked, the path checked, topics counted
    write()    each task: Arrow batches -> routed (write_input.py) -> v2 batches (baseOffset 0,
               the format layer's encoder) -> its own staged files (storage/commit/staging.py)
    commit()   driver: the staged files named in the messages are appended (offsets assigned
               there), under the partitions' locks, behind a durable manifest
    abort()    driver: the job's staging goes; a half-done commit of it is undone

Retried or speculative attempts write files under their own names and are never named in a
message, so they only leave orphans, which go with the job's staging directory at commit.
"""

from __future__ import annotations

from dataclasses import dataclass
import logging
import time
from typing import Iterator, Sequence
import uuid

import numpy as np
import pyarrow as pa
from pyspark import TaskContext
from pyspark.sql.datasource import DataSourceArrowWriter, WriterCommitMessage

from ..errors import BadOptionError
from ..format.arrow import columns_from_arrow
from ..format.record_encoder import encode_batches
from ..plan.option_names import ignored_warning
from ..plan.write_options import WriteOptions, parse_write_options
from ..storage.commit import committer
from ..storage.commit.staging import (StagedFile, StagedFileWriter, batch_job_name, make_job_dir,
                                      open_job_dir, start_job, task_file_prefix)
from ..storage.io.filesystem import filesystem_for
from ..storage.log.data_dir import check_writable, topic_partition_counts
from ..storage.log.topic_configs import CachedMetadataConfigs
from ..values.kafka_internal.cluster_configs import metadata_topic_configs
from .write_input import InputLayout, Router, input_layout

log = logging.getLogger("segmentlog")

# Rows are buffered per partition and encoded this many bytes at a time: big enough that the
# one short batch each flush ends with is rare, small enough to bound a task's memory...
FLUSH_BYTES = 1024 * 1024
# ...which also stays under this when rows go to many partitions (then every buffer is flushed).
MAX_BUFFERED_BYTES = 64 * 1024 * 1024


@dataclass(frozen=True)
class WritePlan:
    """Everything a task and the commit need, fixed on the driver (pickled to both)."""

    opts: WriteOptions
    log_dir: str
    layout: InputLayout
    partition_counts: dict[str, int]   # existing topics, when the write was planned
    fallback_query_id: str | None = None

    @property
    def settings(self) -> committer.CommitSettings:
        o = self.opts
        return committer.CommitSettings(o.log_config, o.log_append_time, o.lock_timeout_ms,
                                        o.staging_retention_ms, o.topic_configs,
                                        CachedMetadataConfigs(metadata_topic_configs))


@dataclass(frozen=True)
class StagedOutput(WriterCommitMessage):
    """One task's staged files, and the partition counts it routed its topics with."""

    job: str
    files: tuple[StagedFile, ...]
    topic_partitions: tuple[tuple[str, int], ...]
    query_id: str | None = None
    batch_id: int | None = None


def plan_write(options, schema, overwrite: bool, *, refused: tuple[str, str],
               advice: str) -> WritePlan:
    """Checks everything a task or the commit could trip over, before any task runs.
    `refused`: how the user asked for overwrite (("mode", "overwrite") or the output mode), and
    `advice` what to use instead."""
    if overwrite:
        raise BadOptionError(*refused, f"not allowed: a Kafka log is append-only; {advice}")
    opts = parse_write_options(options)
    fs, log_dir = filesystem_for(opts.path, opts.store)
    fs.ensure_writable(opts.path)   # before any task runs, so nothing is written anywhere
    check_writable(log_dir)
    layout = input_layout(schema, opts.topic)
    counts = topic_partition_counts(log_dir)
    if (opts.topic is not None and opts.num_partitions is not None
            and counts.get(opts.topic, opts.num_partitions) != opts.num_partitions):
        raise BadOptionError("numPartitions", opts.num_partitions,
                             f"topic {opts.topic} exists with {counts[opts.topic]} partitions "
                             "(a topic keeps its partition count)")
    fallback = {str(k).lower(): v for k, v in options.items()}.get("queryname")
    return WritePlan(opts, log_dir, layout, counts, fallback)


class TaskStager:
    """One task's rows, routed, encoded and staged: one staged file per target partition."""

    def __init__(self, plan: WritePlan, job: str, ctx: TaskContext | None,
                 job_started: bool = False):
        self.plan = plan
        partition_id = ctx.partitionId() if ctx is not None else 0
        self.prefix = task_file_prefix(partition_id, ctx.attemptNumber() if ctx else 0,
                                       ctx.taskAttemptId() if ctx else 0)
        # A batch job's directory was made by the driver (start_job); a stream's micro-batch
        # has no driver-side start, so its tasks make it.
        self.directory = (open_job_dir(plan.log_dir, job) if job_started
                          else make_job_dir(plan.log_dir, job))
        self.router = Router(plan.layout, plan.opts.topic, plan.partition_counts,
                             plan.opts.partitions_for_new_topic, first_keyless=partition_id)
        self.write_time_ms = int(time.time() * 1000)  # a producer's send time, for CreateTime
        self._buffers: dict[tuple[str, int], list[pa.RecordBatch]] = {}
        self._buffered: dict[tuple[str, int], int] = {}
        self._writers: dict[tuple[str, int], StagedFileWriter] = {}

    def add(self, batch: pa.RecordBatch) -> None:
        for target, rows in self.router.route(batch):
            self._buffers.setdefault(target, []).append(rows)
            self._buffered[target] = self._buffered.get(target, 0) + rows.nbytes
            if self._buffered[target] >= FLUSH_BYTES:
                self._flush(target)
        if sum(self._buffered.values()) >= MAX_BUFFERED_BYTES:
            for target in list(self._buffers):
                self._flush(target)

    def _flush(self, target: tuple[str, int]) -> None:
        rows = pa.Table.from_batches(self._buffers.pop(target))
        self._buffered.pop(target)
        if rows.num_rows == 0:
            return
        encoded = encode_batches(self._columns(rows), base_offset=0,
                                 max_records=self.plan.opts.max_records_per_batch,
                                 max_bytes=self.plan.opts.batch_bytes, codec=self.plan.opts.codec,
                                 level=self.plan.opts.compression_level,
                                 # LogAppendTime batches get bit 3 now; the commit stamps the
                                 # append time into maxTimestamp
                                 log_append_time=(self.write_time_ms
                                                  if self.plan.opts.log_append_time else None))
        if target not in self._writers:
            self._writers[target] = StagedFileWriter(self.directory, self.prefix, *target,
                                                     fsync=self.plan.opts.fsync != "none")
        self._writers[target].write(encoded.data, encoded.num_batches, rows.num_rows)

    def _columns(self, rows: pa.Table):
        columns = columns_from_arrow(null_timestamp=self.write_time_ms,
                                     **self._arrow_columns(rows))
        if columns.num_rows and columns.timestamps.min() < 0:
            bad = int(columns.timestamps[np.argmax(columns.timestamps < 0)])
            raise BadOptionError("timestamp", bad, "Kafka timestamps are milliseconds since "
                                 "1970-01-01 and cannot be negative")
        return columns

    def _arrow_columns(self, rows: pa.Table) -> dict:
        layout = self.plan.layout
        timestamp = (rows.column(layout.timestamp) if layout.timestamp is not None
                     else pa.array(np.full(rows.num_rows, self.write_time_ms, np.int64)))
        return {"timestamp": timestamp, "value": rows.column(layout.value),
                "key": rows.column(layout.key) if layout.key is not None else None,
                "headers": rows.column(layout.headers) if layout.headers is not None else None}

    def finish(self) -> tuple[tuple[StagedFile, ...], tuple[tuple[str, int], ...]]:
        for target in list(self._buffers):
            self._flush(target)
        files = [w.finish() for _, w in sorted(self._writers.items())]
        return (tuple(f for f in files if f is not None),
                tuple(sorted(self.router.routed.items())))


def stage_task(plan: WritePlan, job: str, batches: Iterator[pa.RecordBatch],
               job_started: bool = False, **stream: object) -> StagedOutput:
    stager = TaskStager(plan, job, TaskContext.get(), job_started)
    for batch in batches:
        stager.add(batch)
    files, routed = stager.finish()
    return StagedOutput(job, files, routed, **stream)


def commit_request(job: str, messages: Sequence[StagedOutput | None], *,
                   query_id: str | None = None,
                   batch_id: int | None = None) -> committer.CommitRequest:
    """The messages, in task order, as one commit: their files in that order, and the partition
    count each topic was routed with (the same in every task: all got the same plan)."""
    files, counts = [], {}
    for message in messages:
        if message is None:
            continue
        files.extend(message.files)
        for topic, n in message.topic_partitions:
            if counts.setdefault(topic, n) != n:
                raise BadOptionError("topic", topic, f"tasks routed it with {counts[topic]} and "
                                     f"{n} partitions")
    return committer.CommitRequest(job, tuple(files), counts, query_id, batch_id)


class SegmentLogWriter(DataSourceArrowWriter):
    def __init__(self, plan: WritePlan):
        self.plan = plan
        self.job = batch_job_name(uuid.uuid4().hex)  # pickled once: the same in every task
        start_job(plan.log_dir, self.job)

    def write(self, iterator: Iterator[pa.RecordBatch]) -> StagedOutput:
        return stage_task(self.plan, self.job, iterator, job_started=True)

    def commit(self, messages: list[StagedOutput | None]) -> None:
        committer.commit(self.plan.log_dir, commit_request(self.job, messages),
                         self.plan.settings)

    def abort(self, messages: list[StagedOutput | None]) -> None:
        committer.abort(self.plan.log_dir, self.job, self.plan.settings)


def batch_writer(options, schema, overwrite: bool) -> SegmentLogWriter:
    # Spark's Kafka sink allows Append and ErrorIfExists (KafkaSourceProvider.scala:176-185),
    # but PySpark 4.3 refuses ErrorIfExists (the default) and Ignore for every Python data
    # source before the sink is asked (UNSUPPORTED_DATA_SOURCE_SAVE_MODE): only Overwrite reaches
    # here, and the advice says what works.
    plan = plan_write(options, schema, overwrite, refused=("mode", "overwrite"),
                      advice='use .mode("append"), which a segmentlog write always needs '
                             "(PySpark refuses the default mode)")
    warning = ignored_warning(plan.opts.ignored)
    if warning is not None:   # writer() runs once per write: one warning
        log.warning(warning)
    return SegmentLogWriter(plan)
