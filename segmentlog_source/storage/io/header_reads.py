"""A local file's magic-2 batch headers, read one header per read from the page cache: the
metadata views' walk when no CRC is checked (storage/log/header_table.py).

Reading a range in big chunks to find its headers copies every record byte through memory:
the batches view of a 2.2 GB log spent 0.2 s of its 0.25 s there. A positional read of 61
bytes per batch, from compiled code, copies only the headers (0.1 s), and a record's bytes are
never read, as `kafka-dump-log.sh` without --deep-iteration does not read them either. On an
object store each read is a request, so there the chunks stay.
"""

from __future__ import annotations

import ctypes

from numba import njit, types
import numpy as np

from ...format.batch import DEFAULT_MAX_BATCH_BYTES, V2_HEADER_SIZE
from ...format.header_walk import WHOLE, read_v2_header

# Whether this libc has preadv2 (glibc 2.26+; not macOS): calling a symbol that is not there
# from compiled code kills the process, so without it the views read chunks.
HEADER_READS = hasattr(ctypes.CDLL(None), "preadv2")

# libc's preadv2, by name (a ctypes pointer would stop numba from caching the compiled walk)
_preadv2 = types.ExternalFunction(
    "preadv2", types.intp(types.intc, types.voidptr, types.intc, types.int64, types.intc))
RWF_NOWAIT = 0x8   # linux/fs.h: fail (EAGAIN) instead of waiting for the disk

# Why a walk stopped, besides header_walk's: the next header is not in the page cache (or the
# file system cannot say without waiting). Read there one header at a time, a disk seeks for
# every batch (a cold 554 MB log took 2.3 s where 2 MiB reads, which the kernel reads ahead
# of, take 0.7 s): the caller reads the rest of its range in chunks.
NOT_CACHED = -1


@njit(cache=True, nogil=True)
def _walk(fd, pos, end, rows, header, iov, max_batch_bytes):
    n = 0
    iov[0] = header.ctypes.data
    iov[1] = V2_HEADER_SIZE
    while pos < end and n < rows.shape[0]:
        if pos + V2_HEADER_SIZE > end:    # a header past the range: the caller's to judge
            return n, pos, WHOLE
        # Short of a header (part of it not cached, or a file cut short since its size was
        # taken): the caller's blocking read finds out which.
        if _preadv2(fd, iov.ctypes.data, 1, pos, RWF_NOWAIT) < V2_HEADER_SIZE:
            return n, pos, NOT_CACHED
        why, size = read_v2_header(header, 0, pos, rows[n], max_batch_bytes)
        if why != WHOLE:
            return n, pos, why
        pos += size
        n += 1
    return n, pos, WHOLE


def read_v2_headers(fd: int, pos: int, end: int, rows: np.ndarray,
                    max_batch_bytes: int = DEFAULT_MAX_BATCH_BYTES) -> tuple[int, int, int]:
    """header_walk.walk_v2_headers over the open file `fd` instead of a buffer, reading only
    what the page cache holds: (rows filled, where the walk stopped, why: WHOLE, NOT_V2,
    BAD_LENGTH or NOT_CACHED)."""
    return _walk(fd, pos, end, rows, np.empty(V2_HEADER_SIZE, np.uint8),
                 np.empty(2, np.uint64), max_batch_bytes)
