"""What a partition's batch headers say about it: segments, offsets, timestamps, bytes, codecs.

The one header scan behind the metadata views (`segmentlog stats`, and the ones to come): each
segment is read with `LogSegment.iter_headers`, which parses headers and skips batch bodies
(reading a 64 KiB chunk at a time: small batches are all read, big ones mostly skipped); nothing
is decompressed or decoded. Only the first batch of a segment may be read whole, when
its header cannot tell its first record (a legacy compressed wrapper, whose header carries its
last offset; a compacted batch, whose base timestamp is its delete horizon).

`deep=True` reads every batch instead, checks its CRC and counts its records: data records and
control records (transaction markers), split as a consumer sees them.

A partial batch at the end of a segment (a torn write) ends the scan of that segment and is
counted in `invalid_bytes`, as DumpLogSegments counts "invalid bytes at the end"; any other
damage raises CorruptDataError naming the file and byte (`segmentlog verify` judges damage).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Callable

from ...errors import CorruptDataError
from ...format.batch import BatchHeader
from .batch_facts import first_record, needs_body, record_count
from .log_segment import LogSegment
from .partition_log import PartitionLog

# Called with the bytes of each batch scanned (a progress bar, say).
OnBytes = Callable[[int], None]


@dataclass
class SegmentSummary:
    log_path: str
    base_offset: int
    size: int                            # bytes of the .log
    batches: int = 0
    first_offset: int | None = None      # of the first record (None: no batch)
    last_offset: int | None = None       # of the last batch
    first_timestamp: int | None = None   # of the first record (-1: it has none, magic 0)
    max_timestamp: int = -1              # Kafka's maxTimestamp: the largest, -1 if none
    codecs: Counter = field(default_factory=Counter)   # codec name -> batches
    magics: set = field(default_factory=set)
    records: int | None = None           # with deep only: data records
    control_records: int | None = None   # with deep only: transaction markers and the like
    invalid_bytes: int = 0               # after the last whole batch (a torn write)


@dataclass
class PartitionSummary:
    topic: str
    partition: int
    directory: str
    log_start_offset: int
    segments: list[SegmentSummary]

    @property
    def name(self) -> str:
        return f"{self.topic}-{self.partition}"

    def _with_batches(self) -> list[SegmentSummary]:
        return [s for s in self.segments if s.batches]

    @property
    def size(self) -> int:
        return sum(s.size for s in self.segments)

    @property
    def batches(self) -> int:
        return sum(s.batches for s in self.segments)

    @property
    def first_offset(self) -> int | None:
        found = self._with_batches()
        return found[0].first_offset if found else None

    @property
    def last_offset(self) -> int | None:
        found = self._with_batches()
        return found[-1].last_offset if found else None

    @property
    def log_end_offset(self) -> int:
        last = self.last_offset
        if last is not None:
            return last + 1
        return self.segments[-1].base_offset if self.segments else self.log_start_offset

    @property
    def first_timestamp(self) -> int | None:
        found = self._with_batches()
        return found[0].first_timestamp if found else None

    @property
    def max_timestamp(self) -> int:
        return max((s.max_timestamp for s in self.segments), default=-1)

    @property
    def codecs(self) -> Counter:
        return sum((s.codecs for s in self.segments), Counter())

    @property
    def magics(self) -> set:
        return set().union(*(s.magics for s in self.segments))

    @property
    def records(self) -> int | None:
        counts = [s.records for s in self.segments]
        return None if None in counts else sum(counts)

    @property
    def control_records(self) -> int | None:
        counts = [s.control_records for s in self.segments]
        return None if None in counts else sum(counts)

    @property
    def invalid_bytes(self) -> int:
        return sum(s.invalid_bytes for s in self.segments)


def summarize_partition(log: PartitionLog, *, deep: bool = False,
                        on_bytes: OnBytes | None = None) -> PartitionSummary:
    """Summarize every segment of `log`, in order."""
    segments = [summarize_segment(s, deep=deep, on_bytes=on_bytes) for s in log.segments]
    return PartitionSummary(log.topic, log.partition, log.directory, log.log_start_offset,
                            segments)


def summarize_segment(segment: LogSegment, *, deep: bool = False,
                      on_bytes: OnBytes | None = None) -> SegmentSummary:
    summary = SegmentSummary(segment.log_path, segment.base_offset, segment.size)
    if deep:
        summary.records = summary.control_records = 0
        scan = segment.iter_entries(allow_torn_tail=True)
    else:
        scan = segment.iter_headers(allow_torn_tail=True)
    for header, entry in scan:
        if summary.batches == 0:
            if entry is None and needs_body(header):
                entry = next(iter(segment.iter_entries(header.position, header.end)))[1]
            summary.first_offset, summary.first_timestamp = first_record(header, entry,
                                                                         segment.log_path)
        summary.batches += 1
        summary.last_offset = header.last_offset
        summary.max_timestamp = max(summary.max_timestamp, header.max_timestamp)
        summary.codecs[header.codec_name] += 1
        summary.magics.add(header.magic)
        if deep:
            _count_records(summary, segment, header, entry)
        if on_bytes is not None:
            on_bytes(header.size)
    if scan.torn_tail is not None:
        summary.invalid_bytes = scan.torn_tail.length
    if on_bytes is not None:
        on_bytes(summary.invalid_bytes)
    return summary


def _count_records(summary: SegmentSummary, segment: LogSegment, header: BatchHeader,
                   entry) -> None:
    if not header.crc_is_valid(entry):
        raise CorruptDataError(f"CRC mismatch: stored {header.crc}, computed "
                               f"{header.compute_crc(entry)}", segment.log_path, header.position)
    count = record_count(header, entry, segment.log_path)   # (its CRC just checked)
    if header.is_control:
        summary.control_records += count
    else:
        summary.records += count
