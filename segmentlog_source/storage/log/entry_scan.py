"""A `.log` read as entries: framing checked entry by entry, in bounded chunks.

Reads go through `io.open_read` (`read_at` / `read_into`) only, sequentially over a byte range,
so a scan of a 1 GiB segment holds one chunk (or one batch, if a batch is larger) in memory at a
time. What the entries' offsets mean is for the callers to check (checked_scan.py).
"""

from __future__ import annotations

from typing import Iterator, NamedTuple

import numpy as np

from ...errors import CorruptDataError, FileChangedError
from ...format.batch import (DEFAULT_MAX_BATCH_BYTES, LOG_OVERHEAD, MAGIC_OFFSET,
                             MIN_ENTRY_PREFIX, V2_HEADER_SIZE, BatchHeader, header_at,
                             parse_header)
from ..io.stats import IOStats

DEFAULT_CHUNK_BYTES = 1024 * 1024


class TornTail(NamedTuple):
    """Bytes at the end of a `.log` that do not form a whole batch (a write cut short)."""

    position: int
    length: int


class EntryScan:
    """Entries of a `.log` in [start, end), as (BatchHeader, memoryview of the whole entry).

    With `bodies=False` only headers are read (the view is None) and batch bodies are skipped.
    A partial entry at the end of the file is a torn tail: with `allow_torn_tail` the scan stops
    there, as the broker's reader does, and records it in `torn_tail`; otherwise it raises.
    """

    def __init__(self, fs, path: str, start: int = 0, end: int | None = None, *,
                 chunk_bytes: int = DEFAULT_CHUNK_BYTES, verify_crc: bool = False,
                 allow_torn_tail: bool = False, bodies: bool = True,
                 max_batch_bytes: int = DEFAULT_MAX_BATCH_BYTES, stats: IOStats | None = None,
                 expected_size: int | None = None, read_following: bool = False,
                 prefetched=None):
        if verify_crc and not bodies:
            raise ValueError("verifying CRCs needs the batch bodies")
        self.fs, self.path, self.start, self.end = fs, path, start, end
        self.chunk_bytes = max(chunk_bytes, V2_HEADER_SIZE)
        self.verify_crc, self.allow_torn_tail, self.bodies = verify_crc, allow_torn_tail, bodies
        self.max_batch_bytes, self.stats = max_batch_bytes, stats
        self.expected_size = expected_size   # None: the file may have grown since planning
        self.torn_tail: TornTail | None = None
        self.position = start  # where the scan stands: after the last entry it yielded
        # With read_following, the header of the entry at `end` once the scan got there (None:
        # no whole header there), so a reader can check what follows its range.
        self.read_following = read_following
        self.following: BatchHeader | None = None
        self.prefetched = prefetched   # bytes of the file from `start` on, read already

    def __iter__(self) -> Iterator[tuple[BatchHeader, memoryview | None]]:
        with self.fs.open_read(self.path, self.stats) as f:
            file_size = f.size()
            self._check_size(file_size)
            end = file_size if self.end is None else min(self.end, file_size)
            buf, buf_start = memoryview(b""), self.start
            if self.prefetched is not None:
                buf = memoryview(self.prefetched).toreadonly()[:max(0, end - self.start)]

            def fill(pos: int, want: int) -> None:
                # Make buf cover [pos, pos + want), reading at least a chunk when it must read.
                # The unread tail of the old chunk (part of one batch) is copied to the front of
                # the new one and the rest read in after it: the bytes after `pos` are read once
                # and copied only where a batch straddles two chunks (joining the two buffers
                # instead cost ~10% of a scan).
                nonlocal buf, buf_start
                want = min(want, end - pos)
                if buf_start <= pos and pos + want <= buf_start + len(buf):
                    return
                keep = buf[pos - buf_start:] if buf_start <= pos < buf_start + len(buf) else b""
                more = min(max(want, self.chunk_bytes) - len(keep), end - pos - len(keep))
                new = memoryview(np.empty(len(keep) + more, np.uint8))  # all of it overwritten
                new[:len(keep)] = keep
                got = f.read_into(pos + len(keep), new[len(keep):])
                buf, buf_start = new.toreadonly()[:len(keep) + got], pos  # read-only, like bytes
                if len(buf) < want:
                    raise CorruptDataError(f"file shrank while being read (expected {want} bytes)",
                                           self.path, pos)

            pos = self.start
            while pos < end:
                if end - pos < MIN_ENTRY_PREFIX:
                    self._tail(pos, end, file_size)
                    return
                if pos + MIN_ENTRY_PREFIX > buf_start + len(buf):  # (fill, without a call)
                    fill(pos, MIN_ENTRY_PREFIX)
                off = pos - buf_start
                try:
                    header = parse_header(buf, off, len(buf), base_position=buf_start,
                                          max_batch_bytes=self.max_batch_bytes)
                    if header is None:  # a valid size, but the entry runs past what buf holds
                        size = LOG_OVERHEAD + int.from_bytes(buf[off + 8:off + 12], "big",
                                                             signed=True)
                        if pos + size > end:
                            self._tail(pos, end, file_size)
                            return
                        fill(pos, size if self.bodies else min(size, V2_HEADER_SIZE))
                        off = pos - buf_start
                        header = (parse_header(buf, off, len(buf), base_position=buf_start)
                                  if self.bodies else self._header_only(buf, off, buf_start))
                except CorruptDataError as err:
                    raise err.located(self.path) from None
                entry = None
                if self.bodies:
                    entry = buf[off:off + header.size]  # buf is a memoryview
                    if self.verify_crc and not header.crc_is_valid(entry):
                        raise CorruptDataError(
                            f"CRC mismatch: stored {header.crc}, computed "
                            f"{header.compute_crc(entry)}", self.path, pos)
                yield header, entry
                pos += header.size
                self.position = pos
            if self.read_following and pos < file_size:
                self.following = self._header_after(f, pos)

    def _header_after(self, f, pos: int) -> BatchHeader | None:
        """The header of the entry at `pos`, or None when no whole, sane header is there (that
        entry lies outside this scan: whoever reads it judges it)."""
        data = f.read_at(pos, V2_HEADER_SIZE)
        if len(data) < MIN_ENTRY_PREFIX or data[MAGIC_OFFSET] > 2:
            return None
        if len(data) < (MIN_ENTRY_PREFIX, MIN_ENTRY_PREFIX + 8, V2_HEADER_SIZE)[data[MAGIC_OFFSET]]:
            return None
        try:
            return header_at(data, 0, base_position=pos)
        except CorruptDataError:
            return None

    def _check_size(self, file_size: int) -> None:
        """A file shorter than the planned end lost bytes (truncated or replaced); an object of
        another size than at planning was replaced. Either way the plan's byte positions no
        longer describe it: fail rather than return rows from the wrong bytes."""
        if self.expected_size is not None and file_size != self.expected_size:
            raise FileChangedError(f"changed since the read was planned: {file_size} bytes now, "
                                   f"{self.expected_size} then (replaced?); run the query again",
                                   self.path, 0)
        if self.end is not None and file_size < self.end:
            raise FileChangedError(f"shorter than when the read was planned ({file_size} bytes, "
                                   f"the plan reads to byte {self.end}); truncated since?",
                                   self.path, file_size)

    def _header_only(self, buf, off: int, buf_start: int) -> BatchHeader:
        try:
            return header_at(buf, off, base_position=buf_start)
        except CorruptDataError as err:
            raise err.located(self.path) from None

    def _tail(self, pos: int, end: int, file_size: int) -> None:
        if end < file_size:
            raise CorruptDataError(f"the entry at byte {pos} runs past byte {end}, where the scan "
                                   f"was asked to stop (not a batch boundary)", self.path, pos)
        self.torn_tail = TornTail(pos, file_size - pos)
        if not self.allow_torn_tail:
            raise CorruptDataError(
                f"torn tail: the last {file_size - pos} bytes are not a whole batch (a write cut "
                f"short; recovery truncates them)", self.path, pos)
