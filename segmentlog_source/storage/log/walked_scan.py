"""A range of a segment read for its records the fast way, while it looks healthy: each chunk's
headers walked in compiled code (format/header_walk.py) and its batches checked against their
neighbours on columns (`looks_healthy`), where CheckedScan parses and checks one
batch at a time in Python (~10 us a batch, as much as decoding its 100 records).

It only ever says yes: a batch is handed out when it and the batch after it look as a healthy
log does, so every check CheckedScan makes holds trivially. At the first thing that does not
look healthy (a gap, a legacy entry, a batch the cleaner shaped, a length out of bounds, a
changed file, a torn tail) it stops, and `resume` says where CheckedScan goes on: at the
first batch not handed out, with the last offset before it and the bytes already read from
there (so nothing is read twice). CheckedScan then finds what that thing is and says so, or
reads on. The reads are CheckedScan's own, request for request: a chunk from the first entry
not wholly read, the rest of a straddling entry carried over, so counted bytes do not change.
"""

from __future__ import annotations

from typing import Iterator, NamedTuple

import numpy as np

from ...errors import CorruptDataError, LogNotFoundError
from ...format.batch import (DEFAULT_MAX_BATCH_BYTES, INT32_MAX, LOG_OVERHEAD,
                             MIN_ENTRY_PREFIX, MIN_V2_BATCH_LENGTH, V2_HEADER_SIZE, BatchHeader,
                             header_at)
from ...format.header_walk import (BASE_OFFSET, LAST_OFFSET_DELTA, POSITION, SIZE, WHOLE,
                                   batch_header_columns, new_rows, rows_run_on,
                                   walk_v2_headers)


class Resume(NamedTuple):
    """Where CheckedScan takes a walked range over: at `position`, the batch before it ending
    at `after_offset` (with `start_checked`, as the range's own start says when nothing was
    handed out yet), `prefetched` the bytes already read from `position` on (or None)."""

    position: int
    after_offset: int | None
    start_checked: bool
    prefetched: np.ndarray | None


class WalkedChunk(NamedTuple):
    """Batches lying whole in `buf` (buf[0] is file position `start`), in order: `rows` are
    their header_walk rows (file positions), checked; `resume` is where CheckedScan would
    start to read them itself."""

    buf: np.ndarray
    start: int
    rows: np.ndarray
    resume: Resume

    def entries(self) -> Iterator[tuple[BatchHeader, memoryview]]:
        """(header, entry) of each batch, as CheckedScan yields them (for the batches a reader
        takes one at a time: compressed, control)."""
        view = memoryview(self.buf).toreadonly()
        for row in batch_header_columns(self.rows).tolist():
            header = BatchHeader._make(row)
            at = header.position - self.start
            yield header, view[at:at + header.size]


class WalkedScan:
    """The chunks of [start, end) of `path` while they look healthy; then `resume` (None once
    the whole range was handed out). The arguments are CheckedScan's (plan.scan_plan.ScanTask).
    """

    def __init__(self, fs, path: str, start: int, end: int, *, segment_base: int,
                 after_offset: int | None, start_checked: bool, ends_segment: bool,
                 next_segment_base: int | None, indexed_last_offset: int | None,
                 offset_limit: int, chunk_bytes: int, stats=None,
                 expected_size: int | None = None,
                 max_batch_bytes: int = DEFAULT_MAX_BATCH_BYTES):
        self.fs, self.path, self.start, self.end = fs, path, start, end
        self.segment_base, self.after_offset = segment_base, after_offset
        self.start_checked, self.ends_segment = start_checked, ends_segment
        self.next_segment_base, self.indexed_last_offset = next_segment_base, indexed_last_offset
        self.offset_limit, self.chunk_bytes = offset_limit, max(chunk_bytes, V2_HEADER_SIZE)
        self.stats, self.expected_size = stats, expected_size
        self.max_batch_bytes = max_batch_bytes
        self.resume: Resume | None = Resume(start, after_offset, start_checked, None)

    def __iter__(self) -> Iterator[WalkedChunk]:
        try:
            f = self.fs.open_read(self.path, self.stats)
        except LogNotFoundError:
            return     # (CheckedScan's reader says what that means)
        with f:
            yield from self._chunks(f)

    def _chunks(self, f) -> Iterator[WalkedChunk]:
        end = self.end
        size = f.size()
        if (self.expected_size is not None and size != self.expected_size) or size < end \
                or end - self.start < MIN_ENTRY_PREFIX:
            return
        buf, buf_start = np.empty(0, np.uint8), self.start
        keep = partial = self.start   # carried from `keep` on; read from the first entry not
        want = MIN_ENTRY_PREFIX       # whole (`partial`), at least `want` bytes from it
        after, start_checked = self.after_offset, self.start_checked
        while True:
            buf, buf_start = self._read(f, buf, buf_start, keep, partial, want)
            self.resume = Resume(keep, after, start_checked, buf)
            if buf is None:      # (the file ended: CheckedScan says how)
                return
            rows = new_rows(len(buf) // V2_HEADER_SIZE + 1)
            n, stop, why = walk_v2_headers(buf, buf_start, keep, end, rows,
                                           self.max_batch_bytes)
            rows = rows[:n]
            ends = rows[:, POSITION] + rows[:, SIZE]
            if why != WHOLE or (n and ends[-1] > end):
                return
            buf_end = buf_start + len(buf)
            whole = int(np.searchsorted(ends, buf_end, side="right"))
            done = whole == n and stop == end
            following = None
            if done and not self.ends_segment:
                known, following = following_base(f, end, self.next_segment_base)
                if not known:
                    return
            table = rows[:whole]
            if not looks_healthy(
                    table, keep, self.segment_base, after, start_checked,
                    (self.next_segment_base if self.ends_segment else following) if done
                    else None, self.indexed_last_offset if done and self.ends_segment else None,
                    self.offset_limit, self.next_segment_base):
                return
            if done:
                self.resume = None
                if whole:
                    yield WalkedChunk(buf, buf_start, table, Resume(keep, after, start_checked,
                                                                   buf))
                return
            # the last whole batch waits for the one after it (its offsets vouch for it)
            if whole > 1:
                yield WalkedChunk(buf, buf_start, table[:-1], Resume(keep, after, start_checked,
                                                                    buf))
                last = table[-2]
                after, start_checked = int(last[BASE_OFFSET] + last[LAST_OFFSET_DELTA]), True
            if whole:
                keep = int(table[-1, POSITION])
            partial = int(rows[whole, POSITION]) if whole < n else stop
            want = int(rows[whole, SIZE]) if whole < n else self._declared(buf, buf_start, stop)
            if want < 0 or partial + want > end:
                return

    def _read(self, f, buf: np.ndarray, buf_start: int, keep: int, partial: int, want: int):
        """The next buffer: buf's bytes from `keep` on, then the file's after them, so that the
        entry at `partial` has `want` bytes, a chunk's worth read at once (EntryScan's reads);
        None if the file ends first."""
        buf_end = buf_start + len(buf)
        want = min(want, self.end - partial)
        more = min(max(want, self.chunk_bytes) - (buf_end - partial), self.end - buf_end)
        new = np.empty(buf_end - keep + more, np.uint8)   # all of it overwritten
        new[:buf_end - keep] = buf[keep - buf_start:]
        if f.read_into(buf_end, memoryview(new)[buf_end - keep:]) < more:
            return None, keep
        return new, keep

    def _declared(self, buf: np.ndarray, buf_start: int, pos: int) -> int:
        """The size of the entry at `pos` as its length says, if buf holds that much of it
        (else the bytes to read to know it); -1 for a length no v2 batch has."""
        at = pos - buf_start
        if len(buf) - at < MIN_ENTRY_PREFIX:
            return MIN_ENTRY_PREFIX
        length = int.from_bytes(buf[at + 8:at + 12].tobytes(), "big", signed=True)
        if length < MIN_V2_BATCH_LENGTH or length + LOG_OVERHEAD > self.max_batch_bytes:
            return -1
        return length + LOG_OVERHEAD


def following_base(f, end: int, next_segment_base: int | None) -> tuple[bool, int | None]:
    """The base offset of the batch at `end` of the open file `f`, which a range's last batch
    must reach: (True, it), (True, None) when `end` is the end of the file (nothing to check,
    as CheckedScan), or (False, None) when it is no batch whose header a healthy log has (a
    legacy entry, offsets past the next segment's base): CheckedScan is to judge it."""
    if end >= f.size():
        return True, None
    try:
        header = header_at(f.read_at(end, V2_HEADER_SIZE), 0, base_position=end)
    except CorruptDataError:     # (too short, or offsets out of bounds)
        return False, None
    if header.magic != 2 or (next_segment_base is not None
                             and header.last_offset >= next_segment_base):
        return False, None
    return True, header.base_offset


def looks_healthy(table: np.ndarray, start: int, segment_base: int, after_offset: int | None,
                  start_checked: bool, next_offset: int | None, indexed_last_offset: int | None,
                  offset_limit: int, next_segment_base: int | None) -> bool:
    """Whether `table`, the batches of [start, ...) of a segment, holds every check CheckedScan
    makes: `after_offset` is the last offset before it (None: the range's own start, with
    `start_checked`), `next_offset` the first offset after it (None: unknown)."""
    if not len(table):
        return True
    first = int(table[0, BASE_OFFSET])
    last = int(table[-1, BASE_OFFSET]) + int(table[-1, LAST_OFFSET_DELTA])
    if after_offset is not None:
        if first != after_offset + 1:
            return False
    elif start == 0:
        if first != segment_base:
            return False
    elif start_checked:
        return False
    return bool(rows_run_on(table)
                and last - segment_base <= INT32_MAX
                and table[-1, BASE_OFFSET] < offset_limit
                # (a range inside a segment too: its offsets stay below the next segment's)
                and (next_segment_base is None or last < next_segment_base)
                and (next_offset is None or next_offset == last + 1)
                and (indexed_last_offset is None or last >= indexed_last_offset))
