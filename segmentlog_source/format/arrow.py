"""RecordColumns <-> pyarrow arrays, buffer to buffer (no Python object per row).

Arrow layouts used (all little-endian, bitmaps LSB first)::

    binary / string   validity bitmap (or none) | int32 offsets[n+1] | data bytes
    int64 / int32     none | values
    timestamp[us,UTC] none | int64 microseconds (Kafka's ms * 1000)
    list<struct<key: string, value: binary>>
                      validity (null: no headers) | int32 list offsets[n+1] ; child
                      struct (no nulls) of the header key strings and value binaries

The arrays match Spark's expected Arrow schema to the letter (spark/schema.py): `binary`,
never `large_binary`.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from ..errors import BadOptionError, SegmentLogError
from .records import BinaryColumn, HeaderColumns, RecordColumns

TIMESTAMP_TYPE = pa.timestamp("us", tz="UTC")
HEADER_STRUCT = pa.struct([("key", pa.string()), ("value", pa.binary())])
HEADERS_TYPE = pa.list_(HEADER_STRUCT)
_UNIT_PER_MS = {"s": None, "ms": 1, "us": 1000, "ns": 1_000_000}


def _bitmap(valid: np.ndarray | None):
    """(validity buffer or None, null count) from a bool-per-row array."""
    if valid is None:
        return None, 0
    nulls = len(valid) - int(np.count_nonzero(valid))
    if nulls == 0:
        return None, 0
    return pa.py_buffer(np.packbits(valid, bitorder="little")), nulls


def binary_array(col: BinaryColumn, type_: pa.DataType = pa.binary()) -> pa.Array:
    validity, nulls = _bitmap(col.valid)
    offsets = col.offsets
    if offsets.dtype != np.int32:
        if len(offsets) and offsets[-1] > np.iinfo(np.int32).max:
            raise SegmentLogError(f"{offsets[-1]} bytes do not fit one Arrow `binary` array "
                                  "(int32 offsets); decode fewer batches at a time")
        offsets = offsets.astype(np.int32)
    return pa.Array.from_buffers(type_, len(col), [validity, pa.py_buffer(offsets),
                                                   pa.py_buffer(col.data)], null_count=nulls)


def timestamp_array(ms: np.ndarray) -> pa.Array:
    return pa.Array.from_buffers(TIMESTAMP_TYPE, len(ms), [None, pa.py_buffer(ms * 1000)])


def headers_array(headers: HeaderColumns) -> pa.Array:
    """list<struct<key: string, value: binary>>; keys that are not UTF-8 get U+FFFD like Java."""
    keys = binary_array(headers.keys, pa.string())
    try:
        keys.validate(full=True)
    except pa.ArrowInvalid:  # rare: Java's String decoding replaces malformed bytes
        keys = pa.array([k.decode("utf-8", "replace") for k in headers.keys.to_pylist()],
                        pa.string())
    values = binary_array(headers.values)
    entries = pa.StructArray.from_arrays([keys, values], fields=list(HEADER_STRUCT))
    offsets = headers.offsets.astype(np.int32, copy=False)
    # A record without headers is NULL, not [], as in Spark's Kafka source (its row converter
    # puts null when the record's header iterator is empty): a ported job's `headers IS NULL`
    # must keep its meaning.
    validity, nulls = _bitmap(offsets[1:] != offsets[:-1])
    return pa.Array.from_buffers(HEADERS_TYPE, len(offsets) - 1,
                                 [validity, pa.py_buffer(offsets)], null_count=nulls,
                                 children=[entries])


def to_arrow(columns: RecordColumns) -> dict[str, pa.Array]:
    """Arrays named like Spark's Kafka source columns; key/value/headers when decoded."""
    out = {"offset": pa.Array.from_buffers(pa.int64(), columns.num_rows,
                                           [None, pa.py_buffer(columns.offsets)]),
           "timestamp": timestamp_array(columns.timestamps),
           "timestampType": pa.Array.from_buffers(pa.int32(), columns.num_rows,
                                                  [None, pa.py_buffer(columns.timestamp_types)])}
    if columns.keys is not None:
        out["key"] = binary_array(columns.keys)
    if columns.values is not None:
        out["value"] = binary_array(columns.values)
    if columns.headers is not None:
        out["headers"] = headers_array(columns.headers)
    return out


# ------------------------------------------------------------------------ pyarrow -> encoder

def _combined(arr) -> pa.Array:
    if isinstance(arr, pa.ChunkedArray):
        return arr.combine_chunks() if arr.num_chunks != 1 else arr.chunk(0)
    return arr


def _valid(arr: pa.Array) -> np.ndarray | None:
    if arr.null_count == 0:
        return None
    bits = np.frombuffer(arr.buffers()[0], np.uint8)
    return np.unpackbits(bits, bitorder="little", count=arr.offset + len(arr))[arr.offset:] \
        .astype(bool)


def binary_column(arr, name: str = "value") -> BinaryColumn:
    """A binary/string (or large_*) array as a BinaryColumn, sharing its data buffer."""
    arr = _combined(arr)
    t = arr.type
    if pa.types.is_binary(t) or pa.types.is_string(t):
        dtype = np.int32
    elif pa.types.is_large_binary(t) or pa.types.is_large_string(t):
        dtype = np.int64
    else:
        raise BadOptionError(name, str(t), "must be binary or string")
    n = len(arr)
    bufs = arr.buffers()
    offsets = np.frombuffer(bufs[1], dtype, count=arr.offset + n + 1)[arr.offset:]
    data = (np.frombuffer(bufs[2], np.uint8) if bufs[2] is not None
            else np.zeros(0, np.uint8))
    return BinaryColumn(_valid(arr), offsets, data)


def timestamps_ms(arr, null_value: int | None = None) -> np.ndarray:
    """Kafka ms from a timestamp (any unit but s, floored) or int64-ms array; nulls = null_value."""
    arr = _combined(arr)
    if pa.types.is_timestamp(arr.type):
        per_ms = _UNIT_PER_MS[arr.type.unit]
        if per_ms is None:
            per_ms = 1
            arr = arr.cast(pa.timestamp("ms", arr.type.tz))
        raw = np.frombuffer(arr.buffers()[1], np.int64, count=arr.offset + len(arr))
        ms = raw[arr.offset:] // per_ms
    elif pa.types.is_integer(arr.type):
        ms = arr.cast(pa.int64()).fill_null(0).to_numpy(zero_copy_only=False)
    else:
        raise BadOptionError("timestamp", str(arr.type), "must be a timestamp or int64 ms")
    valid = _valid(arr)
    if valid is not None:
        if null_value is None:
            raise BadOptionError("timestamp", None, "null timestamps need a default value")
        ms = np.where(valid, ms, null_value)
    return np.ascontiguousarray(ms, np.int64)


def header_columns(arr) -> HeaderColumns:
    """list/large_list/map of struct<key: string, value: binary> (a null list = no headers)."""
    arr = _combined(arr)
    t = arr.type
    if not (pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_map(t)):
        raise BadOptionError("headers", str(t), "must be list<struct<key, value>> or a map")
    dtype = np.int64 if pa.types.is_large_list(t) else np.int32
    n = len(arr)
    offsets = np.frombuffer(arr.buffers()[1], dtype, count=arr.offset + n + 1)[arr.offset:]
    lo, hi = int(offsets[0]), int(offsets[-1])
    entries = arr.values.slice(lo, hi - lo)  # a map's values are its struct<key, value> too
    lengths = np.diff(offsets)
    valid = _valid(arr)
    if valid is not None:  # a null list may still own entries (Arrow allows it): drop them
        entries = entries.filter(pa.array(np.repeat(valid, lengths)))
        lengths = np.where(valid, lengths, 0)
    if entries.null_count:
        raise BadOptionError("headers", None, "a header entry is null")
    keys = binary_column(entries.field(0), "headers.key")
    if keys.valid is not None:
        raise BadOptionError("headers", None, "a header key is null")
    list_offsets = np.zeros(n + 1, np.int64)
    np.cumsum(lengths, out=list_offsets[1:])
    return HeaderColumns(list_offsets, keys, binary_column(entries.field(1), "headers.value"))


def columns_from_arrow(*, timestamp, key=None, value=None, headers=None, offset=None,
                       null_timestamp: int | None = None) -> RecordColumns:
    """Encoder input from pyarrow arrays (or chunked arrays) of equal length.

    key/value: binary or string (large_* too); timestamp: timestamp[*] or int64 ms, nulls
    replaced by `null_timestamp` (a producer would use the current time); headers: see
    header_columns; offset: int64 absolute offsets, or None for consecutive ones.
    """
    ts = timestamps_ms(timestamp, null_timestamp)
    return RecordColumns(
        timestamps=ts,
        offsets=None if offset is None else np.asarray(_combined(offset).to_numpy(), np.int64),
        keys=None if key is None else binary_column(key, "key"),
        values=None if value is None else binary_column(value, "value"),
        headers=None if headers is None else header_columns(headers))
