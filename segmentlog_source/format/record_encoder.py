"""Encoding rows into v2 record batches: columns -> kernels.plan_batches / encode_records ->
header + CRC-32C (+ codec). Record layout: records.py.
"""

from __future__ import annotations

from itertools import chain
from typing import Sequence

from crc32c import crc32c
import numpy as np

from ..errors import BadOptionError, SegmentLogError
from ..format import kernels as K
from .batch import (ATTR_CONTROL, ATTR_DELETE_HORIZON, ATTR_TIMESTAMP_TYPE, ATTR_TRANSACTIONAL,
                    CODEC_IDS, CODEC_NAMES, INT32_MAX, LOG_OVERHEAD, NO_SEQUENCE, V2_CRC_START,
                    V2_HEADER_SIZE, BatchHeader)
from .codecs import compress
from .kernels import read_only
from .records import BinaryColumn, HeaderColumns, Record, RecordColumns
from .varint import varint_sizes

_CRC_OFFSET = 17
_EMPTY_U8 = np.zeros(0, np.uint8)
_EMPTY_I64 = np.zeros(0, np.int64)


class EncodedBatches:
    """Batches laid end to end as in a .log (`data`: a writable memoryview, which file.write,
    crc32c and bytes() take as is) and their `headers`, headers[i].position being where batch i
    starts. The headers are built on first use: a caller that only writes `data` (the storage
    layer re-reads headers as it appends) should not pay ~0.4 us per batch for them."""

    __slots__ = ("data", "_fields", "_positions", "_headers")

    def __init__(self, data: memoryview, fields: np.ndarray, positions: np.ndarray):
        self.data, self._fields, self._positions, self._headers = data, fields, positions, None

    @property
    def num_batches(self) -> int:
        return len(self._positions)

    @property
    def headers(self) -> list[BatchHeader]:
        if self._headers is None:
            self._headers = _headers_list(self._fields, self._positions)
        return self._headers


def _next_sequences(base: int, deltas: np.ndarray) -> np.ndarray:
    """Kafka's DefaultRecordBatch.incrementSequence over deltas: wraps past Int.MAX to 0."""
    if base == NO_SEQUENCE:
        return np.full(len(deltas), NO_SEQUENCE, np.int64)
    return np.where(base > INT32_MAX - deltas, deltas - (INT32_MAX - base) - 1, base + deltas)


def _kernel_input(col: BinaryColumn | None, n: int, name: str):
    """(valid uint8 (empty = no nulls), offsets int64, data uint8) as the kernels take them; no
    column = all null. plan_batches checks that the offsets ascend; here, that they stay within
    the data (the kernels copy with memcpy, without bounds checks)."""
    if col is None:
        return (read_only(np.zeros(n, np.uint8)), read_only(np.zeros(n + 1, np.int64)),
                read_only(_EMPTY_U8))
    if len(col) != n:
        raise BadOptionError(name, len(col), f"rows given, but there are {n} timestamps")
    offsets = np.ascontiguousarray(col.offsets, np.int64)
    data = np.ascontiguousarray(col.data).view(np.uint8)
    if n and (offsets[0] < 0 or offsets[-1] > len(data)):
        raise BadOptionError(name, None, f"offsets do not stay within the {len(data)} data bytes")
    valid = _EMPTY_U8 if col.valid is None else np.ascontiguousarray(col.valid, np.bool_)
    return read_only(valid.view(np.uint8)), read_only(offsets), read_only(data)


def _lengths(valid: np.ndarray, offsets: np.ndarray, name: str) -> np.ndarray:
    """Row lengths (-1 = null) of a column as _kernel_input gives it."""
    lengths = np.diff(offsets)
    if len(lengths) and lengths.min() < 0:
        raise BadOptionError(name, None, "offsets do not ascend")
    return np.where(valid, lengths, -1) if len(valid) else lengths


def _header_input(hdr: HeaderColumns | None, n: int):
    """Per row: bytes of headerCount + headers (empty: no headers); then the kernel's header
    arrays: list offsets, key offsets and data, value lengths (-1 = null), offsets and data."""
    if hdr is None:
        none = _kernel_input(None, 0, "headers")
        return _EMPTY_I64, read_only(_EMPTY_I64), none[1], none[2], _EMPTY_I64, none[1], none[2]
    if len(hdr.offsets) != n + 1:
        raise BadOptionError("headers", len(hdr.offsets) - 1, f"rows given, expected {n}")
    m = len(hdr.keys)
    if hdr.keys.valid is not None and not hdr.keys.valid.all():
        raise BadOptionError("headers", None, "a header key is null")
    list_offsets = np.ascontiguousarray(hdr.offsets, np.int64)
    if (list_offsets[0] < 0 or list_offsets[-1] > m or (np.diff(list_offsets) < 0).any()):
        raise BadOptionError("headers", None, "list offsets do not fit the header columns")
    _, key_offsets, key_data = _kernel_input(hdr.keys, m, "headers.key")
    value_valid, value_offsets, value_data = _kernel_input(hdr.values, m, "headers.value")
    key_len = _lengths(_EMPTY_U8, key_offsets, "headers.key")
    value_len = _lengths(value_valid, value_offsets, "headers.value")
    each = (varint_sizes(key_len) + key_len
            + np.where(value_len < 0, 1, varint_sizes(value_len) + value_len))
    sums = np.zeros(m + 1, np.int64)
    np.cumsum(each, out=sums[1:])
    lo, hi = list_offsets[:-1], list_offsets[1:]
    return (varint_sizes(hi - lo) + sums[hi] - sums[lo], read_only(list_offsets), key_offsets,
            key_data, value_len, value_offsets, value_data)


def _attributes(codec: int, log_append_time, is_transactional, is_control, delete_horizon):
    return (codec | (ATTR_TIMESTAMP_TYPE if log_append_time is not None else 0)
            | (ATTR_TRANSACTIONAL if is_transactional else 0)
            | (ATTR_CONTROL if is_control else 0)
            | (ATTR_DELETE_HORIZON if delete_horizon is not None else 0))


# The v2 header as a packed big-endian record: all batches' headers are filled at once.
_HEADER_DTYPE = np.dtype([
    ("base_offset", ">i8"), ("length", ">i4"), ("epoch", ">i4"), ("magic", "i1"),
    ("crc", ">u4"), ("attributes", ">i2"), ("last_delta", ">i4"), ("base_ts", ">i8"),
    ("max_ts", ">i8"), ("producer_id", ">i8"), ("producer_epoch", ">i2"),
    ("base_sequence", ">i4"), ("count", ">i4")])
assert _HEADER_DTYPE.itemsize == V2_HEADER_SIZE


def _headers_list(hdr: np.ndarray, positions: np.ndarray) -> list[BatchHeader]:
    sizes = hdr["length"].astype(np.int64) + LOG_OVERHEAD
    last = hdr["base_offset"] + hdr["last_delta"]
    columns = (positions, sizes, hdr["magic"], hdr["base_offset"], last, hdr["crc"],
               hdr["attributes"], hdr["epoch"], hdr["base_ts"], hdr["max_ts"],
               hdr["producer_id"], hdr["producer_epoch"], hdr["base_sequence"], hdr["count"])
    return list(map(BatchHeader._make, zip(*(c.tolist() for c in columns))))


def encode_batches(columns: RecordColumns, *, base_offset: int = 0,
                   max_records: int | None = None, max_bytes: int | None = None,
                   **fields) -> EncodedBatches:
    """Encode rows into v2 batches of at most max_records rows / max_bytes bytes each.

    Offsets: columns.offsets if given, else consecutive from base_offset; batch i > 0 starts at
    its first row's offset (batch 0 at base_offset, which may lie below its first record, as
    after compaction). Base sequences advance with the rows like a producer's. max_bytes bounds
    the *uncompressed* batch (a compressed one is smaller); a batch holds at least one row.
    `fields`: partition_leader_epoch=-1, producer_id=-1, producer_epoch=-1, base_sequence=-1,
    is_transactional=False, is_control=False, log_append_time=None (LogAppendTime batches with
    that maxTimestamp), delete_horizon=None (attribute bit 6, baseTimestamp = horizon),
    codec=0 (id or name), level=None, jit=True (False: the kernels' Python twins).
    """
    if columns.num_rows == 0:  # (encode_batch, not this, writes the cleaner's empty batch)
        return EncodedBatches(memoryview(bytearray()), np.zeros(0, _HEADER_DTYPE),
                              np.zeros(0, np.int64))
    return _encode(columns, base_offset, max_records or INT32_MAX, max_bytes or K.INT64_MAX,
                   **fields)


def encode_batch(records: Sequence[Record] | None = None, *,
                 columns: RecordColumns | None = None, base_offset: int | None = None,
                 last_offset: int | None = None, max_timestamp: int | None = None,
                 **fields) -> bytes:
    """One complete v2 batch from Records or columns (`fields` as for encode_batches).

    base_offset defaults to the first record's offset; last_offset to the last record's (it may
    lie beyond it, as in a compacted batch); max_timestamp to the records' maximum (or the
    log_append_time). With no records this is the header-only batch the log cleaner keeps
    (DefaultRecordBatch.writeEmptyHeader: codec none, baseTimestamp -1).
    """
    if (records is None) == (columns is None):
        raise BadOptionError("records", None, "give either records or columns")
    if records is not None:
        columns = RecordColumns.from_records(records)
    if base_offset is None:
        has_offsets = columns.offsets is not None and len(columns.offsets) > 0
        base_offset = int(columns.offsets[0]) if has_offsets else 0
    batches = _encode(columns, base_offset, INT32_MAX, K.INT64_MAX, last_offset=last_offset,
                      max_timestamp=max_timestamp, **fields)
    return bytes(batches.data)


def _encode(columns: RecordColumns, base_offset: int, max_records: int, max_bytes: int, *,
            last_offset=None, max_timestamp=None, partition_leader_epoch=-1, producer_id=-1,
            producer_epoch=-1, base_sequence=NO_SEQUENCE, is_transactional=False,
            is_control=False, log_append_time=None, delete_horizon=None, codec=0, level=None,
            jit=True) -> EncodedBatches:
    codec_id = CODEC_IDS[codec] if isinstance(codec, str) else int(codec)
    if not 0 <= codec_id < len(CODEC_NAMES):
        raise BadOptionError("codec", codec, f"unknown codec (known: {CODEC_NAMES})")
    attributes = _attributes(codec_id, log_append_time, is_transactional, is_control,
                             delete_horizon)
    n = columns.num_rows
    if n == 0:  # DefaultRecordBatch.writeEmptyHeader: codec none, baseTimestamp -1
        last = base_offset if last_offset is None else last_offset
        _check_last_offset(last, base_offset, base_offset)
        max_ts = log_append_time if max_timestamp is None else max_timestamp
        hdr = np.zeros(1, _HEADER_DTYPE)
        hdr[0] = (base_offset, V2_HEADER_SIZE - LOG_OVERHEAD, partition_leader_epoch, 2, 0,
                  attributes & ~7, last - base_offset,
                  -1 if delete_horizon is None else delete_horizon,
                  -1 if max_ts is None else max_ts, producer_id, producer_epoch, base_sequence, 0)
        hdr["crc"] = crc32c(hdr.view(np.uint8)[V2_CRC_START:])
        return EncodedBatches(memoryview(bytearray(hdr.tobytes())), hdr, np.zeros(1, np.int64))
    ts = read_only(np.ascontiguousarray(columns.timestamps, np.int64))
    if ts.min() < -1 or ts.max() == K.INT64_MAX:
        raise BadOptionError("timestamp", int(ts.min()), "invalid timestamp: Kafka allows -1 "
                             "and >= 0 only")
    if columns.offsets is None:
        rel = _EMPTY_I64  # the kernels number the rows 0, 1, 2, ...
    else:
        rel = np.asarray(columns.offsets, np.int64) - base_offset
        if len(rel) != n:
            raise BadOptionError("offsets", len(rel), f"offsets given for {n} timestamps")
        if rel[0] < 0 or (n > 1 and not (np.diff(rel) > 0).all()):
            raise BadOptionError("offsets", base_offset, "record offsets must increase "
                                 "strictly from the base offset")
    rel = read_only(rel)
    fixed_base = K.NO_FIXED_BASE if delete_horizon is None else int(delete_horizon)
    if delete_horizon is not None and not -1 <= fixed_base < K.INT64_MAX:
        raise BadOptionError("delete_horizon", delete_horizon, "must be >= -1")
    key_valid, key_offsets, key_data = _kernel_input(columns.keys, n, "key")
    value_valid, value_offsets, value_data = _kernel_input(columns.values, n, "value")
    (header_bytes, list_offsets, hkey_offsets, hkey_data, hvalue_len, hvalue_offsets,
     hvalue_data) = _header_input(columns.headers, n)
    plan, write = ((K.plan_batches, K.encode_records) if jit
                   else (K.plan_batches.py_func, K.encode_records.py_func))
    first = np.empty(n + 1, np.int64)
    rec_bytes = np.empty(n, np.int64)
    batch_max_ts = np.empty(n, np.int64)
    error = np.zeros(2, np.int64)
    nb = plan(ts, rel, key_valid, key_offsets, value_valid, value_offsets, header_bytes,
              fixed_base, max_records, max_bytes, first, rec_bytes, batch_max_ts, error)
    if nb < 0:
        kind, row = error.tolist()
        if kind == K.PLAN_OFFSET_DELTA:
            raise BadOptionError("offsets", row, "row's offset is more than 2**31 from its "
                                 "batch's base offset")
        raise BadOptionError("key" if kind == K.PLAN_KEY_OFFSETS else "value", row,
                             "offsets do not ascend at this row")

    def rel_of(rows: np.ndarray) -> np.ndarray:  # offsets relative to base_offset
        return rows if columns.offsets is None else rel[rows]

    # The per-batch header fields, computed for all batches at once.
    lo, hi = first[:nb], first[1:nb + 1]
    hdr = np.zeros(nb, _HEADER_DTYPE)
    hdr["base_offset"] = batch_base = base_offset + np.where(np.arange(nb) > 0, rel_of(lo), 0)
    last = base_offset + rel_of(hi - 1)
    if last_offset is not None:
        _check_last_offset(last_offset, int(last[-1]), int(batch_base[-1]))
        last[-1] = last_offset
    hdr["last_delta"] = last - batch_base
    hdr["epoch"], hdr["magic"], hdr["attributes"] = partition_leader_epoch, 2, attributes
    hdr["base_ts"] = ts[lo] if delete_horizon is None else fixed_base
    hdr["max_ts"] = batch_max_ts[:nb] if log_append_time is None else log_append_time
    if max_timestamp is not None:
        hdr["max_ts"] = max_timestamp
    hdr["producer_id"], hdr["producer_epoch"] = producer_id, producer_epoch
    hdr["base_sequence"] = _next_sequences(base_sequence, lo)
    hdr["count"] = hi - lo
    if codec_id == 0:
        # Records go straight to their final place behind a 61-byte gap for each header.
        sizes = rec_bytes[:nb] + V2_HEADER_SIZE
    else:  # records back to back, then each batch's slice compressed
        records = np.empty(int(rec_bytes[:nb].sum()), np.uint8)
        starts = np.zeros(nb + 1, np.int64)
        np.cumsum(rec_bytes[:nb], out=starts[1:])
        write(ts, rel, key_valid, key_offsets, key_data, value_valid, value_offsets,
              value_data, header_bytes, list_offsets, hkey_offsets, hkey_data, hvalue_len,
              hvalue_offsets, hvalue_data, fixed_base, first, nb, records, starts)
        bounds = starts.tolist()
        areas = [compress(codec_id, records[a:b], magic=2, level=level)
                 for a, b in zip(bounds, bounds[1:])]
        sizes = np.fromiter(map(len, areas), np.int64, nb) + V2_HEADER_SIZE
    if (sizes - LOG_OVERHEAD > INT32_MAX).any():
        raise BadOptionError("max_bytes", max_bytes, "a batch would not fit Kafka's int32 "
                             "batch length")
    hdr["length"] = sizes - LOG_OVERHEAD
    positions = np.zeros(nb + 1, np.int64)
    np.cumsum(sizes, out=positions[1:])
    rows = hdr.view(np.uint8).reshape(nb, V2_HEADER_SIZE)
    if codec_id == 0:
        # Not zero-filled (a whole extra pass over memory): the plan is exact, so the kernel
        # and the headers write every byte, which the end position below double-checks.
        view = np.empty(int(positions[nb]), np.uint8)
        end = write(ts, rel, key_valid, key_offsets, key_data, value_valid, value_offsets,
                    value_data, header_bytes, list_offsets, hkey_offsets, hkey_data, hvalue_len,
                    hvalue_offsets, hvalue_data, fixed_base, first, nb, view,
                    positions[:nb] + V2_HEADER_SIZE)
        if end != positions[nb]:
            raise SegmentLogError(f"internal error: records end at {end}, planned {positions[nb]}")
        in_place = positions[:nb, None] + np.arange(V2_HEADER_SIZE)
        view[in_place] = rows
        out, bounds = memoryview(view), positions.tolist()
        hdr["crc"] = np.fromiter((crc32c(out[a + V2_CRC_START:b])
                                  for a, b in zip(bounds, bounds[1:])), np.uint32, nb)
        view[in_place[:, _CRC_OFFSET:_CRC_OFFSET + 4]] = rows[:, _CRC_OFFSET:_CRC_OFFSET + 4]
    else:
        hdr["crc"] = [crc32c(area, crc32c(row[V2_CRC_START:])) for row, area in zip(rows, areas)]
        out = memoryview(bytearray().join(chain.from_iterable(zip(rows, areas))))
    return EncodedBatches(out, hdr, positions[:nb])


def _check_last_offset(last_offset: int, last_record: int, base_offset: int) -> None:
    if not last_record <= last_offset <= base_offset + INT32_MAX or last_offset < base_offset:
        raise BadOptionError("last_offset", last_offset,
                             f"must be >= the last record's offset {last_record} and within "
                             f"2**31 above the base offset {base_offset}")
