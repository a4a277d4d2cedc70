"""format/partitioner.py against every key of kafka-clients' murmur2 table, in both twins."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.partitioner.default import murmur2 as kafka_python_murmur2

from segmentlog_source.errors import BadOptionError
from segmentlog_source.format import partitioner
from segmentlog_source.format.partitioner import murmur2, partition_for_key, partitions_for_keys
from tests.conftest import shared_fixture

COUNTS = (1, 2, 3, 6, 10, 12, 50, 100)  # the table's partition-count columns


def _table():
    rows = []
    path = shared_fixture("kafka-clients", "partitioner", "murmur2.txt")
    for line in path.read_text().splitlines():
        if line.startswith("#"):
            continue
        key_hex, hashed, *parts = line.split("\t")
        rows.append((bytes.fromhex(key_hex), int(hashed), [int(p) for p in parts]))
    return rows


TABLE = _table()


def test_table_is_complete():
    assert len(TABLE) == 300 and TABLE[0][0] == b"" and all(len(r[2]) == len(COUNTS) for r in TABLE)


def test_every_table_line():
    for key, hashed, parts in TABLE:
        assert murmur2(key) == hashed, key.hex()
        assert [partition_for_key(key, n) for n in COUNTS] == parts, key.hex()


def test_plain_python_twin_of_the_hash():
    py_murmur2 = partitioner._murmur2_span.py_func
    for key, hashed, _ in TABLE:
        data = np.frombuffer(key, np.uint8)
        assert py_murmur2(data, 0, len(data)) == hashed
        # And at an offset inside a bigger buffer, as the vectorised loop calls it.
        padded = np.frombuffer(b"xyz" + key + b"tail", np.uint8)
        assert py_murmur2(padded, 3, 3 + len(key)) == hashed


@pytest.mark.parametrize("twin", ["jit", "python"])
def test_vectorised_over_the_whole_table(twin, monkeypatch):
    if twin == "python":
        monkeypatch.setattr(partitioner, "_murmur2_span", partitioner._murmur2_span.py_func)
        monkeypatch.setattr(partitioner, "_partitions", partitioner._partitions.py_func)
    keys = pa.array([key for key, _, _ in TABLE], pa.binary())
    for column, n in enumerate(COUNTS):
        got = partitions_for_keys(keys, n)
        assert got.dtype == np.int32
        assert got.tolist() == [parts[column] for _, _, parts in TABLE]


def test_spec_vectors():
    vectors = {b"21": -973932308, b"foobar": -790332482,
               b"a-little-bit-long-string": -985981536,
               b"a-little-bit-longer-string": -1486304829,
               b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971,
               b"abc": 479470107}
    for key, hashed in vectors.items():
        assert murmur2(key) == hashed


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=100))
def test_agrees_with_kafka_python(key):
    assert murmur2(key) & 0xFFFFFFFF == kafka_python_murmur2(key)


def test_nulls_slices_chunks_and_types():
    keys = [b"21", None, b"abc", b"", None, b"foobar"]
    want = [partition_for_key(k, 7) for k in keys]
    assert want[1] == want[4] == -1 and partition_for_key(None, 7) == -1
    binary = pa.array(keys, pa.binary())
    assert partitions_for_keys(binary, 7).tolist() == want
    assert partitions_for_keys(keys, 7).tolist() == want
    assert partitions_for_keys(binary.slice(2, 3), 7).tolist() == want[2:5]
    assert partitions_for_keys(pa.array(keys, pa.large_binary()), 7).tolist() == want
    strings = pa.array([None if k is None else k.decode() for k in keys], pa.string())
    assert partitions_for_keys(strings, 7).tolist() == want
    assert partitions_for_keys(strings.cast(pa.large_string()), 7).tolist() == want
    chunked = pa.chunked_array([binary.slice(0, 2), binary.slice(2)])
    assert partitions_for_keys(chunked, 7).tolist() == want
    assert partitions_for_keys(pa.array([None, None], pa.binary()), 3).tolist() == [-1, -1]
    assert partitions_for_keys(pa.array([], pa.binary()), 3).tolist() == []
    assert partitions_for_keys(pa.chunked_array([], pa.binary()), 3).tolist() == []


def test_bad_arguments():
    for n in (0, -1, 2**31, 1.5, True):
        with pytest.raises(BadOptionError):
            partition_for_key(b"k", n)
    with pytest.raises(BadOptionError):
        partitions_for_keys(pa.array([1, 2]), 3)
