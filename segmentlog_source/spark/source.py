"""The `segmentlog` Python Data Source: Kafka log directories as DataFrames (and, later, sinks).

The driver plans (plan.read_plan) in Spark's planner process; executors run spark.reader on
each group. Options are parsed once, in `schema()` at `load()` time, so a bad option fails
there with its name; `partitions()` may not pass state to `read()` through `self` (PySpark
pickles the reader before calling it), so all a task needs travels in its InputPartition.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import chain
import logging

import pyarrow as pa

from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

from ..plan.options import parse_read_options
from ..plan.predicates import fold
from ..plan.read_plan import ReadGroup, plan_read
from .filters import to_predicate
from .reader import GroupScan, ScanSettings
from .schema import spark_ddl

log = logging.getLogger("segmentlog")

REUSE_WARNING = (
    "segmentlog: WHERE-clause pushdown is on. PySpark 4.1-4.3 reuses a DataFrame's last pushed-"
    "down plan for later queries on the same DataFrame (df.filter(...).count() then df.count() "
    "returns the filtered count). Call load() again for each query, or use the range options "
    "(startingOffsets, endingOffsets, startingTimestamp, ...) instead of WHERE clauses.")


_reuse_warned = False


def _empty_batch(schema: pa.Schema) -> pa.RecordBatch:
    return pa.RecordBatch.from_arrays([pa.array([], f.type) for f in schema], schema=schema)


@dataclass(frozen=True)
class SegmentLogInputPartition(InputPartition):
    group: ReadGroup


class SegmentLogReader(DataSourceReader):
    """Reads with the ranges of the options; WHERE clauses stay with Spark."""

    def __init__(self, options):
        self.opts = parse_read_options(options)
        self.predicates: tuple = ()

    def _settings(self, row_filter) -> ScanSettings:
        o = self.opts
        return ScanSettings(row_filter, o.read_committed, o.verify_checksums, o.include_payload,
                            o.include_headers, o.fail_on_data_loss, o.store)

    def partitions(self):
        plan = plan_read(self.opts, fold(list(self.predicates)))
        for note in plan.notes:
            log.warning("segmentlog: %s", note)
        log.info("segmentlog: planned %d partitions, %d bytes (planner read %d bytes in %d "
                 "requests)", len(plan.groups), plan.nbytes, plan.planner_io.bytes_read,
                 plan.planner_io.read_requests)
        return [SegmentLogInputPartition(g) for g in plan.groups]

    def read(self, partition):
        group = getattr(partition, "group", None)
        if group is None:
            return iter(())   # Spark's stand-in InputPartition(None) for an empty plan
        scan = GroupScan(group, self._settings(fold(list(self.predicates))))
        # PySpark's worker keeps the first batch a reader yields alive for the whole task
        # (records_to_arrow_batches' first_element): make it an empty one, so no decoded data
        # is pinned (a batch can hold hundreds of MB of decompressed values).
        return chain([_empty_batch(scan.schema)], scan)


class SegmentLogPushdownReader(SegmentLogReader):
    """Also takes WHERE clauses on offset, timestamp, partition and topic (opt-in; see README)."""

    def pushFilters(self, filters):
        global _reuse_warned
        if not _reuse_warned:    # once per planner process, not once per query
            log.warning(REUSE_WARNING)
            _reuse_warned = True
        accepted, rejected = [], []
        for f in filters:
            predicate = to_predicate(f)
            if predicate is None:
                rejected.append(f)
            else:
                accepted.append(predicate)
        self.predicates = tuple(accepted)
        return rejected


class SegmentLogDataSource(DataSource):
    """`spark.read.format("segmentlog").load(path)`: the schema and options of Spark's Kafka
    source, over Kafka log directories, with no broker."""

    pushdown_default = False

    @classmethod
    def name(cls) -> str:
        return "segmentlog"

    def _read_options(self):
        options = dict(self.options)
        options.setdefault("pushdown", str(self.pushdown_default).lower())
        return parse_read_options(options)

    def schema(self):
        opts = self._read_options()
        return spark_ddl(opts.include_payload, opts.include_headers)

    def reader(self, schema):
        opts = self._read_options()
        options = dict(self.options)
        options["pushdown"] = str(opts.pushdown).lower()
        return SegmentLogPushdownReader(options) if opts.pushdown else SegmentLogReader(options)

    def writer(self, schema, overwrite):
        """`df.write...mode("append").save(path)`: spark/writer.py."""
        from .writer import batch_writer

        return batch_writer(dict(self.options), schema, overwrite)

    def streamWriter(self, schema, overwrite):
        """`df.writeStream...start(path)`: spark/stream_writer.py."""
        from .stream_writer import stream_writer

        return stream_writer(dict(self.options), schema, overwrite)


class SegmentLogPushdownDataSource(SegmentLogDataSource):
    """The same source with WHERE pushdown on by default (registered by register(pushdown=True))."""

    pushdown_default = True
