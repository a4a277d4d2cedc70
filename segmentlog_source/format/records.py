"""Records of v2 batches as Python objects and as Arrow-style columns.

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

`RecordColumns` is what the decoder (record_decoder.py) produces and the encoder
(record_encoder.py) takes; `Record` is the slow, readable form of one row.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple, Sequence

import numpy as np

from .batch import CREATE_TIME, INT32_MAX, BatchHeader


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


def select_fields(columns: RecordColumns, fields: frozenset) -> RecordColumns:
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



def _take_binary(col: BinaryColumn, rows: np.ndarray) -> BinaryColumn:
    starts = col.offsets[rows].astype(np.int64)
    lengths = col.offsets[rows + 1].astype(np.int64) - starts
    offsets = np.zeros(len(rows) + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    # byte i of the result comes from starts[row] + (i - offsets[row])
    where = np.repeat(starts - offsets[:-1], lengths) + np.arange(offsets[-1])
    valid = None if col.valid is None else col.valid[rows]
    return BinaryColumn(valid, offsets, col.data[where])


def take_rows(columns: RecordColumns, rows: np.ndarray) -> RecordColumns:
    """The given rows (ascending indices) of decoded columns, for re-encoding (the cleaner)."""
    rows = np.asarray(rows, np.int64)
    headers = columns.headers
    if headers is not None:
        bounds = headers.offsets.astype(np.int64)
        counts = bounds[rows + 1] - bounds[rows]
        offsets = np.zeros(len(rows) + 1, np.int64)
        np.cumsum(counts, out=offsets[1:])
        pairs = np.repeat(bounds[rows] - offsets[:-1], counts) + np.arange(offsets[-1])
        headers = HeaderColumns(offsets, _take_binary(headers.keys, pairs),
                                _take_binary(headers.values, pairs))

    def pick(array):
        return None if array is None else array[rows]
    return RecordColumns(
        timestamps=columns.timestamps[rows], offsets=pick(columns.offsets),
        timestamp_types=pick(columns.timestamp_types),
        keys=None if columns.keys is None else _take_binary(columns.keys, rows),
        values=None if columns.values is None else _take_binary(columns.values, rows),
        headers=headers)
