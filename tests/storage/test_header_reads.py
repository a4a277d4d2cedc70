"""A local file's batch headers read one header per read (storage/io/header_reads.py): the same
rows as the walk over the bytes in memory, and the same stops where a header is cut off, is not
magic 2, or has a length no batch has. The views fall back to the checked scan on any stop, so
a wrong stop would be a wrong row."""

from __future__ import annotations

import os
import random

import numpy as np
import pytest

from segmentlog_source.format.batch import V2_HEADER_SIZE
from segmentlog_source.format.header_walk import (BAD_LENGTH, NOT_V2, WHOLE, new_rows,
                                                  walk_v2_headers)
from segmentlog_source.storage.io.header_reads import NOT_CACHED
from segmentlog_source.storage.io.local import LOCAL
from segmentlog_source.storage.log.header_table import header_table
from tests.storage.helpers import make_batch


def _log(tmp_path, seed: int) -> tuple[str, bytes, list[int]]:
    rng = random.Random(seed)
    data, starts, offset = bytearray(), [], 0
    for _ in range(rng.randint(5, 40)):
        count = rng.randint(1, 30)
        starts.append(len(data))
        data += make_batch([1000 + offset + i for i in range(count)], base_offset=offset,
                           value_size=rng.choice([0, 20, 300]), codec=rng.choice([0, 1, 4]))
        offset += count
    path = tmp_path / f"{seed}.log"
    path.write_bytes(bytes(data))
    return str(path), bytes(data), starts


def _by_reads(path: str, start: int, end: int, capacity: int = 1 << 12):
    with LOCAL.open_read(path) as f:
        rows = new_rows(capacity)
        n, stop, why = f.read_v2_headers(start, end, rows)
    return rows[:n], stop, why


def _in_memory(data: bytes, start: int, end: int):
    rows = new_rows(len(data) // V2_HEADER_SIZE + 1)
    n, stop, why = walk_v2_headers(np.frombuffer(data, np.uint8), 0, start, end, rows)
    return rows[:n], stop, why


@pytest.mark.parametrize("seed", range(12))
def test_healthy_logs_give_the_in_memory_walks_rows(tmp_path, seed):
    path, data, starts = _log(tmp_path, seed)
    start = random.Random(seed).choice(starts)
    rows, stop, why = _by_reads(path, start, len(data))
    expected, stop_m, why_m = _in_memory(data, start, len(data))
    assert (stop, why) == (stop_m, why_m) == (len(data), WHOLE)
    np.testing.assert_array_equal(rows, expected)
    assert list(rows[:, 0]) == [s for s in starts if s >= start]


@pytest.mark.parametrize("seed", range(12))
def test_a_file_cut_short_stops_the_walk_for_a_blocking_read(tmp_path, seed):
    """The walk reads only what the page cache holds; short of a header (not cached, or the
    file shrank since its size was taken) it leaves the rest to the caller's blocking read,
    which sees the file end there."""
    path, data, starts = _log(tmp_path, seed)
    rng = random.Random(seed)
    victim = rng.choice(starts)
    cut = victim + rng.randint(0, V2_HEADER_SIZE - 1)     # inside the victim's header
    with open(path, "r+b") as f:
        f.truncate(cut)
    rows, stop, why = _by_reads(path, 0, len(data))
    assert (stop, why) == (victim, NOT_CACHED)
    assert list(rows[:, 0]) == [s for s in starts if s < victim]


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("damage", ["magic", "length"])
def test_damage_stops_the_walk_at_the_damaged_header_as_in_memory(tmp_path, seed, damage):
    path, data, starts = _log(tmp_path, seed)
    rng = random.Random(seed * 7 + len(damage))
    victim = rng.choice(starts)
    broken = bytearray(data)
    if damage == "magic":
        broken[victim + 16] = rng.choice([0, 1, 3, 0xFF])
    else:
        broken[victim + 8:victim + 12] = rng.choice([0, 5, 0x7FFFFFFF]).to_bytes(4, "big")
    with open(path, "wb") as f:
        f.write(broken)
    rows, stop, why = _by_reads(path, 0, len(data))
    assert (stop, why) == _in_memory(bytes(broken), 0, len(data))[1:]
    assert (stop, why) == (victim, NOT_V2 if damage == "magic" else BAD_LENGTH)
    assert list(rows[:, 0]) == [s for s in starts if s < victim]


def test_a_full_row_buffer_stops_the_walk_for_the_next_one(tmp_path):
    path, data, starts = _log(tmp_path, 3)
    rows, stop, why = _by_reads(path, 0, len(data), capacity=2)
    assert (len(rows), stop, why) == (2, starts[2], WHOLE)


@pytest.mark.parametrize("seed", range(6))
def test_headers_not_in_the_page_cache_stop_the_walk_not_a_wrong_row(tmp_path, seed):
    """Dropped from the page cache, the headers are not read one by one from disk (a seek per
    batch): the walk stops where the cache ends (wherever the kernel kept pages anyway), its
    rows up to there right, for the caller's chunked read."""
    path, data, starts = _log(tmp_path, seed)
    with open(path, "rb") as f:
        os.posix_fadvise(f.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)
        rows, stop, why = _by_reads(path, 0, len(data))
    assert why in (NOT_CACHED, WHOLE)     # (a page the kernel kept anyway reads on)
    assert list(rows[:, 0]) == [s for s in starts if s < stop]


def test_a_header_running_past_the_range_is_left_to_the_caller(tmp_path):
    path, data, starts = _log(tmp_path, 5)
    end = starts[3] + V2_HEADER_SIZE - 1
    rows, stop, why = _by_reads(path, 0, end)
    assert (len(rows), stop, why) == (3, starts[3], WHOLE)


def _table(path: str, end: int, chunk: int, verify_crc: bool):
    return header_table(LOCAL, path, 0, end, segment_base=0, after_offset=None,
                        start_checked=True, ends_segment=True, next_segment_base=None,
                        indexed_last_offset=None, offset_limit=2**62, chunk_bytes=chunk,
                        verify_crc=verify_crc)


@pytest.mark.parametrize("seed", range(8))
def test_the_crc_checked_table_is_the_headers_table_at_any_chunk_size(tmp_path, seed):
    """Reading whole batches for their CRCs, in chunks smaller or bigger than a batch (a batch
    bigger than its chunk is read whole by itself): the rows of the headers-only table."""
    path, data, starts = _log(tmp_path, seed)
    expected = _table(path, len(data), 1 << 20, verify_crc=False)
    assert expected is not None and list(expected[:, 0]) == starts
    sizes = np.diff(starts + [len(data)])
    for chunk in (V2_HEADER_SIZE, int(sizes.min()), int(sizes.max()) - 1, int(sizes.max()),
                  3 * int(sizes.max()) + 7, 1 << 20):
        np.testing.assert_array_equal(_table(path, len(data), chunk, verify_crc=True), expected)


@pytest.mark.parametrize("seed", range(8))
def test_a_changed_byte_the_crc_covers_fails_the_crc_checked_table(tmp_path, seed):
    """Any byte the CRC covers, changed (in a header or a body): no table, so the checked scan
    reads the range and names the batch."""
    path, data, starts = _log(tmp_path, seed)
    rng = random.Random(seed)
    for chunk in (V2_HEADER_SIZE, 4096, 1 << 20):
        i = rng.randrange(len(starts))
        end = starts[i + 1] if i + 1 < len(starts) else len(data)
        at = rng.randrange(starts[i] + 21, end)
        damaged = bytearray(data)
        damaged[at] ^= 1 << rng.randrange(8)
        path_d = tmp_path / f"d{seed}-{chunk}.log"
        path_d.write_bytes(bytes(damaged))
        assert _table(str(path_d), len(data), chunk, verify_crc=True) is None
        assert _table(path, len(data), chunk, verify_crc=True) is not None


def test_a_batch_running_past_the_range_gives_no_crc_checked_table(tmp_path):
    path, data, starts = _log(tmp_path, 3)
    end = starts[-1] + V2_HEADER_SIZE + 1     # inside the last batch
    for chunk in (V2_HEADER_SIZE, 4096, 1 << 20):
        assert _table(path, end, chunk, verify_crc=True) is None
        assert _table(path, end, chunk, verify_crc=False) is None
