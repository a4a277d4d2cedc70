"""Decoding v2 record batches into columns (the fast path of every scan) or Records.

There is one v2 record parser: kernels.scan_records/gather_payloads. `ColumnarDecoder` drives it
over a scan chunk; `decode_batch` runs it on one entry and turns the columns into `Record`s.
Legacy (magic 0/1) entries take legacy.py's path. Record layout: records.py.
"""

from __future__ import annotations

from itertools import chain
from typing import Iterable, Iterator, NamedTuple

from crc32c import crc32c
import numpy as np

from ..errors import BadOptionError, CorruptDataError, SegmentLogError
from ..format import kernels as K
from .batch import (ATTR_TIMESTAMP_TYPE, CODEC_NAMES, INT32_MAX, V2_CRC_START, V2_HEADER_SIZE,
                    BatchHeader, parse_header)
from .codecs import OutputBuffer, decompress
from .header_walk import batch_header_columns, first_crc_mismatch
from .kernels import read_only
from .legacy import decode_legacy_entry
from .records import (ALL_FIELDS, BinaryColumn, DecodedBatch, HeaderColumns, RecordColumns,
                      concat_columns, select_fields)
from .varint import ERR_TRUNCATED, ERR_VARINT_TOO_LONG, ERR_VARLONG_TOO_LONG

_FULL_RANGE = (K.INT64_MIN, K.INT64_MAX)
# decode_parts' default: decompressed record bytes per part (a single bigger batch is one part)
DECODE_PART_BYTES = 4 * 1024 * 1024


class DecodedPart(NamedTuple):
    columns: RecordColumns
    entries_done: int   # how many of the entries given are decoded once this part is used

ERROR_REASONS = {
    ERR_TRUNCATED: "a field runs past the end of its record",
    ERR_VARINT_TOO_LONG: "varint longer than 5 bytes",
    ERR_VARLONG_TOO_LONG: "varlong longer than 10 bytes",
    K.ERR_RECORD_SIZE: "declared record length {value} does not match the bytes its fields take",
    K.ERR_BAD_LENGTH: "declared record length {value} is negative or runs past the end of the "
                      "batch",
    K.ERR_HEADER_COUNT: "invalid header count {value} (negative or larger than the bytes left)",
    K.ERR_HEADER_KEY: "negative header key length {value}",
    K.ERR_TRAILING: "{value} bytes left after the declared records count "
                    "(incorrect declared batch size)",
    K.ERR_RECORD_COUNT: "invalid records count {value}",
    K.ERR_OVERFLOW: "delta {value} takes the offset or timestamp outside int64",
    K.ERR_RECORD_OFFSET: "offset delta {value} does not increase within the batch, or passes "
                         "its lastOffsetDelta",
}


def _kernels(jit: bool):
    if jit:
        return K.scan_records, K.gather_payloads
    return K.scan_records.py_func, K.gather_payloads.py_func


def _within(value: int, lo: int, hi: int) -> bool:
    """lo <= value < hi, where hi == INT64_MAX is no bound (as in kernels.scan_records)."""
    return lo <= value and (value < hi or hi == K.INT64_MAX)


# Columns of np.array(list_of_BatchHeaders): a BatchHeader is a tuple of ints.
_POS, _SIZE, _MAGIC, _BASE, _LAST, _, _ATTRS = range(7)   # (5: the CRC, read from headers)
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
        """All records of `entries` with lo <= offset < hi and lo <= timestamp < hi, in order,
        as one RecordColumns (decode_parts says how, and bounds the memory it takes)."""
        parts = [p.columns for p in self.decode_parts(entries, offsets=offsets,
                                                      timestamps=timestamps, max_bytes=None)]
        if not parts:
            return self._decode_v2([], np.zeros((0, 14), np.int64), _FULL_RANGE * 2)
        return parts[0] if len(parts) == 1 else concat_columns(parts)

    def decode_parts(self, entries: Iterable[tuple[BatchHeader, bytes | memoryview]], *,
                     offsets: tuple[int, int] | None = None,
                     timestamps: tuple[int, int] | None = None,
                     max_bytes: int | None = DECODE_PART_BYTES) -> Iterator[DecodedPart]:
        """The records of `entries` (filtered as `decode` says) in parts, in order, each holding
        the records of about `max_bytes` of decompressed batches (a single bigger batch alone):
        a chunk of many small, highly compressed batches is decompressed a part at a time, so
        memory stays near one part whatever the chunk holds. None: one part for it all.

        Entries are (header, exactly that entry's bytes), in log order; views of one chunk (as
        storage yields them) are read in place. Batches wholly outside the ranges are not
        decoded: by offset range, and by maxTimestamp, which bounds every record's timestamp in
        a batch Kafka wrote (that field is CRC-covered, so with verify_crc a batch skipped for
        it has its CRC checked). Legacy entries take legacy.py's path. Errors are
        CorruptDataError at the failing batch's header.position (so in the frame the headers
        were parsed in), the record and byte within the batch named in the message.
        """
        ranges = (*(offsets or _FULL_RANGE), *(timestamps or _FULL_RANGE))
        entries = list(entries)
        # Per-batch work is done on all headers at once: at ~140 records per 16 KiB batch,
        # a few microseconds of Python per batch would cost as much as the records themselves.
        meta = np.fromiter(chain.from_iterable(h for h, _ in entries), np.int64,
                           14 * len(entries)).reshape(len(entries), 14)
        magic = meta[:, _MAGIC]
        first_known = (magic == 2) | (meta[:, _ATTRS] & 7 == 0)
        # (a legacy compressed wrapper's base_offset is its last offset: no lower bound there)
        out_of_range = (meta[:, _LAST] < ranges[0]) | (first_known & (meta[:, _BASE] >= ranges[1]))
        too_old = (magic == 2) & (meta[:, _MAX_TS] < ranges[2]) & ~out_of_range
        sizes = np.fromiter((len(e) for _, e in entries), np.int64, len(entries))
        for i in np.flatnonzero(sizes != meta[:, _SIZE])[:1].tolist():
            raise CorruptDataError(f"entry has {sizes[i]} bytes but its header declares "
                                   f"{meta[i, _SIZE]}", None, entries[i][0].position)
        if self.verify_crc and too_old.any():
            skipped = np.flatnonzero(too_old).tolist()
            _check_crcs([entries[i] for i in skipped],
                        [memoryview(entries[i][1]) for i in skipped])
        kept = np.flatnonzero(~(out_of_range | too_old))
        run: list[int] = []        # consecutive v2 batches to decode with one kernel call
        # Once any of them is compressed: their record areas, decompressed, back to back in
        # one buffer (`out`; where each ends: `ends`).
        out, ends = None, []
        run_bytes = 0
        for i in kept.tolist():
            header, entry = entries[i]
            if header.magic < 2:
                if run:
                    part = self._part(entries, meta, run, out, ends, ranges)
                    run, out, ends, run_bytes = [], None, [], 0
                    yield part
                    del part
                yield DecodedPart(self._decode_legacy(header, entry, ranges), i + 1)
                continue
            if header.codec or out is not None:
                if out is None:   # the run so far was uncompressed: its areas go first
                    if self.verify_crc and run:   # (checked here: _decode_v2 trusts `out`)
                        _check_crcs([entries[j] for j in run],
                                    [memoryview(entries[j][1]) for j in run])
                    out = OutputBuffer((max_bytes or 0) + (2 << 20))
                    for j in run:
                        out.append(memoryview(entries[j][1])[V2_HEADER_SIZE:])
                        ends.append(out.size)
                view = memoryview(entry)
                if self.verify_crc:
                    _check_crcs(((header, entry),), (view,))
                area = view[V2_HEADER_SIZE:]
                if header.codec:
                    self._decompress(header, area, out)
                else:
                    out.append(area)
                ends.append(out.size)
                run_bytes = out.size
            else:
                run_bytes += header.size
            run.append(i)
            if max_bytes is not None and out is not None and run_bytes >= max_bytes:
                part = self._part(entries, meta, run, out, ends, ranges)
                # (the run's buffer is let go before the consumer gets the part)
                run, out, ends, run_bytes = [], None, [], 0
                yield part
                del part
        if run:
            yield self._part(entries, meta, run, out, ends, ranges)

    def decode_walked(self, buf: np.ndarray, buf_start: int, rows: np.ndarray, *,
                      offsets: tuple[int, int] | None = None,
                      timestamps: tuple[int, int] | None = None) -> RecordColumns:
        """The records of uncompressed magic-2 batches lying whole in `buf` (buf[0] is file
        position `buf_start`), given as header_walk rows: filtered, checked and decoded as
        `decode_parts` does, but in one kernel call with no Python per batch besides its CRC
        (storage/log/walked_scan.py's chunks)."""
        ranges = (*(offsets or _FULL_RANGE), *(timestamps or _FULL_RANGE))
        meta = batch_header_columns(rows)
        if (meta[:, _ATTRS] & 7).any():
            raise ValueError("decode_walked takes uncompressed batches")
        if self.verify_crc:
            bad = first_crc_mismatch(buf, buf_start, rows)
            if bad >= 0:     # (_check_crcs says it as decode_parts would)
                header = _header(meta, bad)
                at = header.position - buf_start
                _check_crcs([(header, None)], [memoryview(buf)[at:at + header.size]])
        out_of_range = (meta[:, _LAST] < ranges[0]) | (meta[:, _BASE] >= ranges[1])
        meta = meta[~(out_of_range | (meta[:, _MAX_TS] < ranges[2]))]
        starts = meta[:, _POS] - buf_start + V2_HEADER_SIZE
        ends = starts - V2_HEADER_SIZE + meta[:, _SIZE]
        return self._decode_areas(buf, starts, ends, meta, ranges)

    def _part(self, entries: list, meta: np.ndarray, run: list[int], out, ends: list[int],
              ranges) -> DecodedPart:
        columns = self._decode_v2([entries[i] for i in run], meta[run], ranges,
                                  None if out is None else (out.view(), ends))
        return DecodedPart(columns, run[-1] + 1)

    def _decompress(self, header: BatchHeader, area, out: OutputBuffer) -> None:
        if header.codec >= len(CODEC_NAMES):
            raise CorruptDataError(f"unknown compression codec {header.codec} in the batch at "
                                   f"offset {header.base_offset}", None, header.position)
        kwargs = {} if self.max_decompressed is None else {"max_output": self.max_decompressed}
        try:
            decompress(header.codec, area, magic=2, into=out, **kwargs)
        except CorruptDataError as err:
            raise CorruptDataError(
                f"{header.codec_name} batch at offset {header.base_offset}: {err.reason}",
                None, header.position) from None

    def _decode_legacy(self, header, entry, ranges) -> RecordColumns:
        off_lo, off_hi, ts_lo, ts_hi = ranges
        kwargs = {} if self.max_decompressed is None else {"max_decompressed":
                                                           self.max_decompressed}
        _first, records = decode_legacy_entry(entry, header, verify_crc=self.verify_crc, **kwargs)
        kept = [r for r in records if _within(r.offset, off_lo, off_hi)
                and _within(r.timestamp, ts_lo, ts_hi)]
        return select_fields(RecordColumns.from_records(kept, header.timestamp_type), self.fields)

    def _decode_v2(self, entries: list, meta: np.ndarray, ranges,
                   decompressed: tuple[np.ndarray, list[int]] | None = None) -> RecordColumns:
        """One kernel call over consecutive v2 batches. `decompressed`: their record areas,
        already CRC-checked and decompressed into one buffer, and where each ends (decode_parts
        makes it when any is compressed)."""
        nb = len(entries)
        shared = None
        if nb and self.verify_crc and decompressed is None:
            shared = _shared_buffer(entries, meta)
        if shared is not None:  # record areas read in place: the CRCs checked those very bytes
            buf, starts = shared
            starts += V2_HEADER_SIZE
            ends = starts - V2_HEADER_SIZE + meta[:, _SIZE]
        else:
            if decompressed is None:   # copy the record areas into one buffer
                if self.verify_crc:
                    _check_crcs(entries, [memoryview(e) for _, e in entries])
                areas = [memoryview(e)[V2_HEADER_SIZE:] for _, e in entries]
                buf = np.frombuffer(areas[0] if nb == 1 else b"".join(areas), np.uint8)
                area_ends = np.cumsum([len(a) for a in areas], dtype=np.int64)
            else:
                buf, area_ends = decompressed[0], np.array(decompressed[1], np.int64)
            bounds = np.zeros(nb + 1, np.int64)
            bounds[1:] = area_ends
            starts, ends = bounds[:-1], bounds[1:]
        return self._decode_areas(buf, starts, ends, meta, ranges)

    def _decode_areas(self, buf: np.ndarray, starts: np.ndarray, ends: np.ndarray,
                      meta: np.ndarray, ranges) -> RecordColumns:
        """One kernel call over record areas buf[starts[b]:ends[b]] (trusted: CRC-checked, or
        decompressed from CRC-checked bytes, when CRCs are checked) of the batches `meta`."""
        compressed = (meta[:, _ATTRS] & 7) != 0
        nb = len(meta)
        cols = meta.T.copy()
        counts = cols[_COUNT]
        for i in np.flatnonzero(counts > (ends - starts) // K.MIN_RECORD_SIZE)[:1].tolist():
            header = _header(meta, i)
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
        code = self._scan(read_only(buf), starts, ends, counts, cols[_BASE], cols[_LAST],
                          cols[_BASE_TS], cols[_MAX_TS], log_append, *ranges,
                          out_offset, out_ts, out_batch, key_pos, key_len, value_pos, value_len,
                          header_pos, header_count, state)
        if code != K.OK:
            raise _kernel_error(meta, compressed, state)
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
        self._gather(read_only(buf), rows, key_pos, key_len, value_pos, value_len, header_pos,
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


def _check_crcs(entries, views) -> None:
    # (a loop: numpy's per-call overhead is a third of a 16 KiB batch's CRC)
    for (header, _), view in zip(entries, views):
        computed = crc32c(view[V2_CRC_START:])
        if computed != header.crc:
            raise CorruptDataError(f"CRC-32C mismatch in the batch at offset "
                                   f"{header.base_offset}: stored {header.crc}, computed "
                                   f"{computed}", None, header.position)


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
        _check_crcs(entries, views)
    except CorruptDataError:
        _check_crcs(entries, [memoryview(e) for _, e in entries])  # a real CRC error
        return None  # the entries are not laid out as their positions say
    return np.frombuffer(whole, np.uint8), starts


def _binary(lengths: np.ndarray, offsets: np.ndarray, data: np.ndarray,
            nulls: int = -1) -> BinaryColumn:
    """A decoded column; `nulls` (when the kernel counted them) spares the validity scan."""
    if nulls == 0:
        return BinaryColumn(None, offsets, data)
    valid = lengths >= 0
    return BinaryColumn(None if valid.all() else valid, offsets, data)


def _header(meta: np.ndarray, i: int) -> BatchHeader:
    """Row `i` of the header columns, as the BatchHeader it came from (for messages)."""
    return BatchHeader._make(meta[i].tolist())


def _kernel_error(meta: np.ndarray, compressed: np.ndarray,
                  state: np.ndarray) -> CorruptDataError:
    code, b, record, pos, value = (int(state[i]) for i in (
        K.ERR_CODE, K.ERR_BATCH, K.ERR_RECORD, K.ERR_POS, K.ERR_VALUE))
    header = _header(meta, b)
    where = (f"byte {pos} of the decompressed records" if compressed[b]
             else f"byte {V2_HEADER_SIZE + pos} of the batch")
    reason = ERROR_REASONS.get(code, f"error {code}").format(value=value)
    return CorruptDataError(f"record {record} of the batch at offset {header.base_offset} "
                            f"({where}): {reason}", None, header.position)



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
        kwargs = {} if max_decompressed is None else {"max_decompressed": max_decompressed}
        first, records = decode_legacy_entry(entry, header, verify_crc=verify_crc, **kwargs)
        return DecodedBatch(header._replace(base_offset=first), records)
    decoder = ColumnarDecoder(verify_crc=verify_crc, max_decompressed=max_decompressed)
    return DecodedBatch(header, decoder.decode([(header, entry)]).to_records())

