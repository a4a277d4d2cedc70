"""Kafka's default partitioner for keyed records: toPositive(murmur2(key)) % numPartitions.

murmur2 (Kafka's variant, Utils.murmur2), 32-bit arithmetic with wrap-around, logical shifts::

    seed 0x9747b28c, m 0x5bd1e995, r 24, h = seed ^ len(key)
    per 4-byte chunk k (little-endian): k *= m; k ^= k >>> r; k *= m; h *= m; h ^= k
    tail (falls through): 3 left: h ^= b[2] << 16; 2: h ^= b[1] << 8; 1: h ^= b[0]; h *= m
    finally: h ^= h >>> 13; h *= m; h ^= h >>> 15; the result is read as a signed int32

toPositive(x) = x & 0x7fffffff (a mask, not abs). A null key is keyless (sticky partitioning,
random by design), so the vectorised form gives -1 for it and the caller spreads those rows;
an empty key is a key.

The loops are numba kernels; each one's `.py_func` is the plain-Python twin the tests also run.
They work in int64 with a 32-bit mask after every step: both factors of each product are below
2**32 and m below 2**31, so no intermediate overflows int64 in either twin.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
from numba import njit

from ..errors import BadOptionError

_SEED = 0x9747B28C
_M = 0x5BD1E995
_MASK = 0xFFFFFFFF


@njit(cache=True)
def _murmur2_span(data, start, end):
    """Kafka's murmur2 of data[start:end] (uint8 array) as a signed int32 value."""
    # int(): offsets may arrive as numpy int32, whose arithmetic would overflow in the Python twin.
    pos, stop = int(start), int(end)
    h = (_SEED ^ (stop - pos)) & _MASK
    while pos + 4 <= stop:
        k = (int(data[pos]) | (int(data[pos + 1]) << 8) | (int(data[pos + 2]) << 16)
             | (int(data[pos + 3]) << 24))
        k = (k * _M) & _MASK
        k ^= k >> 24
        k = (k * _M) & _MASK
        h = ((h * _M) & _MASK) ^ k
        pos += 4
    left = stop - pos
    if left == 3:
        h ^= int(data[pos + 2]) << 16
    if left >= 2:
        h ^= int(data[pos + 1]) << 8
    if left >= 1:
        h ^= int(data[pos])
        h = (h * _M) & _MASK
    h ^= h >> 13
    h = (h * _M) & _MASK
    h ^= h >> 15
    return h - (1 << 32) if h >= (1 << 31) else h


@njit(cache=True)
def _partitions(offsets, data, valid, num_partitions, out):
    """out[i] = partition of key i (bytes data[offsets[i]:offsets[i+1]]), -1 where not valid[i]."""
    for i in range(out.shape[0]):
        if valid[i]:
            out[i] = (_murmur2_span(data, offsets[i], offsets[i + 1]) & 0x7FFFFFFF) % num_partitions
        else:
            out[i] = -1


def murmur2(key: bytes) -> int:
    """Kafka's murmur2 hash of `key` (signed int32), as Utils.murmur2 returns it."""
    data = np.frombuffer(key, np.uint8)
    return int(_murmur2_span(data, 0, data.shape[0]))


def partition_for_key(key: bytes | None, num_partitions: int) -> int:
    """The partition Kafka's default partitioner picks for `key`; -1 for a null key."""
    _check_partitions(num_partitions)
    if key is None:
        return -1
    return (murmur2(key) & 0x7FFFFFFF) % num_partitions


def partitions_for_keys(keys, num_partitions: int) -> np.ndarray:
    """Partitions (int32) of many keys: a pyarrow binary/string array (chunked or not) or a list
    of bytes/None. Null keys get -1."""
    _check_partitions(num_partitions)
    if isinstance(keys, pa.ChunkedArray):
        parts = [partitions_for_keys(chunk, num_partitions) for chunk in keys.chunks]
        return np.concatenate(parts) if parts else np.empty(0, np.int32)
    if not isinstance(keys, pa.Array):
        keys = pa.array(keys, type=pa.binary())
    if pa.types.is_string(keys.type):
        keys = keys.view(pa.binary())
    elif pa.types.is_large_string(keys.type):
        keys = keys.view(pa.large_binary())
    elif not (pa.types.is_binary(keys.type) or pa.types.is_large_binary(keys.type)):
        raise BadOptionError("keys", keys.type, "partition keys must be a binary or string array")
    count = len(keys)
    out = np.empty(count, np.int32)
    if count == 0:
        return out
    _validity, offsets_buf, data_buf = keys.buffers()
    offset_type = np.int64 if pa.types.is_large_binary(keys.type) else np.int32
    # The buffers belong to the unsliced parent: slice the offsets by the array's own offset.
    offsets = np.frombuffer(offsets_buf, offset_type)[keys.offset:keys.offset + count + 1]
    data = np.frombuffer(data_buf, np.uint8) if data_buf is not None else np.empty(0, np.uint8)
    valid = keys.is_valid().to_numpy(zero_copy_only=False)
    _partitions(offsets, data, valid, num_partitions, out)
    return out


def _check_partitions(num_partitions: int) -> None:
    if isinstance(num_partitions, bool) or not isinstance(num_partitions, (int, np.integer)) \
            or not 0 < num_partitions < 2**31:
        raise BadOptionError("num_partitions", num_partitions, "must be a positive int32")
