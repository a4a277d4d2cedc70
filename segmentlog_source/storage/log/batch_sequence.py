"""The order of a segment's batches, checked against their neighbours.

A batch's baseOffset (a legacy entry's offset) is outside its checksum, so nothing in the batch
vouches for it; its neighbours do. In a log Kafka wrote, each batch's first offset lies above
the previous batch's last offset, at or above its segment's base offset (the file name), and
below the next segment's base offset. And Kafka leaves no gap between batches, nor between a
segment's last batch and the next segment, except where the log cleaner removed records: in a
partition that shows no sign of compaction, a gap is a moved base offset or a lost segment.

Signs of compaction (`CompactionEvidence`): the data directory's `cleaner-offset-checkpoint`
lists the partition, the topic is one Kafka or its ecosystem compacts by default, or a batch
the cleaner shaped (fewer records than offsets, a delete horizon) is seen in the same scan.
Where the checkpoint lists the partition, its offset (the first dirty offset) also bounds
where the cleaner has been: it never removed a record at or past it, so a gap reaching that far
(`dirty_from`) is no cleaner's, compacted topic or not.
"""

from __future__ import annotations

from typing import NamedTuple

from ...errors import CorruptDataError, DataLossError
from ...format.batch import INT32_MAX, BatchHeader
from ..log_files import LOG_SUFFIX, file_name

# Topics compacted by default: Kafka's own, Schema Registry's, Kafka Connect's default names,
# and Kafka Streams' changelogs (`<application>-<store>-changelog`).
COMPACTED_TOPICS = frozenset({"__consumer_offsets", "__transaction_state", "__share_group_state",
                              "_schemas", "connect-configs", "connect-offsets", "connect-status"})
COMPACTED_TOPIC_SUFFIXES = ("-changelog",)


def compacted_by_default(topic: str) -> bool:
    return topic in COMPACTED_TOPICS or topic.endswith(COMPACTED_TOPIC_SUFFIXES)


def shaped_by_cleaner(header: BatchHeader) -> bool:
    """Whether a v2 batch bears the cleaner's marks: offsets it no longer holds records for, or a
    delete horizon. (Legacy entries carry no such marks.)"""
    if header.magic < 2:
        return False
    span = header.last_offset - header.base_offset + 1
    return header.records_count != span or header.has_delete_horizon


class OffsetGap(NamedTuple):
    first_missing: int
    next_offset: int
    path: str
    position: int       # where the batch after the gap starts (or the end of the segment)
    between_segments: bool


class BatchSequence:
    """Checks, batch after batch, that offsets follow each other in one segment file.

    `previous_last` is the last offset of the batch before the first one checked; None means
    the scan starts at the segment's first batch, which must lie at or above `segment_base`;
    `start_checked=False` that the first batch was checked by whoever read the batch before it.
    Overlaps raise at once (CorruptDataError at the later batch). Gaps are collected; `finish`
    raises for them when the partition showed no sign of compaction (`compacted` False and no
    cleaner-shaped batch seen), so a batch seen after a gap can still excuse it.
    """

    def __init__(self, path: str, segment_base: int, previous_last: int | None = None, *,
                 compacted: bool = False, start_checked: bool = True,
                 next_segment_base: int | None = None, dirty_from: int | None = None,
                 next_segment_path: str | None = None):
        self.path = path
        self.next_segment_name = (None if next_segment_base is None
                                  else file_name(next_segment_base, LOG_SUFFIX)
                                  if next_segment_path is None
                                  else next_segment_path.rsplit("/", 1)[-1])
        self.segment_base = segment_base
        self.next_segment_base = next_segment_base   # every offset of the segment lies below
        self.at_segment_start = previous_last is None
        self.previous_last = segment_base - 1 if previous_last is None else previous_last
        self.unchecked = not start_checked   # the next batch is another reader's to check
        self.compacted = compacted   # signs of compaction (below dirty_from, when known)
        self.dirty_from = dirty_from
        self.gaps: list[OffsetGap] = []
        self.gap_expected = False

    def add(self, header: BatchHeader, first_offset: int | None = None) -> None:
        """Check one batch; `first_offset` is its first offset when the header does not know it
        (a legacy compressed wrapper, whose header carries its last offset)."""
        first = header.base_offset if first_offset is None else first_offset
        if not self.compacted and shaped_by_cleaner(header):
            self.compacted = True
        if header.last_offset - self.segment_base > INT32_MAX:
            raise CorruptDataError(
                f"batch offsets {first}..{header.last_offset} do not fit the segment: its "
                f"indexes hold offsets up to {self.segment_base + INT32_MAX} (base offset "
                f"{self.segment_base} + 2**31 - 1)", self.path, header.position)
        if self.next_segment_base is not None and header.last_offset >= self.next_segment_base:
            raise CorruptDataError(
                f"batch offsets {first}..{header.last_offset} reach the next segment, "
                f"{self.next_segment_name}, which starts at "
                f"{self.next_segment_base}", self.path, header.position)
        if self.unchecked:
            self.unchecked = self.at_segment_start = False
            self.previous_last = header.last_offset
            return
        if first <= self.previous_last:
            if self.at_segment_start:
                reason = (f"batch offsets {first}..{header.last_offset} start below the segment's "
                          f"base offset {self.segment_base} (its file name)")
            else:
                reason = (f"batch offsets {first}..{header.last_offset} do not follow the "
                          f"previous batch's last offset {self.previous_last} (offsets must "
                          f"increase; a base offset was changed?)")
            raise CorruptDataError(reason, self.path, header.position)
        if first > self.previous_last + 1 and not self.gap_expected:
            self.gaps.append(OffsetGap(self.previous_last + 1, first, self.path, header.position,
                                       False))
        self.gap_expected = False
        self.previous_last = header.last_offset
        self.at_segment_start = False

    def gap_excused(self, gap: OffsetGap) -> bool:
        """Whether the cleaner may have left `gap`: signs of compaction, and the gap ends at or
        below the first dirty offset (when the cleaner checkpoint gives one)."""
        return self.compacted and (self.dirty_from is None or gap.next_offset <= self.dirty_from)

    @property
    def in_cleaned_part(self) -> bool:
        """Whether the batches checked so far may lie where the cleaner has been."""
        return self.compacted and (self.dirty_from is None
                                   or self.previous_last < self.dirty_from)

    def rewind(self, previous_last: int) -> None:
        """Forget batches after the one ending at `previous_last` (a salvaging reader dropped
        them)."""
        self.previous_last = previous_last

    def expect_gap(self) -> None:
        """The next batch may follow a gap that is known and reported (bytes skipped)."""
        self.gap_expected = True

    def next_offset_is(self, next_offset: int, position: int, *, next_segment: bool) -> None:
        """What follows the last batch checked: the first offset of the next batch in the file,
        or (`next_segment`) the next segment's base offset, found at byte `position`."""
        if next_offset <= self.previous_last:
            name = self.next_segment_name if next_offset == self.next_segment_base \
                else file_name(next_offset, LOG_SUFFIX)
            what = (f"the next segment, {name}, which starts at"
                    if next_segment else "the batch after it, which starts at")
            raise CorruptDataError(f"the batch ending at offset {self.previous_last} overlaps "
                                   f"{what} {next_offset}", self.path, position)
        if next_offset > self.previous_last + 1 and not self.gap_expected:
            self.gaps.append(OffsetGap(self.previous_last + 1, next_offset, self.path, position,
                                       next_segment))

    def next_batch(self, header: BatchHeader) -> None:
        """What follows the last batch checked: the batch `header` (read past a range's end).
        A legacy compressed wrapper's header knows only its last offset: that one must be above
        ours, and no gap can be told."""
        if self.next_segment_base is not None and header.last_offset >= self.next_segment_base:
            raise CorruptDataError(
                f"the batch after this range, ending at offset {header.last_offset}, reaches the "
                f"next segment, {file_name(self.next_segment_base, LOG_SUFFIX)}, which starts at "
                f"{self.next_segment_base}", self.path, header.position)
        if header.first_offset_known:
            self.next_offset_is(header.base_offset, header.position, next_segment=False)
        elif header.last_offset <= self.previous_last:
            raise CorruptDataError(f"the batch ending at offset {self.previous_last} overlaps the "
                                   f"entry after it, which ends at {header.last_offset}",
                                   self.path, header.position)

    def finish(self) -> None:
        """Raise for the first gap the cleaner cannot have left (gap_excused)."""
        gaps = [g for g in self.gaps if not self.gap_excused(g)]
        if not gaps:
            return
        gap = gaps[0]
        missing = f"offsets {gap.first_missing}..{gap.next_offset - 1}"
        if self.compacted:     # past the first dirty offset: not the cleaner's
            raise CorruptDataError(f"{missing} are missing, at or past {self.dirty_from}, where "
                                   f"the data directory's cleaner-offset-checkpoint says the "
                                   f"log cleaner has not been (a base offset was changed, or a "
                                   f"segment lost?)", self.path, gap.position)
        if gap.between_segments:
            raise DataLossError(f"{self.path}: {missing} are missing after this segment, before "
                                f"{file_name(gap.next_offset, LOG_SUFFIX)}: no segment holds "
                                f"them (a deleted segment?). If the topic is "
                                f"compacted, copy its data directory's cleaner-offset-checkpoint "
                                f"along, or read with failOnDataLoss=false")
        raise CorruptDataError(f"{missing} are missing before this batch, a gap only the log "
                               f"cleaner leaves, and this partition shows no sign of "
                               f"compaction (a base offset was changed?). If the topic is "
                               f"compacted, copy its data directory's cleaner-offset-checkpoint "
                               f"along, or read with failOnDataLoss=false", self.path,
                               gap.position)
