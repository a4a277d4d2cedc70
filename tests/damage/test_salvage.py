"""Salvage (failOnDataLoss=false): a damaged batch costs that batch, not the rest of its
segment; every row returned is exactly the log's; and a log line names what was skipped."""

from __future__ import annotations

import logging
import shutil

import pytest

from tests.damage.helpers import (BASE_OFFSET, BATCH_LENGTH, generated, poke, read, read_error,
                                  segments)


@pytest.fixture(scope="module")
def healthy(tmp_path_factory):
    path = generated(tmp_path_factory.mktemp("salvage") / "data", codec="gzip")
    return path, read(path)


@pytest.fixture
def log(healthy, tmp_path):
    shutil.copytree(healthy[0].parent, tmp_path / "data")
    return tmp_path / "data" / "t-0"


def _salvaged(log, caplog):
    with caplog.at_level(logging.WARNING, logger="segmentlog"):
        rows = read(log, failOnDataLoss="false")
    return rows, [r.getMessage() for r in caplog.records if "skipped" in r.getMessage()]


def _without(rows, *batches):
    return [r for r in rows if not any(b.base_offset <= r[2] <= b.last_offset for b in batches)]


@pytest.mark.parametrize("segment,batch", [(0, 0), (1, 0), (2, 4), (2, 17), (3, 3)])
def test_a_damaged_middle_batch_costs_that_batch(log, healthy, caplog, segment, batch):
    path, headers = segments(log)[segment]
    bad = headers[batch]
    data = bytearray(path.read_bytes())
    data[bad.position + 70] ^= 0xFF
    path.write_bytes(bytes(data))
    read_error(log, path)
    rows, skipped = _salvaged(log, caplog)
    assert rows == _without(healthy[1], bad)
    assert any(path.name in m and f"bytes {bad.position}..{bad.end}" in m for m in skipped)


@pytest.mark.parametrize("segment,batch", [(1, 2), (2, 5), (3, 4)])
@pytest.mark.parametrize("length", [0, 7, 2**31 - 1, 300])
def test_a_broken_length_resynchronises_at_the_next_batch(log, healthy, caplog, segment, batch,
                                                          length):
    path, headers = segments(log)[segment]
    bad = headers[batch]
    poke(path, bad.position + BATCH_LENGTH, "i", length)
    read_error(log, path)
    rows, skipped = _salvaged(log, caplog)
    assert rows == _without(healthy[1], bad)
    assert any(path.name in m for m in skipped)


@pytest.mark.parametrize("segment", [0, 2])
@pytest.mark.parametrize("cut", [1, 30, 80])
def test_a_truncated_middle_segment_loses_its_torn_tail_only(log, healthy, caplog, segment, cut):
    path, headers = segments(log)[segment]
    torn = headers[-1]
    with open(path, "r+b") as f:
        f.truncate(torn.position + cut)
    read_error(log, path)
    rows, skipped = _salvaged(log, caplog)
    assert rows == _without(healthy[1], torn)
    assert any(path.name in m and "torn tail" in m for m in skipped)


def test_a_torn_last_segment_keeps_every_whole_batch(log, healthy, caplog):
    path, headers = segments(log)[-1]
    with open(path, "r+b") as f:
        f.truncate(headers[-2].position + 50)
    for snapshot in log.glob("*.snapshot"):   # as a crashed writer leaves it
        snapshot.unlink()
    # a crash's torn tail is not an error: whole batches are the log, as Kafka's recovery says
    assert read(log) == _without(healthy[1], headers[-2], headers[-1])
    assert read(log, failOnDataLoss="false") == read(log)


@pytest.mark.parametrize("first,count", [(2, 2), (5, 3)])
def test_zeroed_bytes_over_several_batches(log, healthy, caplog, first, count):
    path, headers = segments(log)[2]
    lost = headers[first:first + count]
    data = bytearray(path.read_bytes())
    data[lost[0].position + 3:lost[-1].end - 3] = bytes(lost[-1].end - 6 - lost[0].position)
    path.write_bytes(bytes(data))
    rows, skipped = _salvaged(log, caplog)
    assert rows == _without(healthy[1], *lost)
    assert skipped


@pytest.mark.parametrize("batch,shift", [(3, 1), (3, -1), (6, 4), (0, 2), (-1, 1)])
def test_a_moved_offset_never_returns_an_altered_row(log, healthy, caplog, batch, shift):
    """Which of two clashing batches moved cannot be told: both go, nothing altered comes."""
    path, headers = segments(log)[2]
    moved = headers[batch]
    poke(path, moved.position + BASE_OFFSET, "q", moved.base_offset + shift)
    rows, skipped = _salvaged(log, caplog)
    assert set(rows) <= set(healthy[1])
    assert len(rows) == len({r[2] for r in rows})
    assert len(healthy[1]) - len(rows) <= 3 * (moved.last_offset - moved.base_offset + 1)
    assert skipped


@pytest.mark.parametrize("compacted", [False, True])
@pytest.mark.parametrize("inserted", [b"\x8f", b"\x8f\xff", b"\x00\x00\x01"])
def test_bytes_inserted_into_the_last_batch_never_give_it_other_offsets(log, healthy, caplog,
                                                                       compacted, inserted):
    """Bytes inserted into the last batch's length shift its CRC-covered part: a batch with a
    valid CRC is found a few bytes on, its base offset made of other bytes. Nothing after it
    can confirm those offsets (it ends the log), so salvaging drops it."""
    if compacted:   # a compacted partition: gaps prove nothing either way
        (log.parent / "cleaner-offset-checkpoint").write_text("0\n1\nt 0 0\n")
    path, headers = segments(log)[-1]
    bad = headers[-1]
    data = bytearray(path.read_bytes())
    data[bad.position + BATCH_LENGTH:bad.position + BATCH_LENGTH] = inserted
    path.write_bytes(bytes(data))
    read_error(log, path)
    rows, skipped = _salvaged(log, caplog)
    assert rows == _without(healthy[1], bad)
    assert any(path.name in m for m in skipped)


@pytest.mark.parametrize("segment,batch", [(0, 1), (2, 1), (2, 5)])
@pytest.mark.parametrize("at,count", [(2, 8), (2, 4), (0, 8)])
def test_zeros_inserted_into_a_compacted_middle_batch_invent_no_rows(log, healthy, caplog,
                                                                     segment, batch, at, count):
    """Zeros inserted into a batch's length make a CRC-valid batch a few bytes on whose base
    offset is made of zeros and the length's first bytes. In a compacted partition the gap after
    it cannot confirm those offsets: salvaging skips it, and no row comes at an offset that is
    not its own."""
    (log.parent / "cleaner-offset-checkpoint").write_text("0\n1\nt 0 0\n")
    path, headers = segments(log)[segment]
    bad = headers[batch]
    data = bytearray(path.read_bytes())
    data[bad.position + BATCH_LENGTH + at:bad.position + BATCH_LENGTH + at] = bytes(count)
    path.write_bytes(bytes(data))
    read_error(log, path)
    rows, skipped = _salvaged(log, caplog)
    assert set(rows) <= set(healthy[1])
    assert [r[2] for r in rows] == sorted({r[2] for r in rows})
    assert any(path.name in m for m in skipped)
