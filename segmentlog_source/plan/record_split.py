"""maxRecordsPerPartition: Spark partitions of at most that many offsets, cut as Spark cuts them.

Spark's Kafka source splits each topic-partition's offset range into ceil(size / max) parts of
nearly equal size, then, if minPartitions asks for more parts than that, splits the larger ranges
again in proportion to their size (KafkaOffsetRangeCalculator.scala:48-134). This module does
the same arithmetic on the planned offset ranges, then plans each part's byte ranges through
the indexes like any other range; a part bigger than maxBytesPerPartition is cut further by
bytes. Parts are never packed together, so no Spark partition holds more than the maximum.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
import math
from typing import Callable, Mapping

import numpy as np

from ..errors import BadOptionError
from .scan_plan import MAX_GROUPS, ScanTask, group_tasks


@dataclass(frozen=True)
class OffsetSpan:
    """Offsets [start, end) of one topic-partition."""

    topic: str
    partition: int
    start: int
    end: int

    @property
    def size(self) -> int:
        return self.end - self.start


def _divide(span: OffsetSpan, parts: int) -> list[OffsetSpan]:
    """`parts` consecutive spans, the last taking the rounding (getDividedPartition, :113-130)."""
    out, remaining, start = [], span.size, span.start
    for part in range(parts):
        this = remaining // (parts - part)
        remaining -= this
        end = min(start + this, span.end)
        out.append(replace(span, start=start, end=end))
        start = end
    return out


def _part_count(size: int, total: int, min_parts: int) -> int:
    # Scala's math.round on a double: half away from zero for these positive values (:132-134)
    return max(math.floor(size / total * min_parts + 0.5), 1)


def split_spans(spans: list[OffsetSpan], min_partitions: int | None,
                max_records: int | None) -> list[OffsetSpan]:
    """KafkaOffsetRangeCalculator.getRanges on offset spans: empty spans dropped, each span cut
    to at most `max_records` offsets, then the large ones cut again to reach `min_partitions`."""
    spans = [s for s in spans if s.size > 0]
    if (min_partitions is None or len(spans) >= min_partitions) and max_records is None:
        return spans
    divided = spans
    if max_records is not None:
        count = sum(-(-s.size // max_records) for s in spans)
        if count > MAX_GROUPS:
            raise BadOptionError("maxRecordsPerPartition", max_records,
                                 f"would cut this read into {count} Spark partitions (at most "
                                 f"{MAX_GROUPS}); raise it")
        divided = [d for s in spans for d in _divide(s, -(-s.size // max_records)) if d.size]
    if min_partitions is None or min_partitions <= len(divided):
        return divided
    # Ranges too small to split keep one part each, and are left out of the proportions that
    # share the remaining parts among the others (:81-106).
    total = sum(s.size for s in divided)
    unsplit = [s for s in divided if _part_count(s.size, total, min_partitions) == 1]
    unsplit_keys = {(s.topic, s.partition) for s in unsplit}
    split_total = total - sum(s.size for s in unsplit)
    split_min = max(min_partitions - len(unsplit), 1)
    out = []
    for s in divided:
        parts = (1 if (s.topic, s.partition) in unsplit_keys
                 else _part_count(s.size, split_total, split_min))
        out.extend(d for d in _divide(s, parts) if d.size)
    return out


@dataclass
class PlannedRange:
    """A partition's planned offset range, and how its planner makes the scan tasks of a part
    of it (the same way as the whole: through the indexes, with what the partition adds)."""

    topic: str
    partition: int
    start: int
    end: int
    positions: Mapping[str, np.ndarray]  # where the byte ranges of its segments may be cut
    tasks_for: Callable[[int, int], list[ScanTask]]


def record_groups(ranges: list[PlannedRange], min_partitions: int | None, max_records: int,
                  max_bytes: int) -> list[tuple[ScanTask, ...]]:
    """The groups (Spark partitions) of a read with maxRecordsPerPartition set."""
    by_key = {(r.topic, r.partition): r for r in ranges}
    spans = [OffsetSpan(r.topic, r.partition, r.start, r.end) for r in ranges]
    groups: list[tuple[ScanTask, ...]] = []
    for span in split_spans(spans, min_partitions, max_records):
        planned = by_key[(span.topic, span.partition)]
        # (lost offsets were reported when the whole range was planned)
        tasks = planned.tasks_for(span.start, span.end)
        groups.extend(group_tasks(tasks, planned.positions, max_bytes, None))
    return groups
