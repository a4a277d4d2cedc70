"""Offset ranges -> byte ranges of segment files -> groups of scan tasks (Spark partitions).

An offset range becomes, per touched segment, the byte range of exactly the batches holding its
offsets: found through the `.index` and a hop over the headers of at most one index interval of
batches. The executor reads that range and filters rows, so a narrow range costs its own bytes
plus a few header probes per touched segment.

The planner sees partitions through `PartitionView` (what `storage.partition_log.PartitionLog`
offers), so it can be tested with plain fakes.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, replace
from typing import Callable, Mapping, Protocol, Sequence

import numpy as np

from ..errors import CorruptDataError
from .predicates import INT64_MAX, INT64_MIN

# At most this many groups (Spark partitions) in a plan: each is a Spark task.
MAX_GROUPS = 1_000_000


class SegmentView(Protocol):
    base_offset: int
    log_path: str

    @property
    def size(self) -> int: ...

    def offset_index_entries(self) -> tuple[np.ndarray, np.ndarray]:
        """(absolute offsets, byte positions) of the `.index`, validated; empty if missing."""

    def locate(self, offset: int):
        """(header, previous last offset): the header (position, end, base_offset, last_offset,
        first_offset_known) of the first batch whose last offset is >= `offset`, and the last
        offset of the batch before it (None: it is the segment's first). With no such batch:
        (None, the segment's last offset, or None when it holds no batch)."""

    def time_index_entries(self) -> tuple[np.ndarray, np.ndarray] | None:
        """(timestamps, absolute offsets) of the `.timeindex`, or None if it cannot be trusted
        to cover the whole segment (missing, or the segment is still active)."""

    def indexed_last_offset(self) -> int | None:
        """The largest offset a closed segment's indexes name (its batches must reach it), or
        None for the active segment, whose indexes lag."""

    def next_offset(self) -> int:
        """The offset after the segment's last batch (its base offset when it has none)."""

    def named_offsets(self) -> tuple[int, ...]:
        """The offsets the last entries of the segment's indexes name, active or not: files
        other than the `.log` that confirm the offsets of the batches holding them."""

    def skipped_by_metadata(self, timestamp_ms: int) -> bool:
        """Whether what vouches for the segment's offsets (a remote copy's metadata) says no
        record of it has a timestamp >= `timestamp_ms`: passed over without its indexes."""

    def passed_over(self) -> None:
        """A lookup by timestamp skips the segment whole: raise if it does not end where the
        next segment begins (a segment lost or moved from there could have held a match)."""

    def confirm_records(self, offset: int) -> None:
        """Decode the batch holding `offset`: an error unless its records lie within the
        offsets its header claims."""


class PartitionView(Protocol):
    topic: str
    partition: int
    log_start_offset: int
    log_end_offset: int
    segments: Sequence[SegmentView]
    compacted: bool   # signs of compaction: offset gaps are the cleaner's, not lost data
    dirty_from: int | None   # ... but none at or past the cleaner checkpoint's offset


@dataclass(frozen=True)
class ScanTask:
    """Read `[start, end)` of one segment file; keep rows with offsets in `[offset_lo, offset_hi)`.

    `start` and `end` are batch boundaries (index positions, 0, or the file size at planning).
    Batch offsets are outside the CRC, so the executor checks each batch against its neighbours
    (storage.log.batch_sequence), and these say what lies around the range:
    `after_offset`, the last offset of the batch before `start` (None at the segment start, where
    the first batch must lie at or above `segment_base`); `start_checked` False when the range
    starts where another task's range ends (that task checks the batch it meets there);
    `ends_segment`, whether `end` is the end of the segment's batches, then followed by
    `next_segment_base` (None for the last segment); else the executor reads the header at `end`.
    """

    topic: str
    partition: int
    path: str
    start: int
    end: int
    offset_lo: int
    offset_hi: int
    file_size: int | None = None   # the whole file's size at planning (None: not recorded)
    segment_base: int = 0
    after_offset: int | None = None
    start_checked: bool = True
    ends_segment: bool = True
    next_segment_base: int | None = None
    next_segment_path: str | None = None     # its .log (errors name it: a remote copy's name
                                             # is not its base offset's)
    compacted: bool = False
    dirty_from: int | None = None            # the cleaner checkpoint's first dirty offset
    indexed_last_offset: int | None = None   # a closed segment's batches reach at least this
    named_offsets: tuple[int, ...] = ()      # offsets the segment's indexes name last
    # A remote tier's copy: its files are `files_prefix` + suffix, and `opener` (picklable,
    # storage/tiered) is how an executor opens them when the path alone does not say (chunked,
    # compressed or encrypted objects); `needs_crc_check`: no check covers its bytes but the
    # batches' CRCs, so they are checked whatever verifyChecksums says.
    files_prefix: str | None = None
    opener: object = None
    needs_crc_check: bool = False

    @property
    def nbytes(self) -> int:
        return self.end - self.start


def segment_end_offsets(part: PartitionView) -> list[int]:
    """The exclusive end offset of each segment: the next segment's base, or the log end."""
    bases = [s.base_offset for s in part.segments]
    return bases[1:] + [part.log_end_offset]


def timestamp_floor_offset(part: PartitionView, timestamp_ms: int) -> int | None:
    """An offset below which no record has a timestamp >= `timestamp_ms`, from time indexes alone.

    Time-index entries are running maxima ((T, O): no record at offsets <= O in the segment has a
    timestamp above T), so whole segments and index prefixes can be skipped without reading any
    `.log` bytes, however disordered the CreateTime timestamps are. Returns None when no record
    anywhere can match; otherwise a lower bound on the first matching offset (the executor then
    filters rows exactly).
    """
    if timestamp_ms <= -1 or not part.segments:
        # Records without a timestamp carry -1, and a time index never holds them.
        return part.log_start_offset if part.segments else None
    for seg in part.segments:
        if seg.skipped_by_metadata(timestamp_ms):
            seg.passed_over()
            continue
        entries = seg.time_index_entries()
        if entries is None:
            return seg.base_offset          # not trusted: this segment may hold anything
        timestamps, offsets = entries
        if len(timestamps) and timestamps[-1] >= timestamp_ms:
            below = int(np.searchsorted(timestamps, timestamp_ms, side="left"))
            return seg.base_offset if below == 0 else int(offsets[below - 1]) + 1
        seg.passed_over()   # a closed segment whose largest timestamp is below the bound
    return None


def byte_range(seg: SegmentView, seg_end_offset: int, lo: int, hi: int
               ) -> tuple[int, int, int | None, int | None]:
    """(start, end, after_offset, missing_from): the byte range of `seg` holding exactly the
    batches with offsets in `[lo, hi)`; the last offset of the batch before `start` (None at 0);
    and, when `lo` lies after the segment's last batch, the first offset no batch holds.

    Each end is found the way a broker serves a fetch: the `.index` entry at or below the
    offset, then a hop over batch headers (a few bytes each) to the batch itself.
    """
    size = seg.size
    start, after, missing_from = 0, None, None
    if lo > seg.base_offset:
        first, after = seg.locate(lo)
        if first is None:
            start = size
            missing_from = seg.base_offset if after is None else after + 1
            after = None
        else:
            start = first.position
            if after is not None and first.first_offset_known and first.base_offset > after + 1:
                # offsets missing between the batch the read skips and its first: the cleaner's
                # only if that batch's records end where its header says (a CRC-valid header
                # claiming fewer offsets would hide records of the range); decode it to see
                seg.confirm_records(after)
    end = size
    if hi < seg_end_offset:
        last, _ = seg.locate(hi)     # the first batch that holds an offset >= hi
        if last is not None:
            # it may also hold offsets below hi (a legacy wrapper's first offset is unknown)
            wanted = not last.first_offset_known or last.base_offset < hi
            end = last.end if wanted else last.position
    return start, max(start, end), after, missing_from


def plan_partition(part: PartitionView, lo: int, hi: int,
                   on_missing: Callable[[SegmentView, int, int], None] | None = None
                   ) -> list[ScanTask]:
    """One task per touched segment, covering the offsets `[lo, hi)`.

    `on_missing(segment, first, end)` hears of offsets [first, end) in the requested range that
    no batch of the segment holds (its range came out empty): in a partition with no sign of
    compaction, lost data (a gap among the batches a task reads is the executor's to find).
    """
    tasks = []
    if lo >= hi:
        return tasks
    segments = list(part.segments)
    ends = segment_end_offsets(part)
    for i, (seg, seg_end) in enumerate(zip(segments, ends)):
        if seg_end <= lo or seg.base_offset >= hi:
            continue
        if seg.size == 0:   # holds none of the offsets up to the next segment: lost, or compacted
            lost_from = _not_cleaned_from(part, seg.base_offset)
            if lost_from is not None and on_missing is not None and lost_from < seg_end:
                on_missing(seg, lost_from, seg_end)
            continue
        # (the last segment may hold batches past the end the read is to stop at, as when a
        # commit is under way: its range ends at the batch holding hi, found like any other)
        last = i + 1 == len(segments)
        start, end, after, missing_from = byte_range(seg, INT64_MAX if last else seg_end, lo, hi)
        if end <= start and on_missing is not None:
            # offsets of [lo, hi) in this segment's range, and no batch holds any of them: lost,
            # unless the cleaner removed them. Its indexes name only offsets batches held, so
            # one named among them, or past the segment's last batch, says they were lost.
            first = max(lo, seg.base_offset) if missing_from is None else missing_from
            stop = min(hi, seg_end)
            named = seg.indexed_last_offset()
            lost_from = _not_cleaned_from(part, first)
            if lost_from is not None and lost_from < stop:
                on_missing(seg, lost_from, stop)
            elif first < stop and named is not None and (
                    first <= named < stop or missing_from is not None and named >= missing_from):
                on_missing(seg, first, stop)
        if end > start:
            if start == 0 and not tasks and i > 0 and part.compacted:
                _check_ends_below(segments[i - 1], seg)
            following = segments[i + 1] if i + 1 < len(segments) else None
            next_base = following.base_offset if following is not None else None
            tasks.append(ScanTask(part.topic, part.partition, seg.log_path, start, end, lo, hi,
                                  segment_base=seg.base_offset, after_offset=after,
                                  ends_segment=end == seg.size, next_segment_base=next_base,
                                  next_segment_path=None if following is None
                                  else following.log_path,
                                  compacted=part.compacted, dirty_from=part.dirty_from,
                                  indexed_last_offset=seg.indexed_last_offset(),
                                  named_offsets=seg.named_offsets()))
    return tasks


def _not_cleaned_from(part: PartitionView, first: int) -> int | None:
    """Where offsets from `first` on can no longer be the cleaner's to have removed: `first`
    with no sign of compaction, the first dirty offset past it when the cleaner checkpoint
    gives one, else None (the cleaner may have been anywhere)."""
    if not part.compacted:
        return first
    return None if part.dirty_from is None else max(first, part.dirty_from)


def _check_ends_below(before: SegmentView, seg: SegmentView) -> None:
    """A compacted segment's first batch may lie above its base offset, and the range read
    starts at it: the offsets in between belong to no one only if the segment before, which
    the read skips, ends below the base (a renamed file would otherwise hide its tail)."""
    end = before.next_offset()
    if end > seg.base_offset:
        raise CorruptDataError(f"the segment's batches run to offset {end - 1}, past the next "
                               f"segment's base offset {seg.base_offset} ({seg.log_path})",
                               before.log_path, None)


def group_tasks(tasks: list[ScanTask], index_positions: Mapping[str, np.ndarray],
                max_bytes: int, min_groups: int | None) -> list[tuple[ScanTask, ...]]:
    """Cut the tasks, taken in log order as one stream of bytes, into groups of about equal size.

    Each group becomes one Spark partition. Spark tasks cost ~30 ms each, so small segments are
    packed together, and big ones are cut at `.index` positions (batch starts, so never
    mid-batch): the cut points are the batch starts nearest to equal shares of the bytes.

    One pass over the tasks and the cuts together: the cut nearest an equal share lies in the
    task holding that share (its edges are places to cut too), so `index_positions` (a mapping
    from a task's path to its `.index` positions, which may load them on demand) is asked only
    for the tasks a cut falls in, unless more groups are wanted than tasks.
    """
    if not tasks:
        return []
    starts = list(itertools.accumulate((t.nbytes for t in tasks), initial=0))
    total = starts.pop()
    groups_wanted = min(max(min_groups or 1, math.ceil(total / max_bytes)), MAX_GROUPS)
    edges = len(set(starts)) + (total not in starts)
    if groups_wanted > edges - 1:
        # no more groups than there are places to cut: a huge minPartitions (or a tiny
        # maxBytesPerPartition) must not loop billions of times for nothing
        places = edges + sum(len(_inside(t, at, index_positions)) for t, at in zip(tasks, starts))
        groups_wanted = min(groups_wanted, places - 1)
    cuts: list[int] = []
    j, inside_of = 0, (-1, _EMPTY)
    for k in range(1, groups_wanted):
        ideal = k * total / groups_wanted
        while j + 1 < len(tasks) and starts[j + 1] < ideal:
            j += 1      # the last task starting below the share: the cut lies within its bytes
        if inside_of[0] != j:
            inside_of = (j, _inside(tasks[j], starts[j], index_positions))
        inside = inside_of[1]
        i = int(np.searchsorted(inside, ideal))
        below = int(inside[i - 1]) if i > 0 else starts[j]
        above = int(inside[i]) if i < len(inside) else starts[j] + tasks[j].nbytes
        best = below if abs(below - ideal) <= abs(above - ideal) else above
        if 0 < best < total and (not cuts or best > cuts[-1]):
            cuts.append(best)
    bounds = [0] + cuts + [total]
    groups, first = [], 0
    for lo, hi in zip(bounds, bounds[1:]):
        group = []
        while first < len(tasks) and starts[first] + tasks[first].nbytes <= lo:
            first += 1
        i = first
        while i < len(tasks) and starts[i] < hi:
            t, t_at = tasks[i], starts[i]
            a, b = max(lo, t_at), min(hi, t_at + t.nbytes)
            if b > a:
                start, end = t.start + a - t_at, t.start + b - t_at
                group.append(replace(t, start=start, end=end,
                                     start_checked=t.start_checked and start == t.start,
                                     after_offset=t.after_offset if start == t.start else None,
                                     ends_segment=t.ends_segment and end == t.end))
            i += 1
        if group:
            groups.append(tuple(group))
    return groups


def _inside(task: ScanTask, at: int, index_positions: Mapping[str, np.ndarray]) -> np.ndarray:
    """The task's `.index` positions strictly inside its byte range, distinct, in stream
    coordinates (the task starting at `at`)."""
    positions = index_positions.get(task.path, _EMPTY)
    inside = np.sort(np.asarray(positions[(positions > task.start) & (positions < task.end)],
                                dtype=np.int64))
    if len(inside) > 1:   # (np.unique: its hash table costs milliseconds even when empty)
        inside = inside[np.concatenate(([True], inside[1:] != inside[:-1]))]
    return inside - task.start + at


_EMPTY = np.empty(0, dtype=np.int64)

__all__ = ["ScanTask", "PartitionView", "SegmentView", "plan_partition", "group_tasks",
           "timestamp_floor_offset", "byte_range", "segment_end_offsets",
           "INT64_MIN", "INT64_MAX"]
