"""One file whose bytes are read from its store at most once: later reads of them are served
from memory.

A segment without `.index`/`.timeindex` is planned by walking its batch headers (the in-memory
indexes rebuilt from them), then by lookups that go back to the same bytes: the batch an offset
or a timestamp falls in, the tail whose CRCs decide the log end. Without this each of those read
the bytes again (a 150,125-byte segment cost 169,334 bytes of planning reads in 89 requests).
Bytes are kept in aligned blocks, the ones a read touched, so what is held is what was read: at
most the file, until the reader lets the segment go (LogSegment.release_indexes). What every
file holds counts against one budget shared by all of them (SHARED_BUDGET, 256 MiB), not one
per file: a planner on an object store plans `parallelism` partitions at once, and a budget per
file would let it hold that many times more. Past the budget, reads go to the store as before.

The file is taken as it was when first read: its size is read once too, so a segment a writer
appends to while a read is planned is planned on one consistent view. A read that returns fewer
bytes than that size promises (the file was truncated meanwhile) is a FileChangedError and
nothing of it is kept: keeping the short blocks would serve later reads shifted bytes.
"""

from __future__ import annotations

import threading
import weakref

from ...errors import FileChangedError
from .read_handle import ReadHandle
from .stats import IOStats

BLOCK_BYTES = 4096
DEFAULT_BUDGET = 256 * 1024 * 1024


class ReadOnceBudget:
    """How many bytes ReadOnceFiles may hold between them (thread-safe: partitions are
    planned in threads)."""

    def __init__(self, limit: int):
        self.limit = limit
        self.held = 0
        self._lock = threading.Lock()

    def take(self, n: int) -> bool:
        with self._lock:
            if self.held + n > self.limit:
                return False
            self.held += n
            return True

    def give_back(self, n: int) -> None:
        with self._lock:
            self.held -= n


# One for the process: every planner's files together hold at most this much.
SHARED_BUDGET = ReadOnceBudget(DEFAULT_BUDGET)


class ReadOnceFiles:
    """`fs` with `path`'s reads served from memory once read; every other call goes to `fs`."""

    def __init__(self, fs, path: str, stats: IOStats | None = None, *,
                 budget: ReadOnceBudget | int | None = None):
        """`budget`: the one shared with other files (SHARED_BUDGET unless given), or a
        number of bytes for this file alone."""
        self._fs = fs
        self._path = path
        self._stats = stats
        if budget is None:
            budget = SHARED_BUDGET
        elif isinstance(budget, int):
            budget = ReadOnceBudget(budget)
        self._budget = budget
        self._size: int | None = None
        self._blocks: dict[int, bytes] = {}
        # What this file took from the budget, given back on release or when it is collected
        # (a segment dropped without release must not shrink everyone's budget for good).
        self._taken = [0]
        weakref.finalize(self, _give_back, budget, self._taken)

    def __getattr__(self, name):
        return getattr(self._fs, name)

    @property
    def underlying(self):
        return self._fs

    def release(self) -> None:
        """Let go of the bytes held (a reader done with the file); its size is kept."""
        self._blocks = {}
        _give_back(self._budget, self._taken)

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
        missing = sum(1 for i in range(first, last + 1) if i not in self._blocks) * BLOCK_BYTES
        if missing and not self._budget.take(missing):
            return self._whole(self._fs.read_range(self._path, position, end - position,
                                                   self._stats), position, end - position)
        self._taken[0] += missing
        try:
            self._read_missing(first, last)
        except BaseException:
            # only blocks kept count: give back what was taken for the others
            kept = len(self._blocks) * BLOCK_BYTES
            self._budget.give_back(self._taken[0] - kept)
            self._taken[0] = kept
            raise
        data = b"".join(self._blocks[i] for i in range(first, last + 1))
        skip = position - first * BLOCK_BYTES
        return data[skip:skip + end - position]

    def _read_missing(self, first: int, last: int) -> None:
        block = first
        while block <= last:    # each run of blocks not held yet: one request
            if block in self._blocks:
                block += 1
                continue
            run_end = block
            while run_end + 1 <= last and run_end + 1 not in self._blocks:
                run_end += 1
            start = block * BLOCK_BYTES
            want = min((run_end + 1) * BLOCK_BYTES, self._size) - start
            data = self._whole(self._fs.read_range(self._path, start, want, self._stats),
                               start, want)
            for i in range(block, run_end + 1):
                self._blocks[i] = data[(i - block) * BLOCK_BYTES:(i - block + 1) * BLOCK_BYTES]
            block = run_end + 1

    def _whole(self, data: bytes, start: int, want: int) -> bytes:
        """`data`, read at `start`, if it has the `want` bytes the size read first promised."""
        if len(data) < want:
            raise FileChangedError(
                f"shorter than when first read ({self._size} bytes then, it ends at byte "
                f"{start + len(data)} now): truncated meanwhile? run it again",
                self._path, start + len(data))
        return data


def _give_back(budget: ReadOnceBudget, taken: list[int]) -> None:
    budget.give_back(taken[0])
    taken[0] = 0


class _Handle(ReadHandle):
    def __init__(self, files: ReadOnceFiles):
        self._files = files

    def size(self) -> int:
        return self._files.size(self._files._path)

    def read_at(self, position: int, length: int) -> bytes:
        return self._files.read_at(position, length)
