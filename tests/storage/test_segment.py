"""Reading one segment: bounded chunks, torn tails, corruption located by file and byte."""

from __future__ import annotations

import struct
import tracemalloc

import pytest

from segmentlog_source.errors import CorruptDataError
from segmentlog_source.format.batch import DEFAULT_MAX_BATCH_BYTES
from segmentlog_source.storage.io.stats import IOStats
from segmentlog_source.storage.log.log_segment import LogSegment
from segmentlog_source.storage.log.segment_indexer import rebuild_index_bytes
from tests.storage.helpers import make_batch

LOG = "00000000000000000100.log"


def write_segment(tmp_path, batches, *, indexes=True, interval=4096):
    data = b"".join(batches)
    (tmp_path / LOG).write_bytes(data)
    if indexes:
        index, time_index = rebuild_index_bytes(data, 100, interval)
        (tmp_path / LOG.replace(".log", ".index")).write_bytes(index)
        (tmp_path / LOG.replace(".log", ".timeindex")).write_bytes(time_index)
    return data


def batches(n, per_batch=3, value_size=50, first=100):
    return [make_batch([1000 + 10 * i + j for j in range(per_batch)], value_size=value_size,
                       base_offset=first + per_batch * i) for i in range(n)]


@pytest.mark.parametrize("chunk", [61, 100, 333, 4096, 1 << 20])
def test_chunked_iteration_yields_every_batch_whole(tmp_path, chunk):
    data = write_segment(tmp_path, batches(40, value_size=120))
    segment = LogSegment(str(tmp_path), 100)
    seen = list(segment.iter_entries(chunk_bytes=chunk, verify_crc=True))
    assert b"".join(bytes(e) for _, e in seen) == data
    assert [h.base_offset for h, _ in seen] == list(range(100, 220, 3))
    assert [h.base_offset for h, _ in segment.iter_headers(chunk_bytes=chunk)] == \
        list(range(100, 220, 3))


def test_range_scans_and_batch_larger_than_the_chunk(tmp_path):
    big = make_batch([5, 6], value_size=300_000, base_offset=103)
    data = write_segment(tmp_path, batches(1) + [big] + batches(1, first=105))
    segment = LogSegment(str(tmp_path), 100)
    stats = IOStats()
    segment.stats = stats
    found = list(segment.iter_entries(chunk_bytes=4096))
    assert [len(e) for _, e in found] == [len(batches(1)[0]), len(big), len(batches(1)[0])]
    assert stats.bytes_read == len(data)
    start, end = found[1][0].position, found[2][0].position
    assert [h.base_offset for h, _ in segment.iter_entries(start, end)] == [103]
    with pytest.raises(CorruptDataError, match="not a batch boundary"):
        list(segment.iter_entries(0, start + 10))


def test_memory_stays_bounded_by_the_chunk(tmp_path):
    write_segment(tmp_path, batches(2000, value_size=400), indexes=False)
    segment = LogSegment(str(tmp_path), 100)
    tracemalloc.start()
    count = sum(1 for _ in segment.iter_entries(chunk_bytes=64 * 1024, verify_crc=True))
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert count == 2000 and peak < 1024 * 1024  # the log is ~2.6 MB


def test_torn_tail_is_reported_distinctly(tmp_path):
    data = write_segment(tmp_path, batches(5))
    (tmp_path / LOG).write_bytes(data + make_batch([1, 2], base_offset=115)[:40])
    segment = LogSegment(str(tmp_path), 100)
    with pytest.raises(CorruptDataError, match="torn tail") as err:
        list(segment.iter_entries())
    assert err.value.position == len(data) and err.value.path.endswith(LOG)
    scan = segment.iter_entries(allow_torn_tail=True)
    assert len(list(scan)) == 5
    assert scan.torn_tail == (len(data), 40)
    (tmp_path / LOG).write_bytes(data + b"\0" * 7)  # fewer bytes than an entry prefix
    scan = LogSegment(str(tmp_path), 100).iter_entries(allow_torn_tail=True)
    assert len(list(scan)) == 5 and scan.torn_tail == (len(data), 7)


def test_bad_crc_in_the_middle(tmp_path):
    parts = batches(6)
    data = bytearray(write_segment(tmp_path, parts))
    where = len(parts[0]) + len(parts[1])
    data[where + 70] ^= 0xFF  # a record byte of batch 2
    (tmp_path / LOG).write_bytes(bytes(data))
    segment = LogSegment(str(tmp_path), 100)
    assert len(list(segment.iter_entries())) == 6  # without verification it is not noticed
    with pytest.raises(CorruptDataError, match="CRC mismatch") as err:
        list(segment.iter_entries(verify_crc=True))
    assert (err.value.path, err.value.position) == (str(tmp_path / LOG), where)


@pytest.mark.parametrize("content,message", [
    (b"Hello, this is a text file and not a Kafka log at all.\n" * 40, "magic"),
    (b"\0" * 5000, "smaller than the minimum"),
    (struct.pack(">qi", 0, 2**31 - 1) + b"\0\0\0\0\2" + b"x" * 100, "exceeds the limit"),
])
def test_a_file_that_is_not_a_kafka_log(tmp_path, content, message):
    (tmp_path / LOG).write_bytes(content)
    segment = LogSegment(str(tmp_path), 100)
    with pytest.raises(CorruptDataError, match=message) as err:
        list(segment.iter_entries(allow_torn_tail=True))
    assert err.value.path == str(tmp_path / LOG) and err.value.position == 0
    assert DEFAULT_MAX_BATCH_BYTES < 2**31


def test_index_pointing_past_the_log_end(tmp_path):
    write_segment(tmp_path, batches(50, value_size=200), interval=1000)
    index_path = tmp_path / LOG.replace(".log", ".index")
    good = index_path.read_bytes()
    assert len(good) >= 16
    index_path.write_bytes(good[:-4] + struct.pack(">i", 10**6))
    segment = LogSegment(str(tmp_path), 100)
    with pytest.raises(CorruptDataError, match="past the end of the log") as err:
        segment.translate_offset(150)
    assert err.value.path == str(index_path) and err.value.position == len(good) - 8


def test_unsorted_index(tmp_path):
    write_segment(tmp_path, batches(50, value_size=200), interval=1000)
    index_path = tmp_path / LOG.replace(".log", ".index")
    good = index_path.read_bytes()
    index_path.write_bytes(good[8:16] + good[:8] + good[16:])
    with pytest.raises(CorruptDataError, match="not strictly increasing") as err:
        LogSegment(str(tmp_path), 100).translate_offset(150)
    assert err.value.path == str(index_path) and err.value.position == 8


def test_index_entry_that_is_not_a_batch_start(tmp_path):
    write_segment(tmp_path, batches(50, value_size=200), interval=2500)
    index_path = tmp_path / LOG.replace(".log", ".index")
    good = bytearray(index_path.read_bytes())
    relative, position = struct.unpack_from(">ii", good, 0)
    struct.pack_into(">ii", good, 0, relative, position + 5)
    index_path.write_bytes(bytes(good))
    # (a lookup hops from the entry before the one at or below its offset, to see the batch
    # before its answer: a lookup of entry 1's offset starts at entry 0)
    second_relative = struct.unpack_from(">i", good, 8)[0]
    with pytest.raises(CorruptDataError, match="offset index entry 0") as err:
        LogSegment(str(tmp_path), 100).translate_offset(100 + second_relative)
    assert err.value.path == str(tmp_path / LOG) and err.value.position == position + 5
    # an entry whose offset disagrees with the batch it points at
    struct.pack_into(">ii", good, 0, relative, position)
    third_relative = struct.unpack_from(">i", good, 16)[0]
    assert second_relative > relative + 1
    struct.pack_into(">i", good, 8, relative + 1)
    index_path.write_bytes(bytes(good))
    with pytest.raises(CorruptDataError, match="but the batch there holds") as err:
        LogSegment(str(tmp_path), 100).translate_offset(100 + third_relative)
    assert err.value.path == str(index_path) and err.value.position == 8


def test_translate_and_timestamps_with_and_without_index_files(tmp_path):
    stamps = [[50, 10, 70], [20, 5, 30], [90, 95, 91], [1, 2, 3], [91, 96, 94]]
    parts = [make_batch(ts, base_offset=100 + 3 * i, value_size=2000)
             for i, ts in enumerate(stamps)]
    for indexes in (True, False):
        write_segment(tmp_path, parts, indexes=indexes, interval=3000)
        segment = LogSegment(str(tmp_path), 100)
        if not indexes:
            (tmp_path / LOG.replace(".log", ".index")).unlink()
        assert segment.translate_offset(99).base_offset == 100
        assert segment.translate_offset(107).base_offset == 106
        assert segment.translate_offset(115) is None
        assert segment.read_next_offset() == 115
        assert segment.max_timestamp_and_offset == (96, 114)
        assert segment.offset_for_timestamp(60) == (102, 70)
        assert segment.offset_for_timestamp(92) == (107, 95)
        assert segment.offset_for_timestamp(96) == (113, 96)
        assert segment.offset_for_timestamp(97) is None
        assert segment.offset_for_timestamp(60, log_start_offset=105) == (106, 90)
        assert segment.offset_of_max_timestamp() == (113, 96)
