"""`spark.readStream.format("segmentlog").load(path)`: a log directory tailed as a stream.

Offsets are Spark's Kafka source's JSON, `{"orders": {"0": 42}}`: the next offset to read per
partition, so a checkpoint reads as a Kafka one. PySpark keeps this reader in one Python process
on the driver for the whole run of a query (python_streaming_source_runner), so what it learns
between triggers may live on `self`; a restart from the checkpoint starts from the offsets
Spark journaled, never from this memory.

Each micro-batch is a batch read of `[start, end)` per partition (plan.read_plan, the same
byte-range planning through the indexes and the same checked executor scans), so it reads the
bytes appended since the last one, not the directory again. The end of a partition is where a
read planned now would end: the last whole batch (a batch being written is never returned,
torn or twice), capped at an unfinished segmentlog commit and, with read_committed, at the last
stable offset, so an open transaction holds the stream back until its marker is written.
"""

from __future__ import annotations

from dataclasses import replace
import json
import logging
import time

from pyspark.sql.datasource import DataSourceStreamReader

from ..compat import (ReadAllAvailable, ReadLimit, ReadMaxRows, ReadMinRows,
                      SupportsTriggerAvailableNow)
from ..errors import BadOptionError, DataLossError
from ..plan.admission import Offsets, backlog, rate_limit
from ..plan.options import EARLIEST, LATEST, BoundSpec
from ..plan.partition_sources import reads_metadata_log
from ..plan.read_plan import plan_read, stream_offsets
from ..plan.stream_options import StreamOptions
from ..storage.log.log_directory import find_partitions
from .partition_scan import SegmentLogInputPartition, scan_partition

log = logging.getLogger("segmentlog")


def to_json(offsets: Offsets) -> dict:
    """{(topic, partition): offset} as Spark's Kafka source writes it."""
    out: dict[str, dict[str, int]] = {}
    for (topic, partition), offset in sorted(offsets.items()):
        out.setdefault(topic, {})[str(partition)] = offset
    return out


def from_json(offsets: dict) -> Offsets:
    """Offsets Spark hands back (from this reader, or journaled in the checkpoint): anything
    but `{topic: {partition: offset >= 0}}` is refused, never read as something else (-2 and
    -1 would mean earliest and latest to the planner)."""
    try:
        out = {(str(topic), int(p)): o for topic, parts in offsets.items()
               for p, o in parts.items()}
        if all(type(o) is int and o >= 0 for o in out.values()) and all(p >= 0 for _, p in out):
            return out
    except (AttributeError, TypeError, ValueError):
        pass
    raise BadOptionError("checkpointLocation", None, f"its offsets {json.dumps(offsets)[:80]} "
                         "are not the next offsets of topic partitions; start a new checkpoint",
                         'expected {"topic": {"partition": offset}}, offsets >= 0')


class SegmentLogStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    def __init__(self, opts: StreamOptions, decoding=None):
        self.opts = opts
        self.decoding = decoding
        self.target: Offsets | None = None      # Trigger.AvailableNow: the end seen at start
        self.latest: Offsets = {}               # the ends the last latestOffset saw
        self.handed: Offsets = {}               # the offsets the last latestOffset returned
        self.topic_ids: dict = {}               # partition -> the topic id first seen there
        self.last_trigger = time.monotonic()    # when the last micro-batch was admitted

    # -- offsets ---------------------------------------------------------------------------
    def initialOffset(self) -> dict:
        """Where a new query starts: startingOffsets (default latest), startingTimestamp or
        startingOffsetsByTimestamp, per partition present now."""
        return to_json({tp: o.start for tp, o in stream_offsets(self.opts.read).items()})

    def _ends(self) -> tuple[Offsets, Offsets]:
        """(log start, end) per partition the options select, as they stand now."""
        found = stream_offsets(replace(self.opts.read, starting=BoundSpec(EARLIEST)))
        self._check_topic_ids(found)
        return ({tp: o.log_start for tp, o in found.items()},
                {tp: o.end for tp, o in found.items()})

    def latestOffset(self, start: dict | None = None, limit: ReadLimit | None = None) -> dict:
        """PySpark 4.2 on: the end of the next micro-batch from `start` under `limit`.
        4.0 and 4.1 call it with neither (compat.py): everything there, from the offsets it
        returned last (none after a restart: partitions() skips what a batch already read)."""
        begin = from_json(start) if start is not None else dict(self.handed)
        log_starts, ends = self._ends()
        self.latest = ends
        if self.target is not None:
            # AvailableNow: nothing past what was there when the query started
            ends = {tp: min(e, self.target[tp]) for tp, e in ends.items() if tp in self.target}
        # a partition that appeared since (a new topic, more partitions) starts at its earliest
        # offset, as in Spark's Kafka source; one that vanished keeps its offset (partitions()
        # decides what its loss means)
        begin = {**{tp: log_starts[tp] for tp in ends if tp not in begin}, **begin}
        ends = {**begin, **{tp: max(e, begin[tp]) for tp, e in ends.items()}}
        if limit is not None and not isinstance(limit, ReadAllAvailable):
            ends = self._admitted(begin, ends, limit)
        if ends != begin:
            self.last_trigger = time.monotonic()
        self.handed = ends
        return to_json(ends)

    def _admitted(self, begin: Offsets, ends: Offsets, limit: ReadLimit) -> Offsets:
        """The limit the engine passes (getDefaultReadLimit's, as PySpark 4.3 has no composite
        limits: with both options, ReadMaxRows, and the minimum comes from the options)."""
        low = limit.min_rows if isinstance(limit, ReadMinRows) else \
            self.opts.min_offsets_per_trigger
        if (low is not None and self.target is None and backlog(begin, ends) < low
                and time.monotonic() - self.last_trigger < self.opts.max_trigger_delay_ms / 1000):
            return begin                       # wait for more, up to maxTriggerDelay
        high = limit.max_rows if isinstance(limit, ReadMaxRows) else None
        return ends if high is None else rate_limit(begin, ends, high)

    def _check_topic_ids(self, found) -> None:
        """A partition directory replaced by another topic's log of the same name (deleted and
        re-created, a restore of another cluster) shows another topic id in its
        partition.metadata: its offsets are not the ones this stream has read."""
        for tp, o in found.items():
            seen = self.topic_ids.setdefault(tp, o.topic_id)
            if o.topic_id is not None and seen is not None and o.topic_id != seen:
                message = (f"partition {tp[0]}-{tp[1]} now holds topic id {o.topic_id}, not "
                           f"{seen}: its directory was replaced by another log")
                if self.opts.read.fail_on_data_loss:
                    raise DataLossError(message + "; failOnDataLoss=false goes on from the "
                                        "offsets the stream had")
                log.warning("segmentlog: %s; going on from the offsets the stream had", message)
                self.topic_ids[tp] = o.topic_id

    def getDefaultReadLimit(self) -> ReadLimit:
        if self.opts.max_offsets_per_trigger is not None:
            return ReadMaxRows(self.opts.max_offsets_per_trigger)
        if self.opts.min_offsets_per_trigger is not None:
            return ReadMinRows(self.opts.min_offsets_per_trigger)
        return ReadAllAvailable()

    def reportLatestOffset(self) -> dict | None:
        return to_json(self.latest) if self.latest else None

    def prepareForTriggerAvailableNow(self) -> None:
        self.target = self._ends()[1]

    # -- micro-batches -----------------------------------------------------------------------
    def partitions(self, start: dict, end: dict):
        begin, stop = from_json(start), from_json(end)
        wanted = {tp: (begin.get(tp, EARLIEST), e) for tp, e in stop.items()
                  if e > begin.get(tp, -1)}
        if not wanted:
            return []
        assign: dict[str, dict[int, int]] = {}
        for topic, partition in wanted:
            assign.setdefault(topic, {})[partition] = 0
        missing = sorted(tp for tp in wanted if tp not in self._present(assign))
        if missing:
            what = ", ".join(f"{t}-{p}" for t, p in missing)
            if self.opts.read.fail_on_data_loss:
                raise DataLossError(f"partitions {what} are gone from "
                                    f"{', '.join(self.opts.read.paths)} (a topic deleted?); "
                                    "failOnDataLoss=false goes on without them")
            log.warning("segmentlog: partitions %s are gone; skipped (failOnDataLoss=false)", what)
            wanted = {tp: r for tp, r in wanted.items() if tp not in missing}
            assign = {t: {p: 0 for (tt, p) in wanted if tt == t} for t in {t for t, _ in wanted}}
            if not wanted:
                return []
        opts = replace(self.opts.read, assign=assign, subscribe=None, subscribe_pattern=None,
                       starting=_bound(EARLIEST, {tp: r[0] for tp, r in wanted.items()}),
                       ending=_bound(LATEST, {tp: r[1] for tp, r in wanted.items()}))
        plan = plan_read(opts)
        for note in plan.notes:
            log.warning("segmentlog: %s", note)
        log.info("segmentlog: micro-batch of %d offsets in %d partitions, %d bytes in %d tasks",
                 sum(e - max(s, 0) for s, e in wanted.values()), len(wanted), plan.nbytes,
                 len(plan.groups))
        return [SegmentLogInputPartition(g) for g in plan.groups]

    def _present(self, assign) -> set:
        """The partitions of `assign` there now (a listing: plan_read opens their logs)."""
        return {(p.topic, p.partition) for p in find_partitions(
            list(self.opts.read.paths), config=self.opts.read.store, allow_empty=True,
            metadata_log=reads_metadata_log(self.opts.read))
            if p.partition in assign.get(p.topic, {})}

    def read(self, partition):
        return scan_partition(partition, self.opts.read, (), self.decoding)

    def commit(self, end: dict) -> None:
        """Nothing to release: the log belongs to its writer (retention is the log manager's)."""


def _bound(default: int, offsets: Offsets) -> BoundSpec:
    by_topic: dict[str, dict[int, int]] = {}
    for (topic, partition), offset in offsets.items():
        by_topic.setdefault(topic, {})[partition] = offset
    return BoundSpec(default, offsets=by_topic)
