"""The `segmentlog` Python Data Source: Kafka log directories as DataFrames, streams and sinks.

The driver plans (plan.read_plan) in Spark's planner process; executors run spark.reader on
each group. Options are parsed in `schema()` at `load()` time, so a bad option fails there
with its name; the one warning about ignored options waits for `reader()` (once per query) or
`streamReader()`, since only they know whether the options are a batch read's or a stream's
(a trigger option means something to a stream). `partitions()` may not pass state to
`read()` through `self` (PySpark pickles the reader before calling it), so all a task needs
travels in its InputPartition.

Errors say what to do on their first line, which comes first in what PySpark shows
(error_lines.py): the reader completes the storage layer's errors with the option that helps.
"""

from __future__ import annotations

import logging

from pyspark.sql.datasource import DataSource, DataSourceReader

from .. import compat
from ..errors import BadOptionError, CorruptDataError, LogNotFoundError, SegmentLogError
from ..plan.option_names import ignored_warning
from ..plan.options import parse_read_options
from ..plan.predicates import fold
from ..plan.read_plan import plan_read
from ..plan.stream_options import parse_stream_options
from ..plan.value_options import resolve_decoding
from ..plan.view_plan import segment_groups
from .error_lines import errors_alone, raised_alone
from .filters import to_predicate
from .partition_scan import (SegmentLogInputPartition, SegmentsInputPartition, scan_partition,
                             with_hint)
from .schema import spark_schema, view_projection, with_decoded
from .worker_logs import info_to_worker_logs

log = logging.getLogger("segmentlog")

REUSE_WARNING = (
    "segmentlog: WHERE-clause pushdown is on. PySpark 4.1-4.3 reuses a DataFrame's last pushed-"
    "down plan for later queries on the same DataFrame (df.filter(...).count() then df.count() "
    "returns the filtered count). Call load() again for each query, or use the range options "
    "(startingOffsets, endingOffsets, startingTimestamp, ...) instead of WHERE clauses.")


_reuse_warned = False

PATH_HINT = "check the path given to load()"
LOG_DIR_HINT = "point load() at a broker's log.dirs"


class SegmentLogReader(DataSourceReader):
    """Reads with the ranges of the options; WHERE clauses stay with Spark."""

    def __init__(self, options, decoding=None, projection=None):
        self.opts = parse_read_options(options)
        self.decoding = decoding      # values/: built once on the driver, pickled to tasks
        self.projection = projection  # a view's columns the user's schema names (schema.py)
        self.predicates: tuple = ()

    def partitions(self):
        info_to_worker_logs()   # (the plan's line below: worker_logs.py)
        # (a segmentlog error is raised without its traceback: error_lines.py)
        try:
            plan = plan_read(self.opts, fold(list(self.predicates)))
        except CorruptDataError as err:
            raise raised_alone(with_hint(err, self.opts.fail_on_data_loss)) from None
        except LogNotFoundError as err:
            hint = PATH_HINT if str(err).startswith("no such file") else LOG_DIR_HINT
            raise raised_alone(LogNotFoundError(f"{err}: {hint}")) from None
        except SegmentLogError as err:
            raise raised_alone(err) from None
        for note in plan.notes:
            log.warning("segmentlog: %s", note)
        log.info("segmentlog: planned %d partitions, %d bytes of %s (planner read %d bytes in %d "
                 "requests)", len(plan.groups), plan.nbytes, self.opts.describe_selection(),
                 plan.planner_io.bytes_read, plan.planner_io.read_requests)
        if self.opts.view == "segments":
            return [SegmentsInputPartition(refs)
                    for refs in segment_groups(plan.groups, self.opts.min_partitions,
                                               plan.empty_segments)]
        return [SegmentLogInputPartition(g) for g in plan.groups]

    def read(self, partition):
        return scan_partition(partition, self.opts, self.predicates, self.decoding,
                              self.projection)


class SegmentLogPushdownReader(SegmentLogReader):
    """Also takes WHERE clauses on offset, timestamp, partition and topic (opt-in; see README)."""

    def pushFilters(self, filters):
        global _reuse_warned
        if self.opts.view != "records":
            return filters     # the views' columns are not records': Spark filters their rows
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

    @errors_alone
    def schema(self):
        info_to_worker_logs()
        # load() does not say whether a batch query or a stream follows: a batch read's
        # options, else a stream's; reader() and streamReader() warn of ignored options
        try:
            opts = self._read_options()
        except BadOptionError as batch_error:
            try:
                opts = parse_stream_options(dict(self.options)).read
            except BadOptionError:
                raise batch_error from None
        if opts.pushdown:
            compat.require("pushdown", option="pushdown")
        if opts.assign is None and opts.subscribe is None and opts.subscribe_pattern is None:
            log.info("segmentlog: reading %s", opts.describe_selection())
        decoding = resolve_decoding(opts)
        if decoding is not None:
            return with_decoded(opts.include_payload, opts.include_headers, decoding.fields())
        return spark_schema(opts.include_payload, opts.include_headers, opts.view)

    @errors_alone
    def reader(self, schema):
        opts = self._read_options()
        decoding = resolve_decoding(opts)
        projection = _check_schema(schema, opts, decoding)
        _warn_ignored(opts.ignored)
        options = dict(self.options)
        options["pushdown"] = str(opts.pushdown).lower()
        reader = SegmentLogPushdownReader if opts.pushdown else SegmentLogReader
        return reader(options, decoding, projection)

    @errors_alone
    def streamReader(self, schema):
        """`spark.readStream.format("segmentlog").load(path)`: spark/stream_reader.py."""
        from .stream_reader import SegmentLogStreamReader

        compat.require_read_limits(self.options)
        opts = parse_stream_options(dict(self.options))
        decoding = resolve_decoding(opts.read)
        _check_schema(schema, opts.read, decoding)
        _warn_ignored(opts.read.ignored)
        return SegmentLogStreamReader(opts, decoding)

    @errors_alone
    def writer(self, schema, overwrite):
        """`df.write...mode("append").save(path)`: spark/writer.py."""
        from .writer import batch_writer

        return batch_writer(dict(self.options), schema, overwrite)

    @errors_alone
    def streamWriter(self, schema, overwrite):
        """`df.writeStream...start(path)`: spark/stream_writer.py."""
        from .stream_writer import stream_writer

        return stream_writer(dict(self.options), schema, overwrite)


def _warn_ignored(ignored: tuple[str, ...]) -> None:
    warning = ignored_warning(ignored)
    if warning is not None:
        log.warning(warning)


def _check_schema(schema, opts, decoding=None):
    """A schema given with .schema(...) must be the source's own. Spark's Kafka source refuses a
    different one (KafkaSourceProvider.scala:74, "Kafka source has a fixed schema and cannot be
    set with a custom one"; a batch read fails with USER_SPECIFIED_AND_ACTUAL_SCHEMA_MISMATCH,
    DataSource.scala:377-383, and accepts an equal one). PySpark 4.3 runs no source code at
    load() when a schema is given, so this is the first place that sees it. The metadata views
    are segmentlog's own: their schema may name any of their columns, and only those are read
    (the projection returned; None for all of them)."""
    if opts.view != "records":
        try:
            return view_projection(opts.view, schema)
        except ValueError as err:
            raise BadOptionError("schema", schema.simpleString(),
                                 f"{err}; a view's schema may name any of its columns (below)",
                                 f"the {opts.view} view's columns: "
                                 f"{spark_schema(view=opts.view).simpleString()}") from None
    own = spark_schema(opts.include_payload, opts.include_headers) if decoding is None \
        else with_decoded(opts.include_payload, opts.include_headers, decoding.fields())
    wanted = own.simpleString()
    given = schema.simpleString() if hasattr(schema, "simpleString") else str(schema)
    if given != wanted:
        raise BadOptionError("schema", given, "segmentlog has a fixed schema and cannot be set "
                             "with a custom one: remove .schema(...)",
                             f"its schema: {wanted} (includeHeaders and includePayload choose "
                             "the columns; the batches and segments views take a schema naming "
                             "some of theirs)")


class SegmentLogPushdownDataSource(SegmentLogDataSource):
    """The same source with WHERE pushdown on by default (registered by register(pushdown=True))."""

    pushdown_default = True
