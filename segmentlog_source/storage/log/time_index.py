"""The time index, `.timeindex`: 12-byte entries, big-endian (spec §4.1)::

    timestamp int64, relativeOffset int32

An entry (T, O): T is the largest timestamp in the segment up to and including offset O.
"""

from __future__ import annotations

import struct

import numpy as np

from ...format.batch import INT32_MAX
from .abstract_index import AbstractIndex

TIME_ENTRY_SIZE = 12
TIME_ENTRY = np.dtype([("timestamp", ">i8"), ("relative_offset", ">i4")])
_TIME_STRUCT = struct.Struct(">qi")


class TimeIndex(AbstractIndex):
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
        last = self._last_raw()
        return (-1, self.base_offset) if last is None else (last[0], self.base_offset + last[1])

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

    def maybe_append_all(self, timestamps: list[int], offsets: list[int]) -> None:
        """maybe_append() for each entry in order, checked and packed at once (a run of
        batches' entries). Anything maybe_append() would refuse, or a run that comes near a
        full index, goes one by one, for its error at its entry."""
        if not timestamps:
            return
        n = len(self)
        last_ts, last_offset = self.last_entry()
        ts = np.asarray(timestamps, np.int64)
        rel = np.asarray(offsets, np.int64) - self.base_offset
        fine = (n + len(ts) < self.max_entries - 1 and rel[0] >= 0 and rel[-1] <= INT32_MAX
                and (n == 0 or (offsets[0] >= last_offset and timestamps[0] >= last_ts))
                and bool((np.diff(ts) >= 0).all()) and bool((np.diff(rel) >= 0).all()))
        if not fine:
            for timestamp, offset in zip(timestamps, offsets):
                self.maybe_append(timestamp, offset)
            return
        # appended where the timestamp beats the entry before (the last one's, at first)
        beats = ts > np.concatenate(([last_ts], ts[:-1]))
        self._add_all(list(zip(ts[beats].tolist(), rel[beats].tolist())))

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
        self._check_sorted(ts, strict=True, what="timestamps")
        self._check_sorted(rel, strict=False, what="offsets")
        if len(rel) and rel[0] < 0:
            raise self._corrupt(f"offset {self.base_offset + int(rel[0])} is below the base "
                                f"offset {self.base_offset}", 0)
