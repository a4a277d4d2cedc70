"""Finding the next whole batch after damaged bytes: where a salvaging read resumes
(failOnDataLoss=false), so damage costs the batches it touched, not the rest of a segment.
By scanning, only v2 batches are found (see find_next_batch); a damaged legacy entry costs the
rest of its range unless its own length still points at the next one."""

from __future__ import annotations

import numpy as np
from crc32c import crc32c

from ...errors import CorruptDataError
from ...format.batch import (DEFAULT_MAX_BATCH_BYTES, MAGIC_OFFSET, MIN_LEGACY_MESSAGE_SIZE,
                             MIN_V2_BATCH_LENGTH, V2_CRC_START, V2_HEADER_SIZE, header_at)

_RESYNC_CHUNK = 1024 * 1024


def find_next_batch(fs, path: str, start: int, end: int,
                    max_batch_bytes: int = DEFAULT_MAX_BATCH_BYTES, stats=None) -> int | None:
    """The first position in [start, end) where a whole entry with a valid CRC starts: where a
    salvaging read resumes after damaged bytes. Candidates are found in bounded chunks by their
    magic byte and sane lengths (vectorized), then each is proven by its CRC."""
    with fs.open_read(path, stats) as f:
        pos = start
        while pos < end:
            chunk = np.frombuffer(f.read_at(pos, min(_RESYNC_CHUNK, end - pos) + 12), np.uint8)
            count = min(len(chunk) - 12, end - pos)   # candidate starts in this chunk
            if count <= 0:
                return None
            at = np.arange(count)
            magic = chunk[np.minimum(at + MAGIC_OFFSET, len(chunk) - 1)].astype(np.int64)
            # Only v2 batches are looked for: a legacy compressed wrapper's payload holds whole
            # legacy messages with valid CRCs (and inner offsets), which must never be taken
            # for entries of the log. (v2 compresses records, never batches.)
            magic = np.where(magic == 2, magic, 3)
            length = (chunk[at + 8].astype(np.int64) << 24 | chunk[at + 9].astype(np.int64) << 16
                      | chunk[at + 10].astype(np.int64) << 8 | chunk[at + 11].astype(np.int64))
            length = np.where(length >= 2**31, length - 2**32, length)
            minimum = np.choose(np.minimum(magic, 3), [MIN_LEGACY_MESSAGE_SIZE[0],
                                                       MIN_LEGACY_MESSAGE_SIZE[1],
                                                       MIN_V2_BATCH_LENGTH, 2**31])
            sane = ((length >= minimum) & (length + 12 <= max_batch_bytes)
                    & (pos + at + length + 12 <= end))
            for rel in np.flatnonzero(sane).tolist():
                if _whole_entry_at(f, pos + rel):
                    return pos + rel
            pos += count
    return None


def _whole_entry_at(f, position: int) -> bool:
    """Whether the entry at `position` (whose lengths were found sane) has a valid CRC."""
    head = f.read_at(position, V2_HEADER_SIZE)
    try:
        header = header_at(head, 0, base_position=position)
    except (CorruptDataError, ValueError, IndexError):   # struct.error is a ValueError
        return False
    entry = f.read_at(position, header.size)
    if len(entry) < header.size:
        return False
    if header.magic == 2:
        return crc32c(memoryview(entry)[V2_CRC_START:]) == header.crc
    return header.crc_is_valid(entry)


def whole_entry_at(fs, path: str, position: int, end: int, stats=None) -> bool:
    """Whether a whole entry with a valid CRC starts at `position` and ends by `end`."""
    with fs.open_read(path, stats) as f:
        head = f.read_at(position, 12)
        if len(head) < 12:
            return False
        length = int.from_bytes(head[8:12], "big", signed=True)
        if length < MIN_LEGACY_MESSAGE_SIZE[0] or position + 12 + length > end:
            return False
        return _whole_entry_at(f, position)
