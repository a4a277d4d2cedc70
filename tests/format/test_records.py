"""format/records.py: the Java-written fixtures decode to what Kafka read, our batches are
byte-identical to Java's, kafka-python agrees in both directions, corrupt input fails cleanly."""

from __future__ import annotations

import dataclasses
import random
import struct

from crc32c import crc32c
from hypothesis import HealthCheck, given, settings, strategies as st
from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder
from kafka.record.memory_records import MemoryRecords
import numpy as np
import pytest

from segmentlog_source.errors import BadOptionError, CorruptDataError
from segmentlog_source.format.arrow import to_arrow
from segmentlog_source.format.batch import (CODEC_NAMES, LOG_APPEND_TIME, TIMESTAMP_TYPE_NAMES,
                                            iter_headers, parse_header, set_log_append_time)
from segmentlog_source.format.record_decoder import ColumnarDecoder, decode_batch
from segmentlog_source.format.record_encoder import encode_batch, encode_batches
from segmentlog_source.format.records import BinaryColumn, HeaderColumns, Record, RecordColumns
from tests.conftest import shared_fixture
from tests.fixture_inspect import parse_inspect, same_bytes

CASES = sorted(p.name for p in shared_fixture("kafka-clients").iterdir()
               if p.is_dir() and p.name.startswith(("v2-", "mixed-")))
CODECS = list(range(len(CODEC_NAMES)))


def load(case: str):
    """(entries [(header, bytes)], inspect batches) of a fixture case."""
    directory = shared_fixture("kafka-clients", case)
    log = next(directory.glob("*.log")).read_bytes()
    entries = [(h, log[h.position:h.end]) for h in iter_headers(log)]
    return entries, parse_inspect(directory / "inspect.txt").batches


def assert_records_match(records, expected):
    assert [r.offset for r in records] == [e.offset for e in expected]
    for r, e in zip(records, expected):
        assert r.timestamp == e.timestamp, r.offset
        assert same_bytes(e.key, r.key), r.offset
        assert same_bytes(e.value, r.value), r.offset
        assert r.headers == e.headers, r.offset


# ---------------------------------------------------------------------------- Java fixtures

@pytest.mark.parametrize("case", CASES)
def test_fixture_batches_decode_like_kafka(case):
    entries, expected = load(case)
    assert len(entries) == len(expected)
    for (header, entry), exp in zip(entries, expected):
        batch = decode_batch(entry, header)
        h = batch.header
        assert (h.position, h.base_offset, h.last_offset, h.magic, h.codec_name) == (
            exp.position, exp.base_offset, exp.last_offset, exp.magic, exp.codec)
        assert (h.is_transactional, h.is_control, h.producer_id, h.producer_epoch,
                h.base_sequence, h.partition_leader_epoch) == (
            exp.is_transactional, exp.is_control, exp.producer_id, exp.producer_epoch,
            exp.base_sequence, exp.partition_leader_epoch)
        assert TIMESTAMP_TYPE_NAMES[h.timestamp_type] == exp.timestamp_type
        assert (h.max_timestamp, h.crc, h.size) == (exp.max_timestamp, exp.checksum, exp.size)
        if h.magic == 2:
            assert h.records_count == exp.record_count == len(batch.records)
        assert_records_match(batch.records, exp.records)
        # decode_batch parses the header itself when not given one
        assert decode_batch(entry).records == batch.records


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("jit", [True, False], ids=["jit", "py"])
def test_fixture_chunk_decodes_to_columns(case, jit):
    entries, expected = load(case)
    columns = ColumnarDecoder(jit=jit).decode(entries)
    assert_records_match(columns.to_records(), [r for b in expected for r in b.records])
    types = [TIMESTAMP_TYPE_NAMES[t] for t in columns.timestamp_types.tolist()]
    assert types == [b.timestamp_type for b in expected for _ in b.records]


def test_log_append_time_uses_max_timestamp_not_deltas():
    entries, expected = load("v2-log-append-time")
    for header, entry in entries:
        assert header.timestamp_type == LOG_APPEND_TIME
        base = parse_header(entry)
        records = decode_batch(entry).records
        assert {r.timestamp for r in records} == {base.max_timestamp}
        # the bytes still hold the producer's create times, which differ
        assert base.base_timestamp != base.max_timestamp


def test_delete_horizon_and_empty_batch():
    entries, expected = load("v2-compacted-gaps")
    horizon = [(h, e) for h, e in entries if h.has_delete_horizon]
    assert len(horizon) == 1
    h, e = horizon[0]
    assert h.base_timestamp == 1700086400000
    assert [r.timestamp for r in decode_batch(e).records] == [1700000300030, 1700000300034]
    empty = [(h, e) for h, e in entries if h.records_count == 0]
    assert len(empty) == 1 and decode_batch(empty[0][1]).records == []


# -------------------------------------------------------------------------- filters, fields

@pytest.mark.parametrize("case", ["v2-none", "v2-create-time-unordered", "v2-log-append-time",
                                  "v2-compacted-gaps", "mixed-v0-v1-v2"])
def test_row_filters_match_python_filtering(case):
    entries, expected = load(case)
    everything = [r for b in expected for r in b.records]
    offsets = sorted({r.offset for r in everything})
    stamps = sorted({r.timestamp for r in everything})
    rng = random.Random(case)
    decoder = ColumnarDecoder()
    for _ in range(40):
        lo, hi = sorted(rng.choice(offsets) + rng.randrange(-1, 2) for _ in range(2))
        tlo, thi = sorted(rng.choice(stamps) + rng.randrange(-1, 2) for _ in range(2))
        got = decoder.decode(entries, offsets=(lo, hi), timestamps=(tlo, thi)).to_records()
        want = [r for r in everything if lo <= r.offset < hi and tlo <= r.timestamp < thi]
        assert_records_match(got, want)
        only_offsets = decoder.decode(entries, offsets=(lo, hi)).to_records()
        assert_records_match(only_offsets, [r for r in everything if lo <= r.offset < hi])


def test_entries_read_in_place_or_copied():
    entries, expected = load("v2-transactions")
    log = b"".join(e for _, e in entries)
    want = [r for b in expected for r in b.records]
    view = memoryview(b"junk" + log)[4:]  # views of one buffer, as storage's chunks yield them
    in_place = [(h, view[h.position:h.end]) for h, _ in entries]
    assert ColumnarDecoder().decode(in_place).to_records() == \
        ColumnarDecoder().decode(entries).to_records()
    assert_records_match(ColumnarDecoder().decode(in_place).to_records(), want)
    # views of one buffer that are not where their header positions say: found out, copied
    (h0, e0), (h1, e1) = entries[:2]
    gap = memoryview(e0 + b"\x00" * 100 + e1)
    moved = [(h0, gap[:h0.size]), (h1, gap[h0.size + 100:])]
    assert ColumnarDecoder().decode(moved).to_records() == \
        decode_batch(e0).records + decode_batch(e1).records
    broken = bytearray(e0 + e1)
    broken[h0.size + 70] ^= 1  # inside batch 1's records
    view = memoryview(bytes(broken))
    with pytest.raises(CorruptDataError, match="CRC-32C mismatch") as info:
        ColumnarDecoder().decode([(h0, view[:h0.size]), (h1, view[h0.size:])])
    assert info.value.position == h1.position


def test_fields_subset_skips_payloads():
    entries, expected = load("v2-headers")
    full = ColumnarDecoder().decode(entries)
    meta = ColumnarDecoder(fields=()).decode(entries)
    assert meta.keys is None and meta.values is None and meta.headers is None
    assert (meta.offsets == full.offsets).all() and (meta.timestamps == full.timestamps).all()
    values_only = ColumnarDecoder(fields={"value"}).decode(entries)
    assert values_only.values.to_pylist() == full.values.to_pylist()
    assert values_only.keys is None and values_only.headers is None


# ------------------------------------------------------------------------ byte-identical

def _reencode(header, records):
    return encode_batch(
        records, base_offset=header.base_offset, last_offset=header.last_offset,
        partition_leader_epoch=header.partition_leader_epoch, producer_id=header.producer_id,
        producer_epoch=header.producer_epoch, base_sequence=header.base_sequence,
        is_transactional=header.is_transactional, is_control=header.is_control,
        delete_horizon=header.base_timestamp if header.has_delete_horizon else None,
        max_timestamp=header.max_timestamp if not records else None)


@pytest.mark.parametrize("case", [c for c in CASES if c.startswith("v2-")])
def test_uncompressed_create_time_batches_reencode_byte_for_byte(case):
    entries, _ = load(case)
    checked = 0
    for header, entry in entries:
        if header.codec != 0 or header.timestamp_type == LOG_APPEND_TIME:
            continue  # compressed bytes differ between codec libraries; LogAppendTime drops deltas
        assert _reencode(header, decode_batch(entry).records) == entry, header
        checked += 1
    if case in ("v2-none", "v2-headers", "v2-transactions", "v2-compacted-gaps"):
        assert checked >= 2


def test_spec_worked_example_batch():
    expected = bytes.fromhex(
        "0000000000000000" "0000003d" "00000000" "02" "e641a44b" "0000" "00000000"
        "0000018bcfe56800" "0000018bcfe56800" "ffffffffffffffff" "ffff" "ffffffff" "00000001"
        "16000000010a68656c6c6f00")
    data = encode_batch([Record(0, 1700000000000, None, b"hello")], partition_leader_epoch=0)
    assert len(data) == 73 and data == expected
    assert parse_header(data).crc == 3863061579


def test_spec_worked_example_commit_marker():
    expected = bytes.fromhex(
        "000000000000000a 00000042 00000003 02 f44427a9 0030 00000000 0000018bcfe56801"
        " 0000018bcfe56801 00000000000003e8 0002 ffffffff 00000001 20 00 00 00 08 00000001"
        " 0c 000000000005 00".replace(" ", ""))
    record = Record(10, 1700000000001, struct.pack(">hh", 0, 1), struct.pack(">hi", 0, 5))
    data = encode_batch([record], partition_leader_epoch=3, producer_id=1000, producer_epoch=2,
                        is_transactional=True, is_control=True)
    assert len(data) == 78 and data == expected
    assert decode_batch(data).records == [record]


def test_empty_batch_like_the_cleaner():
    data = encode_batch([], base_offset=40, last_offset=44, max_timestamp=1700000300044,
                        producer_id=556, producer_epoch=1, base_sequence=10,
                        partition_leader_epoch=2)
    entries, _ = load("v2-compacted-gaps")
    assert data == next(e for h, e in entries if h.records_count == 0)


# ------------------------------------------------------------------ kafka-python both ways

def kafka_python_records(data: bytes):
    out = []
    records = MemoryRecords(data)
    while (batch := records.next_batch()) is not None:
        for r in batch:
            out.append(Record(r.offset, r.timestamp, r.key, r.value,
                              tuple((k, v) for k, v in r.headers)))
    return out


def kafka_python_batch(records, codec=0, transactional=False, producer=(-1, -1, -1)):
    builder = DefaultRecordBatchBuilder(2, codec, transactional, *producer, batch_size=1 << 30)
    for r in records:
        assert builder.append(r.offset, r.timestamp, r.key, r.value, list(r.headers))
    return bytes(builder.build())


def with_log_append_time(data: bytes, append_time: int) -> bytes:
    entry = bytearray(data)
    set_log_append_time(entry, append_time)  # what the broker does in place
    return bytes(entry)


SAMPLE = [
    Record(0, 1700000000000, b"k", b"v" * 100, ()),
    Record(1, 1700000000005, None, b"null key", (("h1", b"x"), ("h2", None))),
    Record(2, 1699999999000, b"", None, (("", b""),)),
    Record(3, -1, b"tombstone", None, (("caf\u00e9", b"\x00\xff"), ("dup", b"1"), ("dup", b"2"))),
    Record(4, 1700000000010, b"\x00" * 300, b"", ()),
]


@pytest.mark.parametrize("codec", CODECS)
def test_kafka_python_reads_what_we_write(codec):
    data = encode_batch(SAMPLE, codec=codec, producer_id=77, producer_epoch=3, base_sequence=9,
                        is_transactional=True)
    assert kafka_python_records(data) == SAMPLE
    batch = DefaultRecordBatch(data)
    assert batch.validate_crc() and batch.compression_type == codec
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (77, 3, 9)
    assert batch.is_transactional and batch.max_timestamp == 1700000000010
    assert batch.first_timestamp == SAMPLE[0].timestamp


@pytest.mark.parametrize("codec", CODECS)
def test_we_read_what_kafka_python_writes(codec):
    data = kafka_python_batch(SAMPLE, codec, True, (77, 3, 9))
    assert decode_batch(data).records == SAMPLE == kafka_python_records(data)


@pytest.mark.parametrize("codec", CODECS)
def test_log_append_time_both_ways(codec):
    ours = encode_batch(SAMPLE, codec=codec, log_append_time=1800000000000)
    theirs = with_log_append_time(kafka_python_batch(SAMPLE, codec), 1800000000000)
    for data in (ours, theirs):
        want = [r._replace(timestamp=1800000000000) for r in SAMPLE]
        assert kafka_python_records(data) == want
        assert decode_batch(data).records == want
        assert ColumnarDecoder().decode([(parse_header(data), data)]).timestamp_types.tolist() \
            == [LOG_APPEND_TIME] * len(SAMPLE)


header_st = st.tuples(st.text(max_size=8), st.one_of(st.none(), st.binary(max_size=20)))
record_st = st.tuples(st.integers(-1, 2**45), st.one_of(st.none(), st.binary(max_size=40)),
                      st.one_of(st.none(), st.binary(max_size=300)),
                      st.lists(header_st, max_size=3).map(tuple))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=st.lists(record_st, min_size=1, max_size=30), codec=st.sampled_from(CODECS),
       base=st.integers(0, 2**40), gaps=st.lists(st.integers(1, 1000), min_size=30,
                                                 max_size=30))
def test_random_records_round_trip_with_kafka_python(rows, codec, base, gaps):
    offsets = np.cumsum([0] + gaps[:len(rows) - 1]).tolist()
    records = [Record(base + o, *row) for o, row in zip(offsets, rows)]
    ours = encode_batch(records, codec=codec)
    assert decode_batch(ours).records == records
    shifted = [r._replace(offset=r.offset - base) for r in records]
    assert kafka_python_records(ours) == records
    theirs = kafka_python_batch(shifted, codec)
    assert decode_batch(theirs).records == shifted
    if codec == 0:  # kafka-python writes baseOffset 0 and leader epoch 0, like a producer
        assert encode_batch(shifted, base_offset=0, partition_leader_epoch=0) == theirs


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(batches=st.lists(st.tuples(st.sampled_from(CODECS), st.integers(1, 40),
                                  st.integers(0, 3000)), min_size=1, max_size=12),
       part_bytes=st.integers(1, 60_000), lo=st.integers(0, 300), verify_crc=st.booleans())
def test_a_chunk_of_mixed_codecs_decodes_in_parts(batches, part_bytes, lo, verify_crc):
    """A chunk whose batches switch codec, decoded a part at a time as scans do: the records
    kafka-python reads, each once and in order, whatever the parts' size and the range."""
    rng = random.Random(len(batches) * part_bytes)
    entries, want, offset = [], [], 0
    for codec, count, value_bytes in batches:
        records = [Record(offset + i, 1700000000000 + offset + i, b"k%d" % (offset + i),
                          rng.randbytes(rng.randrange(value_bytes + 1)), ())
                   for i in range(count)]
        data = encode_batch(records, codec=codec)
        entries.append((parse_header(data), data))
        want += kafka_python_records(data)
        offset += count
    decoder = ColumnarDecoder(verify_crc=verify_crc)
    got, done = [], 0
    for part in decoder.decode_parts(entries, offsets=(lo, 2**62), max_bytes=part_bytes):
        assert part.entries_done > done
        done = part.entries_done
        got += part.columns.to_records()
    assert done == len(entries) or not any(r.offset >= lo for r in want)
    assert got == [r for r in want if r.offset >= lo]


# ----------------------------------------------------------------------- splitting batches

@pytest.mark.parametrize("codec", [0, 1, 4])
def test_encode_batches_splits_by_records_and_bytes(codec):
    rng = random.Random(codec)
    records = [Record(i, 1700000000000 + rng.randrange(-50, 50), b"k%d" % i,
                      rng.randbytes(rng.randrange(0, 400)), ()) for i in range(500)]
    columns = dataclasses.replace(RecordColumns.from_records(records), offsets=None)
    for max_records, max_bytes in [(None, 4096), (17, None), (50, 2000), (1, None), (None, 1)]:
        out = encode_batches(columns, base_offset=1000, max_records=max_records,
                             max_bytes=max_bytes, codec=codec, producer_id=5, producer_epoch=0,
                             base_sequence=2**31 - 100)
        headers = list(iter_headers(out.data))
        assert headers == out.headers and out.num_batches == len(headers)
        decoded = [r for h in headers for r in decode_batch(out.data[h.position:h.end]).records]
        assert decoded == [r._replace(offset=r.offset + 1000) for r in records]
        for h in headers:
            assert h.records_count <= (max_records or 500)
            if h.records_count > 1 and codec == 0:
                assert h.size <= (max_bytes or 1 << 40)
            assert h.base_sequence == (2**31 - 100 + h.base_offset - 1000) % 2**31
        if max_bytes and max_bytes > 1 and codec == 0:  # greedy: one more row would not fit
            for h, nxt in zip(headers, headers[1:]):
                rows = records[h.base_offset - 1000:nxt.base_offset - 1000 + 1]
                grown = encode_batch(rows, base_offset=rows[0].offset)
                assert len(grown) > max_bytes or (max_records and len(rows) > max_records)


# --------------------------------------------------------------------------- corrupt input

def _batch(records=SAMPLE[:3]):
    return bytearray(encode_batch(records))


def _fix(b: bytearray, count: int | None = None) -> bytes:
    """Re-seal a hand-edited batch (length, count, CRC) so only the record error remains."""
    struct.pack_into(">i", b, 8, len(b) - 12)
    if count is not None:
        struct.pack_into(">i", b, 57, count)
    struct.pack_into(">I", b, 17, crc32c(bytes(b[21:])))
    return bytes(b)


def _corrupt(data: bytes, match: str, position: int = 0, **kwargs):
    """Both kernels, and entries given as bytes (copied) and as views (read in place)."""
    for jit in (True, False):
        for entry in (data, memoryview(b"\x00" + data)[1:]):
            with pytest.raises(CorruptDataError, match=match) as info:
                header = parse_header(data, base_position=position)
                ColumnarDecoder(jit=jit, **kwargs).decode([(header, entry)])
            assert info.value.position == position
    return info.value


def test_bad_crc():
    b = _batch()
    b[-1] ^= 1
    _corrupt(bytes(b), "CRC-32C mismatch", 500)
    decode_batch(bytes(b), verify_crc=False)  # the flip hit a header value byte: still parses


def test_truncated_record():
    b = _batch()
    err = _corrupt(_fix(b[:-4]), r"record 2 .*(runs past|does not match|negative or runs)")
    assert "byte" in err.reason


def test_record_count_mismatch():
    b = _batch()
    _corrupt(_fix(b, count=2), "bytes left after the declared records count")
    _corrupt(_fix(b, count=4), "record 3 ")
    _corrupt(_fix(b, count=-1), "records count -1")
    _corrupt(_fix(b, count=2**31 - 1), "cannot fit")


def test_overlong_varints():
    small = [Record(0, 5, None, b"x")]
    b = bytearray(encode_batch(small))
    # record: length@61 attributes@62 tsDelta@63 offsetDelta key(-1) valueLen "x" headerCount
    assert bytes(b[61:]) == b"\x0e\x00\x00\x00\x01\x02x\x00"
    b[63:64] = b"\x80" * 10 + b"\x00"  # an 11-byte varlong
    b[61] += 20  # declared length + 10 (zig-zag: 2 per unit)
    _corrupt(_fix(b), r"record 0 .*byte 63 of the batch.*varlong longer than 10 bytes")
    b = bytearray(encode_batch(small))
    b[64:65] = b"\x80" * 5 + b"\x00"  # a 6-byte offsetDelta varint
    b[61] += 10
    _corrupt(_fix(b), r"byte 64 of the batch.*varint longer than 5 bytes")
    b = bytearray(encode_batch(small))
    b[61:62] = b"\x80\x80\x80\x80\x80\x01"  # a 6-byte length varint
    _corrupt(_fix(b), r"byte 61 of the batch.*varint longer than 5 bytes")
    b = bytearray(encode_batch(small))  # 10-byte varlong and 5-byte varint are fine
    b[63:64] = b"\x80" * 9 + b"\x00"
    b[64 + 9:65 + 9] = b"\x80" * 4 + b"\x00"
    b[61] += 2 * 13
    assert decode_batch(_fix(b)).records == small


def test_declared_length_mismatch():
    b = bytearray(encode_batch(SAMPLE[:2]))
    b[61] -= 2  # record 0 claims 1 byte less (zig-zag: 2 per unit)
    _corrupt(_fix(b), r"record 0 .*(does not match|runs past)")
    b = bytearray(encode_batch(SAMPLE[:1]))
    b[61] += 2
    _corrupt(_fix(b), r"negative or runs past")


def test_negative_header_count_and_key():
    data = bytearray(encode_batch([Record(0, 0, None, None, (("a", None),))]))
    # record: len attr ts off key(-1) value(-1) count(1)=02 klen(1)=02 'a' vlen(-1)=01
    assert bytes(data[62:]) == b"\x00\x00\x00\x01\x01\x02\x02a\x01"
    data[67] = 0x03  # header count -2
    _corrupt(_fix(bytearray(data)), "invalid header count -2")
    data[67] = 0x02
    data[68] = 0x01  # header key length -1
    _corrupt(_fix(bytearray(data)), "negative header key length -1")


def test_offset_overflow():
    data = bytearray(encode_batch([Record(5, 0, None, None)], base_offset=0))
    struct.pack_into(">q", data, 0, 2**63 - 2)  # baseOffset + lastOffsetDelta passes int64
    _corrupt(bytes(data), "leaves no room for the next offset")
    struct.pack_into(">i", data, 23, 0)  # lastOffsetDelta 0: now the record's delta passes it
    _corrupt(_fix(data), "offset delta 5 does not increase within the batch, or passes")
    data = bytearray(encode_batch([Record(0, 10**12, None, None), Record(1, 0, None, None)]))
    struct.pack_into(">q", data, 27, -(2**63) + 5)  # baseTimestamp + delta -10**12 underflows
    _corrupt(_fix(data), "outside int64")


def test_entry_length_must_match_header():
    data = bytes(encode_batch(SAMPLE[:2]))
    with pytest.raises(CorruptDataError, match="entry has"):
        decode_batch(data + b"\x00")
    with pytest.raises(CorruptDataError, match="incomplete entry"):
        decode_batch(data[:-1])


def _outcome(data: bytes, jit: bool, verify_crc: bool):
    try:
        header = parse_header(data)
        if header is None:
            return "incomplete"
        columns = ColumnarDecoder(jit=jit, verify_crc=verify_crc,
                                  max_decompressed=1 << 20).decode([(header, data)])
        return columns.to_records()
    except CorruptDataError as err:
        return ("error", str(err))


VALID = [encode_batch(SAMPLE, codec=c) for c in CODECS]


@settings(max_examples=400, deadline=None)
@given(which=st.integers(0, len(VALID) - 1), flips=st.lists(
    st.tuples(st.integers(0, 10**6), st.integers(1, 255)), min_size=1, max_size=4),
       verify_crc=st.booleans())
def test_random_byte_flips_fail_cleanly(which, flips, verify_crc):
    data = bytearray(VALID[which])
    for where, mask in flips:
        pos = where % len(data)
        if pos != 16:  # the magic byte: another format's decoder (legacy.py)
            data[pos] ^= mask
    data = bytes(data)
    fast = _outcome(data, True, verify_crc)
    assert fast == _outcome(data, False, verify_crc)


# ------------------------------------------------------------------------ edges of the API

def test_empty_chunk_and_fully_filtered_chunk():
    for columns in (ColumnarDecoder().decode([]),
                    ColumnarDecoder().decode(load("v2-none")[0], offsets=(10**9, 10**9 + 1))):
        assert columns.num_rows == 0 and columns.to_records() == []
        assert all(len(a) == 0 for a in to_arrow(columns).values())


def test_explicit_offsets_across_batches():
    records = [Record(100 + 3 * i, 1700000000000 + i, b"k", b"v" * i) for i in range(50)]
    out = encode_batches(RecordColumns.from_records(records), base_offset=90, max_records=7)
    assert out.headers[0].base_offset == 90 and out.headers[1].base_offset == 121
    assert [r for h in out.headers
            for r in decode_batch(out.data[h.position:h.end]).records] == records


def test_encoder_refuses_what_kafka_refuses():
    with pytest.raises(BadOptionError, match="invalid timestamp"):
        encode_batch([Record(0, -5, None, b"x")])
    with pytest.raises(BadOptionError, match="increase strictly"):
        encode_batch([Record(0, 1, None, b"x"), Record(0, 1, None, b"y")])
    with pytest.raises(BadOptionError, match="increase strictly"):
        encode_batch([Record(3, 1, None, b"x")], base_offset=4)
    with pytest.raises(BadOptionError, match="last_offset"):
        encode_batch([Record(3, 1, None, b"x"), Record(5, 1, None, b"x")], last_offset=4)
    with pytest.raises(BadOptionError, match="more than 2\\*\\*31"):
        encode_batch([Record(0, 1, None, b"x"), Record(2**31, 1, None, b"x")])
    with pytest.raises(BadOptionError, match="unknown codec"):
        encode_batch(SAMPLE, codec=9)
    with pytest.raises(BadOptionError, match="fields"):
        ColumnarDecoder(fields={"key", "payload"})
    nothing = encode_batches(RecordColumns(np.zeros(0, np.int64)))
    assert nothing.data == b"" and nothing.headers == []
    data = encode_batch(SAMPLE, codec="zstd")
    assert parse_header(data).codec_name == "zstd" and decode_batch(data).records == SAMPLE


def test_inconsistent_columns_are_refused_before_any_copy():
    ts = np.zeros(2, np.int64)
    for bad, why in (([0, 5, 3], "do not ascend"), ([0, 2, 99], "within the 10 data bytes"),
                     ([-1, 0, 1], "within")):
        column = BinaryColumn(None, np.array(bad, np.int64), np.zeros(10, np.uint8))
        for jit in (True, False):
            with pytest.raises(BadOptionError, match=why):
                encode_batches(RecordColumns(ts, values=column), jit=jit)
    with pytest.raises(BadOptionError, match="rows given"):
        encode_batches(RecordColumns(ts, keys=BinaryColumn.from_pylist([b"x"])))
    headers = HeaderColumns(np.array([0, 1, 3]), BinaryColumn.from_pylist([b"a"]),
                            BinaryColumn.from_pylist([b"b"]))
    with pytest.raises(BadOptionError, match="list offsets"):
        encode_batches(RecordColumns(ts, headers=headers))
