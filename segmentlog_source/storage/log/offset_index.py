"""The offset index, `.index`: 8-byte entries, big-endian (spec §4.1)::

    relativeOffset int32 (offset - base offset), position int32 (batch start)

An entry (O, P): the batch at byte P has last offset O, and every offset > O lives at or after P.
"""

from __future__ import annotations

import struct

import numpy as np

from ...format.batch import INT32_MAX
from .abstract_index import AbstractIndex

OFFSET_ENTRY_SIZE = 8
OFFSET_ENTRY = np.dtype([("relative_offset", ">i4"), ("position", ">i4")])
_OFFSET_STRUCT = struct.Struct(">ii")


class OffsetIndex(AbstractIndex):
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
        last = self._last_raw()
        return (self.base_offset, 0) if last is None else (self.base_offset + last[0], last[1])

    def append(self, offset: int, position: int) -> None:
        """OffsetIndex.append: offsets strictly increase; the index must not be full."""
        n = len(self)
        if n >= self.max_entries:
            raise self._corrupt(f"attempt to append to a full index ({n} entries)", n)
        if n and offset <= self.last_entry()[0]:
            raise self._corrupt(f"entry offset {offset} is not larger than the last entry's "
                                f"{self.last_entry()[0]}", n)
        self._add((self._relative(offset, n), position))

    def append_all(self, offsets: list[int], positions: list[int]) -> None:
        """append() for each entry in order, checked and packed at once (a run of batches'
        entries: ~15 us an entry one by one). Anything append() would refuse goes one by one,
        for its error at its entry."""
        if not offsets:
            return
        n = len(self)
        rel = np.asarray(offsets, np.int64) - self.base_offset
        fine = (n + len(rel) <= self.max_entries and rel[0] >= 0 and rel[-1] <= INT32_MAX
                and (n == 0 or offsets[0] > self.last_entry()[0])
                and bool((np.diff(rel) > 0).all()))
        if not fine:
            for offset, position in zip(offsets, positions):
                self.append(offset, position)
            return
        self._add_all(list(zip(rel.tolist(), positions)))

    def sanity_check(self, log_size: int | None = None) -> None:
        """Kafka's checks, plus what makes a binary search safe: sorted keys, positions in the
        log."""
        if self._file_length % self.dtype.itemsize:
            raise self._corrupt(f"file length {self._file_length} is not a multiple of 8")
        rel = self._column("relative_offset")
        pos = self._column("position")
        self._check_sorted(rel, strict=True, what="relative offsets")
        self._check_sorted(pos, strict=False, what="positions")
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
