"""The active segment being written: `LogSegment.append`, `shouldRoll` and the roll/close entry.

Crash safety comes from the order of writes: batches go to the `.log` first, then their index
entries, so a crash leaves at worst a torn `.log` tail or missing index entries, both of which
recovery repairs (§9). Index files are not preallocated; they grow by whole entries and so
are always "trimmed".

Batches are written in runs of about WRITE_BYTES, each run's index entries after it: one write
per MiB instead of up to three per batch (a 16 KiB batch, its offset entry, its time entry:
75,000 writes for 317 MB, a quarter of a commit's time). Nothing reads what is not written yet:
the run is written when it is full, before a flush, a roll or a close, after each buffer a
PartitionLog append is given, and when the append raises; a write that fails is dropped, and
PartitionLog reloads its state from the files (memory never runs ahead of them).
"""

from __future__ import annotations

import numpy as np

from ...format.batch import BatchHeader
from .log_config import LogConfig
from .log_segment import LogSegment, relative_offset_fits
from .offset_index import OffsetIndex
from .segment_indexer import SegmentIndexer
from .time_index import TimeIndex

WRITE_BYTES = 1 << 20


class SegmentAppender:
    def __init__(self, segment: LogSegment, config: LogConfig):
        fs = segment.fs
        self.segment = segment
        self.config = config
        self.log_file = fs.open_append(segment.log_path)
        segment.forget_cached_state()
        segment._size = self.log_file.size()
        indexes = []
        for cls, path in ((OffsetIndex, segment.index_path), (TimeIndex, segment.time_index_path)):
            opener = cls.open if fs.exists(path) else cls.create
            kwargs = {"writable": True} if fs.exists(path) else {}
            indexes.append(opener(path, segment.base_offset, fs,
                                  max_index_bytes=config.segment_index_bytes, **kwargs))
        for index in indexes:
            index.trim()  # appends go at the end of the file, so no zero fill may remain
        segment._offset_index, segment._time_index = indexes
        # A new LogSegment object: the byte counter starts at 0, the max timestamp comes from the
        # time index's last entry (the broker's behaviour after a restart).
        self.indexer = SegmentIndexer(*indexes, interval=config.index_interval_bytes)
        self.next_offset = segment.read_next_offset()
        segment._tail = (self.next_offset, self.indexer.max_timestamp,
                         self.indexer.offset_of_max_timestamp, segment.valid_size())
        self.created_ms = config.clock_ms()
        self.roll_jitter_ms = config.roll_jitter_ms()
        self._rolling_based_timestamp: int | None = None
        self._unwritten: list = []       # the run of batches not written yet, in order
        self._unwritten_at = self.size   # where the run goes in the `.log`

    @property
    def size(self) -> int:
        return self.segment._size

    def rolling_based_timestamp(self) -> int | None:
        """The first append's max timestamp; after a reload, the first batch's (§7)."""
        if self._rolling_based_timestamp is None and self.size > 0:
            for header, _ in self.segment.iter_headers(0, chunk_bytes=4096):
                self._rolling_based_timestamp = header.max_timestamp
                break
        return self._rolling_based_timestamp

    def should_roll(self, header: BatchHeader) -> bool:
        """LogSegment.shouldRoll for one incoming batch."""
        return bool(self._rolls(self.size, header.size, header.max_timestamp, header.last_offset,
                                self.rolling_based_timestamp())
                    or self.segment.offset_index.is_full or self.segment.time_index.is_full)

    def _rolls(self, position, size, max_timestamp, last_offset, rolling):
        """shouldRoll's tests of the segment's size, age and offset span for a batch appended
        at `position` (ints), or for each batch of a run (arrays: an answer each)."""
        if rolling is not None and rolling >= 0:
            waited = max_timestamp - rolling
        else:
            waited = self.config.clock_ms() - self.created_ms
        return ((position > self.config.segment_bytes - size)
                | ((position > 0) & (waited > self.config.segment_ms - self.roll_jitter_ms))
                | np.logical_not(relative_offset_fits(self.segment.base_offset, last_offset)))

    def run_fits(self, sizes, last_offsets, max_timestamps) -> int:
        """How many batches of a run (columns) go into this segment before one would roll it;
        conservatively short of filling an index."""
        positions = self.size + np.concatenate(([0], np.cumsum(sizes[:-1])))
        rolling = self.rolling_based_timestamp() if self.size else int(max_timestamps[0])
        if rolling is None or rolling < 0:
            return 0    # (no timestamps: each batch's roll test asks the clock, one by one)
        rolls = np.flatnonzero(self._rolls(positions, sizes, max_timestamps, last_offsets,
                                           rolling))
        fits = int(rolls[0]) if rolls.size else len(sizes)
        # Each batch adds at most one entry to each index; is_full is checked before it.
        room = min(self.segment.offset_index.max_entries - len(self.segment.offset_index),
                   self.segment.time_index.max_entries - 1 - len(self.segment.time_index))
        return max(0, min(fits, room))

    def append(self, header: BatchHeader, entry) -> BatchHeader:
        """Append one batch at the end of the `.log` (written with its run), then its index
        entries. Returns its header with the position it got."""
        position = self.size
        if position == 0:
            self._rolling_based_timestamp = header.max_timestamp
        # (a view into the caller's buffer is copied: the caller may reuse it before the run
        # is written)
        self._unwritten.append(entry if isinstance(entry, (bytes, bytearray)) else bytes(entry))
        header = header._replace(position=position)
        self.segment._size = position + header.size
        self.indexer.add_batch(header)
        self._appended(header.next_offset)
        return header

    def append_run(self, data: bytearray, sizes, last_offsets, max_timestamps) -> None:
        """append() for each batch of a run laid end to end in `data` (sizes, last offsets and
        max timestamps as columns), at once."""
        start = self.size
        if start == 0:
            self._rolling_based_timestamp = int(max_timestamps[0])
        positions = start + np.concatenate(([0], np.cumsum(sizes[:-1])))
        self._unwritten.append(data)
        self.segment._size = start + len(data)
        self.indexer.add_run(positions, sizes, last_offsets, max_timestamps)
        self._appended(int(last_offsets[-1]) + 1)

    def _appended(self, next_offset: int) -> None:
        """The segment's tail after an append ending at its size; the run written once full."""
        self.next_offset = next_offset
        self.segment._tail = (next_offset, self.indexer.max_timestamp,
                              self.indexer.offset_of_max_timestamp, self.size)
        if self.size - self._unwritten_at >= WRITE_BYTES:
            self.write()

    def write(self) -> None:
        """Write the run of batches appended since the last write, then their index entries."""
        if self._unwritten:
            run = self._unwritten
            self.log_file.write_at(self._unwritten_at, run[0] if len(run) == 1 else b"".join(run))
            if self.config.fsync != "none":   # a flush or a close will sync: the disk starts now
                self.log_file.start_writeback(self._unwritten_at, self.size - self._unwritten_at)
            self._unwritten, self._unwritten_at = [], self.size
        self.segment.offset_index.write_appended()
        self.segment.time_index.write_appended()

    def discard(self) -> None:
        """After a failed write: drop what is not written (none of it may reach the files
        later, at a close) and close the `.log`."""
        self._unwritten = []
        self.segment.offset_index.discard_unwritten()
        self.segment.time_index.discard_unwritten()
        self.log_file.close()

    def flush(self) -> None:
        self.write()
        self.log_file.fsync()
        self.segment.offset_index.fsync()
        self.segment.time_index.fsync()
        self.segment.txn_index.fsync()

    def close(self, fsync: bool) -> None:
        """onBecomeInactiveSegment / close: the final time entry, then the files are closed."""
        self.write()
        self.indexer.final_entry()
        self.segment.offset_index.trim()
        self.segment.time_index.trim()
        if fsync:
            self.flush()
        self.log_file.close()
        self.segment.forget_cached_state()
