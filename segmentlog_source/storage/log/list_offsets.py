"""ListOffsets by timestamp (spec §8.2) over a partition's segments, and what such lookups
confirm of the files on the way (segment_order.py says why: the names and offsets they pass
over are outside every CRC).
"""

from __future__ import annotations

from ...errors import BadOptionError
from .segment_order import (check_last_time_entry, check_meets_next, check_passed_over,
                            confirm_names)

# ListOffsets special timestamps (§8.2)
LATEST_TIMESTAMP = -1
EARLIEST_TIMESTAMP = -2
MAX_TIMESTAMP = -3
LOOKUP_PREFETCH = 8   # segments whose indexes a lookup by timestamp reads ahead, at once


def offset_for_timestamp(log, timestamp: int) -> int | None:
    """The first offset of `log` (a PartitionLog) whose record timestamp is >= `timestamp`, or
    None; -2 is the log start offset, -1 the log end offset (there is no high watermark here),
    -3 the offset of the first record holding the largest timestamp."""
    if timestamp == EARLIEST_TIMESTAMP:
        return log.log_start_offset
    if timestamp == LATEST_TIMESTAMP:
        return log.log_end_offset
    segments = log.segments
    if timestamp == MAX_TIMESTAMP:
        log.check_segment_order()
        best, best_ts = None, None
        for segment in segments:  # the first segment holding the largest timestamp
            max_ts = segment.max_timestamp_and_offset[0]
            if best is None or max_ts > best_ts:
                best, best_ts = segment, max_ts
        found = best.offset_of_max_timestamp() if best is not None else None
        return found[0] if found is not None else None
    if timestamp < 0:
        raise BadOptionError("timestamp", timestamp, "must be >= 0, or -1, -2, -3")
    for i, segment in enumerate(segments):
        if i % LOOKUP_PREFETCH == 0:   # (object stores: the indexes it may pass over next;
            # none of a segment judged by its batches, whose `.log` confirm_names reads whole)
            log.fs.prefetch(p for s in segments[i:i + LOOKUP_PREFETCH]
                            if not s.active and not s.skipped_by_metadata(timestamp)
                            and not s.judged_by_batches
                            for p in (s.index_path, s.time_index_path))
        log.check_segment_order(through=i)
        if segment.skipped_by_metadata(timestamp):
            # (a remote copy whose metadata's max timestamp is below: Kafka's remote ListOffsets
            # passes over it on that alone, and so does this, reading none of its files)
            log.pass_over(i)
            continue
        if segment.largest_timestamp >= timestamp:
            if segment.judged_by_batches:   # (its indexes, not read ahead: both at once now)
                segment.fs.prefetch((segment.index_path, segment.time_index_path))
                check_last_time_entry(segment)
            found = segment.offset_for_timestamp(timestamp, log.log_start_offset)
            if found is None:   # (a segment with no timestamp says its mtime: go on)
                log.pass_over(i)
                continue
            if i > 0:
                compacted, dirty_from = log.lookups.gaps_excused()
                check_passed_over(segments[i - 1], segment, log.name, compacted, dirty_from)
            if i + 1 < len(segments):
                check_meets_next(segment, segments[i + 1])
            return None if found[0] >= log.log_end_offset else found[0]
        log.pass_over(i)
        segment.release_indexes()   # passed over: a log may have tens of thousands
    return None


class LookupChecks:
    """What lookups by timestamp have confirmed of a partition's segment files: the names of
    the first `confirmed` (segment_order.confirm_names), whether one of their first batches
    showed the cleaner's hand, and whether the partition excuses offset gaps."""

    def __init__(self, log):
        self._log = log
        self.forget()

    def forget(self) -> None:
        """The segments changed (a roll, retention, a truncation): confirm afresh."""
        self.confirmed, self.cleaner_seen, self._gaps_excused = 0, False, None

    def confirm_names(self, through: int | None = None) -> None:
        """Confirm the names up to segment index `through` (default: all), a window at a
        time; all of them where the cleaner has been."""
        log = self._log
        count = len(log.segments)
        want = count if through is None else min(count, through + 1)
        if want <= self.confirmed:
            return
        if want < count and self.confirmed == 0 and log.compacted:
            want = count
        self.confirmed, cleaned = confirm_names(log.segments, self.confirmed, want, log.fs,
                                                LOOKUP_PREFETCH)
        if cleaned and not self.cleaner_seen:
            self.cleaner_seen = True
            self.confirm_names()

    def gaps_excused(self) -> tuple[bool, int | None]:
        """The partition's (compacted, dirty_from), read from its checkpoints once."""
        if self._gaps_excused is None:
            self._gaps_excused = (self._log.compacted, self._log.dirty_from)
        return self._gaps_excused

    def pass_over(self, i: int) -> None:
        """A lookup passes over segment `i` whole: it must end where the next begins, unless
        the cleaner's gaps excuse a hole there (a segment moved or lost from there could
        have held the answer)."""
        log = self._log
        if i + 1 < len(log.segments):
            compacted, dirty_from = self.gaps_excused()
            check_passed_over(log.segments[i], log.segments[i + 1], log.name,
                              compacted or self.cleaner_seen, dirty_from)
            check_meets_next(log.segments[i], log.segments[i + 1])
