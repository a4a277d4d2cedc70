"""The cleaner's key -> newest offset map, in a fixed amount of memory (Kafka's SkimpyOffsetMap).

Kafka sizes it from `log.cleaner.dedupe.buffer.size`: 24-byte slots (a 16-byte MD5 of the key
and an 8-byte offset) in one buffer, filled to `log.cleaner.io.buffer.load.factor` (0.9). This
map is the same shape: three numpy arrays of `buffer_bytes // 24` slots (two 62-bit hashes of
the key and its offset), open addressing with linear probing, so its memory is the buffer and
no more, whatever the keys. A full map ends the pass; the records after its latest offset wait
for the next one.

Keys are hashed by four polynomial hashes modulo 2**31 - 1 (with different multipliers), paired
into two 62-bit words: two different keys share a slot's 124 bits with a chance far below any
disk's error rate (as with Kafka's MD5, which is not collision-proof against chosen keys
either). The loops run compiled (numba); each `.py_func` is the same loop in plain Python, the
readable definition the tests also run.
"""

from __future__ import annotations

from numba import njit
from numba.extending import register_jitable
import numpy as np

from ...format.records import BinaryColumn

DEFAULT_DEDUPE_BUFFER_BYTES = 128 * 1024 * 1024
DEFAULT_LOAD_FACTOR = 0.9
SLOT_BYTES = 8 + 8 + 8
EMPTY = -1


@register_jitable
def key_hash(data, start: int, end: int) -> tuple[int, int]:
    """Two 62-bit words of the key data[start:end] (every product stays below 2**62)."""
    a, b, c, d = 17, 31, 101, 257
    for i in range(start, end):
        x = int(data[i]) + 1
        a = (a * 1_000_003 + x) % 2147483647
        b = (b * 1_400_221_399 + x) % 2147483647
        c = (c * 1_899_174_581 + x) % 2147483647
        d = (d * 1_043_618_065 + x) % 2147483647
    n = end - start
    a = (a * 1_000_003 + n) % 2147483647
    c = (c * 1_899_174_581 + n) % 2147483647
    return a * 2147483648 + b, c * 2147483648 + d


@register_jitable
def _slot(hashes_hi, hashes_lo, offsets, hi: int, lo: int) -> int:
    """The slot holding the key's hashes, or the empty slot where it would go."""
    slots = len(offsets)
    s = hi % slots
    while offsets[s] != EMPTY and (hashes_hi[s] != hi or hashes_lo[s] != lo):
        s += 1
        if s == slots:
            s = 0
    return s


@njit(cache=True)
def put_keys(hashes_hi, hashes_lo, offsets, size, max_entries: int, data, starts, valid,
             record_offsets, start_offset: int) -> int:
    """Put each key (valid, offset >= start_offset) with its offset, in order; `size[0]` counts
    the entries. Stops before a put when the map holds max_entries (Kafka checks before every
    put, new key or not); returns how many records were done."""
    for i in range(len(record_offsets)):
        if not valid[i] or record_offsets[i] < start_offset:
            continue
        if size[0] >= max_entries:
            return i
        hi, lo = key_hash(data, int(starts[i]), int(starts[i + 1]))
        s = _slot(hashes_hi, hashes_lo, offsets, hi, lo)
        if offsets[s] == EMPTY:
            hashes_hi[s], hashes_lo[s] = hi, lo
            size[0] += 1
        offsets[s] = record_offsets[i]
    return len(record_offsets)


@njit(cache=True)
def get_keys(hashes_hi, hashes_lo, offsets, data, starts, valid, out) -> None:
    """out[i] = the newest offset of key i, or -1 (null key, or not in the map)."""
    for i in range(len(out)):
        if not valid[i]:
            out[i] = -1
            continue
        hi, lo = key_hash(data, int(starts[i]), int(starts[i + 1]))
        out[i] = offsets[_slot(hashes_hi, hashes_lo, offsets, hi, lo)]


class OffsetMap:
    def __init__(self, buffer_bytes: int = DEFAULT_DEDUPE_BUFFER_BYTES,
                 load_factor: float = DEFAULT_LOAD_FACTOR, *, jit: bool = True):
        slots = max(2, buffer_bytes // SLOT_BYTES)
        self.max_entries = max(1, min(slots - 1, int(slots * load_factor)))
        self._hi = np.zeros(slots, np.int64)
        self._lo = np.zeros(slots, np.int64)
        self._offsets = np.full(slots, EMPTY, np.int64)
        self._size = np.zeros(1, np.int64)
        self._put = put_keys if jit else put_keys.py_func
        self._get = get_keys if jit else get_keys.py_func
        self.latest_offset = -1

    def __len__(self) -> int:
        return int(self._size[0])

    @property
    def full(self) -> bool:
        return len(self) >= self.max_entries

    def put(self, keys: BinaryColumn, record_offsets: np.ndarray, start_offset: int) -> int:
        """Put the non-null keys of records at or past `start_offset`, in order, each with its
        offset, updating latest_offset as Kafka does (each put sets it). Returns how many
        records were done: all of them, unless the map filled up."""
        record_offsets = np.ascontiguousarray(record_offsets, np.int64)
        valid = _valid(keys)
        done = self._put(self._hi, self._lo, self._offsets, self._size, self.max_entries,
                         keys.data, keys.offsets, valid, record_offsets, start_offset)
        put = np.flatnonzero(valid[:done] & (record_offsets[:done] >= start_offset))
        if len(put):
            self.latest_offset = int(record_offsets[put[-1]])
        return done

    def get(self, keys: BinaryColumn) -> np.ndarray:
        """The newest offset of each key (-1: null, or not in the map)."""
        out = np.empty(len(keys), np.int64)
        self._get(self._hi, self._lo, self._offsets, keys.data, keys.offsets, _valid(keys), out)
        return out


def _valid(keys: BinaryColumn) -> np.ndarray:
    return (np.ones(len(keys), np.bool_) if keys.valid is None
            else np.ascontiguousarray(keys.valid, np.bool_))
