"""format/varint.py and format/kernels.py: varints against kafka-python and Java's rules, and
every kernel's compiled form against its plain-Python twin (`.py_func`) on the same inputs."""

from __future__ import annotations

import dataclasses
import random

from hypothesis import example, given, settings, strategies as st
from kafka.record.util import decode_varint, encode_varint, size_of_varint
from numba import njit
import numpy as np
import pytest

from segmentlog_source.format import varint as V
from segmentlog_source.format.batch import iter_headers
from segmentlog_source.format.record_decoder import ColumnarDecoder
from segmentlog_source.format.record_encoder import encode_batches
from segmentlog_source.format.records import Record, RecordColumns
from tests.conftest import shared_fixture

INT64 = st.integers(-2**63, 2**63 - 1)
INT32 = st.integers(-2**31, 2**31 - 1)


# The register_jitable helpers are plain Python when called from Python; these wrappers run
# the compiled forms.
@njit(cache=False)
def _jit_read_varint(buf, pos, limit):
    return V.read_varint(buf, pos, limit)


@njit(cache=False)
def _jit_read_varlong(buf, pos, limit):
    return V.read_varlong(buf, pos, limit)


@njit(cache=False)
def _jit_write_varint(out, pos, value):
    return V.write_varint(out, pos, value)


@njit(cache=False)
def _jit_varint_size(value):
    return V.varint_size(value)


@njit(cache=False)
def _jit_copy_bytes(dst, dst_pos, src, src_pos, n):
    V.copy_bytes(dst, dst_pos, src, src_pos, n)


def kafka_python_bytes(value: int) -> bytes:
    out = bytearray()
    encode_varint(value, out.append)
    return bytes(out)


def java_read(data: bytes, bits: int):
    """Java's ByteUtils.readVarint (bits=32) / readVarlong (64) -> (value, bytes read);
    None = too long."""
    value, shift = 0, 0
    for i, b in enumerate(data):
        if b & 0x80:
            value |= (b & 0x7F) << shift
            shift += 7
            if shift > (28 if bits == 32 else 63):
                return None
        else:
            value |= b << shift
            value &= (1 << bits) - 1  # Java's int / long keeps the low bits
            decoded = (value >> 1) ^ -(value & 1)
            return decoded, i + 1
    return "truncated"


@settings(max_examples=500, deadline=None)
@given(value=INT64)
def test_varlong_matches_kafka_python(value):
    expected = kafka_python_bytes(value)
    out = np.zeros(12, np.uint8)
    for write in (V.write_varint, _jit_write_varint):
        end = write(out, 1, value)
        assert out[1:end].tobytes() == expected
    buf = np.frombuffer(b"\x00" + expected + b"\x00", np.uint8)
    for read in (V.read_varlong, _jit_read_varlong):
        assert read(buf, 1, len(buf)) == (value, 1 + len(expected))
    assert decode_varint(expected, 0) == (value, len(expected))
    assert V.varint_size(value) == _jit_varint_size(value) == size_of_varint(value) \
        == len(expected)
    assert V.varint_sizes(np.array([value], np.int64)).tolist() == [len(expected)]


@settings(max_examples=300, deadline=None)
@given(value=INT32)
def test_varint_matches_kafka_python(value):
    data = kafka_python_bytes(value)
    buf = np.frombuffer(data, np.uint8)
    for read in (V.read_varint, _jit_read_varint):
        assert read(buf, 0, len(buf)) == (value, len(data))


@settings(max_examples=500, deadline=None)
@given(data=st.binary(min_size=0, max_size=12) | st.builds(
    lambda n, last, tail: b"\xff" * n + bytes([last]) + tail, st.integers(3, 11),
    st.integers(0, 255), st.binary(max_size=2)))
@example(data=b"\xff" * 9 + b"\x7f")  # a 10th byte: only its lowest bit counts
@example(data=b"\xff" * 4 + b"\x7f")  # a 5th byte: only its low 4 bits count
def test_reading_arbitrary_bytes_follows_java(data):
    """Any byte string: the same value Java reads (5th / 10th byte truncated to the type's
    bits), or the too-long / truncated error, from both the compiled and the Python form."""
    buf = np.frombuffer(data, np.uint8)
    for read, bits, too_long in ((V.read_varint, 32, V.ERR_VARINT_TOO_LONG),
                                 (_jit_read_varint, 32, V.ERR_VARINT_TOO_LONG),
                                 (V.read_varlong, 64, V.ERR_VARLONG_TOO_LONG),
                                 (_jit_read_varlong, 64, V.ERR_VARLONG_TOO_LONG)):
        expected = java_read(data, bits)
        value, pos = read(buf, 0, len(buf))
        if expected is None:
            assert pos == -too_long
        elif expected == "truncated":
            assert pos == -V.ERR_TRUNCATED
        else:
            assert (value, pos) == expected


def test_overlong_and_truncated():
    buf = np.frombuffer(b"\x80" * 5 + b"\x01", np.uint8)
    assert V.read_varint(buf, 0, 6)[1] == -V.ERR_VARINT_TOO_LONG
    assert V.read_varlong(buf, 0, 6) == (((1 << 35) >> 1) ^ -0, 6)
    buf = np.frombuffer(b"\xff" * 10 + b"\x01", np.uint8)
    assert _jit_read_varlong(buf, 0, 11)[1] == -V.ERR_VARLONG_TOO_LONG
    assert _jit_read_varint(buf, 0, 3)[1] == -V.ERR_TRUNCATED  # limit cuts the varint short
    assert V.read_varint(buf, 3, 3)[1] == -V.ERR_TRUNCATED


def test_copy_bytes_twins():
    src = np.frombuffer(bytes(range(200)), np.uint8)
    for copy in (V.copy_bytes, _jit_copy_bytes):
        dst = np.zeros(50, np.uint8)
        copy(dst, 5, src, 100, 40)
        assert dst.tobytes() == bytes(5) + bytes(range(100, 140)) + bytes(5)


def test_varint_sizes_at_every_boundary():
    edges = [0, -1, 2**63 - 1, -2**63]
    for k in range(9):  # zig-zag sizes step at |value| = 2**(6 + 7k)
        edges += [2**(6 + 7 * k) + d for d in (-1, 0)] + [-2**(6 + 7 * k) + d for d in (-1, 0)]
    values = np.array(edges, np.int64)
    assert V.varint_sizes(values).tolist() == [size_of_varint(v) for v in edges]


# --------------------------------------------------------------------- kernels vs twins

V2_CASES = sorted(p.name for p in shared_fixture("kafka-clients").iterdir()
                  if p.is_dir() and p.name.startswith("v2-"))


def entries_of(case: str):
    log = next(shared_fixture("kafka-clients", case).glob("*.log")).read_bytes()
    view = memoryview(log)
    return [(h, view[h.position:h.end]) for h in iter_headers(log)]


def assert_same_columns(a: RecordColumns, b: RecordColumns):
    for field in dataclasses.fields(RecordColumns):
        x, y = getattr(a, field.name), getattr(b, field.name)
        if isinstance(x, np.ndarray):
            assert x.dtype == y.dtype and np.array_equal(x, y), field.name
        elif x is None:
            assert y is None
        else:
            assert repr_arrays(x) == repr_arrays(y), field.name


def repr_arrays(obj):
    if isinstance(obj, np.ndarray):
        return (str(obj.dtype), obj.tolist())
    if obj is None:
        return None
    return [repr_arrays(getattr(obj, f.name)) for f in dataclasses.fields(obj)]


@pytest.mark.parametrize("case", V2_CASES)
def test_decode_kernels_agree_with_their_twins(case):
    entries = entries_of(case)
    offsets = [h.base_offset for h, _ in entries]
    rng = random.Random(case)
    filters = [{}, {"offsets": (offsets[1], offsets[-1])}]
    filters += [{"timestamps": (1700000000000 + rng.randrange(0, 10**6), 2**62)}
                for _ in range(2)]
    for kwargs in filters:
        for fields in ({"key", "value", "headers"}, {"value"}):
            fast = ColumnarDecoder(fields=fields).decode(entries, **kwargs)
            slow = ColumnarDecoder(fields=fields, jit=False).decode(entries, **kwargs)
            assert_same_columns(fast, slow)


def random_records(rng: random.Random, n: int):
    return [Record(i, rng.choice([-1, 0, 1700000000000 + rng.randrange(-10**9, 10**9)]),
                   rng.choice([None, b"", rng.randbytes(rng.randrange(1, 30))]),
                   rng.choice([None, b"", rng.randbytes(rng.randrange(1, 3000))]),
                   tuple((rng.choice(["", "k", "\u00e9t\u00e9"]),
                          rng.choice([None, b"", b"v" * rng.randrange(1, 200)]))
                         for _ in range(rng.choice([0, 0, 1, 3]))))
            for i in range(n)]


@pytest.mark.parametrize("seed", range(4))
def test_encode_kernels_agree_with_their_twins(seed):
    rng = random.Random(seed)
    columns = dataclasses.replace(RecordColumns.from_records(random_records(rng, 300)),
                                  offsets=None)
    for kwargs in ({}, {"max_records": 7}, {"max_bytes": 5000}, {"delete_horizon": 5},
                   {"codec": "gzip", "max_bytes": 20000}):
        fast = encode_batches(columns, base_offset=rng.randrange(2**40), **kwargs)
        slow = encode_batches(columns, base_offset=0, jit=False, **kwargs)
        assert bytes(fast.data) != b"" and len(fast.headers) == len(slow.headers)
        if "codec" not in kwargs:  # baseOffset differs between the two calls; nothing else
            assert [bytes(fast.data[h.position + 8:h.end]) for h in fast.headers] == \
                [bytes(slow.data[h.position + 8:h.end]) for h in slow.headers]


def test_plan_batches_is_exact_and_greedy():
    rng = random.Random(3)
    columns = dataclasses.replace(RecordColumns.from_records(random_records(rng, 400)),
                                  offsets=None)
    for max_records, max_bytes in [(10, 1 << 40), (1 << 30, 3000), (5, 4000)]:
        out = encode_batches(columns, max_records=max_records, max_bytes=max_bytes)
        assert list(iter_headers(out.data)) == out.headers
        assert sum(h.records_count for h in out.headers) == 400
        assert out.headers[-1].end == len(out.data)
        for h in out.headers:
            assert h.records_count <= max_records
            assert h.size <= max_bytes or h.records_count == 1
