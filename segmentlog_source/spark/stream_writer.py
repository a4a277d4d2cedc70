"""`df.writeStream.format("segmentlog").option("checkpointLocation", ...).start(path)`.

Each micro-batch is staged and committed like a batch write (writer.py), with what streaming
adds (pyspark-python-datasource.md §8): Spark may replay a micro-batch after a failure or a
driver crash, so `write()` output is at-least-once and `commit(batchId)` can run twice, the first
run having finished fully, partly or not at all. Exactly once comes from the commit: it first
settles any unfinished commit of the same query (finishing a partial one), then skips a batch
id at or below the one the query durably recorded (storage/commit/commit_log.py), and records
the new batch id in the same commit.

The query is identified by Spark's `sql.streaming.queryId` local property, which a restart from
the same checkpoint keeps (the run id changes); `write()` reads it (and the batch id, from
`streaming.sql.batchId`) from the TaskContext and carries it to `commit()` in its message.
Without it, the `queryName` option must name the query. `streamWriter()` is called again for
every commit, in a fresh process, so nothing here lives in memory between micro-batches.

PySpark 4.0 has no Arrow stream writer: there the tasks get Rows, gathered into Arrow batches
(compat.stream_write_batches) before the same staging.
"""

from __future__ import annotations

import logging
from typing import Iterator

import pyarrow as pa
from pyspark import TaskContext

from .. import compat
from ..errors import BadOptionError
from ..plan.option_names import ignored_warning
from ..storage.commit import committer
from ..storage.commit.commit_log import check_query_id
from ..storage.commit.staging import stream_job_name
from .writer import StagedOutput, WritePlan, commit_request, plan_write, stage_task

log = logging.getLogger("segmentlog")

QUERY_ID_PROPERTY = "sql.streaming.queryId"   # StreamExecution.QUERY_ID_KEY
BATCH_ID_PROPERTY = "streaming.sql.batchId"


def _query_of(messages) -> str | None:
    ids = {m.query_id for m in messages if m is not None}
    if len(ids) > 1:
        raise BadOptionError("queryName", sorted(ids), "tasks of one micro-batch disagree "
                             "on the query id")
    return ids.pop() if ids else None


class SegmentLogStreamWriter(compat.StreamWriterBase):
    def __init__(self, plan: WritePlan, input_schema: pa.Schema):
        self.plan = plan
        self.input_schema = input_schema    # the Arrow form of the stream's rows

    def write(self, iterator: Iterator[pa.RecordBatch]) -> StagedOutput:
        ctx = TaskContext.get()
        query_id = ctx.getLocalProperty(QUERY_ID_PROPERTY) or self.plan.fallback_query_id
        if not query_id:
            raise BadOptionError("queryName", None, "Spark passed no streaming query id; set "
                                 "the queryName option to a stable name for this query")
        batch_id = int(ctx.getLocalProperty(BATCH_ID_PROPERTY))
        job = stream_job_name(check_query_id(query_id), batch_id)
        batches = compat.stream_write_batches(iterator, self.input_schema)
        return stage_task(self.plan, job, batches, query_id=query_id, batch_id=batch_id)

    def commit(self, messages: list[StagedOutput | None], batchId: int) -> None:
        query_id = _query_of(messages) or self.plan.fallback_query_id
        if query_id is None:
            return  # no task ran (an empty micro-batch): nothing to publish or remember
        request = commit_request(stream_job_name(query_id, batchId), messages,
                                 query_id=query_id, batch_id=batchId)
        committer.commit(self.plan.log_dir, request, self.plan.settings)

    def abort(self, messages: list[StagedOutput | None], batchId: int) -> None:
        query_id = _query_of(messages) or self.plan.fallback_query_id
        if query_id is not None:  # else its staging goes once a replay of it commits
            committer.abort(self.plan.log_dir, stream_job_name(query_id, batchId),
                            self.plan.settings)


# The ignored-options warnings this process gave: streamWriter() runs again for every
# micro-batch's commit, and one warning per query (per reused worker) is enough.
_warned: set[tuple[str, str]] = set()


def stream_writer(options, schema, overwrite: bool) -> SegmentLogStreamWriter:
    plan = plan_write(options, schema, overwrite, refused=("outputMode", "complete"),
                      advice='use .outputMode("append")')
    warning = ignored_warning(plan.opts.ignored)
    if warning is not None and (plan.log_dir, warning) not in _warned:
        _warned.add((plan.log_dir, warning))
        log.warning(warning)
    return SegmentLogStreamWriter(plan, compat.to_arrow_schema(schema))
