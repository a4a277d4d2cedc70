"""Which batches get index entries, as they are appended or when a segment's indexes are
rebuilt (spec §4.4, §4.5; Kafka's LogSegment.append and LogSegment.recover share the rule).
"""

from __future__ import annotations

from typing import Iterable

from ...errors import CorruptDataError
from ...format.batch import BatchHeader, iter_headers
from .abstract_index import DEFAULT_INDEX_INTERVAL_BYTES, DEFAULT_MAX_INDEX_BYTES
from .offset_index import OffsetIndex
from .time_index import TimeIndex


class SegmentIndexer:
    """The rule that picks index entries as batches are appended (spec §4.4; §4.5 is the same).

    Live appends and recovery share it: an entry is added when *more than* `interval` bytes were
    appended since the last entry, counted before the current append, and it points at the start
    of the current append with its largest offset. A `restart()` is what a broker restart does
    to an active segment: the close-time time entry, then the byte counter starts again at zero.
    """

    def __init__(self, offset_index: OffsetIndex, time_index: TimeIndex,
                 interval: int = DEFAULT_INDEX_INTERVAL_BYTES):
        self.offset_index = offset_index
        self.time_index = time_index
        self.interval = interval
        self.bytes_since_last_entry = 0
        # maxTimestampAndOffsetSoFar starts from the time index's last entry, (-1, base) if none.
        self.max_timestamp, self.offset_of_max_timestamp = time_index.last_entry()

    def on_append(self, position: int, size: int, largest_offset: int, largest_timestamp: int,
                  offset_of_largest_timestamp: int) -> None:
        if self._entry_due(size, largest_timestamp, offset_of_largest_timestamp):
            self.offset_index.append(largest_offset, position)
            self.time_index.maybe_append(self.max_timestamp, self.offset_of_max_timestamp)

    def _entry_due(self, size: int, largest_timestamp: int,
                   offset_of_largest_timestamp: int) -> bool:
        """The rule for one append: whether it gets index entries (the counters move on)."""
        if largest_timestamp > self.max_timestamp:
            self.max_timestamp = largest_timestamp
            self.offset_of_max_timestamp = offset_of_largest_timestamp
        due = self.bytes_since_last_entry > self.interval
        if due:
            self.bytes_since_last_entry = 0
        self.bytes_since_last_entry += size
        return due

    def add_batch(self, header: BatchHeader) -> None:
        """One batch as one append, the leader's way (3.8+: max timestamp at the last offset)."""
        self.on_append(header.position, header.size, header.last_offset, header.max_timestamp,
                       header.last_offset)

    def add_run(self, positions, sizes, last_offsets, max_timestamps) -> None:
        """add_batch for each batch of a run (columns), the entries appended after the rule
        has run over all of them."""
        entry_offsets, entry_positions, entry_timestamps, entry_ts_offsets = [], [], [], []
        for position, size, last, timestamp in zip(positions.tolist(), sizes.tolist(),
                                                   last_offsets.tolist(),
                                                   max_timestamps.tolist()):
            if self._entry_due(size, timestamp, last):
                entry_offsets.append(last)
                entry_positions.append(position)
                entry_timestamps.append(self.max_timestamp)
                entry_ts_offsets.append(self.offset_of_max_timestamp)
        self.offset_index.append_all(entry_offsets, entry_positions)
        self.time_index.maybe_append_all(entry_timestamps, entry_ts_offsets)

    def final_entry(self) -> None:
        """The time entry a roll or a close appends (it may use the reserved last slot)."""
        self.time_index.maybe_append(self.max_timestamp, self.offset_of_max_timestamp,
                                     skip_full_check=True)

    def restart(self) -> None:
        self.final_entry()
        self.bytes_since_last_entry = 0


def rebuild_indexes(headers: Iterable[BatchHeader], base_offset: int,
                    interval: int = DEFAULT_INDEX_INTERVAL_BYTES, *,
                    restart_offsets: Iterable[int] = (),
                    max_index_bytes: int = DEFAULT_MAX_INDEX_BYTES, log_path: str | None = None
                    ) -> tuple[OffsetIndex, TimeIndex]:
    """In-memory indexes for a segment's batches, as `LogSegment.recover` builds them (§4.5).

    `headers` must already be validated (the caller decides what an invalid batch means).
    `log_path` names the `.log` in errors.
    `restart_offsets` simulates broker restarts (e.g. producer-snapshot offsets, §4.5): before a
    batch whose base offset is one of them, the close-time entry is added and counting restarts.
    """
    offset_index = OffsetIndex(base_offset, max_index_bytes=max_index_bytes)
    time_index = TimeIndex(base_offset, max_index_bytes=max_index_bytes)
    indexer = SegmentIndexer(offset_index, time_index, interval)
    restarts = {s for s in restart_offsets if s > base_offset}
    for header in headers:
        if header.first_offset_known and header.base_offset < base_offset:
            raise CorruptDataError(f"batch offsets {header.base_offset}..{header.last_offset} "
                                   f"lie below the segment's base offset {base_offset} (its "
                                   f"file name)", log_path, header.position)
        try:
            if header.base_offset in restarts and header.first_offset_known:
                indexer.restart()
            indexer.add_batch(header)
        except CorruptDataError as err:   # a batch the index cannot hold: blame the batch
            raise CorruptDataError(f"batch offsets {header.base_offset}..{header.last_offset} "
                                   f"do not fit the segment's ({err.reason})", log_path,
                                   header.position) from None
    try:
        indexer.final_entry()
    except CorruptDataError as err:
        raise CorruptDataError(f"the segment's largest timestamp cannot be indexed "
                               f"({err.reason})", log_path) from None
    return offset_index, time_index


def rebuild_index_bytes(log: bytes, base_offset: int, interval: int = DEFAULT_INDEX_INTERVAL_BYTES,
                        *, restart_offsets: Iterable[int] = ()) -> tuple[bytes, bytes]:
    """(`.index` bytes, `.timeindex` bytes) rebuilt from a whole `.log` held in memory."""
    offset_index, time_index = rebuild_indexes(iter_headers(log), base_offset, interval,
                                               restart_offsets=restart_offsets)
    return offset_index.to_bytes(), time_index.to_bytes()
