"""format/arrow.py: decoded columns as the exact Arrow types Spark expects, and pyarrow input
(every binary/string/timestamp/headers flavour, sliced, chunked, with nulls) to the encoder."""

from __future__ import annotations

import datetime as dt

from crc32c import crc32c
from hypothesis import given, settings, strategies as st
import numpy as np
import pyarrow as pa
import pytest

from segmentlog_source.errors import BadOptionError
from segmentlog_source.format.arrow import (HEADERS_TYPE, columns_from_arrow, header_columns,
                                            to_arrow)
from segmentlog_source.format.batch import iter_headers
from segmentlog_source.format.record_decoder import ColumnarDecoder, decode_batch
from segmentlog_source.format.record_encoder import encode_batch, encode_batches
from segmentlog_source.format.records import Record, RecordColumns
from tests.conftest import shared_fixture

EXPECTED_TYPES = {"key": pa.binary(), "value": pa.binary(), "offset": pa.int64(),
                  "timestamp": pa.timestamp("us", tz="UTC"), "timestampType": pa.int32(),
                  "headers": pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))}
EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)


def fixture_columns(case: str) -> RecordColumns:
    log = next(shared_fixture("kafka-clients", case).glob("*.log")).read_bytes()
    view = memoryview(log)
    return ColumnarDecoder().decode([(h, view[h.position:h.end]) for h in iter_headers(log)])


def as_rows(arrays: dict[str, pa.Array]) -> list[dict]:
    return pa.RecordBatch.from_pydict(arrays).to_pylist()


def expected_row(r: Record, ts_type: int) -> dict:
    return {"offset": r.offset,
            "timestamp": EPOCH + dt.timedelta(milliseconds=r.timestamp),
            "timestampType": ts_type, "key": r.key, "value": r.value,
            # no headers: null, as Spark's Kafka source gives it
            "headers": [{"key": k, "value": v} for k, v in r.headers] or None}


@pytest.mark.parametrize("case", ["v2-none", "v2-headers", "v2-log-append-time",
                                  "v2-compacted-gaps", "mixed-v0-v1-v2", "v2-zstd"])
def test_fixture_columns_become_exact_arrow_arrays(case):
    columns = fixture_columns(case)
    arrays = to_arrow(columns)
    assert {name: a.type for name, a in arrays.items()} == EXPECTED_TYPES
    for a in arrays.values():
        a.validate(full=True)
        assert len(a) == columns.num_rows
    rows = as_rows(arrays)
    records = columns.to_records()
    assert rows == [expected_row(r, t) for r, t in zip(records, columns.timestamp_types.tolist())]
    # no nulls, no validity bitmap (Spark and Arrow treat both the same, it is just cheaper)
    if columns.keys.valid is None:
        assert arrays["key"].buffers()[0] is None and arrays["key"].null_count == 0
    # headers: null exactly where a record has none
    assert arrays["headers"].null_count == sum(not r.headers for r in records)


def test_arrow_arrays_share_the_decoded_buffers():
    columns = fixture_columns("v2-none")
    value = to_arrow(columns)["value"]
    assert value.buffers()[2].address == columns.values.data.ctypes.data
    assert value.null_count == int((~columns.values.valid).sum())


def test_invalid_utf8_header_key_is_replaced_like_java():
    data = encode_batch([Record(0, 5, None, b"v", (("ok", b"1"),)),
                         Record(1, 6, None, b"w", (("x", None),))])
    # patch the second record's 1-byte header key "x" into 0xff (not UTF-8), keep the CRC valid
    raw = bytearray(data)
    at = raw.rindex(b"x")
    raw[at] = 0xFF
    raw[17:21] = crc32c(bytes(raw[21:])).to_bytes(4, "big")
    columns = ColumnarDecoder().decode([(next(iter_headers(raw)), bytes(raw))])
    headers = to_arrow(columns)["headers"]
    headers.validate(full=True)
    assert headers.to_pylist() == [[{"key": "ok", "value": b"1"}],
                                   [{"key": "\ufffd", "value": None}]]
    assert decode_batch(bytes(raw)).records[1].headers == (("\ufffd", None),)


# -------------------------------------------------------------------- pyarrow -> encoder

def roundtrip(columns: RecordColumns, **kwargs) -> list[Record]:
    out = encode_batches(columns, **kwargs)
    return [r for h in out.headers for r in decode_batch(out.data[h.position:h.end]).records]


def test_fixture_round_trip_through_arrow():
    columns = fixture_columns("v2-headers")
    arrays = to_arrow(columns)
    back = columns_from_arrow(key=arrays["key"], value=arrays["value"],
                              timestamp=arrays["timestamp"], headers=arrays["headers"],
                              offset=arrays["offset"])
    assert roundtrip(back) == columns.to_records()


@pytest.mark.parametrize("kind", [pa.binary(), pa.large_binary(), pa.string(), pa.large_string()])
def test_binary_flavours_sliced_and_chunked(kind):
    raw = ["a", None, "", "ccc", "dddd", None, "\u00e9"]
    values = [None if v is None else v.encode() if kind in (pa.binary(), pa.large_binary())
              else v for v in raw]
    arr = pa.array(values, kind)
    as_bytes = [None if v is None else v.encode() for v in raw]
    for source, want in [(arr, as_bytes), (arr.slice(2, 4), as_bytes[2:6]),
                         (pa.chunked_array([arr.slice(0, 3), arr.slice(3)]), as_bytes)]:
        n = len(want)
        ts = pa.array(np.arange(n) * 1000, pa.timestamp("us", tz="UTC"))
        columns = columns_from_arrow(key=source, value=source, timestamp=ts)
        got = roundtrip(columns, base_offset=10)
        assert [(r.offset, r.timestamp, r.key, r.value) for r in got] == \
            [(10 + i, i, v, v) for i, v in enumerate(want)]


@pytest.mark.parametrize("unit", ["s", "ms", "us", "ns"])
def test_timestamp_units(unit):
    raw = [0, 1700000000, 1, None]
    arr = pa.array(raw, pa.timestamp(unit, tz="UTC"))
    columns = columns_from_arrow(value=pa.array([b"x"] * 4), timestamp=arr, null_timestamp=77)
    to_ms = {"s": lambda v: v * 1000, "ms": lambda v: v, "us": lambda v: v // 1000,
             "ns": lambda v: v // 10**6}[unit]
    assert columns.timestamps.tolist() == [to_ms(v) for v in raw[:3]] + [77]


def test_timestamps_floor_before_the_epoch_and_take_int64_ms():
    us = pa.array([-1, -1000, -1001, 999], pa.timestamp("us", tz="UTC"))
    assert columns_from_arrow(timestamp=us).timestamps.tolist() == [-1, -1, -2, 0]
    ms = pa.array([5, 6], pa.int64())
    assert columns_from_arrow(timestamp=ms).timestamps.tolist() == [5, 6]
    with pytest.raises(BadOptionError, match="null timestamps"):
        columns_from_arrow(timestamp=pa.array([1, None], pa.timestamp("ms")))
    with pytest.raises(BadOptionError, match="timestamp"):
        columns_from_arrow(timestamp=pa.array(["x"]))
    with pytest.raises(BadOptionError, match="key"):
        columns_from_arrow(timestamp=ms, key=pa.array([1, 2]))


HEADERS = [[("a", b"1"), ("b", None)], None, [], [("", b"")], [("\u00e9", b"x" * 300)]]


def header_arrays():
    entries = [None if hs is None else [{"key": k, "value": v} for k, v in hs] for hs in HEADERS]
    as_list = pa.array(entries, HEADERS_TYPE)
    large = pa.array(entries, pa.large_list(HEADERS_TYPE.value_type))
    as_map = pa.array([None if hs is None else hs for hs in HEADERS],
                      pa.map_(pa.string(), pa.binary()))
    return {"list": as_list, "large_list": large, "map": as_map}


@pytest.mark.parametrize("flavour", ["list", "large_list", "map"])
def test_header_flavours(flavour):
    arr = header_arrays()[flavour]
    want = [tuple(hs or ()) for hs in HEADERS]
    for source, expected in [(arr, want), (arr.slice(1, 3), want[1:4]),
                             (pa.chunked_array([arr.slice(0, 2), arr.slice(2)]), want)]:
        n = len(expected)
        columns = columns_from_arrow(timestamp=pa.array(range(n), pa.int64()), headers=source)
        assert [r.headers for r in roundtrip(columns)] == expected


def test_a_null_list_owning_entries_counts_as_no_headers():
    struct = pa.array([{"key": "a", "value": b"1"}, {"key": "b", "value": b"2"}],
                      HEADERS_TYPE.value_type)
    offsets = pa.array([0, 1, 2], pa.int32())
    arr = pa.ListArray.from_arrays(offsets, struct, mask=pa.array([False, True]))
    assert arr.to_pylist()[1] is None and arr.value_lengths().to_pylist()[0] == 1
    hc = header_columns(arr)
    assert hc.offsets.tolist() == [0, 1, 1] and hc.keys.to_pylist() == [b"a"]


def test_null_header_keys_are_refused():
    arr = pa.array([[{"key": None, "value": b"1"}]], HEADERS_TYPE)
    with pytest.raises(BadOptionError, match="header key is null"):
        header_columns(arr)
    with pytest.raises(BadOptionError, match="headers"):
        header_columns(pa.array([1]))


optional_bytes = st.one_of(st.none(), st.binary(max_size=50))


@settings(max_examples=100, deadline=None)
@given(rows=st.lists(st.tuples(optional_bytes, optional_bytes, st.integers(-1, 2**50),
                               st.lists(st.tuples(st.text(max_size=5), optional_bytes),
                                        max_size=3)), max_size=40),
       start=st.integers(0, 5), codec=st.sampled_from(["none", "lz4"]))
def test_random_arrow_input_round_trips(rows, start, codec):
    rows = [(None, None, 0, [])] * start + rows
    keys = pa.array([r[0] for r in rows], pa.binary()).slice(start)
    values = pa.array([r[1] for r in rows], pa.large_binary()).slice(start)
    stamps = pa.array([r[2] * 1000 for r in rows], pa.timestamp("us", tz="UTC")).slice(start)
    headers = pa.array([[{"key": k, "value": v} for k, v in r[3]] for r in rows],
                       HEADERS_TYPE).slice(start)
    columns = columns_from_arrow(key=keys, value=values, timestamp=stamps, headers=headers)
    got = roundtrip(columns, codec=codec, max_bytes=300)
    assert got == [Record(i, r[2], r[0], r[1], tuple(r[3])) for i, r in enumerate(rows[start:])]
