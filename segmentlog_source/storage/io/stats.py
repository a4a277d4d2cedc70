"""What a query cost: bytes and requests, counted by every file system of the I/O seam."""

from __future__ import annotations

from dataclasses import dataclass
import threading

# One lock for every IOStats (a planner plans an object store's partitions in threads, which
# count into one listing view's stats); uncontended otherwise, and a lock per instance would
# stop IOStats from being pickled.
_LOCK = threading.Lock()


@dataclass
class IOStats:
    """Bytes and requests served, for tests and for telling a user what a query cost."""

    bytes_read: int = 0
    read_requests: int = 0

    def add(self, nbytes: int) -> None:
        with _LOCK:
            self.bytes_read += nbytes
            self.read_requests += 1

    def add_reads(self, requests: int, nbytes: int) -> None:
        with _LOCK:
            self.bytes_read += nbytes
            self.read_requests += requests

    def merge(self, other: "IOStats") -> None:
        with _LOCK:
            self.bytes_read += other.bytes_read
            self.read_requests += other.read_requests
