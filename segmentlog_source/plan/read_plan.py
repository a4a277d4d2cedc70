"""A read, planned: paths + options + WHERE predicates -> groups of scan tasks (Spark partitions).

    find partitions -> select (options, predicates) -> offset range per partition (options)
      -> narrowed by predicates (offsets exact, timestamps through the time indexes)
      -> byte ranges per segment (offset indexes) -> balanced groups

The planner reads directory listings and index files, plus the few `.log` bytes that
timestamp options (ListOffsets) and the log end offset need; executors read the byte ranges.
"""

from __future__ import annotations

import bisect
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

import numpy as np

from ..errors import CorruptDataError, DataLossError, LogNotFoundError
from ..format.batch import V2_HEADER_SIZE
from ..storage.commit.commit_log import pending_commit_offsets
from ..storage.io.in_order import each_in_order
from ..storage.io.stats import IOStats
from ..storage.log.log_directory import find_partitions
from ..storage.log.partition_log import PartitionLog
from ..storage.log.segment_order import check_last_time_entry
from .options import ReadOptions
from .partition_sources import partition_sources, reads_metadata_log
from .predicates import RowFilter
from .ranges import check_named_partitions, resolve_range
from .record_split import PlannedRange, record_groups
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
    # Segments with no byte to read inside the planned range (a 0-byte .log: a rolled segment
    # no batch reached yet), as tasks of nothing: the segments view lists them all the same.
    empty_segments: list[ScanTask] = field(default_factory=list)

    @property
    def nbytes(self) -> int:
        return sum(g.nbytes for g in self.groups)


class _SegmentView:
    """A storage LogSegment as the planner sees it (scan_plan.SegmentView)."""

    def __init__(self, segment, log=None, index: int = 0):
        self._segment = segment
        self._log, self._index = log, index   # (the lookups' checks: PartitionLog's)
        self.base_offset = segment.base_offset
        self.log_path = segment.log_path
        self._named: tuple[int, ...] | None = None

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

    def indexed_last_offset(self):
        if self._segment.active:
            return None
        return max(self.named_offsets(), default=None)

    def next_offset(self):
        return self._segment.read_next_offset()

    def confirm_records(self, offset: int) -> None:
        self._segment.confirm_records(offset)

    def named_offsets(self):
        # The last thing a task asks of its segment's indexes: then they are let go (the next
        # segment's are opened next; a log may hold tens of thousands).
        if self._named is None:
            segment = self._segment
            self._named = () if not segment.has_index_files else tuple(n for n in (
                segment.offset_index.last_entry()[0] if len(segment.offset_index) else None,
                segment.time_index.last_entry()[1] if len(segment.time_index) else None)
                if n is not None)
            segment.release_indexes()
        return self._named

    def release(self) -> None:
        self._segment.release_indexes()

    def skipped_by_metadata(self, timestamp_ms: int) -> bool:
        return self._segment.skipped_by_metadata(timestamp_ms)

    def passed_over(self) -> None:
        if self._log is not None:
            self._log.pass_over(self._index)

    def time_index_entries(self):
        if self._log is not None:   # (the time floor skips segments on these)
            self._log.check_segment_order(through=self._index)
        confirmed = self._segment.max_timestamp_and_offset   # (the last entry, checked)
        if self._segment.judged_by_batches:   # (judged without it: its last entry checked now)
            check_last_time_entry(self._segment)
        timestamps, offsets = self._segment.time_index.arrays()
        if not self._segment.active and len(timestamps) == 0 and confirmed[0] >= 0:
            timestamps, offsets = np.array([confirmed[0]]), np.array([confirmed[1]])
        if self._segment.active:
            # The active segment's index lags its tail; add the tail's running maximum.
            max_ts, max_offset = self._segment.max_timestamp_and_offset
            if max_ts >= 0 and (len(timestamps) == 0 or max_ts > timestamps[-1]):
                timestamps = np.append(timestamps, max_ts)
                offsets = np.append(offsets, max_offset)
        return timestamps, offsets


class _IndexPositions(Mapping):
    """Where the byte range of each planned segment may be cut: its `.index` positions, read
    when group_tasks asks for them, which is only for the segments a cut falls in."""

    def __init__(self, segments=()):
        self._segments = {s.log_path: s for s in segments}

    def __getitem__(self, path: str) -> np.ndarray:
        segment = self._segments[path]
        positions = segment.offset_index_entries()[1]
        segment.release()
        return positions

    def __iter__(self):
        return iter(self._segments)

    def __len__(self) -> int:
        return len(self._segments)

    def update(self, other: "_IndexPositions") -> None:
        self._segments.update(other._segments)


class _PartitionView:
    def __init__(self, log: PartitionLog):
        self._log = log
        self.topic = log.topic
        self.partition = log.partition
        self.log_start_offset = log.log_start_offset
        self.log_end_offset = log.log_end_offset
        self.unstable_end: int | None = None   # the log end, when an open transaction holds
        self.segments = [_SegmentView(s, log, i)
                         for i, s in enumerate(log.segments)]   # read_committed below it
        self.compacted = log.compacted
        self.dirty_from = log.dirty_from

    def hold_at_last_stable_offset(self) -> None:
        """read_committed: the range ends at the LSO, as a consumer's fetch and ListOffsets
        (latest) do under that isolation level; what lies past it is not decided yet."""
        stable = self._log.last_stable_offset(self.log_end_offset)
        if stable < self.log_end_offset:
            self.unstable_end, self.log_end_offset = self.log_end_offset, stable

    def offset_for_timestamp(self, timestamp_ms: int) -> int | None:
        # (Kafka's ListOffsets answers no offset at or past the last fetchable one)
        found = self._log.offset_for_timestamp(timestamp_ms)
        return found if found is None or found < self.log_end_offset else None


class _PendingCommits:
    """Each data directory's unfinished segmentlog commits, read after each partition's log
    end offset (a commit may start between two partitions' reads: read once for the first, it
    would leave the second uncapped). Objects in a store never change, nor does a commit
    happen there: read once per plan."""

    def __init__(self):
        self._by_dir: dict[str, dict] = {}

    def __call__(self, fs, log_dir: str) -> dict:
        if not fs.immutable_objects:
            return pending_commit_offsets(log_dir, fs)
        if log_dir not in self._by_dir:
            self._by_dir[log_dir] = pending_commit_offsets(log_dir, fs)
        return self._by_dir[log_dir]


def _end_view(log: PartitionLog, opts: ReadOptions, pending_commits) -> _PartitionView:
    """The partition as a read planned now sees it: its end the last whole batch, capped at an
    unfinished commit and, with read_committed, at the last stable offset."""
    view = _PartitionView(log)
    if log.segments and log.segments[-1].index_problem is not None:
        # (salvaging) damage where the log end is found: no end offset to plan with
        raise log.segments[-1].index_problem
    # The end offset first, then the unfinished commits: a commit that starts between the
    # two reads is then capped too (storage/commit/commit_log.py says why the order matters).
    fs = log.fs
    pending = pending_commits(fs, fs.dirname(log.directory)).get((log.topic, log.partition))
    if pending is not None:
        view.log_end_offset = min(view.log_end_offset, pending)
    if opts.read_committed:
        view.hold_at_last_stable_offset()
    return view


@dataclass(frozen=True)
class PartitionOffsets:
    log_start: int
    start: int        # where the options' start resolves to
    end: int          # where a read planned now would end ("latest")
    topic_id: str | None = None   # partition.metadata's, where there is one


def stream_offsets(opts: ReadOptions) -> dict[tuple[str, int], PartitionOffsets]:
    """The offsets of every partition the options select, present now (none yet: empty): what a
    streaming query's offsets are made of (spark/stream_reader.py)."""
    out = {}
    pending_commits = _PendingCommits()
    for pdir in find_partitions(list(opts.paths), config=opts.store, allow_empty=True,
                                metadata_log=reads_metadata_log(opts)):
        if not opts.selects_partition(pdir.topic, pdir.partition):
            continue
        log = PartitionLog.open(pdir.path, pdir.fs, topic=pdir.topic, partition=pdir.partition)
        view = _end_view(log, opts, pending_commits)
        start = resolve_range(view, opts).start
        out[(log.topic, log.partition)] = PartitionOffsets(view.log_start_offset, start,
                                                           view.log_end_offset, log.topic_id)
    return out


def _plan_partition(log: PartitionLog, opts: ReadOptions, row_filter: RowFilter, plan: ReadPlan,
                    pending_commits) -> tuple[list[ScanTask], _IndexPositions,
                                              list[AbortedRange], PlannedRange | None]:
    """One partition's scan tasks (planned through its indexes), the index positions where its
    ranges may be cut, the aborted transactions they may touch, and its offset range."""
    segment_fs = {s.log_path: s.fs for s in log.segments}
    remote = {s.log_path: s for s in log.segments if s.files_prefix is not None}
    # What the log end offset needs, fetched in parallel on object stores. (ListOffsets reads
    # ahead the indexes of the segments it passes over: partition_log.py.)
    _prefetch(log.segments[-1:])
    # What the neighbours say was lost, before the log end offset is taken: a writer may add
    # snapshots and checkpoints meanwhile, and those must not look as if they were beyond it.
    for loss in log.lost_data():
        _data_loss(opts, plan, loss)
    view = _end_view(log, opts, pending_commits)
    rng = resolve_range(view, opts)
    plan.notes.extend(rng.notes)
    lo, hi = rng.start, rng.end
    f_lo, f_hi = row_filter.offset_span()
    lo, hi = max(lo, f_lo), min(hi, f_hi)
    if row_filter.timestamp_lo_ms > -(2**63) and lo < hi:
        floor = timestamp_floor_offset(view, row_filter.timestamp_lo_ms)
        lo = hi if floor is None else max(lo, floor)
    notes = [f"{s.index_problem}: read without it (rebuilt from the .log)"
             for s in log.segments if s.index_problem is not None]
    plan.notes.extend(notes)
    ends = segment_end_offsets(view)
    touched = [lo < end and seg.base_offset < hi for seg, end in zip(view.segments, ends)]
    plan.empty_segments.extend(
        ScanTask(log.topic, log.partition, seg.log_path, 0, 0, seg.base_offset, seg.base_offset,
                 file_size=0, segment_base=seg.base_offset,
                 next_segment_base=None if i == len(ends) - 1 else ends[i])
        for i, (seg, wanted) in enumerate(zip(view.segments, touched))
        if not wanted and lo <= seg.base_offset <= hi and seg.log_path not in remote
        and seg.size == 0)
    for seg, wanted in zip(view.segments, touched):
        if not wanted:     # (what ListOffsets or the time floor opened to pass over them)
            seg.release()
    if lo >= hi:
        return [], _IndexPositions(), [], None
    _prefetch([seg for seg, wanted in zip(log.segments, touched) if wanted])

    def missing(seg, first: int, end: int) -> None:
        _data_loss(opts, plan, f"offsets {first}..{end - 1} of {log.name} are missing: "
                   f"{seg.log_path} ends below them and no segment holds them")

    def tasks_for(start: int, end: int, on_missing=None) -> list[ScanTask]:
        # (also what maxRecordsPerPartition plans each part of the range with: record_split.py)
        return _with_snapshot_ends(log, [_remote_copy(replace(
            t, file_size=segment_fs[t.path].size(t.path)), remote.get(t.path))
            for t in plan_partition(view, start, end, on_missing)])

    tasks = tasks_for(lo, hi, missing)
    paths = {t.path for t in tasks}
    positions = _IndexPositions(seg for seg in view.segments if seg.log_path in paths)
    plan.notes.extend(f"{s.index_problem}: read without it (rebuilt from the .log)"
                      for s in log.segments if s.index_problem is not None
                      and f"{s.index_problem}: read without it (rebuilt from the .log)"
                      not in notes)
    aborted = []
    if opts.read_committed and tasks:
        # (salvaging, the .txnindex files are not trusted: what they lack cannot be undone)
        txns = log.aborted_transactions(lo, hi, from_batches=not opts.fail_on_data_loss)
        aborted = [AbortedRange(log.topic, log.partition, a.producer_id, a.first_offset,
                                a.last_offset) for a in txns]
    return tasks, positions, aborted, PlannedRange(log.topic, log.partition, lo, hi, positions,
                                                   tasks_for)


def _salvage_partition(log: PartitionLog, opts: ReadOptions, row_filter: RowFilter,
                       plan: ReadPlan, pending_commits
                       ) -> tuple[list[ScanTask], _IndexPositions, list[AbortedRange], None]:
    """failOnDataLoss=false, when a partition's indexes or tail cannot be trusted to plan it:
    every segment read whole from its first byte, the executor's salvaging scan keeping what
    its neighbours vouch for; the range is the options' offsets (earliest, latest or numbers),
    capped at an unfinished commit's start (read after the segments' sizes, as _end_view does).
    (Not for read_committed or timestamp bounds: plan_read does not salvage those. Nor is it
    cut by maxRecordsPerPartition: its offsets are not known until the executor reads them.)"""
    def fixed(bound, default: int) -> int:
        value = bound.offsets.get(log.topic, {}).get(log.partition, bound.default)
        return default if value < 0 else value      # EARLIEST / LATEST

    f_lo, f_hi = row_filter.offset_span()
    lo = max(fixed(opts.starting, log.log_start_offset), f_lo)
    hi = min(fixed(opts.ending, f_hi), f_hi)
    tasks = []
    following = [s.base_offset for s in log.segments[1:]] + [None]
    for segment, next_base in zip(log.segments, following):
        try:
            size = segment.fs.size(segment.log_path)
        except (CorruptDataError, LogNotFoundError) as err:
            plan.notes.append(f"{err}: skipped")
            continue
        if size and (next_base is None or next_base > lo) and segment.base_offset < hi:
            try:
                named = _SegmentView(segment).named_offsets()
            except CorruptDataError:   # (salvaging: an index that fails its checks names none)
                named = ()
            tasks.append(_remote_copy(ScanTask(
                log.topic, log.partition, segment.log_path, 0, size, lo, hi, file_size=size,
                segment_base=segment.base_offset, ends_segment=True,
                next_segment_base=next_base, named_offsets=named),
                segment if segment.files_prefix is not None else None))
    fs = log.fs
    pending = pending_commits(fs, fs.dirname(log.directory)).get((log.topic, log.partition))
    if pending is not None:
        tasks = [replace(t, offset_hi=min(t.offset_hi, pending)) for t in tasks
                 if t.segment_base < pending and t.offset_lo < pending]
    return _with_snapshot_ends(log, tasks), _IndexPositions(), [], None


def _remote_copy(task: ScanTask, segment) -> ScanTask:
    """A task of a remote tier's copy says how its files are named and opened."""
    if segment is None:
        return task
    opener = getattr(segment.fs, "opener", None)
    return replace(task, files_prefix=segment.files_prefix,
                   opener=opener() if opener is not None else None,
                   needs_crc_check=getattr(segment.fs, "unchecked_bytes", False))


def _with_snapshot_ends(log: PartitionLog, tasks: list[ScanTask]) -> list[ScanTask]:
    """A producer snapshot at N says a batch ended at N - 1: a file beside the `.log` that
    confirms the offsets of a batch that salvaging found after damage (checked_scan.py)."""
    ends = [n - 1 for n in log.snapshot_offsets()]   # (sorted: each task's are a slice)
    return [replace(t, named_offsets=t.named_offsets + tuple(ends[
        bisect.bisect_left(ends, t.segment_base):
        len(ends) if t.next_segment_base is None
        else bisect.bisect_left(ends, t.next_segment_base)]))
            for t in tasks]


def _data_loss(opts: ReadOptions, plan: ReadPlan, what: str) -> None:
    """Lost data the planner found: an error, or with failOnDataLoss=false a note (logged)."""
    if opts.fail_on_data_loss:
        raise DataLossError(f"{what} (with failOnDataLoss=false the rest is read)")
    plan.notes.append(what)


def _prefetch(segments) -> None:
    """Both indexes of each segment (a segment loads and checks them together), fetched in
    parallel on object stores, each through its segment's file system (a remote tier's may
    not be the local log's)."""
    by_fs: dict[int, tuple[object, list[str]]] = {}
    for s in segments:
        by_fs.setdefault(id(s.fs), (s.fs, []))[1].extend((s.index_path, s.time_index_path))
    for fs, paths in by_fs.values():
        fs.prefetch(paths)


def _parallelism(partitions) -> int:
    """How many partitions to plan at once: on object stores, their `parallelism` (planning
    waits on requests, one at a time per partition); locally one (it waits on the CPU)."""
    return min((p.fs.parallelism for p in partitions), default=1)


def _each_in_order(plan_one, partitions, parallelism: int):
    """plan_one(p) for each partition, in order; with `parallelism` > 1 in threads. The first
    failure in partition order is the one raised, as if they were planned one by one. The
    first partition is planned alone unless its store answered a listing of the tree already:
    a store that refuses every request (access denied, no such bucket) fails one request, not
    one per thread. (A listed one, planned alone first, kept the other threads idle for a
    partition's worth of sequential requests: 0.7-2.6 s of a 20-partition time range on moto.)"""
    if partitions and not partitions[0].fs.listed:
        yield plan_one(partitions[0])
        partitions = partitions[1:]
    # (a partition's plan is small: room for a few per thread keeps them all busy)
    yield from each_in_order(plan_one, partitions, parallelism, ahead=4 * parallelism)


# How many times a partition is listed again when a file it listed is gone before the planner
# opened it (retention ran meanwhile): a log changing that fast fails with DataLossError.
RELISTS_ON_DELETION = 3


def _listed_file_gone(err: Exception, source) -> str | None:
    """The file of the partition directory `err` says is not there (None: another error)."""
    path = getattr(err, "missing_path", None)
    if not isinstance(err, LogNotFoundError) or path is None or source.path is None:
        return None
    directory = source.path.rstrip("/") + "/"
    return path if str(path).startswith(directory) else None


def plan_read(opts: ReadOptions, row_filter: RowFilter = RowFilter()) -> ReadPlan:
    stats = IOStats()
    found = partition_sources(opts, stats)
    if not found:
        raise LogNotFoundError(f"no Kafka partition directories (<topic>-<partition>) under "
                               f"{', '.join(opts.paths)}")
    check_named_partitions(opts, {(p.topic, p.partition) for p in found},
                           {p.topic for p in found})
    plan = ReadPlan([], planner_io=stats)
    if row_filter.is_empty:
        return plan
    tasks: list[ScanTask] = []
    positions = _IndexPositions()
    aborted: list[AbortedRange] = []
    ranges: list[PlannedRange] = []
    whole: list[ScanTask] = []      # planned without an offset range: never cut by records
    pending_commits = _PendingCommits()
    selected = [p for p in found if opts.selects_partition(p.topic, p.partition)
                and row_filter.selects(p.topic, p.partition)]

    def plan_one(source):
        # A file the listing named may be gone when the planner opens it: retention deleted
        # the segment meanwhile (a live broker's log.dirs). The partition is listed and planned
        # again: a range that no longer needs the segment is planned without it, and one that
        # does fails on the offsets it lacks, as any read below the log start does.
        gone = None
        for attempt in range(RELISTS_ON_DELETION + 1):
            try:
                return _plan_source(source)
            except DataLossError as err:
                if gone is None:
                    raise
                raise DataLossError(f"{err}; {gone} was listed, then deleted (by retention) "
                                    "while the read was planned") from None
            except LogNotFoundError as err:
                gone = _listed_file_gone(err, source)
                if gone is None:
                    raise
                if attempt == RELISTS_ON_DELETION:
                    raise DataLossError(
                        f"{gone} is gone since the read was planned (deleted by retention, or "
                        f"replaced by compaction), {RELISTS_ON_DELETION + 1} times in a row: the "
                        f"log of {source.topic}-{source.partition} changes faster than it can "
                        "be planned; run the query again") from None
                source.fs.forget(source.path)

    def _plan_source(source):
        part = ReadPlan([])    # this partition's notes, merged in partition order below
        try:
            log, lost = source.open(stats=stats, salvage=not opts.fail_on_data_loss)
        except CorruptDataError as err:   # the data directory's log-start-offset-checkpoint
            if opts.fail_on_data_loss:
                raise
            part.notes.append(f"{err}: the log starts at its first segment")
            log, lost = source.open(stats=stats, salvage=True, read_log_start_checkpoint=False)
        for loss in lost:     # (copies a remote tier's metadata lists and its store lacks)
            _data_loss(opts, part, loss)
        try:
            planned = _plan_partition(log, opts, row_filter, part, pending_commits)
        except (CorruptDataError, DataLossError, LogNotFoundError) as err:
            # (a timestamp bound needs the indexes' ListOffsets, read_committed the aborted
            # transactions they list: without them no salvage returns only the right rows)
            if (opts.fail_on_data_loss or opts.read_committed or opts.starting.by_timestamp()
                    or opts.ending.by_timestamp() or _listed_file_gone(err, source)):
                raise
            # Salvaging: what could not be planned through the indexes is read whole.
            part.notes.append(f"{err}: reading the segments of {log.name} whole")
            planned = _salvage_partition(log, opts, row_filter, part, pending_commits)
        log.fs.forget(log.directory)   # what the partition's planning read (object stores)
        return part, planned

    for part, (part_tasks, part_positions, part_aborted, planned) in _each_in_order(
            plan_one, selected, _parallelism(selected)):
        plan.notes.extend(part.notes)
        plan.empty_segments.extend(part.empty_segments)
        if opts.max_records_per_partition is not None:   # (a planned range holds its log)
            if planned is not None:
                ranges.append(planned)
            else:
                whole.extend(part_tasks)
        tasks.extend(part_tasks)
        positions.update(part_positions)
        aborted.extend(part_aborted)
    filesystems = [p.fs for p in found] + [p.tier.fs for p in found if p.tier is not None]
    for view in {id(fs): fs for fs in filesystems}.values():   # listings and prefetched files
        stats.merge(view.stats)
    if opts.max_records_per_partition is None:
        groups = group_tasks(tasks, positions, opts.max_bytes_per_partition, opts.min_partitions)
    else:
        groups = record_groups(ranges, opts.min_partitions, opts.max_records_per_partition,
                               opts.max_bytes_per_partition)
        groups += group_tasks(whole, {}, opts.max_bytes_per_partition, None)
    for group in groups:
        touched = {(t.topic, t.partition) for t in group}
        plan.groups.append(ReadGroup(group, tuple(a for a in aborted
                                                  if (a.topic, a.partition) in touched)))
    return plan
