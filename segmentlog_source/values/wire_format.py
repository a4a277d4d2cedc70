"""Schema Registry's wire format: how a serializer frames each key or value.

    0  magic byte, always 0
    1  schema id, int32 big-endian (the registry's global id)
    5  Protobuf only: the message indexes, zigzag varints (a count, then the path of the
       message type in its .proto file; the count 0 alone means [0], the first message)
    5+ the body: Avro binary, JSON text, or Protobuf

A payload shorter than the header or with another first byte was not written by a Schema
Registry serializer; its row is malformed. (Schema Registry 8.0 added an opt-in framing with
magic byte 1 and a 16-byte schema GUID, or the id in a record header: not read here.)
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

MAGIC = 0
GUID_MAGIC = 1      # Schema Registry 8.0+, opt-in: a 16-byte schema GUID instead of the id
HEADER_BYTES = 5


def binary_buffers(array: pa.Array) -> tuple[bytes, np.ndarray, np.ndarray]:
    """(data, offsets, valid) of an Arrow binary array: payload i is
    data[offsets[i]:offsets[i + 1]] where valid[i]."""
    n = len(array)
    if n == 0:
        return b"", np.zeros(1, np.int64), np.zeros(0, bool)
    if array.type != pa.binary():
        raise TypeError(f"expected a binary array, not {array.type}")
    offsets = np.frombuffer(array.buffers()[1], np.int32, n + 1, array.offset * 4)
    first, last = int(offsets[0]), int(offsets[-1])
    data_buffer = array.buffers()[2]
    # only the slice's bytes: a slice of a batch shares the whole batch's buffer
    data = b"" if data_buffer is None else data_buffer.slice(first, last - first).to_pybytes()
    valid = ~np.asarray(array.is_null(), bool)
    return data, offsets.astype(np.int64) - first, valid


def split_framed(data: bytes, offsets: np.ndarray, valid: np.ndarray
                 ) -> tuple[list[int | None], list[int], list[int], list[str | None]]:
    """(schema ids, body starts, body ends, error reasons) per payload: a body's start is -1
    for a null payload (no reason) and a malformed one (with its reason)."""
    n = len(valid)
    starts, ends = offsets[:-1], offsets[1:]
    lengths = ends - starts
    raw = np.frombuffer(data, np.uint8) if data else np.zeros(1, np.uint8)
    framed = valid & (lengths >= HEADER_BYTES)
    head = np.where(framed, starts, 0)
    magic = np.where(framed, raw[np.minimum(head, len(raw) - 1)], MAGIC)
    ok = framed & (magic == MAGIC)
    ids = np.zeros(n, np.int64)
    if ok.any():
        at = head[ok]
        ids[ok] = (raw[at + 1].astype(np.int64) << 24 | raw[at + 2].astype(np.int64) << 16
                   | raw[at + 3].astype(np.int64) << 8 | raw[at + 4].astype(np.int64))
        ids[ok] = np.where(ids[ok] >= 2**31, ids[ok] - 2**32, ids[ok])   # int32, signed
    errors: list[str | None] = [None] * n
    for i in np.flatnonzero(valid & ~ok).tolist():
        if lengths[i] < HEADER_BYTES:
            errors[i] = (f"truncated: {int(lengths[i])} bytes, shorter than the 5-byte Schema "
                         f"Registry header")
        elif magic[i] == GUID_MAGIC:
            errors[i] = ("magic byte 0x01: Schema Registry 8's schema-GUID framing, which "
                         "segmentlog does not read (it reads the schema-id framing, 0x00)")
        else:
            errors[i] = (f"bad magic byte 0x{int(magic[i]):02x}: a Schema Registry payload "
                         f"starts with 0x00")
    body = np.where(ok, starts + HEADER_BYTES, -1)
    id_list = [int(x) if good else None for x, good in zip(ids.tolist(), ok.tolist())]
    return id_list, body.tolist(), ends.tolist(), errors
