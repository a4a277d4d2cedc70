"""Retention: deleting a partition's oldest segments as a broker's retention does
(UnifiedLog.deleteOldSegments, spec §12.2).

Three checks run in turn, each deleting a prefix of the segments: segments wholly below the
log start offset (always); then, when cleanup.policy includes `delete`, segments beyond
`retention.bytes` and segments older than `retention.ms`. A check walks the segments oldest
first and stops at the first that may not go: one whose offsets reach past the high watermark,
the active segment when it is empty, or one its rule keeps.

- retention.ms: a segment goes when now - its largest timestamp > retention.ms (the largest
  record timestamp, or the `.log` mtime when it holds none); -1 keeps everything.
- retention.bytes: with `excess` = partition size - retention.bytes, a segment goes while it
  fits in the excess (excess - segment size >= 0), which then shrinks by its size.

When every segment may go, the log first rolls a new, empty active segment at the log end
offset, so the log keeps its end and a place to append. The log start offset moves up to the
new first segment's base offset.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from ..log_files import HIGH_WATERMARK_CHECKPOINT
from .log_config import LogConfig
from .log_segment import LogSegment
from .partition_log import PartitionLog

Predicate = Callable[[LogSegment, "LogSegment | None"], bool]


@dataclass
class RetentionResult:
    topic: str
    partition: int
    deleted: list[tuple[int, str]] = field(default_factory=list)  # (base offset, reason)
    rolled: bool = False
    log_start_offset: int = 0
    log_end_offset: int = 0
    deleted_bytes: int = 0


def apply_retention(log: PartitionLog, config: LogConfig, now_ms: int) -> RetentionResult:
    """Delete what retention allows from `log` (opened for append); what went and why."""
    result = RetentionResult(log.topic, log.partition)
    checks: list[tuple[str, Callable[[], Predicate]]] = [
        ("below the log start offset", lambda: _below_log_start(log))]
    if config.delete:
        checks += [(f"retention.bytes={config.retention_bytes}", lambda: _over_size(log, config)),
                   (f"retention.ms={config.retention_ms}", lambda: _too_old(config, now_ms))]
    for reason, make_predicate in checks:
        predicate = make_predicate()
        if predicate is None:
            continue
        count = _deletable_count(log, predicate, high_watermark(log))
        if count == 0:
            continue
        if count == len(log.segments):
            log.roll()
            result.rolled = True
        result.deleted += [(s.base_offset, reason) for s in log.segments[:count]]
        result.deleted_bytes += sum(s.size for s in log.segments[:count])
        log.delete_oldest_segments(count)
    result.log_start_offset, result.log_end_offset = log.log_start_offset, log.log_end_offset
    return result


def high_watermark(log: PartitionLog) -> int:
    """The log end offset, or a lower high watermark a broker's checkpoint recorded (a copy of
    a broker's directory may hold records no replica confirmed)."""
    leo = log.log_end_offset
    recorded = log.data_dir_checkpoint(HIGH_WATERMARK_CHECKPOINT).get((log.topic, log.partition))
    return leo if recorded is None else max(log.log_start_offset, min(leo, recorded))


def _deletable_count(log: PartitionLog, predicate: Predicate, high_watermark: int) -> int:
    segments = log.segments
    count = 0
    for i, segment in enumerate(segments):
        following = segments[i + 1] if i + 1 < len(segments) else None
        upper = following.base_offset if following is not None else log.log_end_offset
        last_and_empty = following is None and segment.size == 0
        if high_watermark >= upper and not last_and_empty and predicate(segment, following):
            count += 1
        else:
            break
    return count


def _below_log_start(log: PartitionLog) -> Predicate:
    return lambda segment, following: (following is not None
                                       and following.base_offset <= log.log_start_offset)


def _over_size(log: PartitionLog, config: LogConfig) -> Predicate | None:
    size = sum(s.size for s in log.segments)
    if config.retention_bytes < 0 or size < config.retention_bytes:
        return None
    excess = size - config.retention_bytes

    def over(segment: LogSegment, following) -> bool:
        nonlocal excess
        if excess - segment.size >= 0:
            excess -= segment.size
            return True
        return False
    return over


def _too_old(config: LogConfig, now_ms: int) -> Predicate | None:
    if config.retention_ms < 0:
        return None
    return lambda segment, following: now_ms - segment.largest_timestamp > config.retention_ms
