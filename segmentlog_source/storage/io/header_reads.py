"""A local file's magic-2 batch headers, read one header per read: the metadata views' walk
when no CRC is checked (storage/log/header_table.py).

Reading a range in big chunks to find its headers copies every record byte through memory:
the batches view of a 2.2 GB log spent 0.2 s of its 0.25 s there. A positional read of 61
bytes per batch, from compiled code, copies only the headers (0.1 s), and a record's bytes are
never read, as `kafka-dump-log.sh` without --deep-iteration does not read them either. On an
object store each read is a request, so there the chunks stay.
"""

from __future__ import annotations

from numba import njit, types
import numpy as np

from ...format.batch import DEFAULT_MAX_BATCH_BYTES, V2_HEADER_SIZE
from ...format.header_walk import WHOLE, read_v2_header

# libc's pread, by name (a ctypes pointer would stop numba from caching the compiled walk)
_pread = types.ExternalFunction(
    "pread", types.intp(types.intc, types.voidptr, types.uintp, types.int64))

READ_FAILED = -1   # pread failed (an I/O error): the caller reads the range the checked way


@njit(cache=True, nogil=True)
def _walk(fd, pos, end, rows, header, max_batch_bytes):
    n = 0
    pointer = header.ctypes.data
    while pos < end and n < rows.shape[0]:
        got = _pread(fd, pointer, V2_HEADER_SIZE, pos)
        if got < 0:
            return n, pos, READ_FAILED
        if got < V2_HEADER_SIZE:      # the file ends inside this header
            return n, pos, WHOLE
        why, size = read_v2_header(header, 0, pos, rows[n], max_batch_bytes)
        if why != WHOLE:
            return n, pos, why
        pos += size
        n += 1
    return n, pos, WHOLE


def read_v2_headers(fd: int, pos: int, end: int, rows: np.ndarray,
                    max_batch_bytes: int = DEFAULT_MAX_BATCH_BYTES) -> tuple[int, int, int]:
    """header_walk.walk_v2_headers over the open file `fd` instead of a buffer: (rows filled,
    where the walk stopped, why: WHOLE, NOT_V2, BAD_LENGTH or READ_FAILED)."""
    return _walk(fd, pos, end, rows, np.empty(V2_HEADER_SIZE, np.uint8), max_batch_bytes)
