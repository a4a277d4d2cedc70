"""The active segment being written: `LogSegment.append`, `shouldRoll` and the roll/close entry.

Crash safety comes from the order of writes: the batch goes to the `.log` first, then its index
entries, so a crash leaves at worst a torn `.log` tail or a missing index entry, both of which
recovery repairs (§9). Index files are not preallocated; they grow one entry at a time and so
are always "trimmed".
"""

from __future__ import annotations

from ...format.batch import BatchHeader
from .log_config import LogConfig
from .log_segment import LogSegment, relative_offset_fits
from .offset_index import OffsetIndex
from .segment_indexer import SegmentIndexer
from .time_index import TimeIndex


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
        rolling = self.rolling_based_timestamp()
        if rolling is not None and rolling >= 0:
            waited = header.max_timestamp - rolling
        else:
            waited = self.config.clock_ms() - self.created_ms
        return (self.size > self.config.segment_bytes - header.size
                or (self.size > 0 and waited > self.config.segment_ms - self.roll_jitter_ms)
                or self.segment.offset_index.is_full or self.segment.time_index.is_full
                or not relative_offset_fits(self.segment.base_offset, header.last_offset))

    def append(self, header: BatchHeader, entry) -> BatchHeader:
        """Write one batch at the end of the `.log`, then its index entries. Returns its header
        with the position it got."""
        position = self.size
        if position == 0:
            self._rolling_based_timestamp = header.max_timestamp
        self.log_file.write_at(position, entry)
        header = header._replace(position=position)
        self.segment._size = position + header.size
        self.indexer.add_batch(header)
        self.next_offset = header.next_offset
        self.segment._tail = (self.next_offset, self.indexer.max_timestamp,
                              self.indexer.offset_of_max_timestamp, header.end)
        return header

    def flush(self) -> None:
        self.log_file.fsync()
        self.segment.offset_index.fsync()
        self.segment.time_index.fsync()
        self.segment.txn_index.fsync()

    def close(self, fsync: bool) -> None:
        """onBecomeInactiveSegment / close: the final time entry, then the files are closed."""
        self.indexer.final_entry()
        self.segment.offset_index.trim()
        self.segment.time_index.trim()
        if fsync:
            self.flush()
        self.log_file.close()
        self.segment.forget_cached_state()
