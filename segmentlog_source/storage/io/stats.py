"""What a query cost: bytes and requests, counted by every file system of the I/O seam."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class IOStats:
    """Bytes and requests served, for tests and for telling a user what a query cost."""

    bytes_read: int = 0
    read_requests: int = 0

    def add(self, nbytes: int) -> None:
        self.bytes_read += nbytes
        self.read_requests += 1
