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

from ...format.header_walk import (BASE_OFFSET, LAST_OFFSET_DELTA, WHOLE, first_crc_mismatch,
                                   new_rows)
from ..io.header_reads import HEADER_READS, NOT_CACHED
from .walked_scan import WalkedScan, following_base, looks_healthy

ROWS_PER_WALK = 1 << 16   # header rows one walk of a local file fills (6 MiB) before the next


def header_table(fs, path: str, start: int, end: int, *, segment_base: int,
                 after_offset: int | None, start_checked: bool, ends_segment: bool,
                 next_segment_base: int | None, indexed_last_offset: int | None,
                 offset_limit: int, chunk_bytes: int, stats=None,
                 expected_size: int | None = None, verify_crc: bool = False) -> np.ndarray | None:
    """The headers of [start, end) of `path`, one row each, or None (see the module doc).
    `verify_crc`: every batch is read whole and its CRC checked (None at the first mismatch)."""
    parts, pos, following = [], start, None
    if HEADER_READS and not verify_crc:     # a local file: a read per header (libc's preadv2)
        with fs.open_read(path, stats) as f:
            by_header = getattr(f, "read_v2_headers", None)
            size = f.size()
            if (expected_size is not None and size != expected_size) or size < end:
                return None
            while by_header is not None and pos < end:
                rows = new_rows(ROWS_PER_WALK)
                n, stop, why = by_header(pos, end, rows)
                parts.append(rows[:n])
                if why == NOT_CACHED:
                    # On disk: chunks, bodies with them, to the end of the range, which the
                    # kernel reads ahead of. (Going back to a read per header where the cache
                    # held them again broke that readahead: 2x slower than chunks alone.)
                    pos = stop
                    break
                if why != WHOLE or (n == 0 and stop == pos):
                    return None
                pos = stop
            if pos == end and by_header is not None:
                if f.size() < end:
                    return None   # (cut short under the walk: it may have read a batch's old bytes)
                if not ends_segment:
                    known, following = following_base(f, end, next_segment_base)
                    if not known:
                        return None
    if pos > end:
        return None       # (the last batch runs past the range: not its end)
    if pos < end:       # chunks (an object store: a request each), as the records read walks
        last = next((p[-1] for p in reversed(parts) if len(p)), None)
        scan = WalkedScan(fs, path, pos, end, segment_base=segment_base,
                          after_offset=after_offset if last is None
                          else int(last[BASE_OFFSET] + last[LAST_OFFSET_DELTA]),
                          start_checked=start_checked or pos > start, ends_segment=ends_segment,
                          next_segment_base=next_segment_base,
                          indexed_last_offset=indexed_last_offset, offset_limit=offset_limit,
                          chunk_bytes=chunk_bytes, stats=stats, expected_size=expected_size)
        for chunk in scan:
            if verify_crc and first_crc_mismatch(chunk.buf, chunk.start, chunk.rows) >= 0:
                return None
            parts.append(chunk.rows)
        if scan.resume is not None:
            return None
    table = np.concatenate(parts) if parts else new_rows(0)
    # (the walk checked its chunks; this checks the whole, the reads by header too)
    return table if looks_healthy(table, start, segment_base, after_offset, start_checked,
                                  next_segment_base if ends_segment else following,
                                  indexed_last_offset if ends_segment else None,
                                  offset_limit, next_segment_base) else None
