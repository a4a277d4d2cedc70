"""A range of a segment's batch headers as one table (format/header_walk.py's rows): the metadata
views' fast path when nothing is to be salvaged. With CRCs to check, every batch is read whole
(in chunks) and checked; without, only the headers are read.

The table is returned only when the range is what a healthy log looks like, so that every
check CheckedScan makes holds trivially: magic 2 throughout, offsets contiguous from the batch
before the range (or the segment's base offset) to the batch or segment after it, within the
segment's offset span, no batch the cleaner shaped (its first record needs the body), the
last batch ending at the range's end, leader epochs never decreasing. Anything else (a gap, a
legacy entry, a torn tail, a moved offset, a changed file) returns None, and the caller reads
the range with CheckedScan, which knows what each of those means: an error naming the file and
byte, the cleaner's gap, a salvage. So does a CRC mismatch.
"""

from __future__ import annotations

import numpy as np

from ...errors import CorruptDataError
from ...format.batch import ATTR_DELETE_HORIZON, INT32_MAX, V2_HEADER_SIZE, header_at
from ...format.header_walk import (ATTRIBUTES, BASE_OFFSET, LAST_OFFSET_DELTA, LEADER_EPOCH,
                                   POSITION, RECORDS_COUNT, SIZE, WHOLE, first_crc_mismatch,
                                   new_rows, walk_v2_headers)
from ..io.header_reads import HEADER_READS, NOT_CACHED

ROWS_PER_WALK = 1 << 16   # header rows one walk of a local file fills (6 MiB) before the next


def header_table(fs, path: str, start: int, end: int, *, segment_base: int,
                 after_offset: int | None, start_checked: bool, ends_segment: bool,
                 next_segment_base: int | None, indexed_last_offset: int | None,
                 offset_limit: int, chunk_bytes: int, stats=None,
                 expected_size: int | None = None, verify_crc: bool = False) -> np.ndarray | None:
    """The headers of [start, end) of `path`, one row each, or None (see the module doc).
    `verify_crc`: every batch is read whole and its CRC checked (None at the first mismatch)."""
    parts = []
    with fs.open_read(path, stats) as f:
        size = f.size()
        if (expected_size is not None and size != expected_size) or size < end:
            return None
        pos = start
        # a local file: a read per header (where libc has preadv2)
        by_header = getattr(f, "read_v2_headers", None) if HEADER_READS and not verify_crc \
            else None
        need = 0     # a batch bigger than a chunk: the next read takes it whole
        while pos < end:
            if by_header is not None:
                rows = new_rows(ROWS_PER_WALK)
                n, stop, why = by_header(pos, end, rows)
                if why == NOT_CACHED:
                    # On disk: chunks, bodies with them, to the end of the range, which the
                    # kernel reads ahead of. (Going back to a read per header where the cache
                    # held them again broke that readahead: 2x slower than chunks alone.)
                    parts.append(rows[:n])
                    pos, by_header = stop, None
                    continue
            else:       # (and an object store: a request per chunk)
                want = min(max(chunk_bytes, V2_HEADER_SIZE, need), end - pos)
                buf = np.empty(want, np.uint8)
                if f.read_into(pos, memoryview(buf)) < want:
                    return None
                rows = new_rows(want // V2_HEADER_SIZE + 1)
                n, stop, why = walk_v2_headers(buf, pos, pos, end, rows)
                if verify_crc:
                    if why != WHOLE:
                        return None
                    n, stop, need = _crcs_checked(buf, pos, rows[:n], stop)
                    if n < 0:
                        return None
                    if n == 0:     # the next batch is bigger than the chunk: read it whole
                        if need <= want or pos + need > end:
                            return None
                        continue
            if why != WHOLE or (n == 0 and stop == pos):
                return None
            parts.append(rows[:n])
            pos = stop     # a batch bigger than the chunk: the next read starts past it
        if f.size() < end:
            return None   # (cut short under the walk: what it read may be a batch's old bytes)
        following = None
        if not ends_segment:
            known, following = following_base(f, end, next_segment_base)
            if not known:
                return None
    if pos != end:
        return None
    table = np.concatenate(parts) if parts else new_rows(0)
    return table if looks_healthy(table, start, segment_base, after_offset, start_checked,
                             next_segment_base if ends_segment else following,
                             indexed_last_offset if ends_segment else None,
                             offset_limit, next_segment_base) else None


def _crcs_checked(buf: np.ndarray, buf_start: int, rows: np.ndarray,
                  stop: int) -> tuple[int, int, int]:
    """Of a chunk's walked rows, those whose batch is wholly in `buf`, each CRC checked: (how
    many, where the next read starts, the bytes it needs to hold the next batch whole), or
    (-1, ...) at a CRC mismatch."""
    ends = rows[:, POSITION] + rows[:, SIZE]
    whole = int(np.searchsorted(ends, buf_start + len(buf), side="right"))
    if first_crc_mismatch(buf, buf_start, rows[:whole]) >= 0:
        return -1, 0, 0
    if whole < len(rows):
        return whole, int(rows[whole, POSITION]), int(rows[whole, SIZE])
    return whole, stop, 0


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
    base = table[:, BASE_OFFSET]
    delta = table[:, LAST_OFFSET_DELTA]
    last = base + delta
    if after_offset is not None:
        if base[0] != after_offset + 1:
            return False
    elif start == 0:
        if base[0] != segment_base:
            return False
    elif start_checked:
        return False
    epochs = table[:, LEADER_EPOCH]
    epochs = epochs[epochs >= 0]
    return bool((delta >= 0).all()
                and (epochs[1:] >= epochs[:-1]).all()
                and (base[1:] == last[:-1] + 1).all()
                and last[-1] - segment_base <= INT32_MAX
                and base[-1] < offset_limit
                # (a range inside a segment too: its offsets stay below the next segment's)
                and (next_segment_base is None or last[-1] < next_segment_base)
                and not (table[:, ATTRIBUTES] & ATTR_DELETE_HORIZON).any()
                and (table[:, RECORDS_COUNT] == delta + 1).all()
                and (next_offset is None or next_offset == last[-1] + 1)
                and (indexed_last_offset is None or last[-1] >= indexed_last_offset))
