"""A read, planned: paths + options + WHERE predicates -> groups of scan tasks (Spark partitions).

    find partitions -> select (options, predicates) -> offset range per partition (options)
      -> narrowed by predicates (offsets exact, timestamps through the time indexes)
      -> byte ranges per segment (offset indexes) -> balanced groups

The planner reads directory listings and index files, plus the few `.log` bytes that
timestamp options (ListOffsets) and the log end offset need; executors read the byte ranges.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from ..errors import DataLossError, LogNotFoundError
from ..format.batch import V2_HEADER_SIZE
from ..storage.commit.commit_log import pending_commit_offsets
from ..storage.io.stats import IOStats
from ..storage.log.log_directory import find_partitions
from ..storage.log.partition_log import PartitionLog
from .options import ReadOptions
from .predicates import RowFilter
from .ranges import check_named_partitions, resolve_range
from .scan_plan import (ScanTask, group_tasks, plan_partition, segment_end_offsets,
                        timestamp_floor_offset)


@dataclass(frozen=True)
class AbortedRange:
    """An aborted transaction of one partition: its producer's batches in [first, last] offsets."""

    topic: str
    partition: int
    producer_id: int
    first_offset: int
    last_offset: int


@dataclass(frozen=True)
class ReadGroup:
    """What one Spark task reads: byte ranges, and the aborted transactions they may touch."""

    tasks: tuple[ScanTask, ...]
    aborted: tuple[AbortedRange, ...] = ()

    @property
    def nbytes(self) -> int:
        return sum(t.nbytes for t in self.tasks)


@dataclass
class ReadPlan:
    groups: list[ReadGroup]
    notes: list[str] = field(default_factory=list)   # data-loss clamps (failOnDataLoss=false)
    planner_io: IOStats = field(default_factory=IOStats)

    @property
    def nbytes(self) -> int:
        return sum(g.nbytes for g in self.groups)


class _SegmentView:
    """A storage LogSegment as the planner sees it (scan_plan.SegmentView)."""

    def __init__(self, segment):
        self._segment = segment
        self.base_offset = segment.base_offset
        self.log_path = segment.log_path

    @property
    def size(self) -> int:
        # The active segment may be growing: stop at the end of its last whole batch, as seen
        # now, so the executor never meets a batch cut by the planned end.
        if self._segment.active:
            return self._segment.valid_size()
        return self._segment.size

    def offset_index_entries(self):
        return self._segment.offset_index.arrays()

    def locate(self, offset: int):
        # Probe one header per hop: the planner reads headers, not batches (on object stores a
        # hop is a small ranged read; reading the whole index interval at once cost 2x the bytes).
        return self._segment.locate(offset, probe_bytes=V2_HEADER_SIZE)

    def time_index_entries(self):
        timestamps, offsets = self._segment.time_index.arrays()
        if self._segment.active:
            # The active segment's index lags its tail; add the tail's running maximum.
            max_ts, max_offset = self._segment.max_timestamp_and_offset
            if max_ts >= 0 and (len(timestamps) == 0 or max_ts > timestamps[-1]):
                timestamps = np.append(timestamps, max_ts)
                offsets = np.append(offsets, max_offset)
        return timestamps, offsets


class _PartitionView:
    def __init__(self, log: PartitionLog):
        self._log = log
        self.topic = log.topic
        self.partition = log.partition
        self.log_start_offset = log.log_start_offset
        self.log_end_offset = log.log_end_offset
        self.segments = [_SegmentView(s) for s in log.segments]
        self.compacted = log.compacted

    def offset_for_timestamp(self, timestamp_ms: int) -> int | None:
        return self._log.offset_for_timestamp(timestamp_ms)


def _data_loss(opts: ReadOptions, plan: ReadPlan, what: str) -> None:
    """Lost data the planner found: an error, or with failOnDataLoss=false a note (logged)."""
    if opts.fail_on_data_loss:
        raise DataLossError(f"{what} (with failOnDataLoss=false the rest is read)")
    plan.notes.append(what)


def _index_paths(segments) -> list[str]:
    """Both indexes of each segment: a segment loads (and checks) them together."""
    return [path for s in segments for path in (s.index_path, s.time_index_path)]


def plan_read(opts: ReadOptions, row_filter: RowFilter = RowFilter()) -> ReadPlan:
    stats = IOStats()
    found = find_partitions(list(opts.paths), config=opts.store)
    if not found:
        raise LogNotFoundError(f"no Kafka partition directories (<topic>-<partition>) under "
                               f"{', '.join(opts.paths)}")
    check_named_partitions(opts, {(p.topic, p.partition) for p in found},
                           {p.topic for p in found})
    plan = ReadPlan([], planner_io=stats)
    if row_filter.is_empty:
        return plan
    tasks: list[ScanTask] = []
    positions: dict[str, np.ndarray] = {}
    aborted: list[AbortedRange] = []
    pending_by_dir: dict[str, dict] = {}

    def pending_commits(fs, log_dir: str) -> dict:
        if log_dir not in pending_by_dir:
            pending_by_dir[log_dir] = pending_commit_offsets(log_dir, fs)
        return pending_by_dir[log_dir]

    for pdir in found:
        if not (opts.selects_partition(pdir.topic, pdir.partition)
                and row_filter.selects(pdir.topic, pdir.partition)):
            continue
        fs = pdir.fs
        log = PartitionLog.open(pdir.path, fs, topic=pdir.topic, partition=pdir.partition,
                                stats=stats, salvage=not opts.fail_on_data_loss)
        # What the log end offset needs (and, for timestamp options, ListOffsets, which looks
        # at every segment's time index), fetched in parallel on object stores.
        by_time = opts.starting.by_timestamp() or opts.ending.by_timestamp()
        fs.prefetch(_index_paths(log.segments if by_time else log.segments[-1:]))
        view = _PartitionView(log)
        for loss in log.lost_data():
            _data_loss(opts, plan, loss)
        # The end offset first, then the unfinished commits: a commit that starts between the
        # two reads is then capped too (storage/commit/commit_log.py says why the order matters).
        pending = pending_commits(fs, fs.dirname(pdir.path)).get((pdir.topic, pdir.partition))
        if pending is not None:
            view.log_end_offset = min(view.log_end_offset, pending)
        rng = resolve_range(view, opts)
        plan.notes.extend(rng.notes)
        lo, hi = rng.start, rng.end
        f_lo, f_hi = row_filter.offset_span()
        lo, hi = max(lo, f_lo), min(hi, f_hi)
        if row_filter.timestamp_lo_ms > -(2**63) and lo < hi:
            floor = timestamp_floor_offset(view, row_filter.timestamp_lo_ms)
            lo = hi if floor is None else max(lo, floor)
        if lo >= hi:
            continue
        fs.prefetch(_index_paths(seg for seg, end in zip(log.segments, segment_end_offsets(view))
                                 if seg.base_offset < hi and end > lo))
        def missing(seg, first: int, end: int, name=log.name) -> None:
            _data_loss(opts, plan, f"offsets {first}..{end - 1} of {name} are missing: "
                       f"{seg.log_path} ends below them and no segment holds them")

        part_tasks = [replace(t, file_size=fs.size(t.path))
                      for t in plan_partition(view, lo, hi, missing)]
        for seg in view.segments:
            if any(t.path == seg.log_path for t in part_tasks):
                positions[seg.log_path] = seg.offset_index_entries()[1]
        tasks.extend(part_tasks)
        plan.notes.extend(f"{s.index_problem}: read without it (rebuilt from the .log)"
                          for s in log.segments if s.index_problem is not None)
        if opts.read_committed and part_tasks:
            aborted.extend(AbortedRange(log.topic, log.partition, a.producer_id, a.first_offset,
                                        a.last_offset)
                           for a in log.aborted_transactions(lo, hi))
    for view in {id(p.fs): p.fs for p in found}.values():   # listings and prefetched files
        stats.bytes_read += view.stats.bytes_read
        stats.read_requests += view.stats.read_requests
    for group in group_tasks(tasks, positions, opts.max_bytes_per_partition, opts.min_partitions):
        touched = {(t.topic, t.partition) for t in group}
        plan.groups.append(ReadGroup(group, tuple(a for a in aborted
                                                  if (a.topic, a.partition) in touched)))
    return plan
