"""The segments view, planned: the segment files a read's byte ranges touch, each once, and the
empty ones in its offset range (a 0-byte .log, no offsets), packed into groups (Spark partitions)
of a bounded number of segments.

A read plan may cut one segment into several tasks (maxBytesPerPartition): a segment row is one
per file, wherever its ranges went. Each row costs a few small reads (the first batch's header,
the indexes' last entries and the batches after them), not the segment's bytes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
import math

from .read_plan import ReadGroup
from .scan_plan import ScanTask

SEGMENTS_PER_GROUP = 64


@dataclass(frozen=True)
class SegmentRef:
    topic: str
    partition: int
    path: str                        # of the .log
    base_offset: int
    next_segment_base: int | None    # None: the partition's last (active) segment
    compacted: bool = False          # signs of compaction: offset gaps may be the cleaner's
    files_prefix: str | None = None  # a remote tier's copy (ScanTask's)
    opener: object = None


def segment_groups(groups: list[ReadGroup], min_groups: int | None = None,
                   empty: Sequence[ScanTask] = ()) -> list[tuple[SegmentRef, ...]]:
    """Every segment the groups' tasks read, and the `empty` ones (ReadPlan.empty_segments),
    once, by topic, partition and base offset; in groups of about equal counts, at least
    `min_groups` (minPartitions) of them when there are that many segments."""
    seen: dict[str, SegmentRef] = {}
    for t in [t for group in groups for t in group.tasks] + list(empty):
        if t.path not in seen:
            seen[t.path] = SegmentRef(t.topic, t.partition, t.path, t.segment_base,
                                      t.next_segment_base, t.compacted, t.files_prefix, t.opener)
    refs = sorted(seen.values(), key=lambda r: (r.topic, r.partition, r.base_offset))
    if not refs:
        return []
    wanted = min(len(refs), max(min_groups or 1, math.ceil(len(refs) / SEGMENTS_PER_GROUP)))
    size = math.ceil(len(refs) / wanted)
    return [tuple(refs[i:i + size]) for i in range(0, len(refs), size)]
