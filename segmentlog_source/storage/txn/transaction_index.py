"""Aborted-transaction index (`.txnindex`) of a segment (spec §5).

34-byte entries, big-endian, no header, not preallocated, created on the first abort::

    off size field
      0   2  version (0)
      2   8  producerId
     10   8  firstOffset        first offset of the aborted transaction
     18   8  lastOffset         offset of the ABORT marker
     26   8  lastStableOffset   LSO when the transaction was aborted

An entry lives in the segment that holds its ABORT marker; lastOffset strictly increases.
"""

from __future__ import annotations

import struct
from typing import Iterable, NamedTuple

from ...errors import CorruptDataError
from ..io.local import LOCAL

TXN_ENTRY_SIZE = 34
_ENTRY = struct.Struct(">hqqqq")


class AbortedTxn(NamedTuple):
    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int

    def to_bytes(self) -> bytes:
        return _ENTRY.pack(0, *self)


def parse_txn_index(data: bytes) -> list[AbortedTxn]:
    """Every whole entry; a trailing partial entry is ignored, as the broker's iterator does."""
    # AbortedTxn.version() reads byte 0 only; any version reads with the same layout.
    return [AbortedTxn(*_ENTRY.unpack_from(data, pos)[1:])
            for pos in range(0, len(data) - TXN_ENTRY_SIZE + 1, TXN_ENTRY_SIZE)]


class TransactionIndex:
    """A segment's aborted transactions. The file is created lazily, on the first append."""

    def __init__(self, path: str, base_offset: int, fs=LOCAL,
                 entries: Iterable[AbortedTxn] | None = None):
        self.path = path
        self.base_offset = base_offset
        self._fs = fs
        self._entries = list(entries) if entries is not None else None
        self._file = None

    @property
    def entries(self) -> list[AbortedTxn]:
        if self._entries is None:
            self._entries = (parse_txn_index(self._fs.read_all(self.path))
                             if self._fs.exists(self.path) else [])
        return self._entries

    def __len__(self) -> int:
        return len(self.entries)

    def append(self, txn: AbortedTxn) -> None:
        entries = self.entries
        if entries and txn.last_offset <= entries[-1].last_offset:
            raise CorruptDataError(
                f"aborted transaction last offset {txn.last_offset} is not above the previous "
                f"{entries[-1].last_offset}", self.path, len(entries) * TXN_ENTRY_SIZE)
        if self._file is None:
            self._file = self._fs.open_append(self.path)
        self._file.append(txn.to_bytes())
        entries.append(txn)

    def sanity_check(self, end_offset: int | None = None) -> None:
        """Each entry's ABORT marker (its last offset) lies in this segment, below
        `end_offset` when known, after the previous entry's; its first offset precedes it; and
        the last stable offset when it ended is no later than just after it. (Its offsets are
        in no CRC: a read_committed read drops a producer's batches up to the marker, and stops
        looking at later segments once an LSO passes its range.)"""
        previous = -1
        for i, txn in enumerate(self.entries):
            if txn.last_offset < self.base_offset:
                raise CorruptDataError(
                    f"aborted transaction last offset {txn.last_offset} is below the segment "
                    f"base offset {self.base_offset}", self.path, i * TXN_ENTRY_SIZE)
            why = None
            if end_offset is not None and txn.last_offset >= end_offset:
                why = f"its ABORT marker offset is past the segment's end ({end_offset})"
            elif not 0 <= txn.first_offset <= txn.last_offset:
                why = "its first offset does not precede its ABORT marker"
            elif not 0 <= txn.last_stable_offset <= txn.last_offset + 1:
                why = "its last stable offset lies past its ABORT marker"
            elif txn.last_offset <= previous:
                why = "its ABORT marker is not after the previous entry's"
            if why is not None:
                raise CorruptDataError(
                    f"transaction index entry {i} (producer {txn.producer_id}, offsets "
                    f"{txn.first_offset}..{txn.last_offset}, last stable offset "
                    f"{txn.last_stable_offset}): {why}", self.path, i * TXN_ENTRY_SIZE)
            previous = txn.last_offset

    def collect_aborted(self, fetch_offset: int, upper_bound: int) -> tuple[list[AbortedTxn], bool]:
        """(entries overlapping [fetch_offset, upper_bound), whether the search may stop here).

        TransactionIndex.collectAbortedTxns: an entry whose LSO reaches the upper bound proves
        that no later segment can hold an overlapping transaction.
        """
        found = []
        for txn in self.entries:
            if txn.last_offset >= fetch_offset and txn.first_offset < upper_bound:
                found.append(txn)
            if txn.last_stable_offset >= upper_bound:
                return found, True
        return found, False

    def to_bytes(self) -> bytes:
        return b"".join(t.to_bytes() for t in self.entries)

    def fsync(self) -> None:
        if self._file is not None:
            self._file.fsync()

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
