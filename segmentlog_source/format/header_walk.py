"""Magic-2 batch headers of a buffer, walked header to header in compiled code: one row of
fields per batch, bodies skipped.

The metadata views' fast path (storage/log/header_table.py): parsing 61-byte headers one
BatchHeader at a time costs ~9 us of Python per batch, more than Spark's Parquet reader spends
on the 100 records such a batch holds. The walk stops, leaving the rest to the caller, at the
first entry that is not a plausible magic-2 batch (a legacy entry, a length out of bounds) or
whose header is not wholly in the buffer. It checks nothing a neighbour must confirm: that is
the caller's, on the columns.
"""

from __future__ import annotations

from crc32c import crc32c
from numba import njit
import numpy as np

from .batch import (ATTR_DELETE_HORIZON, DEFAULT_MAX_BATCH_BYTES, LOG_OVERHEAD,
                    MIN_V2_BATCH_LENGTH, V2_CRC_START, V2_HEADER_SIZE)

# Columns of the rows `walk_v2_headers` fills.
(POSITION, SIZE, BASE_OFFSET, LAST_OFFSET_DELTA, LEADER_EPOCH, ATTRIBUTES, BASE_TIMESTAMP,
 MAX_TIMESTAMP, PRODUCER_ID, PRODUCER_EPOCH, BASE_SEQUENCE, RECORDS_COUNT, CRC) = range(13)
FIELDS = 13

# Why a walk stopped.
WHOLE = 0         # at `end`, or at an entry whose header runs past the buffer
NOT_V2 = 1        # at an entry whose magic is not 2 (a legacy entry, or damage)
BAD_LENGTH = 2    # at an entry whose length no batch has


@njit(cache=True, inline="always")
def _int(buf, p, width):
    value = 0
    for i in range(width):
        value = (value << 8) | buf[p + i]
    if value >= 1 << (8 * width - 1):     # two's complement
        value -= 1 << (8 * width)
    return value


@njit(cache=True, inline="always")
def read_v2_header(buf, p, pos, row, max_batch_bytes):
    """Fill `row` from the header at buf[p] (file position `pos`): (NOT_V2 or BAD_LENGTH, 0)
    when it is no plausible magic-2 batch, else (WHOLE, the entry's size)."""
    if buf[p + 16] != 2:
        return NOT_V2, 0
    length = _int(buf, p + 8, 4)
    if length < MIN_V2_BATCH_LENGTH or length + LOG_OVERHEAD > max_batch_bytes:
        return BAD_LENGTH, 0
    row[POSITION] = pos
    row[SIZE] = length + LOG_OVERHEAD
    row[BASE_OFFSET] = _int(buf, p, 8)
    row[LEADER_EPOCH] = _int(buf, p + 12, 4)
    row[ATTRIBUTES] = _int(buf, p + 21, 2)
    row[LAST_OFFSET_DELTA] = _int(buf, p + 23, 4)
    row[BASE_TIMESTAMP] = _int(buf, p + 27, 8)
    row[MAX_TIMESTAMP] = _int(buf, p + 35, 8)
    row[PRODUCER_ID] = _int(buf, p + 43, 8)
    row[PRODUCER_EPOCH] = _int(buf, p + 51, 2)
    row[BASE_SEQUENCE] = _int(buf, p + 53, 4)
    row[RECORDS_COUNT] = _int(buf, p + 57, 4)
    row[CRC] = _int(buf, p + 17, 4) & 0xFFFFFFFF     # (a uint32)
    return WHOLE, length + LOG_OVERHEAD


@njit(cache=True, nogil=True)
def walk_v2_headers(buf, buf_start, pos, end, rows, max_batch_bytes=DEFAULT_MAX_BATCH_BYTES):
    """Walk the entries from file position `pos` (buf[0] is file position `buf_start`) to
    `end`, filling `rows` (n x FIELDS int64) until it is full. Returns (rows filled, the
    position the walk stopped at, why: WHOLE, NOT_V2 or BAD_LENGTH)."""
    n = 0
    limit = buf_start + len(buf)
    while pos < end and n < rows.shape[0]:
        if pos + V2_HEADER_SIZE > limit:
            return n, pos, WHOLE
        why, size = read_v2_header(buf, pos - buf_start, pos, rows[n], max_batch_bytes)
        if why != WHOLE:
            return n, pos, why
        pos += size
        n += 1
    return n, pos, WHOLE


@njit(cache=True, nogil=True)
def rows_run_on(rows):
    """Whether the rows' batches are what a healthy log holds back to back: each starting right
    after the one before, as many records as offsets (none removed by the cleaner), no delete
    horizon, leader epochs (where set) never decreasing. (On columns with numpy this took
    ~60 us per walked chunk, a tenth of the chunk's CRCs.)"""
    epoch = -1
    for i in range(rows.shape[0]):
        delta = rows[i, LAST_OFFSET_DELTA]
        if delta < 0 or rows[i, RECORDS_COUNT] != delta + 1 \
                or rows[i, ATTRIBUTES] & ATTR_DELETE_HORIZON:
            return False
        if i and rows[i, BASE_OFFSET] != (rows[i - 1, BASE_OFFSET]
                                          + rows[i - 1, LAST_OFFSET_DELTA] + 1):
            return False
        if rows[i, LEADER_EPOCH] >= 0:
            if rows[i, LEADER_EPOCH] < epoch:
                return False
            epoch = rows[i, LEADER_EPOCH]
    return True


def new_rows(n: int) -> np.ndarray:
    return np.empty((n, FIELDS), np.int64)


def batch_header_columns(rows: np.ndarray) -> np.ndarray:
    """The rows as BatchHeader's fields, one column each in its order (a magic-2 BatchHeader
    is `BatchHeader._make` of a row): what the record decoder takes."""
    out = np.empty((len(rows), 14), np.int64)
    out[:, 0] = rows[:, POSITION]
    out[:, 1] = rows[:, SIZE]
    out[:, 2] = 2
    out[:, 3] = rows[:, BASE_OFFSET]
    out[:, 4] = rows[:, BASE_OFFSET] + rows[:, LAST_OFFSET_DELTA]
    out[:, 5] = rows[:, CRC]
    out[:, 6] = rows[:, ATTRIBUTES] & 0xFFFF
    out[:, 7:13] = rows[:, [LEADER_EPOCH, BASE_TIMESTAMP, MAX_TIMESTAMP, PRODUCER_ID,
                            PRODUCER_EPOCH, BASE_SEQUENCE]]
    out[:, 13] = rows[:, RECORDS_COUNT]
    return out


def first_crc_mismatch(buf, buf_start: int, rows: np.ndarray) -> int:
    """The index of the first of `rows` whose stored CRC-32C is not that of its bytes in `buf`
    (buf[0] at file position `buf_start`; each batch wholly in it), or -1 when all match."""
    view = memoryview(buf)
    starts = (rows[:, POSITION] - buf_start).tolist()
    # (a loop of one crc32c call per batch: numpy's per-call overhead would be a third of a
    # 16 KiB batch's CRC)
    for i, (at, size, stored) in enumerate(zip(starts, rows[:, SIZE].tolist(),
                                               rows[:, CRC].tolist())):
        if crc32c(view[at + V2_CRC_START:at + size]) != stored:
            return i
    return -1
