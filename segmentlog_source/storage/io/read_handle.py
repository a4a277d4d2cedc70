"""What a read-only file handle built on `read_at` shares: `read_into` and closing on exit.

Handles that present bytes other than a file's own (a remote tier's decoded chunks or
indexes, a copy read up to where another starts: storage/tiered) implement `size`, `read_at`
and `close`, and get the rest here, so they serve wherever a RandomAccessFile does.
"""

from __future__ import annotations


class ReadHandle:
    def size(self) -> int:
        raise NotImplementedError

    def read_at(self, position: int, length: int) -> bytes:
        raise NotImplementedError

    def close(self) -> None:
        pass

    def read_into(self, position: int, buffer) -> int:
        view = memoryview(buffer).cast("B")
        data = self.read_at(position, len(view))
        view[:len(data)] = data
        return len(data)

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()
