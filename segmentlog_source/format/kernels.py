"""The hot loops: v2 records <-> Arrow-style column buffers, compiled with numba.

Record v2 (inside a batch, or inside its one decompressed stream); every number is a zig-zag
varint (<= 5 bytes) or varlong (<= 10 bytes), least significant 7-bit group first::

    length          varint   bytes after this field (attributes .. last header)
    attributes      int8     unused, 0
    timestampDelta  varlong  timestamp - baseTimestamp
    offsetDelta     varint   offset - baseOffset
    keyLength       varint   < 0: null key
    key             bytes
    valueLength     varint   < 0: null value (tombstone)
    value           bytes
    headerCount     varint   >= 0, <= bytes remaining
    headers         headerKeyLength varint (>= 0), key (UTF-8), headerValueLength varint
                    (< 0: null), value

Column buffers are Arrow's: a variable-length column is (validity, offsets[n+1], data).

Every `@njit` kernel's `.py_func` is its plain-Python twin (the readable definition; the tests run
both on the same inputs). The helpers (varint.py, and `_fail` here) are `register_jitable`: plain
Python when called from Python, compiled into the kernel that calls them; `copy_bytes` is a slice
assignment in Python and one memcpy when compiled. So the code must mean the same in both worlds:
all arithmetic is kept below 2**63 (numba wraps, Python does not), and bytes are read with
`int(...)` (a numpy uint8 scalar would overflow on shifts in Python). Kernels never raise: the
numba build does no bounds checks, so every read is checked by hand, and errors come back as a
code plus positions in `state` for the Python wrappers (record_decoder.py, record_encoder.py) to
turn into CorruptDataError.

Decoding is two passes: scan_records validates and indexes the records and sums the sizes,
gather_payloads copies keys/values/headers into exact-size buffers. (A one-pass variant copying
into buffers sized for the worst case measured ~12% faster on the kernels alone, but it has to
over-allocate every column by the whole chunk; not worth it.)
"""

from __future__ import annotations

from numba import njit
from numba.extending import register_jitable
import numpy as np

from .batch import INT32_MAX
from .varint import (ERR_TRUNCATED, NULL_VARINT, copy_bytes, read_varint, read_varlong, varint_size,
                     write_varint)

INT64_MAX = 9223372036854775807
INT64_MIN = -9223372036854775808
MIN_RECORD_SIZE = 7  # length, attributes, tsDelta, offsetDelta, keyLen, valueLen, headerCount
NO_FIXED_BASE = INT64_MIN  # encoder: base timestamp = each batch's first timestamp
PLAN_OFFSET_DELTA, PLAN_KEY_OFFSETS, PLAN_VALUE_OFFSETS = 1, 2, 3  # plan_batches' errors

# Error codes in state[ERR_CODE] (1-3 are varint.py's); record_decoder.ERROR_REASONS words them.
OK = 0
ERR_RECORD_SIZE = 4      # declared length != bytes the record's fields take
ERR_BAD_LENGTH = 5       # declared length negative or beyond the end of the records
ERR_HEADER_COUNT = 6     # negative, or larger than the bytes remaining
ERR_HEADER_KEY = 7       # negative header key length
ERR_TRAILING = 8         # bytes left after recordsCount records
ERR_RECORD_COUNT = 9     # negative recordsCount
ERR_OVERFLOW = 10        # baseOffset/baseTimestamp + delta outside int64
ERR_RECORD_OFFSET = 11   # offsetDelta not above the previous record's, or past lastOffsetDelta

# Decoder state slots (int64): totals, then where the first error happened.
ROWS, KEY_BYTES, VALUE_BYTES, HEADERS, HKEY_BYTES, HVALUE_BYTES = 0, 1, 2, 3, 4, 5
KEY_NULLS, VALUE_NULLS = 6, 7
ERR_CODE, ERR_BATCH, ERR_RECORD, ERR_POS, ERR_VALUE = 8, 9, 10, 11, 12
STATE_SIZE = 13


def read_only(a: np.ndarray) -> np.ndarray:
    """A read-only view: numba compiles once per (dtype, writeable) signature, so keep one."""
    if a.flags.writeable:
        a = a.view()
        a.flags.writeable = False
    return a


@register_jitable
def _fail(state, code, batch, record, pos, value):
    state[ERR_CODE] = code
    state[ERR_BATCH] = batch
    state[ERR_RECORD] = record
    state[ERR_POS] = pos
    state[ERR_VALUE] = value
    return code


@njit(cache=True, nogil=True)
def scan_records(buf, starts, ends, counts, base_offsets, last_offsets, base_timestamps,
                 max_timestamps, log_append, offset_lo, offset_hi, ts_lo, ts_hi,
                 out_offset, out_timestamp, out_batch, key_pos, key_len, value_pos, value_len,
                 header_pos, header_count, state):
    """Pass 1: walk and validate every record of every batch; index the rows in the filter.

    Batch b's records are buf[starts[b]:ends[b]], counts[b] of them. A record is kept when
    offset_lo <= offset < offset_hi and ts_lo <= timestamp < ts_hi, an upper bound of INT64_MAX
    being none (timestamp after the LogAppendTime rule: log_append[b] != 0 means every record's
    timestamp is max_timestamps[b]).
    For kept row r it writes offset, timestamp, batch index, where the key / value / headers
    start in buf and their lengths (-1 = null), and sums the byte totals and null counts into
    state, so pass 2 can allocate exact buffers. Returns the error code (0 = fine; then state
    says where).
    """
    rows = 0
    key_bytes = 0
    value_bytes = 0
    key_nulls = 0
    value_nulls = 0
    n_headers = 0
    hkey_bytes = 0
    hvalue_bytes = 0
    for b in range(len(starts)):
        pos = starts[b]
        end = ends[b]
        count = counts[b]
        if count < 0:
            return _fail(state, ERR_RECORD_COUNT, b, 0, 0, count)
        base_offset = base_offsets[b]
        last_delta = last_offsets[b] - base_offset
        previous_delta = -1
        base_ts = base_timestamps[b]
        append_time = log_append[b] != 0
        for i in range(count):
            size, body = read_varint(buf, pos, end)
            if body < 0:
                return _fail(state, -body, b, i, pos - starts[b], 0)
            if size < 0 or size > end - body:
                return _fail(state, ERR_BAD_LENGTH, b, i, pos - starts[b], size)
            limit = body + size
            p = body + 1  # attributes: unused
            if p > limit:
                return _fail(state, ERR_TRUNCATED, b, i, body - starts[b], size)
            ts_delta, p2 = read_varlong(buf, p, limit)
            if p2 < 0:
                return _fail(state, -p2, b, i, p - starts[b], size)
            off_delta, p3 = read_varint(buf, p2, limit)
            if p3 < 0:
                return _fail(state, -p3, b, i, p2 - starts[b], size)
            if append_time:
                timestamp = max_timestamps[b]
            else:
                if ((ts_delta > 0 and base_ts > INT64_MAX - ts_delta)
                        or (ts_delta < 0 and base_ts < INT64_MIN - ts_delta)):
                    return _fail(state, ERR_OVERFLOW, b, i, p - starts[b], ts_delta)
                timestamp = base_ts + ts_delta
            # offsetDelta is inside the CRC, lastOffsetDelta too: records must increase within
            # the batch's own offsets (the cleaner leaves gaps, never disorder)
            if off_delta <= previous_delta or off_delta > last_delta:
                return _fail(state, ERR_RECORD_OFFSET, b, i, p2 - starts[b], off_delta)
            previous_delta = off_delta
            offset = base_offset + off_delta
            klen, p = read_varint(buf, p3, limit)
            if p < 0:
                return _fail(state, -p, b, i, p3 - starts[b], size)
            kpos = p
            if klen >= 0:
                if klen > limit - p:
                    return _fail(state, ERR_TRUNCATED, b, i, p - starts[b], klen)
                p += klen
            vlen, p4 = read_varint(buf, p, limit)
            if p4 < 0:
                return _fail(state, -p4, b, i, p - starts[b], size)
            vpos = p4
            if vlen >= 0:
                if vlen > limit - p4:
                    return _fail(state, ERR_TRUNCATED, b, i, p4 - starts[b], vlen)
                p4 += vlen
            hcount, p = read_varint(buf, p4, limit)
            if p < 0:
                return _fail(state, -p, b, i, p4 - starts[b], size)
            # Java compares against the bytes left in the whole batch, not just this record.
            if hcount < 0 or hcount > end - p:
                return _fail(state, ERR_HEADER_COUNT, b, i, p4 - starts[b], hcount)
            hpos = p
            hk_total = 0
            hv_total = 0
            for _h in range(hcount):
                hklen, p5 = read_varint(buf, p, limit)
                if p5 < 0:
                    return _fail(state, -p5, b, i, p - starts[b], size)
                if hklen < 0:
                    return _fail(state, ERR_HEADER_KEY, b, i, p - starts[b], hklen)
                if hklen > limit - p5:
                    return _fail(state, ERR_TRUNCATED, b, i, p5 - starts[b], hklen)
                p5 += hklen
                hvlen, p = read_varint(buf, p5, limit)
                if p < 0:
                    return _fail(state, -p, b, i, p5 - starts[b], size)
                if hvlen >= 0:
                    if hvlen > limit - p:
                        return _fail(state, ERR_TRUNCATED, b, i, p - starts[b], hvlen)
                    p += hvlen
                    hv_total += hvlen
                hk_total += hklen
            if p != limit:
                return _fail(state, ERR_RECORD_SIZE, b, i, pos - starts[b], size)
            pos = limit
            # an upper bound of INT64_MAX means none: no value is ever dropped by the bound
            if (offset_lo <= offset and (offset < offset_hi or offset_hi == INT64_MAX)
                    and ts_lo <= timestamp and (timestamp < ts_hi or ts_hi == INT64_MAX)):
                out_offset[rows] = offset
                out_timestamp[rows] = timestamp
                out_batch[rows] = b
                key_pos[rows] = kpos
                key_len[rows] = klen if klen >= 0 else -1
                value_pos[rows] = vpos
                value_len[rows] = vlen if vlen >= 0 else -1
                header_pos[rows] = hpos
                header_count[rows] = hcount
                if klen > 0:
                    key_bytes += klen
                elif klen < 0:
                    key_nulls += 1
                if vlen > 0:
                    value_bytes += vlen
                elif vlen < 0:
                    value_nulls += 1
                n_headers += hcount
                hkey_bytes += hk_total
                hvalue_bytes += hv_total
                rows += 1
        if pos != end:
            return _fail(state, ERR_TRAILING, b, count, pos - starts[b], end - pos)
    state[ROWS] = rows
    state[KEY_BYTES] = key_bytes
    state[VALUE_BYTES] = value_bytes
    state[KEY_NULLS] = key_nulls
    state[VALUE_NULLS] = value_nulls
    state[HEADERS] = n_headers
    state[HKEY_BYTES] = hkey_bytes
    state[HVALUE_BYTES] = hvalue_bytes
    return OK


@njit(cache=True, nogil=True)
def gather_payloads(buf, rows, key_pos, key_len, value_pos, value_len, header_pos, header_count,
                    key_offsets, key_data, value_offsets, value_data, header_offsets,
                    hkey_offsets, hkey_data, hvalue_len, hvalue_offsets, hvalue_data):
    """Pass 2: copy the kept rows' keys, values and headers into their exact-size buffers.

    A zero-length offsets array means "column not wanted". The records were validated by
    scan_records, so the header walk needs no checks beyond staying inside buf. (The copies are
    written out rather than shared in a helper: numba reference-counts the mutable arrays handed
    to a helper on every call, which made this loop 5x slower.)
    """
    want_key = len(key_offsets) > 0
    want_value = len(value_offsets) > 0
    want_headers = len(header_offsets) > 0
    ko = 0
    vo = 0
    hko = 0
    hvo = 0
    h = 0
    if want_key:
        key_offsets[0] = 0
    if want_value:
        value_offsets[0] = 0
    if want_headers:
        header_offsets[0] = 0
        hkey_offsets[0] = 0
        hvalue_offsets[0] = 0
    limit = len(buf)
    for r in range(rows):
        if want_key:
            n = key_len[r]
            if n > 0:
                copy_bytes(key_data, ko, buf, key_pos[r], n)
                ko += n
            key_offsets[r + 1] = ko
        if want_value:
            n = value_len[r]
            if n > 0:
                copy_bytes(value_data, vo, buf, value_pos[r], n)
                vo += n
            value_offsets[r + 1] = vo
        if want_headers:
            p = header_pos[r]
            for _j in range(header_count[r]):
                n, p = read_varint(buf, p, limit)
                copy_bytes(hkey_data, hko, buf, p, n)
                hko += n
                p += n
                hkey_offsets[h + 1] = hko
                n, p = read_varint(buf, p, limit)
                hvalue_len[h] = n if n >= 0 else -1
                if n > 0:
                    copy_bytes(hvalue_data, hvo, buf, p, n)
                    hvo += n
                    p += n
                hvalue_offsets[h + 1] = hvo
                h += 1
            header_offsets[r + 1] = h
    return h


@register_jitable
def _body_size(ts_delta, off_delta, klen, vlen, tail):
    """Bytes after a record's length varint; `tail` = headerCount + headers bytes."""
    size = 1 + varint_size(ts_delta) + varint_size(off_delta) + tail
    size += NULL_VARINT if klen < 0 else varint_size(klen) + klen
    size += NULL_VARINT if vlen < 0 else varint_size(vlen) + vlen
    return size


@njit(cache=True, nogil=True)
def plan_batches(timestamps, rel_offsets, key_valid, key_offsets, value_valid, value_offsets,
                 header_bytes, fixed_base_ts, max_records, max_bytes, batch_first, batch_bytes,
                 batch_max_ts, error):
    """Split rows into batches greedily and size each batch's records exactly.

    Keys and values come as Arrow columns (valid: uint8 per row, empty = no nulls; offsets
    n + 1); header_bytes is each row's headerCount varint + headers (empty = no headers, one
    byte each); rel_offsets are offsets relative to the base offset (empty = 0, 1, 2, ...).
    A batch takes rows while it holds fewer than max_records and its full size (61-byte header
    + records) stays <= max_bytes; like Kafka's producer, a batch always takes at least one row.
    A record's size depends on its deltas to its batch's bases, which is why splitting and sizing
    are one loop: base timestamp = the batch's first timestamp (or fixed_base_ts, a delete
    horizon, unless it is NO_FIXED_BASE); base offset = 0 for the first batch, else the first
    row's relative offset. Writes each batch's first row (plus a sentinel n), records bytes and
    max timestamp and returns the number of batches; or returns -1 with error = (PLAN_*, row).
    """
    n = len(timestamps)
    has_rel = len(rel_offsets) > 0
    key_nullable = len(key_valid) > 0
    value_nullable = len(value_valid) > 0
    has_headers = len(header_bytes) > 0
    if max_records < 1:
        max_records = 1
    nb = 0
    r = 0
    while r < n:
        first = r
        base_ts = timestamps[first] if fixed_base_ts == NO_FIXED_BASE else fixed_base_ts
        base_off = 0
        if nb > 0:
            base_off = rel_offsets[first] if has_rel else first
        total = 0
        max_ts = -1
        while r < n and r - first < max_records:
            off_delta = (rel_offsets[r] if has_rel else r) - base_off
            if off_delta < -INT32_MAX - 1 or off_delta > INT32_MAX:
                error[0] = PLAN_OFFSET_DELTA
                error[1] = r
                return -1
            # Lengths come from the offsets, checked here because encode_records copies
            # with memcpy: descending offsets would read outside the data.
            klen = key_offsets[r + 1] - key_offsets[r]
            vlen = value_offsets[r + 1] - value_offsets[r]
            if klen < 0 or vlen < 0:
                error[0] = PLAN_KEY_OFFSETS if klen < 0 else PLAN_VALUE_OFFSETS
                error[1] = r
                return -1
            if key_nullable and key_valid[r] == 0:
                klen = -1
            if value_nullable and value_valid[r] == 0:
                vlen = -1
            body = _body_size(timestamps[r] - base_ts, off_delta, klen, vlen,
                              header_bytes[r] if has_headers else 1)
            size = varint_size(body) + body
            if r > first and 61 + total + size > max_bytes:
                break
            total += size
            if timestamps[r] > max_ts:
                max_ts = timestamps[r]
            r += 1
        batch_first[nb] = first
        batch_bytes[nb] = total
        batch_max_ts[nb] = max_ts
        nb += 1
    batch_first[nb] = n
    return nb


@njit(cache=True, nogil=True)
def encode_records(timestamps, rel_offsets, key_valid, key_offsets, key_data, value_valid,
                   value_offsets, value_data, header_bytes, header_offsets, hkey_offsets,
                   hkey_data, hvalue_len, hvalue_offsets, hvalue_data, fixed_base_ts,
                   batch_first, n_batches, out, out_pos):
    """Write the records of each planned batch into out[out_pos[b]:], in Kafka's byte order.

    Inputs as for plan_batches (which validated them), plus the data and the headers: per
    header, key offsets / value lengths (-1 = null) / value offsets. Deltas are taken against
    each batch's first row exactly as plan_batches sized them, so the bytes land where the plan
    said. Returns the end position of the last batch's records.
    """
    has_rel = len(rel_offsets) > 0
    key_nullable = len(key_valid) > 0
    value_nullable = len(value_valid) > 0
    has_headers = len(header_bytes) > 0
    p = 0
    for b in range(n_batches):
        first = batch_first[b]
        base_ts = timestamps[first] if fixed_base_ts == NO_FIXED_BASE else fixed_base_ts
        base_off = 0
        if b > 0:
            base_off = rel_offsets[first] if has_rel else first
        p = out_pos[b]
        for r in range(first, batch_first[b + 1]):
            ts_delta = timestamps[r] - base_ts
            off_delta = (rel_offsets[r] if has_rel else r) - base_off
            klen = key_offsets[r + 1] - key_offsets[r]
            if key_nullable and key_valid[r] == 0:
                klen = -1
            vlen = value_offsets[r + 1] - value_offsets[r]
            if value_nullable and value_valid[r] == 0:
                vlen = -1
            p = write_varint(out, p, _body_size(ts_delta, off_delta, klen, vlen,
                                                header_bytes[r] if has_headers else 1))
            out[p] = 0  # attributes
            p = write_varint(out, p + 1, ts_delta)
            p = write_varint(out, p, off_delta)
            p = write_varint(out, p, klen)
            if klen > 0:
                copy_bytes(out, p, key_data, key_offsets[r], klen)
                p += klen
            p = write_varint(out, p, vlen)
            if vlen > 0:
                copy_bytes(out, p, value_data, value_offsets[r], vlen)
                p += vlen
            if not has_headers:
                out[p] = 0  # headerCount 0
                p += 1
                continue
            h0 = header_offsets[r]
            p = write_varint(out, p, header_offsets[r + 1] - h0)
            for h in range(h0, header_offsets[r + 1]):
                hk = hkey_offsets[h + 1] - hkey_offsets[h]
                p = write_varint(out, p, hk)
                copy_bytes(out, p, hkey_data, hkey_offsets[h], hk)
                p += hk
                hv = hvalue_len[h]
                p = write_varint(out, p, hv)
                if hv > 0:
                    copy_bytes(out, p, hvalue_data, hvalue_offsets[h], hv)
                    p += hv
    return p
