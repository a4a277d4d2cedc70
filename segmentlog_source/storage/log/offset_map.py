"""The cleaner's key -> newest offset map, bounded in size (Kafka's SkimpyOffsetMap).

Kafka sizes it from `log.cleaner.dedupe.buffer.size`: 24 bytes a slot (a 16-byte MD5 of the
key and an 8-byte offset), filled to `log.cleaner.io.buffer.load.factor` (0.9). The same
count bounds this map, so a cleaning needs as many passes as the broker's would; a full map
ends the pass, and the records after its latest offset wait for the next one. Keys shorter
than 16 bytes are kept as they are; longer ones as their MD5 (a collision would need MD5
broken), so no stored key of one kind can equal one of the other.
"""

from __future__ import annotations

import hashlib

DEFAULT_DEDUPE_BUFFER_BYTES = 128 * 1024 * 1024
DEFAULT_LOAD_FACTOR = 0.9
SLOT_BYTES = 16 + 8
_DIGEST_FROM = 16


def key_digest(key: bytes) -> bytes:
    return key if len(key) < _DIGEST_FROM else hashlib.md5(key).digest()


class OffsetMap:
    def __init__(self, buffer_bytes: int = DEFAULT_DEDUPE_BUFFER_BYTES,
                 load_factor: float = DEFAULT_LOAD_FACTOR):
        self.max_entries = max(1, int(buffer_bytes // SLOT_BYTES * load_factor))
        self._offsets: dict[bytes, int] = {}
        self.latest_offset = -1

    def __len__(self) -> int:
        return len(self._offsets)

    @property
    def full(self) -> bool:
        return len(self._offsets) >= self.max_entries

    def put(self, key: bytes, offset: int) -> bool:
        """Record `offset` as the newest for `key`; False (nothing recorded) when full and
        the key is new."""
        digest = key_digest(key)
        if digest not in self._offsets and self.full:
            return False
        self._offsets[digest] = offset
        return True

    def get(self, key: bytes) -> int:
        """The newest offset of `key`, or -1."""
        return self._offsets.get(key_digest(key), -1)
