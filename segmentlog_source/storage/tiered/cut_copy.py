"""A remote copy read only up to where a later copy takes over: its files as if the segment had
ended there.

After a leader change the new leader copies its own segments, whose boundaries need not be the
old leader's: its first copy may start inside the old leader's last one. Kafka then serves each
offset from the copy its floor lookup finds, the older copy below the newer one's start
(remote_segment_lineage.py). Replicas hold the same batches, so that start is a batch boundary
in both copies: the older copy is read as a segment that ends at the batch there, its indexes
without the entries past it, and everything that checks a segment (its next offset, its
largest timestamp, the batch after the last one planned) sees a whole segment. A start that
falls inside one of the older copy's batches means the copies disagree: an error.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...errors import CorruptDataError
from ..io.filesystem import filesystem_for
from ..io.read_handle import ReadHandle
from ..log_files import INDEX_SUFFIX, LOG_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX


class _Window(ReadHandle):
    """A read handle that ends at `end`."""

    def __init__(self, inner, end: int):
        self._inner, self._end = inner, end

    def size(self) -> int:
        return self._end

    def read_at(self, position: int, length: int) -> bytes:
        return self._inner.read_at(position, max(0, min(length, self._end - position)))

    def close(self) -> None:
        self._inner.close()


class CutCopyFiles:
    """The file system of one copy (`fs`), with its `.log` ending at `end` and its offset, time
    and transaction indexes holding only the entries below offset `cut` (an aborted
    transaction whose marker lies past it is the next copy's: it holds the same batches);
    other paths pass through."""

    def __init__(self, fs, prefix: str, base_offset: int, cut: int, end: int):
        self._fs, self.prefix, self.base_offset = fs, prefix, base_offset
        self.cut, self.end = cut, end

    def __getattr__(self, name):
        return getattr(self._fs, name)

    def _kind(self, path: str) -> str | None:
        for suffix in (LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX):
            if path == self.prefix + suffix:
                return suffix
        return None

    def size(self, path: str) -> int:
        kind = self._kind(path)
        if kind == LOG_SUFFIX:
            return self.end
        if kind is not None:
            return len(self.read_all(path))
        return self._fs.size(path)

    def open_read(self, path: str, stats=None):
        inner = self._fs.open_read(path, stats)
        return _Window(inner, self.end) if self._kind(path) == LOG_SUFFIX else inner

    def read_all(self, path: str, stats=None) -> bytes:
        kind = self._kind(path)
        if kind == LOG_SUFFIX:
            with self.open_read(path, stats) as f:
                return f.read_at(0, self.end)
        data = self._fs.read_all(path) if stats is None else self._fs.read_all(path, stats)
        if kind is None:
            return data
        if kind == TXN_INDEX_SUFFIX:      # (version, producer id, first, last offset, LSO)
            rows = np.frombuffer(data[:len(data) - len(data) % 34], np.uint8).reshape(-1, 34)
            last = rows[:, 18:26].copy().view(">i8")[:, 0]
            return rows[last < self.cut].tobytes()
        width, at = (8, 0) if kind == INDEX_SUFFIX else (12, 8)    # the relative offset's place
        entries = np.frombuffer(data[:len(data) - len(data) % width], np.uint8)
        relative = entries.reshape(-1, width)[:, at:at + 4].copy().view(">i4")[:, 0]
        keep = relative < self.cut - self.base_offset
        return entries.reshape(-1, width)[keep].tobytes()

    def read_range(self, path: str, start: int, length: int, stats=None) -> bytes:
        kind = self._kind(path)
        if kind is None:
            return self._fs.read_range(path, start, length, stats)
        if kind == LOG_SUFFIX:
            with self.open_read(path, stats) as f:
                return f.read_at(start, length)
        return self.read_all(path, stats)[start:start + max(length, 0)]

    def map_array(self, path: str, dtype, stats=None) -> np.ndarray:
        if self._kind(path) is None:
            return self._fs.map_array(path, dtype, stats)
        return np.frombuffer(self.read_all(path), dtype)

    def opener(self):
        inner = getattr(self._fs, "opener", None)
        return CutCopy(inner() if inner is not None else None, self.prefix,
                       self.base_offset, self.cut, self.end)


@dataclass(frozen=True)
class CutCopy:
    """What an executor rebuilds a CutCopyFiles from (picklable)."""

    inner: object            # the copy's own opener, or None: its path's file system
    prefix: str
    base_offset: int
    cut: int
    end: int

    def files(self, store=None) -> CutCopyFiles:
        fs = self.inner.files(store) if self.inner is not None \
            else filesystem_for(self.prefix + LOG_SUFFIX, store)[0]
        return CutCopyFiles(fs, self.prefix, self.base_offset, self.cut, self.end)


def reaches(segment, offset: int) -> bool:
    """Whether a batch of `segment` (a LogSegment) holds `offset` or one past it."""
    return segment.translate_offset(offset) is not None


def cut_position(segment, cut: int, name: str) -> int:
    """Where the batch starting at offset `cut` lies in `segment` (a LogSegment of the
    older copy): the end of the part read."""
    header = segment.translate_offset(cut)
    if header is None or header.base_offset != cut:
        raise CorruptDataError(
            f"{name}: a later remote copy starts at offset {cut}, inside a batch of this "
            f"copy ({'none reaches it' if header is None else f'{header.base_offset}..'}"
            f"{'' if header is None else header.last_offset}): the copies disagree",
            segment.log_path, None if header is None else header.position)
    return header.position
