"""Offset ranges -> byte ranges of segment files -> groups of scan tasks (Spark partitions).

An offset range becomes, per touched segment, the byte range of exactly the batches holding its
offsets: found through the `.index` and a hop over the headers of at most one index interval of
batches. The executor reads that range and filters rows, so a narrow range costs its own bytes
plus a few header probes per touched segment.

The planner sees partitions through `PartitionView` (what `storage.partition_log.PartitionLog`
offers), so it can be tested with plain fakes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Protocol, Sequence

import numpy as np

from .predicates import INT64_MAX, INT64_MIN


class SegmentView(Protocol):
    base_offset: int
    log_path: str

    @property
    def size(self) -> int: ...

    def offset_index_entries(self) -> tuple[np.ndarray, np.ndarray]:
        """(absolute offsets, byte positions) of the `.index`, validated; empty if missing."""

    def locate(self, offset: int):
        """The header (position, end, base_offset, first_offset_known) of the first batch whose
        last offset is >= `offset`, or None."""

    def time_index_entries(self) -> tuple[np.ndarray, np.ndarray] | None:
        """(timestamps, absolute offsets) of the `.timeindex`, or None if it cannot be trusted
        to cover the whole segment (missing, or the segment is still active)."""


class PartitionView(Protocol):
    topic: str
    partition: int
    log_start_offset: int
    log_end_offset: int
    segments: Sequence[SegmentView]


@dataclass(frozen=True)
class ScanTask:
    """Read `[start, end)` of one segment file; keep rows with offsets in `[offset_lo, offset_hi)`.

    `start` and `end` are batch boundaries (index positions, 0, or the file size at planning).
    """

    topic: str
    partition: int
    path: str
    start: int
    end: int
    offset_lo: int
    offset_hi: int
    file_size: int | None = None   # the whole file's size at planning (None: not recorded)

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
        entries = seg.time_index_entries()
        if entries is None:
            return seg.base_offset          # not trusted: this segment may hold anything
        timestamps, offsets = entries
        if len(timestamps) and timestamps[-1] >= timestamp_ms:
            below = int(np.searchsorted(timestamps, timestamp_ms, side="left"))
            return seg.base_offset if below == 0 else int(offsets[below - 1]) + 1
        # else: a closed segment whose largest timestamp is below the bound: skip it whole
    return None


def byte_range(seg: SegmentView, seg_end_offset: int, lo: int, hi: int) -> tuple[int, int]:
    """The byte range of `seg` holding exactly the batches with offsets in `[lo, hi)`.

    Each end is found the way a broker serves a fetch: the `.index` entry at or below the
    offset, then a hop over batch headers (a few bytes each) to the batch itself.
    """
    size = seg.size
    start = 0
    if lo > seg.base_offset:
        first = seg.locate(lo)
        start = size if first is None else first.position
    end = size
    if hi < seg_end_offset:
        last = seg.locate(hi)     # the first batch that holds an offset >= hi
        if last is not None:
            # it may also hold offsets below hi (a legacy wrapper's first offset is unknown)
            wanted = not last.first_offset_known or last.base_offset < hi
            end = last.end if wanted else last.position
    return start, max(start, end)


def plan_partition(part: PartitionView, lo: int, hi: int) -> list[ScanTask]:
    """One task per touched segment, covering the offsets `[lo, hi)`."""
    tasks = []
    if lo >= hi:
        return tasks
    for seg, seg_end in zip(part.segments, segment_end_offsets(part)):
        if seg_end <= lo or seg.base_offset >= hi or seg.size == 0:
            continue
        start, end = byte_range(seg, seg_end, lo, hi)
        if end > start:
            tasks.append(ScanTask(part.topic, part.partition, seg.log_path, start, end, lo, hi))
    return tasks


def group_tasks(tasks: list[ScanTask], index_positions: dict[str, np.ndarray],
                max_bytes: int, min_groups: int | None) -> list[tuple[ScanTask, ...]]:
    """Cut the tasks, taken in log order as one stream of bytes, into groups of about equal size.

    Each group becomes one Spark partition. Spark tasks cost ~30 ms each, so small segments are
    packed together, and big ones are cut at `.index` positions (batch starts, so never
    mid-batch): the cut points are the batch starts nearest to equal shares of the bytes.
    """
    if not tasks:
        return []
    total = sum(t.nbytes for t in tasks)
    groups_wanted = max(min_groups or 1, math.ceil(total / max_bytes))
    # Every place the stream may be cut, in stream coordinates: task edges and index entries.
    candidates, starts, at = [], [], 0
    for t in tasks:
        starts.append(at)
        positions = index_positions.get(t.path, _EMPTY)
        inside = positions[(positions > t.start) & (positions < t.end)]
        candidates.append(at)
        candidates.extend(int(p) - t.start + at for p in inside)
        at += t.nbytes
    candidates = np.unique(np.array(candidates + [total], dtype=np.int64))
    cuts = []
    for k in range(1, groups_wanted):
        ideal = k * total / groups_wanted
        i = int(np.searchsorted(candidates, ideal))
        options = [c for c in candidates[max(0, i - 1):i + 1]]
        best = int(min(options, key=lambda c: abs(c - ideal)))
        if 0 < best < total and (not cuts or best > cuts[-1]):
            cuts.append(best)
    bounds = [0] + cuts + [total]
    groups = []
    for lo, hi in zip(bounds, bounds[1:]):
        group = []
        for t, t_at in zip(tasks, starts):
            a, b = max(lo, t_at), min(hi, t_at + t.nbytes)
            if b > a:
                group.append(replace(t, start=t.start + a - t_at, end=t.start + b - t_at))
        if group:
            groups.append(tuple(group))
    return groups


_EMPTY = np.empty(0, dtype=np.int64)

__all__ = ["ScanTask", "PartitionView", "SegmentView", "plan_partition", "group_tasks",
           "timestamp_floor_offset", "byte_range", "segment_end_offsets",
           "INT64_MIN", "INT64_MAX"]
