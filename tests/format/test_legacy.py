"""format/legacy.py: magic 0/1 entries decode to exactly what Kafka's reader reported, and
malformed wrappers are refused."""

from __future__ import annotations

import struct
import zlib

import pytest
from kafka.record import MemoryRecords
from kafka.record.legacy_records import LegacyRecordBatchBuilder

from segmentlog_source.errors import CorruptDataError
from segmentlog_source.format.batch import header_at, iter_headers
from segmentlog_source.format.codecs import GZIP, LZ4, NONE, SNAPPY, ZSTD, compress
from segmentlog_source.format.legacy import decode_legacy_entry
from tests.conftest import shared_fixture
from tests.fixture_inspect import parse_inspect, same_bytes

LEGACY_CASES = ["v0-none", "v0-gzip", "v0-snappy", "v0-lz4", "v1-none", "v1-gzip", "v1-snappy",
                "v1-lz4", "mixed-v0-v1-v2"]


def _assert_records_match(records, expected):
    assert len(records) == len(expected)
    for record, want in zip(records, expected):
        assert (record.offset, record.timestamp) == (want.offset, want.timestamp)
        assert same_bytes(want.key, record.key), record.offset
        assert same_bytes(want.value, record.value), record.offset
        assert tuple(record.headers) == want.headers == ()


@pytest.mark.parametrize("case", LEGACY_CASES)
def test_fixture_entries_decode_to_kafkas_records(case):
    directory = shared_fixture("kafka-clients", case)
    buf = next(directory.glob("*.log")).read_bytes()
    expected = parse_inspect(directory / "inspect.txt").batches
    headers = list(iter_headers(buf))
    assert len(headers) == len(expected)
    checked = 0
    for header, want in zip(headers, expected):
        assert (header.position, header.size, header.magic, header.crc) == \
            (want.position, want.size, want.magic, want.checksum)
        if header.magic == 2:  # the v2 decoder is record_decoder.py's
            continue
        first_offset, records = decode_legacy_entry(buf[header.position:header.end], header)
        assert first_offset == want.base_offset
        assert header.last_offset == want.last_offset == records[-1].offset
        _assert_records_match(records, want.records)
        checked += len(records)
    assert checked == sum(len(b.records) for b in expected if b.magic < 2) > 0


# ---------------------------------------------------------------- hand-made entries

def _message(offset, magic, key, value, *, timestamp=-1, attributes=0) -> bytes:
    body = struct.pack(">bb", magic, attributes)
    if magic == 1:
        body += struct.pack(">q", timestamp)
    for field in (key, value):
        body += struct.pack(">i", -1) if field is None else struct.pack(">i", len(field)) + field
    crc = zlib.crc32(body) & 0xFFFFFFFF
    return struct.pack(">qiI", offset, len(body) + 4, crc) + body


def _wrapper(offset, magic, codec, inner: bytes, *, timestamp=-1, log_append_time=False):
    attributes = codec | (0x08 if log_append_time else 0)
    return _message(offset, magic, None, compress(codec, inner, magic=magic),
                    timestamp=timestamp, attributes=attributes)


def _decode(entry, **kwargs):
    return decode_legacy_entry(entry, header_at(entry, 0), **kwargs)


def test_uncompressed_messages():
    first, records = _decode(_message(41, 0, b"k", b"v"))
    assert first == 41
    assert [(r.offset, r.timestamp, r.key, r.value) for r in records] == [(41, -1, b"k", b"v")]
    first, records = _decode(_message(42, 1, None, b"", timestamp=1700000000123))
    assert [(r.offset, r.timestamp, r.key, r.value) for r in records] == \
        [(42, 1700000000123, None, b"")]


def test_magic_1_relative_inner_offsets():
    inner = b"".join(_message(i, 1, b"k%d" % i, b"v", timestamp=100 + i) for i in range(3))
    first, records = _decode(_wrapper(1002, 1, GZIP, inner, timestamp=102))
    assert first == 1000
    assert [(r.offset, r.timestamp, r.key) for r in records] == \
        [(1000, 100, b"k0"), (1001, 101, b"k1"), (1002, 102, b"k2")]


def test_magic_1_wrapper_offset_zero_keeps_inner_offsets():
    inner = b"".join(_message(i + 5, 1, None, b"v", timestamp=7) for i in range(3))
    first, records = _decode(_wrapper(0, 1, SNAPPY, inner, timestamp=7))
    assert first == 5 and [r.offset for r in records] == [5, 6, 7]


def test_magic_0_absolute_inner_offsets():
    inner = b"".join(_message(offset, 0, None, b"v") for offset in (20, 21, 25))
    first, records = _decode(_wrapper(25, 0, LZ4, inner))
    assert first == 20
    assert [(r.offset, r.timestamp) for r in records] == [(20, -1), (21, -1), (25, -1)]


def test_log_append_time_wrapper_overrides_inner_timestamps():
    inner = b"".join(_message(i, 1, None, b"v", timestamp=100 + i) for i in range(3))
    _, records = _decode(_wrapper(2, 1, GZIP, inner, timestamp=999, log_append_time=True))
    assert [r.timestamp for r in records] == [999, 999, 999]
    _, records = _decode(_wrapper(2, 1, GZIP, inner, timestamp=999))  # CreateTime: their own
    assert [r.timestamp for r in records] == [100, 101, 102]


def test_magic_0_inner_message_in_magic_1_wrapper_has_no_timestamp():
    inner = _message(0, 0, None, b"old") + _message(1, 1, None, b"new", timestamp=5)
    _, records = _decode(_wrapper(1, 1, GZIP, inner, timestamp=5, log_append_time=True))
    assert [r.timestamp for r in records] == [-1, 5]


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("codec", [NONE, GZIP, SNAPPY, LZ4])
def test_agrees_with_kafka_python(magic, codec):
    builder = LegacyRecordBatchBuilder(magic, codec, batch_size=1 << 20)
    for i in range(20 if codec else 1):
        builder.append(i, 1700000000000 + i, None if i % 3 == 0 else b"key-%d" % i,
                       None if i % 5 == 4 else b"value %d " % i * i)
    entry = bytes(builder.build())
    if codec:  # a broker sets the wrapper offset to the last inner offset
        entry = struct.pack(">q", 119 if magic == 1 else 19) + entry[8:]
    _, records = _decode(entry)
    theirs = [r for batch in _kafka_python_batches(entry) for r in batch]
    # kafka-python says None where Kafka's reader says -1 (NO_TIMESTAMP, magic 0).
    assert [(r.offset, r.timestamp, r.key, r.value) for r in records] == \
        [(r.offset, -1 if r.timestamp is None else r.timestamp, r.key, r.value) for r in theirs]
    assert len(records) == (20 if codec else 1)


def _kafka_python_batches(entry):
    records = MemoryRecords(entry)
    while True:
        batch = records.next_batch()
        if batch is None:
            return
        yield list(batch)


# ---------------------------------------------------------------- refused

def _raises(entry, match, **kwargs):
    with pytest.raises(CorruptDataError, match=match) as info:
        _decode(entry, **kwargs)
    assert info.value.position == 0  # the entry's position (header_at(entry, 0))
    return info.value


def test_crc_mismatch():
    entry = bytearray(_message(3, 1, b"k", b"value", timestamp=1))
    entry[-1] ^= 1
    _raises(bytes(entry), "CRC mismatch")
    _, records = _decode(bytes(entry), verify_crc=False)
    assert records[0].value == b"valud"


def test_inner_crc_mismatch():
    inner = bytearray(_message(0, 1, None, b"abc", timestamp=1))
    inner[-1] ^= 1
    _raises(_wrapper(0, 1, GZIP, bytes(inner)), "inner message at inner byte 0: CRC mismatch")
    _, records = _decode(_wrapper(0, 1, GZIP, bytes(inner)), verify_crc=False)
    assert records[0].value == b"abb"


def test_nested_compression():
    nested = _wrapper(0, 1, GZIP, _message(0, 1, None, b"x"))
    _raises(_wrapper(0, 1, GZIP, nested), "nested compression")


def test_bad_inner_sizes():
    good = _message(0, 1, None, b"abc", timestamp=1)
    _raises(_wrapper(0, 1, GZIP, good + b"\x00" * 5), "5 trailing bytes")
    too_long = good[:8] + struct.pack(">i", 1000) + good[12:]
    _raises(_wrapper(0, 1, GZIP, too_long), "message size 1000 does not fit")
    too_short = good[:8] + struct.pack(">i", 10) + good[12:]
    _raises(_wrapper(0, 1, GZIP, too_short), "message size 10 does not fit")
    bad_magic = _message(0, 1, None, b"abc", timestamp=1)
    bad_magic = bad_magic[:16] + b"\x02" + bad_magic[17:]
    _raises(_wrapper(0, 1, GZIP, bad_magic), "invalid magic 2", verify_crc=False)


def test_key_and_value_must_fill_the_message():
    entry = _message(0, 0, b"key", b"value")
    longer_key = entry[:18] + struct.pack(">i", 100) + entry[22:]
    _raises(longer_key, "key length 100 does not fit", verify_crc=False)
    shorter_value = entry[:-9] + struct.pack(">i", 3) + entry[-5:]
    _raises(shorter_value, "2 bytes left after the value", verify_crc=False)
    negative = entry[:18] + struct.pack(">i", -2) + entry[22:]
    _raises(negative, "key length -2", verify_crc=False)


def test_wrapper_offset_below_last_inner_offset():
    inner = b"".join(_message(i, 1, None, b"v", timestamp=1) for i in range(5))
    _raises(_wrapper(3, 1, GZIP, inner), "wrapper offset 3 is below its last inner offset 4")


def test_wrapper_without_inner_messages_or_value():
    _raises(_wrapper(0, 1, GZIP, b""), "no inner messages")
    _raises(_message(0, 1, None, None, attributes=GZIP), "null value")


def test_zstd_and_unknown_codecs_in_wrappers():
    value = compress(ZSTD, _message(0, 1, None, b"v"))
    _raises(_message(0, 1, None, value, attributes=ZSTD), "codec 4 is invalid")
    _raises(_message(0, 1, None, b"x", attributes=6), "codec 6 is invalid")


def test_corrupt_compressed_value():
    packed = bytearray(compress(GZIP, _message(0, 1, None, b"v" * 100)))
    packed[12] ^= 0xFF
    _raises(_message(0, 1, None, bytes(packed), attributes=GZIP),
            "compressed wrapper message: gzip: ")


def test_decompression_bomb_in_a_wrapper():
    entry = _message(0, 0, None, compress(GZIP, bytes(8 << 20)), attributes=GZIP)
    _raises(entry, "decompressed size exceeds the limit of 65536", max_decompressed=65536)


def test_truncated_entry_and_v2_entry():
    entry = _message(0, 0, b"k", b"v")
    header = header_at(entry, 0)
    with pytest.raises(CorruptDataError, match="truncated"):
        decode_legacy_entry(entry[:-1], header)
    with pytest.raises(CorruptDataError, match="not a legacy message format"):
        decode_legacy_entry(entry, header._replace(magic=2))


def test_error_position_is_the_entry_position():
    entry = bytearray(_message(3, 0, b"k", b"v"))
    entry[-1] ^= 1
    header = header_at(b"\x00" * 100 + bytes(entry), 100, base_position=5000)
    with pytest.raises(CorruptDataError) as info:
        decode_legacy_entry(bytes(entry), header)
    assert info.value.position == 5100
