"""What the offset index (`.index`) and the time index (`.timeindex`) of a segment share
(Kafka's AbstractIndex): fixed-size big-endian entries, no header (spec §4.1).

The entry count of an existing file is `length // entry size` (the broker trims closed indexes),
except that a crashed broker leaves its active index preallocated and zero-filled: each index
stops at the first slot that can only be fill (§4.2). Lookups return the largest entry whose key
is <= the target, with Kafka's defaults when there is none (§4.6).
"""

from __future__ import annotations

import struct

import numpy as np

from ...errors import CorruptDataError
from ...format.batch import INT32_MAX
from ..io.local import LOCAL

DEFAULT_MAX_INDEX_BYTES = 10 * 1024 * 1024   # segment.index.bytes
DEFAULT_INDEX_INTERVAL_BYTES = 4096          # index.interval.bytes


class AbstractIndex:
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
        self._file_length = file_length   # counting the entries not yet written
        self._unwritten = bytearray()     # appended entries the file does not hold yet

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

    def _last_raw(self) -> tuple[int, int] | None:
        """The last entry as stored, or None (cheap while a writer appends)."""
        if self._appended:
            return self._appended[-1]
        n = len(self._loaded)
        return self._raw(n - 1) if n else None

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
    def writable(self) -> bool:
        """Whether a writer appends to this index (its file is open for appending)."""
        return self._file is not None

    @property
    def is_trimmed(self) -> bool:
        """True when the file holds exactly its entries (the state a clean close leaves)."""
        return self._file_length == len(self) * self.dtype.itemsize

    def trim(self) -> None:
        """Cut the file of a writable index down to its entries (a preallocated file's zeros,
        a torn last entry): what a roll, a close and recovery leave."""
        self.write_appended()
        if self._file is not None and not self.is_trimmed:
            self._file.truncate(len(self) * self.dtype.itemsize)
            self._file_length = len(self) * self.dtype.itemsize

    def to_bytes(self) -> bytes:
        return self._loaded.tobytes() + b"".join(self.packer.pack(*e) for e in self._appended)

    def _add(self, raw: tuple[int, int]) -> None:
        packed = self.packer.pack(*raw)
        if self._file is not None:
            self._unwritten += packed
        self._appended.append(raw)
        self._file_length += len(packed)

    def _add_all(self, raws: list[tuple[int, int]]) -> None:
        """_add for each entry (checked by the caller), packed at once."""
        packed = np.array(raws, self.dtype).tobytes()
        if self._file is not None:
            self._unwritten += packed
        self._appended.extend(raws)
        self._file_length += len(packed)

    def write_appended(self) -> None:
        """Write the entries appended since the last call, in one write. The segment's appender
        calls it after writing the `.log` bytes they point into (segment_appender.py)."""
        if self._unwritten:
            self._file.write_at(self._file_length - len(self._unwritten), self._unwritten)
            self._unwritten = bytearray()

    def _corrupt(self, message: str, entry: int | None = None) -> CorruptDataError:
        where = None if entry is None else entry * self.dtype.itemsize
        return CorruptDataError(f"{self.kind}: {message}", self.path, where)

    def discard_unwritten(self) -> None:
        """Forget the entries not written yet (their `.log` bytes failed to be written)."""
        self._file_length -= len(self._unwritten)
        self._unwritten = bytearray()

    def fsync(self) -> None:
        if self._file is not None:
            self.write_appended()
            self._file.fsync()

    def close(self) -> None:
        if self._file is not None:
            self.write_appended()
            self._file.close()
            self._file = None

    def _relative(self, offset: int, entry: int) -> int:
        relative = offset - self.base_offset
        if not 0 <= relative <= INT32_MAX:
            raise self._corrupt(f"offset {offset} does not fit relative to base offset "
                                f"{self.base_offset}", entry)
        return relative

    def _check_sorted(self, values: np.ndarray, *, strict: bool, what: str) -> None:
        if len(values) < 2:
            return
        steps = np.diff(values)
        bad = np.flatnonzero(steps <= 0 if strict else steps < 0)
        if bad.size:
            i = int(bad[0]) + 1
            raise self._corrupt(f"{what} are not {'strictly ' if strict else ''}increasing: "
                                f"entry {i} has {int(values[i])} after {int(values[i - 1])}", i)
