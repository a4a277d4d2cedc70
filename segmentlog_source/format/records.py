"""Records of v2 batches: decoded to columns or objects, and encoded back to batches.

A v2 batch is the 61-byte header of batch.py followed by `recordsCount` records (or one
compressed stream of them; codecs.py)::

    0 baseOffset  8 batchLength  12 partitionLeaderEpoch  16 magic(2)  17 crc (CRC-32C of [21,end))
    21 attributes  23 lastOffsetDelta  27 baseTimestamp  35 maxTimestamp  43 producerId
    51 producerEpoch  53 baseSequence  57 recordsCount  61 records...

    record: length varint | attributes int8 | timestampDelta varlong | offsetDelta varint |
            keyLength varint | key | valueLength varint | value | headerCount varint |
            headers (keyLength varint, key UTF-8, valueLength varint, value)

Record timestamps are baseTimestamp + delta, also when attribute bit 6 says baseTimestamp is a
delete horizon; with LogAppendTime (bit 3) every record's timestamp is maxTimestamp.

There is one v2 record parser: kernels.scan_records/gather_payloads. `ColumnarDecoder` drives it
over a scan chunk; `decode_batch` runs it on one entry and turns the columns into `Record`s.
Encoding mirrors it: `RecordColumns` (or Records, via columns) -> kernels.plan_batches /
encode_records -> header + CRC-32C (+ codec).
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import chain
from typing import Iterable, NamedTuple, Sequence

import numpy as np
from crc32c import crc32c

from . import kernels as K
from .batch import (ATTR_CONTROL, ATTR_DELETE_HORIZON, ATTR_TIMESTAMP_TYPE, ATTR_TRANSACTIONAL,
                    CODEC_IDS, CODEC_NAMES, CREATE_TIME, INT32_MAX, LOG_OVERHEAD, NO_SEQUENCE,
                    V2_CRC_START, V2_HEADER_SIZE, BatchHeader, parse_header)
from ..errors import BadOptionError, CorruptDataError, SegmentLogError

_CRC_OFFSET = 17
_EMPTY_U8 = np.zeros(0, np.uint8)
_EMPTY_I64 = np.zeros(0, np.int64)


class Record(NamedTuple):
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...] = ()


class DecodedBatch(NamedTuple):
    header: BatchHeader
    records: list[Record]


@dataclass(frozen=True)
class BinaryColumn:
    """An Arrow-style variable-length binary column: row i is data[offsets[i]:offsets[i+1]]."""

    valid: np.ndarray | None  # bool per row; None = no nulls
    offsets: np.ndarray       # int32 (decoded) or int64, n + 1
    data: np.ndarray          # uint8

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def to_pylist(self) -> list[bytes | None]:
        data = self.data.tobytes()
        bounds = self.offsets.tolist()
        out = [data[a:b] for a, b in zip(bounds, bounds[1:])]
        if self.valid is not None:
            out = [v if ok else None for v, ok in zip(out, self.valid.tolist())]
        return out

    @classmethod
    def from_pylist(cls, values: Sequence[bytes | None]) -> "BinaryColumn":
        lengths = np.fromiter((-1 if v is None else len(v) for v in values), np.int64,
                              len(values))
        valid = lengths >= 0
        offsets = np.zeros(len(values) + 1, np.int64)
        np.cumsum(np.maximum(lengths, 0), out=offsets[1:])
        data = np.frombuffer(b"".join(v for v in values if v is not None), np.uint8)
        return cls(None if valid.all() else valid, offsets, data)


@dataclass(frozen=True)
class HeaderColumns:
    """Headers as Arrow's list<struct<key, value>>: row i owns headers offsets[i]:offsets[i+1]."""

    offsets: np.ndarray  # int32/int64, n + 1
    keys: BinaryColumn   # UTF-8 bytes, never null
    values: BinaryColumn


@dataclass(frozen=True)
class RecordColumns:
    """Records as columns, ready for pa.Array.from_buffers (arrow.py), or input to the encoder.

    Decoded: every field is set, except keys/values/headers left out by the decoder's `fields`.
    Encoder input: `offsets` None means consecutive from the base offset, keys/values None mean
    all null, headers None means none; timestamp_types is ignored.
    """

    timestamps: np.ndarray                  # int64 ms
    offsets: np.ndarray | None = None       # int64
    timestamp_types: np.ndarray | None = None  # int32: 0 CreateTime, 1 LogAppendTime, -1 none
    keys: BinaryColumn | None = None
    values: BinaryColumn | None = None
    headers: HeaderColumns | None = None

    @property
    def num_rows(self) -> int:
        return len(self.timestamps)

    def to_records(self) -> list[Record]:
        n = self.num_rows
        keys = self.keys.to_pylist() if self.keys is not None else [None] * n
        values = self.values.to_pylist() if self.values is not None else [None] * n
        headers = [()] * n
        if self.headers is not None and len(self.headers.keys):
            names = [k.decode("utf-8", "replace") for k in self.headers.keys.to_pylist()]
            pairs = list(zip(names, self.headers.values.to_pylist()))
            bounds = self.headers.offsets.tolist()
            headers = [tuple(pairs[a:b]) for a, b in zip(bounds, bounds[1:])]
        return [Record(*row) for row in zip(self.offsets.tolist(), self.timestamps.tolist(),
                                            keys, values, headers)]

    @classmethod
    def from_records(cls, records: Sequence[Record], timestamp_type: int = CREATE_TIME,
                     ) -> "RecordColumns":
        """The slow path (legacy entries, encode_batch(records)): one Python pass per field."""
        n = len(records)
        header_list = [(k.encode("utf-8"), v) for r in records for k, v in r.headers]
        header_offsets = np.zeros(n + 1, np.int64)
        np.cumsum(np.fromiter((len(r.headers) for r in records), np.int64, n),
                  out=header_offsets[1:])
        return cls(
            timestamps=np.fromiter((r.timestamp for r in records), np.int64, n),
            offsets=np.fromiter((r.offset for r in records), np.int64, n),
            timestamp_types=np.full(n, timestamp_type, np.int32),
            keys=BinaryColumn.from_pylist([r.key for r in records]),
            values=BinaryColumn.from_pylist([r.value for r in records]),
            headers=HeaderColumns(header_offsets,
                                  BinaryColumn.from_pylist([k for k, _ in header_list]),
                                  BinaryColumn.from_pylist([v for _, v in header_list])))


ALL_FIELDS = frozenset({"key", "value", "headers"})
_FULL_RANGE = (K.INT64_MIN, K.INT64_MAX)

ERROR_REASONS = {
    K.ERR_TRUNCATED: "a field runs past the end of its record",
    K.ERR_VARINT_TOO_LONG: "varint longer than 5 bytes",
    K.ERR_VARLONG_TOO_LONG: "varlong longer than 10 bytes",
    K.ERR_RECORD_SIZE: "declared record length {value} does not match the bytes its fields take",
    K.ERR_BAD_LENGTH: "declared record length {value} is negative or runs past the end of the "
                      "batch",
    K.ERR_HEADER_COUNT: "invalid header count {value} (negative or larger than the bytes left)",
    K.ERR_HEADER_KEY: "negative header key length {value}",
    K.ERR_TRAILING: "{value} bytes left after the declared records count "
                    "(incorrect declared batch size)",
    K.ERR_RECORD_COUNT: "invalid records count {value}",
    K.ERR_OVERFLOW: "delta {value} takes the offset or timestamp outside int64",
}


def _kernels(jit: bool):
    if jit:
        return K.scan_records, K.gather_payloads
    return K.scan_records.py_func, K.gather_payloads.py_func


def _ro(a: np.ndarray) -> np.ndarray:
    """A read-only view: numba compiles once per (dtype, writeable) signature, so keep one."""
    if a.flags.writeable:
        a = a.view()
        a.flags.writeable = False
    return a


# Columns of np.array(list_of_BatchHeaders): a BatchHeader is a tuple of ints.
_POS, _SIZE, _MAGIC, _BASE, _LAST, _CRC_COL, _ATTRS = range(7)
_BASE_TS, _MAX_TS, _COUNT = 8, 9, 13


class ColumnarDecoder:
    """Decodes the entries of a scan chunk into one RecordColumns (the fast path of every scan).

    `fields` picks which of key / value / headers to copy out (offsets and timestamps always).
    `jit=False` runs the plain-Python twins of the kernels (tests). Stateless between calls,
    so one decoder may serve several threads (the kernels release the GIL).

    Row filters run inside the kernel, before a row's payload is copied: keeping half of 200k
    100-byte records that way took 6 ms, against 18 ms for decoding all and filtering with
    pyarrow.compute (whole batches outside the range are not even read).
    """

    def __init__(self, *, verify_crc: bool = True, max_decompressed: int | None = None,
                 fields: Iterable[str] = ALL_FIELDS, jit: bool = True):
        self.verify_crc = verify_crc
        self.max_decompressed = max_decompressed
        self.fields = frozenset(fields)
        if not self.fields <= ALL_FIELDS:
            raise BadOptionError("fields", sorted(self.fields), f"known: {sorted(ALL_FIELDS)}")
        self._scan, self._gather = _kernels(jit)

    def decode(self, entries: Iterable[tuple[BatchHeader, bytes | memoryview]], *,
               offsets: tuple[int, int] | None = None,
               timestamps: tuple[int, int] | None = None) -> RecordColumns:
        """All records of `entries` with lo <= offset < hi and lo <= timestamp < hi, in order.

        Entries are (header, exactly that entry's bytes), in log order; views of one chunk (as
        storage yields them) are read in place. Batches wholly outside the ranges are skipped
        unread (nor CRC-checked): by offset range, and by maxTimestamp, which bounds every
        record's timestamp in a batch Kafka wrote. Legacy entries take legacy.py's path. Errors
        are CorruptDataError at the failing batch's header.position (so in the frame the headers
        were parsed in), the record and byte within the batch named in the message.
        """
        ranges = (*(offsets or _FULL_RANGE), *(timestamps or _FULL_RANGE))
        entries = list(entries)
        # Per-batch work is done on all headers at once: at ~140 records per 16 KiB batch,
        # a few microseconds of Python per batch would cost as much as the records themselves.
        try:
            meta = np.fromiter(chain.from_iterable(h for h, _ in entries), np.int64,
                               14 * len(entries)).reshape(len(entries), 14)
        except OverflowError:  # only last_offset can pass int64: a corrupt base offset
            header = next(h for h, _ in entries if h.last_offset > K.INT64_MAX)
            raise CorruptDataError(f"base offset {header.base_offset} + lastOffsetDelta passes "
                                   "the largest offset", None, header.position) from None
        magic = meta[:, _MAGIC]
        first_known = (magic == 2) | (meta[:, _ATTRS] & 7 == 0)
        # (a legacy compressed wrapper's base_offset is its last offset: no lower bound there)
        keep = ~((meta[:, _LAST] < ranges[0]) | (first_known & (meta[:, _BASE] >= ranges[1]))
                 | ((magic == 2) & (meta[:, _MAX_TS] < ranges[2])))
        if not keep.all():
            entries, meta = [e for e, k in zip(entries, keep.tolist()) if k], meta[keep]
        sizes = np.fromiter((len(e) for _, e in entries), np.int64, len(entries))
        for i in np.flatnonzero(sizes != meta[:, _SIZE])[:1].tolist():
            raise CorruptDataError(f"entry has {sizes[i]} bytes but its header declares "
                                   f"{meta[i, _SIZE]}", None, entries[i][0].position)
        legacy = np.flatnonzero(meta[:, _MAGIC] < 2).tolist()
        if not legacy:
            return self._decode_v2(entries, meta, ranges)
        parts, start = [], 0
        for i in legacy + [len(entries)]:
            if i > start:
                parts.append(self._decode_v2(entries[start:i], meta[start:i], ranges))
            if i < len(entries):
                parts.append(self._decode_legacy(*entries[i], ranges))
            start = i + 1
        return parts[0] if len(parts) == 1 else concat_columns(parts)

    def _decompress(self, header: BatchHeader, area):
        from .codecs import decompress  # the format helper's module; imported when first needed

        if header.codec >= len(CODEC_NAMES):
            raise CorruptDataError(f"unknown compression codec {header.codec} in the batch at "
                                   f"offset {header.base_offset}", None, header.position)
        kwargs = {} if self.max_decompressed is None else {"max_output": self.max_decompressed}
        try:
            return decompress(header.codec, area, magic=2, **kwargs)
        except CorruptDataError as err:
            raise CorruptDataError(
                f"{header.codec_name} batch at offset {header.base_offset}: {err.reason}",
                None, header.position) from None

    def _decode_legacy(self, header, entry, ranges) -> RecordColumns:
        from .legacy import decode_legacy_entry

        off_lo, off_hi, ts_lo, ts_hi = ranges
        kwargs = {} if self.max_decompressed is None else {"max_decompressed":
                                                           self.max_decompressed}
        _first, records = decode_legacy_entry(entry, header, verify_crc=self.verify_crc, **kwargs)
        kept = [r for r in records if off_lo <= r.offset < off_hi and ts_lo <= r.timestamp < ts_hi]
        return _select(RecordColumns.from_records(kept, header.timestamp_type), self.fields)

    def _decode_v2(self, entries: list, meta: np.ndarray, ranges) -> RecordColumns:
        """One kernel call over consecutive v2 batches."""
        nb = len(entries)
        compressed = (meta[:, _ATTRS] & 7) != 0
        shared = None
        if nb and self.verify_crc and not compressed.any():
            shared = _shared_buffer(entries, meta)
        if shared is not None:  # record areas read in place: the CRCs checked those very bytes
            buf, starts = shared
            starts += V2_HEADER_SIZE
            ends = starts - V2_HEADER_SIZE + meta[:, _SIZE]
        else:  # copy the record areas (decompressed where needed) into one buffer
            if self.verify_crc:
                _check_crcs(entries, meta, [memoryview(e) for _, e in entries])
            areas = [memoryview(e)[V2_HEADER_SIZE:] for _, e in entries]
            for i in np.flatnonzero(compressed).tolist():
                areas[i] = self._decompress(entries[i][0], areas[i])
            bounds = np.zeros(nb + 1, np.int64)
            np.cumsum([len(a) for a in areas], out=bounds[1:])
            buf = np.frombuffer(areas[0] if nb == 1 else b"".join(areas), np.uint8)
            starts, ends = bounds[:-1], bounds[1:]
        cols = meta.T.copy()
        counts = cols[_COUNT]
        for i in np.flatnonzero(counts > (ends - starts) // K.MIN_RECORD_SIZE)[:1].tolist():
            header = entries[i][0]
            raise CorruptDataError(
                f"records count {header.records_count} cannot fit in the {ends[i] - starts[i]} "
                f"bytes of records of the batch at offset {header.base_offset}", None,
                header.position)
        n = int(counts[counts > 0].sum())
        out_offset, out_ts = np.empty(n, np.int64), np.empty(n, np.int64)
        out_batch = np.empty(n, np.int32)
        key_pos, value_pos, header_pos = (np.empty(n, np.int64) for _ in range(3))
        key_len, value_len, header_count = (np.empty(n, np.int32) for _ in range(3))
        state = np.zeros(K.STATE_SIZE, np.int64)
        log_append = cols[_ATTRS] & ATTR_TIMESTAMP_TYPE
        # contiguous columns: numba compiles once per memory layout, so always give it one
        code = self._scan(_ro(buf), starts, ends, counts, cols[_BASE], cols[_BASE_TS],
                          cols[_MAX_TS], log_append, *ranges,
                          out_offset, out_ts, out_batch, key_pos, key_len, value_pos, value_len,
                          header_pos, header_count, state)
        if code != K.OK:
            raise _kernel_error([h for h, _ in entries], compressed, state)
        rows = int(state[K.ROWS])
        for total in (K.KEY_BYTES, K.VALUE_BYTES, K.HKEY_BYTES, K.HVALUE_BYTES, K.HEADERS):
            if state[total] > INT32_MAX:
                raise SegmentLogError(
                    f"a chunk of {len(buf)} record bytes holds more than 2 GiB in one column; "
                    "decode fewer batches at a time")
        want = self.fields
        key_offsets = np.empty(rows + 1 if "key" in want else 0, np.int32)
        key_data = np.empty(state[K.KEY_BYTES] if "key" in want else 0, np.uint8)
        value_offsets = np.empty(rows + 1 if "value" in want else 0, np.int32)
        value_data = np.empty(state[K.VALUE_BYTES] if "value" in want else 0, np.uint8)
        nh = int(state[K.HEADERS]) if "headers" in want else -1
        header_offsets = np.empty(rows + 1 if nh >= 0 else 0, np.int32)
        hkey_offsets = np.empty(nh + 1, np.int32)
        hkey_data = np.empty(state[K.HKEY_BYTES] if nh >= 0 else 0, np.uint8)
        hvalue_len = np.empty(max(nh, 0), np.int32)
        hvalue_offsets = np.empty(nh + 1, np.int32)
        hvalue_data = np.empty(state[K.HVALUE_BYTES] if nh >= 0 else 0, np.uint8)
        self._gather(_ro(buf), rows, key_pos, key_len, value_pos, value_len, header_pos,
                     header_count, key_offsets, key_data, value_offsets, value_data,
                     header_offsets, hkey_offsets, hkey_data, hvalue_len, hvalue_offsets,
                     hvalue_data)
        ts_types = (log_append != 0).astype(np.int32)  # bit 3 -> LOG_APPEND_TIME (1)
        if nb and (ts_types == ts_types[0]).all():  # the usual case: one type in the chunk
            ts_types = np.full(rows, ts_types[0], np.int32)
        else:
            ts_types = ts_types[out_batch[:rows]]
        return RecordColumns(
            timestamps=out_ts[:rows], offsets=out_offset[:rows], timestamp_types=ts_types,
            keys=_binary(key_len[:rows], key_offsets, key_data, state[K.KEY_NULLS])
            if "key" in want else None,
            values=_binary(value_len[:rows], value_offsets, value_data, state[K.VALUE_NULLS])
            if "value" in want else None,
            headers=HeaderColumns(header_offsets, BinaryColumn(None, hkey_offsets, hkey_data),
                                  _binary(hvalue_len, hvalue_offsets, hvalue_data))
            if nh >= 0 else None)


def _check_crcs(entries: list, meta: np.ndarray, views: list) -> None:
    crcs = np.fromiter((crc32c(v[V2_CRC_START:]) for v in views), np.int64, len(views))
    for i in np.flatnonzero(crcs != meta[:, _CRC_COL])[:1].tolist():
        header = entries[i][0]
        raise CorruptDataError(f"CRC-32C mismatch in the batch at offset {header.base_offset}: "
                               f"stored {header.crc}, computed {crcs[i]}", None, header.position)


def _address(buffer) -> int:
    return np.frombuffer(buffer, np.uint8).__array_interface__["data"][0]


def _shared_buffer(entries: list, meta: np.ndarray):
    """(buffer, entry starts in it) when the entries are views of one buffer, as a storage
    chunk yields them; else None. Copying the record areas into one buffer costs ~10% of a
    decode, so we read them in place instead.

    Only the first entry's address is looked up (per-entry lookups would cost what the copy
    does); the others are placed by their header positions, and the CRC check of the bytes found
    there proves the placement: the kernel then reads exactly the bytes that were verified.
    """
    first = entries[0][1]
    if not isinstance(first, memoryview) or not first.c_contiguous or first.itemsize != 1:
        return None
    base = first.obj
    if any(not isinstance(e, memoryview) or e.obj is not base for _, e in entries):
        return None
    try:
        whole = memoryview(base).cast("B")
    except TypeError:
        return None
    if len(first) == 0:
        return None
    starts = meta[:, _POS] - meta[0, _POS] + (_address(first) - _address(whole))
    if starts.min() < 0 or (starts + meta[:, _SIZE]).max() > len(whole):
        return None
    views = [whole[a:a + n] for a, n in zip(starts.tolist(), meta[:, _SIZE].tolist())]
    try:
        _check_crcs(entries, meta, views)
    except CorruptDataError:
        _check_crcs(entries, meta, [memoryview(e) for _, e in entries])  # a real CRC error
        return None  # the entries are not laid out as their positions say
    return np.frombuffer(whole, np.uint8), starts


def _binary(lengths: np.ndarray, offsets: np.ndarray, data: np.ndarray,
            nulls: int = -1) -> BinaryColumn:
    """A decoded column; `nulls` (when the kernel counted them) spares the validity scan."""
    if nulls == 0:
        return BinaryColumn(None, offsets, data)
    valid = lengths >= 0
    return BinaryColumn(None if valid.all() else valid, offsets, data)


def _kernel_error(headers: list[BatchHeader], compressed: np.ndarray,
                  state: np.ndarray) -> CorruptDataError:
    code, b, record, pos, value = (int(state[i]) for i in (
        K.ERR_CODE, K.ERR_BATCH, K.ERR_RECORD, K.ERR_POS, K.ERR_VALUE))
    header = headers[b]
    where = (f"byte {pos} of the decompressed records" if compressed[b]
             else f"byte {V2_HEADER_SIZE + pos} of the batch")
    reason = ERROR_REASONS.get(code, f"error {code}").format(value=value)
    return CorruptDataError(f"record {record} of the batch at offset {header.base_offset} "
                            f"({where}): {reason}", None, header.position)


def _select(columns: RecordColumns, fields: frozenset) -> RecordColumns:
    return RecordColumns(columns.timestamps, columns.offsets, columns.timestamp_types,
                         columns.keys if "key" in fields else None,
                         columns.values if "value" in fields else None,
                         columns.headers if "headers" in fields else None)


def _concat_offsets(arrays: list[np.ndarray]) -> np.ndarray:
    """Offsets (n_i + 1 each) of concatenated columns, starting at 0; int32 while they fit."""
    shifts = np.cumsum([0] + [int(a[-1] - a[0]) for a in arrays[:-1]])
    out = np.concatenate([np.zeros(1, np.int64)]
                         + [a[1:].astype(np.int64) - a[0] + s for a, s in zip(arrays, shifts)])
    return out.astype(np.int32) if out[-1] <= INT32_MAX else out


def _concat_binary(cols: list[BinaryColumn]) -> BinaryColumn:
    offsets = _concat_offsets([c.offsets for c in cols])
    data = np.concatenate([c.data[c.offsets[0]:c.offsets[-1]] for c in cols])
    if all(c.valid is None for c in cols):
        return BinaryColumn(None, offsets, data)
    valid = np.concatenate([np.ones(len(c), bool) if c.valid is None else c.valid for c in cols])
    return BinaryColumn(valid, offsets, data)


def concat_columns(parts: Sequence[RecordColumns]) -> RecordColumns:
    """One RecordColumns from several (with the same fields present), rows in order."""
    def cat(name):
        arrays = [getattr(p, name) for p in parts]
        return None if arrays[0] is None else np.concatenate(arrays)

    def cat_binary(get):
        cols = [get(p) for p in parts]
        return None if cols[0] is None else _concat_binary(cols)

    headers = None
    if parts[0].headers is not None:
        hs = [p.headers for p in parts]
        headers = HeaderColumns(_concat_offsets([h.offsets for h in hs]),
                                _concat_binary([h.keys for h in hs]),
                                _concat_binary([h.values for h in hs]))
    return RecordColumns(cat("timestamps"), cat("offsets"), cat("timestamp_types"),
                         cat_binary(lambda p: p.keys), cat_binary(lambda p: p.values), headers)


def decode_batch(entry, header: BatchHeader | None = None, *, verify_crc: bool = True,
                 max_decompressed: int | None = None) -> DecodedBatch:
    """Decode exactly one entry (any magic) into its header and Records.

    Control batches return their raw records (control.py parses them). For a legacy compressed
    wrapper, the header's base_offset becomes the first inner offset.
    """
    entry = memoryview(entry)
    if header is None:
        header = parse_header(entry, 0, len(entry))
        if header is None:
            raise CorruptDataError(f"incomplete entry: {len(entry)} bytes", None, 0)
    if header.magic < 2:
        from .legacy import decode_legacy_entry

        kwargs = {} if max_decompressed is None else {"max_decompressed": max_decompressed}
        first, records = decode_legacy_entry(entry, header, verify_crc=verify_crc, **kwargs)
        return DecodedBatch(header._replace(base_offset=first), records)
    decoder = ColumnarDecoder(verify_crc=verify_crc, max_decompressed=max_decompressed)
    return DecodedBatch(header, decoder.decode([(header, entry)]).to_records())


# ----------------------------------------------------------------------------------- encoding

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
        return _ro(np.zeros(n, np.uint8)), _ro(np.zeros(n + 1, np.int64)), _ro(_EMPTY_U8)
    if len(col) != n:
        raise BadOptionError(name, len(col), f"rows given, but there are {n} timestamps")
    offsets = np.ascontiguousarray(col.offsets, np.int64)
    data = np.ascontiguousarray(col.data).view(np.uint8)
    if n and (offsets[0] < 0 or offsets[-1] > len(data)):
        raise BadOptionError(name, None, f"offsets do not stay within the {len(data)} data bytes")
    valid = _EMPTY_U8 if col.valid is None else np.ascontiguousarray(col.valid, np.bool_)
    return _ro(valid.view(np.uint8)), _ro(offsets), _ro(data)


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
        return _EMPTY_I64, _ro(_EMPTY_I64), none[1], none[2], _EMPTY_I64, none[1], none[2]
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
    each = (K.varint_sizes(key_len) + key_len
            + np.where(value_len < 0, 1, K.varint_sizes(value_len) + value_len))
    sums = np.zeros(m + 1, np.int64)
    np.cumsum(each, out=sums[1:])
    lo, hi = list_offsets[:-1], list_offsets[1:]
    return (K.varint_sizes(hi - lo) + sums[hi] - sums[lo], _ro(list_offsets), key_offsets,
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
    ts = _ro(np.ascontiguousarray(columns.timestamps, np.int64))
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
    rel = _ro(rel)
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
        from .codecs import compress

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
