"""Flags are trusted only after the checksum that covers them, and facts taken from an index
only after the `.log` confirms them (issue #16, class 1)."""

from __future__ import annotations

import shutil

import pytest

from segmentlog_source.format.batch import ATTR_CONTROL, ATTR_TRANSACTIONAL
from tests.damage.helpers import (ATTRIBUTES, dump_all, generated, poke, read, read_error,
                                  segments, verify_errors)

ATTRIBUTE_BITS = (ATTR_CONTROL, ATTR_TRANSACTIONAL, 0x01, 0x04, 0x07, ATTR_CONTROL | 0x02)


@pytest.fixture(scope="module")
def healthy(tmp_path_factory):
    root = tmp_path_factory.mktemp("flags") / "data"
    path = generated(root, transactions=True, records=800, codec="lz4")
    return path, read(path), read(path, isolationLevel="read_committed")


@pytest.fixture
def log(healthy, tmp_path):
    shutil.copytree(healthy[0].parent, tmp_path / "data")
    return tmp_path / "data" / "t-0"


def _flip_attributes(log, segment: int, batch: int, bits: int):
    path, headers = segments(log)[segment]
    header = headers[batch]
    poke(path, header.position + ATTRIBUTES, "h", header.attributes ^ bits)
    return path, header


@pytest.mark.parametrize("segment,batch", [(0, 1), (1, 4), (-1, -1), (2, 0)])
@pytest.mark.parametrize("bits", ATTRIBUTE_BITS)
@pytest.mark.parametrize("isolation", ["read_uncommitted", "read_committed"])
def test_a_flipped_flag_is_a_crc_error_not_a_vanished_batch(log, segment, batch, bits,
                                                            isolation):
    path, header = _flip_attributes(log, segment, batch, bits)
    err = read_error(log, path, isolationLevel=isolation)
    assert f"at byte {header.position}" in str(err) and "CRC" in str(err)
    assert any(str(path) in e and "CRC" in e for e in verify_errors(log))
    assert "Traceback" not in dump_all(log)


def test_control_batches_are_checked_too(log, healthy):
    """Control batches are never returned, yet a damaged one is an error: its marker decides
    what read_committed drops."""
    controls = [(s, i, h) for s, (_, hs) in enumerate(segments(log)) for i, h in enumerate(hs)
                if h.is_control]
    assert len(controls) > 5
    for s, i, header in controls[:: max(1, len(controls) // 5)]:
        path = segments(log)[s][0]
        data = bytearray(path.read_bytes())
        data[header.end - 1] ^= 0x01          # a byte of the marker's record
        path.write_bytes(bytes(data))
        for isolation in ("read_uncommitted", "read_committed"):
            err = read_error(log, path, isolationLevel=isolation)
            assert f"at byte {header.position}" in str(err)
        data[header.end - 1] ^= 0x01
        path.write_bytes(bytes(data))
    assert read(log) == healthy[1]


def test_without_checksums_a_flag_is_still_checked_against_the_structure(log, healthy):
    """verifyChecksums=false trusts values, not structure: a data batch whose control bit was
    set is no transaction marker (not transactional, or more than one record), so it is an
    error, not a batch dropped as a marker."""
    path, header = _flip_attributes(log, 1, 4, ATTR_CONTROL)
    err = read_error(log, path, verifyChecksums="false")
    assert f"at byte {header.position}" in str(err) and "not a transaction marker" in str(err)


def test_a_torn_tail_under_an_index_entry_keeps_every_whole_batch(tmp_path):
    """The last index entry points at a batch a crash cut short: the log end is the end of the
    last whole batch before it, not the segment's base offset (the segment does not vanish)."""
    log = generated(tmp_path / "data", records=300, segment_bytes=10**6)
    path, headers = segments(log)[-1]
    entries = (log / path.name.replace(".log", ".index")).read_bytes()
    assert len(entries) >= 8
    last_indexed = int.from_bytes(entries[-4:], "big")
    cut = next(h for h in headers if h.position == last_indexed)
    with open(path, "r+b") as f:
        f.truncate(cut.position + 40)
    for snapshot in log.glob("*.snapshot"):     # a crashed writer took no snapshot at its end
        snapshot.unlink()
    rows = read(log)
    assert [r[2] for r in rows] == list(range(cut.base_offset))
    assert any("not a whole batch" in e for e in verify_errors(log))


def test_a_torn_tail_after_a_clean_close_is_data_loss(tmp_path):
    """The same cut in a log closed cleanly: its producer snapshot says where the log ended,
    so the missing batches are an error, not a silently shorter log."""
    log = generated(tmp_path / "data", records=300, segment_bytes=10**6)
    path, headers = segments(log)[-1]
    with open(path, "r+b") as f:
        f.truncate(headers[-3].position + 40)
    err = read_error(log, ".snapshot")
    assert f"offsets {headers[-3].base_offset}..299 are missing" in str(err)
    assert len(read(log, failOnDataLoss="false")) == headers[-3].base_offset
