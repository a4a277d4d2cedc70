"""One file whose bytes are read from its store at most once: later reads of them are served
from memory.

A segment without `.index`/`.timeindex` is planned by walking its batch headers (the in-memory
indexes rebuilt from them), then by lookups that go back to the same bytes: the batch an offset
or a timestamp falls in, the tail whose CRCs decide the log end. Without this each of those read
the bytes again (a 150,125-byte segment cost 169,334 bytes of planning reads in 89 requests).
Bytes are kept in aligned blocks, the ones a read touched, so what is held is what was read: at
most the file, and no more than `budget` bytes (past it, reads go to the store as before), until
the reader lets the segment go (LogSegment.release_indexes).

The file is taken as it was when first read: its size is read once too, so a segment a writer
appends to while a read is planned is planned on one consistent view.
"""

from __future__ import annotations

from .read_handle import ReadHandle
from .stats import IOStats

BLOCK_BYTES = 4096
DEFAULT_BUDGET = 256 * 1024 * 1024


class ReadOnceFiles:
    """`fs` with `path`'s reads served from memory once read; every other call goes to `fs`."""

    def __init__(self, fs, path: str, stats: IOStats | None = None, *,
                 budget: int = DEFAULT_BUDGET):
        self._fs = fs
        self._path = path
        self._stats = stats
        self._budget = budget
        self._size: int | None = None
        self._blocks: dict[int, bytes] = {}

    def __getattr__(self, name):
        return getattr(self._fs, name)

    @property
    def underlying(self):
        return self._fs

    def release(self) -> None:
        """Let go of the bytes held (a reader done with the file); its size is kept."""
        self._blocks = {}

    def size(self, path: str) -> int:
        if path != self._path:
            return self._fs.size(path)
        if self._size is None:
            self._size = self._fs.size(path)
        return self._size

    def open_read(self, path: str, stats: IOStats | None = None):
        if path != self._path:
            return self._fs.open_read(path, stats)
        return _Handle(self)

    def read_range(self, path: str, start: int, length: int, stats: IOStats | None = None):
        if path != self._path:
            return self._fs.read_range(path, start, length, stats)
        return self.read_at(start, length)

    def read_all(self, path: str, stats: IOStats | None = None) -> bytes:
        if path != self._path:
            return self._fs.read_all(path, stats)
        return self.read_at(0, self.size(path))

    def read_at(self, position: int, length: int) -> bytes:
        end = min(position + length, self.size(self._path))
        if position >= end:
            return b""
        first, last = position // BLOCK_BYTES, (end - 1) // BLOCK_BYTES
        held = len(self._blocks) * BLOCK_BYTES
        if held + (last - first + 1) * BLOCK_BYTES > self._budget:
            return self._fs.read_range(self._path, position, end - position, self._stats)
        block = first
        while block <= last:    # each run of blocks not held yet: one request
            if block in self._blocks:
                block += 1
                continue
            run_end = block
            while run_end + 1 <= last and run_end + 1 not in self._blocks:
                run_end += 1
            start = block * BLOCK_BYTES
            data = self._fs.read_range(self._path, start,
                                       min((run_end + 1) * BLOCK_BYTES, self._size) - start,
                                       self._stats)
            for i in range(block, run_end + 1):
                self._blocks[i] = data[(i - block) * BLOCK_BYTES:(i - block + 1) * BLOCK_BYTES]
            block = run_end + 1
        data = b"".join(self._blocks[i] for i in range(first, last + 1))
        skip = position - first * BLOCK_BYTES
        return data[skip:skip + end - position]


class _Handle(ReadHandle):
    def __init__(self, files: ReadOnceFiles):
        self._files = files

    def size(self) -> int:
        return self._files.size(self._files._path)

    def read_at(self, position: int, length: int) -> bytes:
        return self._files.read_at(position, length)
