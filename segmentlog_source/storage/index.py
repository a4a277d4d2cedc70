"""Offset index (`.index`) and time index (`.timeindex`) of a segment; how entries are chosen.

Entry layouts, big-endian, no header (spec §4.1)::

    .index      8 bytes   relativeOffset int32 (offset - base offset), position int32 (batch start)
    .timeindex 12 bytes   timestamp int64, relativeOffset int32

An offset entry (O, P): the batch at byte P has last offset O, and every offset > O lives at or
after P. A time entry (T, O): T is the largest timestamp in the segment up to and including O.

The entry count of an existing file is `length // entry size` (the broker trims closed indexes),
except that a crashed broker leaves its active index preallocated and zero-filled: we stop at the
first slot that can only be fill (§4.2). Lookups return the largest entry whose key is <= the
target, with Kafka's defaults when there is none (§4.6).
"""

from __future__ import annotations

import struct
from typing import Iterable

import numpy as np

from ..errors import CorruptDataError
from ..format.batch import INT32_MAX, BatchHeader, iter_headers
from .io import LOCAL

OFFSET_ENTRY_SIZE = 8
TIME_ENTRY_SIZE = 12
DEFAULT_MAX_INDEX_BYTES = 10 * 1024 * 1024   # segment.index.bytes
DEFAULT_INDEX_INTERVAL_BYTES = 4096          # index.interval.bytes

OFFSET_ENTRY = np.dtype([("relative_offset", ">i4"), ("position", ">i4")])
TIME_ENTRY = np.dtype([("timestamp", ">i8"), ("relative_offset", ">i4")])
_OFFSET_STRUCT = struct.Struct(">ii")
_TIME_STRUCT = struct.Struct(">qi")


class _Index:
    """What both indexes share: entries = a loaded (often memory-mapped) prefix + appended ones."""

    dtype: np.dtype
    packer: struct.Struct
    kind: str

    def __init__(self, base_offset: int, loaded: np.ndarray | None = None, *,
                 path: str | None = None, max_index_bytes: int = DEFAULT_MAX_INDEX_BYTES,
                 file=None, file_length: int = 0):
        self.base_offset = base_offset
        self.path = path
        self.max_entries = max_index_bytes // self.dtype.itemsize
        self._loaded = loaded if loaded is not None else np.empty(0, self.dtype)
        self._appended: list[tuple[int, int]] = []
        self._file = file  # an io.AppendFile when the index is being written
        self._file_length = file_length

    # -- opening ---------------------------------------------------------------------------
    @classmethod
    def open(cls, path: str, base_offset: int, fs=LOCAL, *, writable: bool = False,
             max_index_bytes: int = DEFAULT_MAX_INDEX_BYTES):
        """Open an existing index file; a missing file reads as an empty index.

        Readers memory-map it. A writer reads it into memory instead: it appends to the file,
        and a mapping must never outlive a truncation of its file (SIGBUS).
        """
        length = fs.size(path) if fs.exists(path) else 0
        if writable:
            data = fs.read_all(path) if length else b""
            usable = len(data) - len(data) % cls.dtype.itemsize
            loaded = np.frombuffer(data, cls.dtype, count=usable // cls.dtype.itemsize)
            file = fs.open_append(path)
        else:
            loaded = fs.map_array(path, cls.dtype) if length else None
            file = None
        index = cls(base_offset, loaded, path=path, max_index_bytes=max_index_bytes, file=file,
                    file_length=length)
        index._loaded = index._loaded[:index._valid_count(index._loaded)]
        return index

    @classmethod
    def create(cls, path: str, base_offset: int, fs=LOCAL, *,
               max_index_bytes: int = DEFAULT_MAX_INDEX_BYTES):
        """A new, empty index file (not preallocated: it grows by one entry per append)."""
        file = fs.open_append(path)
        file.truncate(0)
        return cls(base_offset, None, path=path, max_index_bytes=max_index_bytes, file=file)

    @classmethod
    def from_bytes(cls, data: bytes, base_offset: int, **kwargs):
        usable = len(data) - len(data) % cls.dtype.itemsize
        loaded = np.frombuffer(data, cls.dtype, count=usable // cls.dtype.itemsize)
        index = cls(base_offset, loaded, file_length=len(data), **kwargs)
        index._loaded = index._loaded[:index._valid_count(index._loaded)]
        return index

    # -- entries ---------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._loaded) + len(self._appended)

    def _raw(self, i: int) -> tuple[int, int]:
        n = len(self._loaded)
        if i < n:
            row = self._loaded[i]
            return int(row[0]), int(row[1])
        return self._appended[i - n]

    def _key(self, i: int) -> int:
        return self._raw(i)[0]

    def slot_for(self, key: int) -> int:
        """The slot of the largest entry whose key is <= `key`, or -1 (largestLowerBoundSlotFor)."""
        lo, hi = 0, len(self)
        while lo < hi:
            mid = (lo + hi) // 2
            if self._key(mid) <= key:
                lo = mid + 1
            else:
                hi = mid
        return lo - 1

    @property
    def is_full(self) -> bool:
        return len(self) >= self.max_entries

    @property
    def is_trimmed(self) -> bool:
        """True when the file holds exactly its entries (the state a clean close leaves)."""
        return self._file_length == len(self) * self.dtype.itemsize

    def trim(self) -> None:
        """Cut the file of a writable index down to its entries (a preallocated file's zeros,
        a torn last entry): what a roll, a close and recovery leave."""
        if self._file is not None and not self.is_trimmed:
            self._file.truncate(len(self) * self.dtype.itemsize)
            self._file_length = len(self) * self.dtype.itemsize

    def to_bytes(self) -> bytes:
        return self._loaded.tobytes() + b"".join(self.packer.pack(*e) for e in self._appended)

    def _add(self, raw: tuple[int, int]) -> None:
        packed = self.packer.pack(*raw)
        if self._file is not None:
            self._file.append(packed)
        self._appended.append(raw)
        self._file_length += len(packed)

    def _corrupt(self, message: str, entry: int | None = None) -> CorruptDataError:
        where = None if entry is None else entry * self.dtype.itemsize
        return CorruptDataError(f"{self.kind}: {message}", self.path, where)

    def fsync(self) -> None:
        if self._file is not None:
            self._file.fsync()

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None

    def _relative(self, offset: int, entry: int) -> int:
        relative = offset - self.base_offset
        if not 0 <= relative <= INT32_MAX:
            raise self._corrupt(f"offset {offset} does not fit relative to base offset "
                                f"{self.base_offset}", entry)
        return relative


class OffsetIndex(_Index):
    """`.index`: relative offset -> byte position of a batch start."""

    dtype = OFFSET_ENTRY
    packer = _OFFSET_STRUCT
    kind = "offset index"

    @staticmethod
    def _valid_count(entries: np.ndarray) -> int:
        # Offsets strictly increase, so a zero relative offset after the first slot is fill; and
        # the first batch of a segment is never indexed, so a (0, 0) first slot is fill too.
        if len(entries) == 0:
            return 0
        if entries[0]["relative_offset"] == 0 and entries[0]["position"] == 0:
            return 0
        zeros = np.flatnonzero(entries["relative_offset"][1:] == 0)
        return int(zeros[0]) + 1 if zeros.size else len(entries)

    def entry(self, i: int) -> tuple[int, int]:
        """(absolute offset, position) of entry i."""
        relative, position = self._raw(i)
        return self.base_offset + relative, position

    def entries(self) -> list[tuple[int, int]]:
        return [self.entry(i) for i in range(len(self))]

    def lookup(self, offset: int) -> tuple[int, int]:
        """The largest entry with offset <= `offset`, else (base offset, 0)."""
        slot = self.slot_for(offset - self.base_offset)
        return self.entry(slot) if slot >= 0 else (self.base_offset, 0)

    def last_entry(self) -> tuple[int, int]:
        return self.entry(len(self) - 1) if len(self) else (self.base_offset, 0)

    def append(self, offset: int, position: int) -> None:
        """OffsetIndex.append: offsets strictly increase; the index must not be full."""
        n = len(self)
        if n >= self.max_entries:
            raise self._corrupt(f"attempt to append to a full index ({n} entries)", n)
        if n and offset <= self.last_entry()[0]:
            raise self._corrupt(f"entry offset {offset} is not larger than the last entry's "
                                f"{self.last_entry()[0]}", n)
        self._add((self._relative(offset, n), position))

    def sanity_check(self, log_size: int | None = None) -> None:
        """Kafka's checks, plus what makes a binary search safe: sorted keys, positions in the
        log."""
        if self._file_length % self.dtype.itemsize:
            raise self._corrupt(f"file length {self._file_length} is not a multiple of 8")
        rel = self._column("relative_offset")
        pos = self._column("position")
        _check_sorted(self, rel, strict=True, what="relative offsets")
        _check_sorted(self, pos, strict=False, what="positions")
        if len(rel) and rel[0] < 0:
            raise self._corrupt(f"offset {self.base_offset + int(rel[0])} is below the base "
                                f"offset {self.base_offset}", 0)
        if len(pos) and pos[0] < 0:
            raise self._corrupt(f"negative position {int(pos[0])}", 0)
        if log_size is not None and len(pos) and pos[-1] >= log_size:
            raise self._corrupt(f"entry points at byte {int(pos[-1])}, past the end of the log "
                                f"({log_size} bytes)", len(pos) - 1)

    def _column(self, name: str) -> np.ndarray:
        extra = [e[0 if name == "relative_offset" else 1] for e in self._appended]
        return np.concatenate([self._loaded[name].astype(np.int64), np.array(extra, np.int64)])

    def arrays(self) -> tuple[np.ndarray, np.ndarray]:
        """(absolute offsets, positions) of every entry, as int64 arrays (for planners)."""
        return self._column("relative_offset") + self.base_offset, self._column("position")


class TimeIndex(_Index):
    """`.timeindex`: running maximum timestamp -> the offset where it was reached."""

    dtype = TIME_ENTRY
    packer = _TIME_STRUCT
    kind = "time index"

    @staticmethod
    def _valid_count(entries: np.ndarray) -> int:
        # Timestamps strictly increase from a first one >= 0, so an all-zero slot after the first
        # is fill. (DumpLogSegments stops at any zero relative offset, which would also cut a real
        # entry whose max timestamp was reached at the base offset.) An all-zero first slot is fill
        # when the second one is too (a preallocated index with no entries yet).
        if len(entries) == 0:
            return 0
        zero = (entries["timestamp"] == 0) & (entries["relative_offset"] == 0)
        later = np.flatnonzero(zero[1:])
        count = int(later[0]) + 1 if later.size else len(entries)
        if count == 1 and zero[0] and len(entries) > 1:
            return 0
        return count

    def entry(self, i: int) -> tuple[int, int]:
        """(timestamp, absolute offset) of entry i."""
        timestamp, relative = self._raw(i)
        return timestamp, self.base_offset + relative

    def entries(self) -> list[tuple[int, int]]:
        return [self.entry(i) for i in range(len(self))]

    def lookup(self, timestamp: int) -> tuple[int, int]:
        """The largest entry with timestamp <= `timestamp`, else (-1, base offset)."""
        slot = self.slot_for(timestamp)
        return self.entry(slot) if slot >= 0 else (-1, self.base_offset)

    def last_entry(self) -> tuple[int, int]:
        return self.entry(len(self) - 1) if len(self) else (-1, self.base_offset)

    @property
    def is_full(self) -> bool:
        # The last slot is reserved for the entry a roll appends (skip_full_check).
        return len(self) >= self.max_entries - 1

    def maybe_append(self, timestamp: int, offset: int, skip_full_check: bool = False) -> None:
        """TimeIndex.maybeAppend: append only when `timestamp` beats the last entry's."""
        n = len(self)
        if not skip_full_check and self.is_full:
            raise self._corrupt(f"attempt to append to a full time index ({n} entries)", n)
        last_ts, last_offset = self.last_entry()
        if n and offset < last_offset:
            raise self._corrupt(f"entry offset {offset} is below the last entry's {last_offset}", n)
        if n and timestamp < last_ts:
            raise self._corrupt(f"entry timestamp {timestamp} is below the last entry's "
                                f"{last_ts}", n)
        if timestamp > last_ts:
            if n >= self.max_entries:
                raise self._corrupt(f"the time index is full ({n} entries)", n)
            self._add((timestamp, self._relative(offset, n)))

    def arrays(self) -> tuple[np.ndarray, np.ndarray]:
        """(timestamps, absolute offsets) of every entry, as int64 arrays (for planners)."""
        ts, rel = self._columns()
        return ts, rel + self.base_offset

    def _columns(self) -> tuple[np.ndarray, np.ndarray]:
        ts = np.concatenate([self._loaded["timestamp"].astype(np.int64),
                             np.array([e[0] for e in self._appended], np.int64)])
        rel = np.concatenate([self._loaded["relative_offset"].astype(np.int64),
                              np.array([e[1] for e in self._appended], np.int64)])
        return ts, rel

    def sanity_check(self) -> None:
        if self._file_length % self.dtype.itemsize:
            raise self._corrupt(f"file length {self._file_length} is not a multiple of 12")
        ts, rel = self._columns()
        _check_sorted(self, ts, strict=True, what="timestamps")
        _check_sorted(self, rel, strict=False, what="offsets")
        if len(rel) and rel[0] < 0:
            raise self._corrupt(f"offset {self.base_offset + int(rel[0])} is below the base "
                                f"offset {self.base_offset}", 0)


def _check_sorted(index: _Index, values: np.ndarray, *, strict: bool, what: str) -> None:
    if len(values) < 2:
        return
    steps = np.diff(values)
    bad = np.flatnonzero(steps <= 0 if strict else steps < 0)
    if bad.size:
        i = int(bad[0]) + 1
        raise index._corrupt(f"{what} are not {'strictly ' if strict else ''}increasing: entry {i} "
                             f"has {int(values[i])} after {int(values[i - 1])}", i)


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
        if largest_timestamp > self.max_timestamp:
            self.max_timestamp = largest_timestamp
            self.offset_of_max_timestamp = offset_of_largest_timestamp
        if self.bytes_since_last_entry > self.interval:
            self.offset_index.append(largest_offset, position)
            self.time_index.maybe_append(self.max_timestamp, self.offset_of_max_timestamp)
            self.bytes_since_last_entry = 0
        self.bytes_since_last_entry += size

    def add_batch(self, header: BatchHeader) -> None:
        """One batch as one append, the leader's way (3.8+: max timestamp at the last offset)."""
        self.on_append(header.position, header.size, header.last_offset, header.max_timestamp,
                       header.last_offset)

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
                    max_index_bytes: int = DEFAULT_MAX_INDEX_BYTES
                    ) -> tuple[OffsetIndex, TimeIndex]:
    """In-memory indexes for a segment's batches, as `LogSegment.recover` builds them (§4.5).

    `headers` must already be validated (the caller decides what an invalid batch means).
    `restart_offsets` simulates broker restarts (e.g. producer-snapshot offsets, §4.5): before a
    batch whose base offset is one of them, the close-time entry is added and counting restarts.
    """
    offset_index = OffsetIndex(base_offset, max_index_bytes=max_index_bytes)
    time_index = TimeIndex(base_offset, max_index_bytes=max_index_bytes)
    indexer = SegmentIndexer(offset_index, time_index, interval)
    restarts = {s for s in restart_offsets if s > base_offset}
    for header in headers:
        if header.base_offset in restarts and header.first_offset_known:
            indexer.restart()
        indexer.add_batch(header)
    indexer.final_entry()
    return offset_index, time_index


def rebuild_index_bytes(log: bytes, base_offset: int, interval: int = DEFAULT_INDEX_INTERVAL_BYTES,
                        *, restart_offsets: Iterable[int] = ()) -> tuple[bytes, bytes]:
    """(`.index` bytes, `.timeindex` bytes) rebuilt from a whole `.log` held in memory."""
    offset_index, time_index = rebuild_indexes(iter_headers(log), base_offset, interval,
                                               restart_offsets=restart_offsets)
    return offset_index.to_bytes(), time_index.to_bytes()
