"""Offset and time index files: entry counting, lookups, append rules, sanity checks (spec §4)."""

from __future__ import annotations

import struct

from hypothesis import given, settings, strategies as st
import pytest

from segmentlog_source.errors import CorruptDataError
from segmentlog_source.format.batch import BatchHeader
from segmentlog_source.storage.log.offset_index import OffsetIndex
from segmentlog_source.storage.log.segment_indexer import (SegmentIndexer, rebuild_index_bytes,
                                                           rebuild_indexes)
from segmentlog_source.storage.log.time_index import TimeIndex
from tests.storage.helpers import make_batch

BASE = 1000


def offset_bytes(entries):
    return b"".join(struct.pack(">ii", o - BASE, p) for o, p in entries)


def time_bytes(entries):
    return b"".join(struct.pack(">qi", t, o - BASE) for t, o in entries)


def test_preallocated_files_stop_at_the_zero_fill(tmp_path):
    path = tmp_path / "x.index"
    path.write_bytes(offset_bytes([(1005, 4200), (1010, 8400)]) + bytes(8 * 1000))
    index = OffsetIndex.open(str(path), BASE)
    assert index.entries() == [(1005, 4200), (1010, 8400)]
    assert not index.is_trimmed
    path.write_bytes(bytes(10 * 1024 * 1024))  # a crashed broker's fresh index
    assert len(OffsetIndex.open(str(path), BASE)) == 0
    tpath = tmp_path / "x.timeindex"
    tpath.write_bytes(bytes(12 * 100))
    assert len(TimeIndex.open(str(tpath), BASE)) == 0
    # A real first entry at the base offset with timestamp 0 is kept when it is the only slot,
    # and when a real entry follows it.
    tpath.write_bytes(time_bytes([(0, BASE)]))
    assert TimeIndex.open(str(tpath), BASE).entries() == [(0, BASE)]
    tpath.write_bytes(time_bytes([(0, BASE), (7, 1003)]) + bytes(24))
    assert TimeIndex.open(str(tpath), BASE).entries() == [(0, BASE), (7, 1003)]


def test_trimmed_file_counts_every_entry(tmp_path):
    path = tmp_path / "x.timeindex"
    path.write_bytes(time_bytes([(5, 1001), (9, 1001), (12, 1004)]))
    index = TimeIndex.open(str(path), BASE)
    assert len(index) == 3 and index.is_trimmed


def test_lookups_and_defaults():
    index = OffsetIndex.from_bytes(offset_bytes([(1005, 100), (1010, 200), (1020, 300)]), BASE)
    assert index.lookup(999) == (BASE, 0)
    assert index.lookup(1004) == (BASE, 0)
    assert index.lookup(1005) == (1005, 100)
    assert index.lookup(1019) == (1010, 200)
    assert index.lookup(10**12) == (1020, 300)
    times = TimeIndex.from_bytes(time_bytes([(50, 1003), (80, 1009)]), BASE)
    assert times.lookup(49) == (-1, BASE)
    assert times.lookup(50) == (50, 1003)
    assert times.lookup(79) == (50, 1003)
    assert times.lookup(80) == (80, 1009)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 10**6), min_size=0, max_size=60, unique=True),
       st.lists(st.integers(-5, 10**6 + 5), min_size=1, max_size=20))
def test_lookup_is_the_largest_entry_at_or_below(keys, targets):
    keys.sort()
    entries = [(BASE + k, 10 * i + 1) for i, k in enumerate(keys)]
    index = OffsetIndex.from_bytes(offset_bytes(entries), BASE)
    for target in targets:
        below = [(BASE + k, 10 * i + 1) for i, k in enumerate(keys) if BASE + k <= BASE + target]
        assert index.lookup(BASE + target) == (below[-1] if below else (BASE, 0))


def test_offset_index_append_rules():
    index = OffsetIndex(BASE, max_index_bytes=24)
    index.append(1003, 100)
    with pytest.raises(CorruptDataError, match="not larger"):
        index.append(1003, 200)
    with pytest.raises(CorruptDataError, match="does not fit"):
        OffsetIndex(BASE).append(BASE - 1, 10)
    index.append(1004, 200)
    index.append(1005, 300)
    assert index.is_full
    with pytest.raises(CorruptDataError, match="full"):
        index.append(1006, 400)


def test_time_index_reserves_its_last_slot_and_appends_only_increases():
    index = TimeIndex(BASE, max_index_bytes=36)  # 3 slots
    index.maybe_append(-1, BASE)   # not above the initial (-1, base): ignored
    assert len(index) == 0
    index.maybe_append(10, 1002)
    index.maybe_append(10, 1003)   # same timestamp: ignored
    index.maybe_append(20, 1004)
    assert index.entries() == [(10, 1002), (20, 1004)]
    assert index.is_full           # 2 of 3 slots: the last is for the roll entry
    with pytest.raises(CorruptDataError, match="full"):
        index.maybe_append(30, 1005)
    index.maybe_append(30, 1005, skip_full_check=True)
    assert len(index) == 3
    with pytest.raises(CorruptDataError, match="below"):
        TimeIndex.from_bytes(time_bytes([(10, 1005)]), BASE).maybe_append(11, 1004)
    with pytest.raises(CorruptDataError, match="below"):
        TimeIndex.from_bytes(time_bytes([(10, 1005)]), BASE).maybe_append(9, 1006)


@given(st.lists(st.tuples(st.integers(-3, 40), st.integers(0, 3)), max_size=30),
       st.integers(0, 12))
@settings(max_examples=200, deadline=None)
def test_a_run_of_entries_appended_at_once_is_appending_them_one_by_one(steps, existing):
    """append_all / maybe_append_all: the same entries, files and errors (at the same entry)
    as append / maybe_append in a loop, whatever the run holds (bad ones included)."""
    def outcome(index, add_all, add_one, keys, values, with_all):
        try:
            if with_all:
                add_all(keys, values)
            else:
                for key, value in zip(keys, values):
                    add_one(key, value)
            error = None
        except CorruptDataError as err:
            error = str(err)
        return index.entries(), index.to_bytes(), error

    offsets = [BASE + 10 + sum(d for d, _ in steps[:i + 1]) for i in range(len(steps))]
    timestamps = [100 + sum(t for _, t in steps[:i + 1]) for i in range(len(steps))]
    positions = [10 * i for i in range(len(steps))]
    results = []
    for with_all in (False, True):
        offset_index = OffsetIndex(BASE, max_index_bytes=8 * 24)
        time_index = TimeIndex(BASE, max_index_bytes=12 * 24)
        for i in range(existing):
            offset_index.append(BASE + 1 + i, i)
            time_index.maybe_append(100 + i, BASE + 1 + i)
        results.append((
            outcome(offset_index, offset_index.append_all, offset_index.append, offsets,
                    positions, with_all),
            outcome(time_index, time_index.maybe_append_all, time_index.maybe_append,
                    timestamps, offsets, with_all)))
    assert results[0] == results[1]


def test_sanity_checks_name_the_file_and_entry(tmp_path):
    path = tmp_path / "00000000000000001000.index"
    path.write_bytes(offset_bytes([(1005, 100), (1003, 200), (1010, 300)]))
    with pytest.raises(CorruptDataError) as err:
        OffsetIndex.open(str(path), BASE).sanity_check()
    assert err.value.path == str(path) and err.value.position == 8
    path.write_bytes(offset_bytes([(1005, 100), (1010, 900)]))
    with pytest.raises(CorruptDataError, match="past the end of the log") as err:
        OffsetIndex.open(str(path), BASE).sanity_check(log_size=500)
    assert err.value.position == 8
    path.write_bytes(offset_bytes([(1005, 100)]) + b"\1\2\3")
    with pytest.raises(CorruptDataError, match="multiple of 8"):
        OffsetIndex.open(str(path), BASE).sanity_check()
    path.write_bytes(offset_bytes([(990, 100)]))
    with pytest.raises(CorruptDataError, match="below the base"):
        OffsetIndex.open(str(path), BASE).sanity_check()
    tpath = tmp_path / "00000000000000001000.timeindex"
    tpath.write_bytes(time_bytes([(50, 1001), (40, 1002)]))
    with pytest.raises(CorruptDataError, match="timestamps are not strictly increasing"):
        TimeIndex.open(str(tpath), BASE).sanity_check()
    tpath.write_bytes(time_bytes([(50, 1003), (60, 1002)]))
    with pytest.raises(CorruptDataError, match="offsets are not increasing"):
        TimeIndex.open(str(tpath), BASE).sanity_check()


def _header(position, size, base, last, max_ts):
    return BatchHeader(position, size, 2, base, last, 0, 0, max_timestamp=max_ts)


def test_an_entry_needs_strictly_more_than_the_interval():
    # Batches of exactly 100 bytes with interval 100: entries at the 3rd, 5th, ... batch
    # (bytes since the last entry must *exceed* the interval, counted before the append).
    headers = [_header(100 * i, 100, 10 * i, 10 * i + 9, 1000 + i) for i in range(7)]
    offsets, times = rebuild_indexes(headers, 0, 100)
    assert offsets.entries() == [(29, 200), (49, 400), (69, 600)]
    assert times.entries() == [(1002, 29), (1004, 49), (1006, 69)]  # last one: the final entry
    offsets, _ = rebuild_indexes(headers, 0, 99)
    assert offsets.entries() == [(10 * i + 9, 100 * i) for i in range(1, 7)]


def test_time_entries_keep_the_running_maximum():
    headers = [_header(100 * i, 100, i, i, ts) for i, ts in enumerate([50, 10, 70, 20, 60, 30])]
    offsets, times = rebuild_indexes(headers, 0, 0)
    assert offsets.entries() == [(i, 100 * i) for i in range(1, 6)]
    assert times.entries() == [(50, 0), (70, 2)]


def test_restart_simulation_adds_the_close_entry_and_resets_the_counter():
    headers = [_header(100 * i, 100, i, i, 1000 + i) for i in range(6)]
    _, times = rebuild_indexes(headers, 0, 150, restart_offsets=[3, 99])
    # entries: at batch 2 (bytes since = 200 > 150), the restart before batch 3 appends
    # (1002, 2) again (ignored: not larger) and resets, then batch 5, then the final entry.
    offsets, _ = rebuild_indexes(headers, 0, 150, restart_offsets=[3])
    assert offsets.entries() == [(2, 200), (5, 500)]
    plain, _ = rebuild_indexes(headers, 0, 150)
    assert plain.entries() == [(2, 200), (4, 400)]
    assert times.entries()[-1] == (1005, 5)


def test_indexer_in_writing_mode_writes_the_files(tmp_path):
    offsets = OffsetIndex.create(str(tmp_path / "a.index"), 0)
    times = TimeIndex.create(str(tmp_path / "a.timeindex"), 0)
    indexer = SegmentIndexer(offsets, times, 10)
    for i in range(5):
        indexer.on_append(20 * i, 20, i, 100 + i, i)
    indexer.final_entry()
    offsets.close()
    times.close()
    headers = [_header(20 * i, 20, i, i, 100 + i) for i in range(5)]
    a, b = rebuild_indexes(headers, 0, 10)
    assert (tmp_path / "a.index").read_bytes() == a.to_bytes()
    assert (tmp_path / "a.timeindex").read_bytes() == b.to_bytes()


def test_rebuild_index_bytes_from_a_log():
    log = b"".join(make_batch([1000 * i + 5, 1000 * i], base_offset=2 * i, value_size=900)
                   for i in range(20))
    index, time_index = rebuild_index_bytes(log, 0)
    starts = {}
    pos = 0
    for i in range(20):
        starts[pos] = 2 * i + 1
        pos += int.from_bytes(log[pos + 8:pos + 12], "big") + 12
    offsets = OffsetIndex.from_bytes(index, 0)
    assert len(offsets) > 2
    assert all(starts[p] == o for o, p in offsets.entries())  # a batch start, its last offset
    assert TimeIndex.from_bytes(time_index, 0).last_entry() == (19005, 39)


def test_trim_cuts_a_writable_index_to_its_entries(tmp_path):
    path = tmp_path / "x.index"
    path.write_bytes(offset_bytes([(1005, 4200)]) + bytes(8 * 100) + b"\1")
    index = OffsetIndex.open(str(path), BASE, writable=True)
    assert len(index) == 1 and not index.is_trimmed
    index.trim()
    index.append(1009, 8000)
    index.close()
    assert path.read_bytes() == offset_bytes([(1005, 4200), (1009, 8000)])
