"""Damaged indexes (issue #16, classes 1 and 8): an index is trusted only where the `.log`
confirms it; a zero-filled, garbage or shuffled index of a closed segment is reported by
verify against its file; the reader returns the exact rows or an error naming the index."""

from __future__ import annotations

import random
import shutil

import pytest

from tests.damage.helpers import generated, read, segments, verify_errors

DAMAGE = ["zeros", "garbage", "shuffled", "truncated", "doubled"]


@pytest.fixture(scope="module")
def healthy(tmp_path_factory):
    path = generated(tmp_path_factory.mktemp("indexes") / "data", records=2000,
                     segment_bytes=64 * 1024)
    return path, read(path)


@pytest.fixture
def log(healthy, tmp_path):
    shutil.copytree(healthy[0].parent, tmp_path / "data")
    return tmp_path / "data" / "t-0"


def _damage(path, how: str, seed: int) -> None:
    data = bytearray(path.read_bytes())
    rng = random.Random(seed)
    if how == "zeros":
        data = bytearray(len(data))
    elif how == "garbage":
        data = bytearray(rng.randbytes(len(data)))
    elif how == "shuffled":
        size = 12 if path.suffix == ".timeindex" else 8
        entries = [data[i:i + size] for i in range(0, len(data), size)]
        rng.shuffle(entries)
        data = bytearray(b"".join(entries))
    elif how == "truncated":
        data = data[:len(data) // 2 + 3]
    else:
        data = data + data
    path.write_bytes(bytes(data))


def _exact_or_an_error_naming(log, healthy, options: dict, name) -> None:
    """A read of the damaged `log` returns the healthy log's rows, or fails with segmentlog's
    error naming `name`."""
    try:
        rows = read(log, **options)
    except Exception as exc:   # noqa: BLE001 - judged right here
        assert type(exc).__module__ == "segmentlog_source.errors", exc
        assert str(name) in str(exc), exc
        return
    assert rows == read(healthy, **options), options


@pytest.mark.parametrize("suffix", [".index", ".timeindex"])
@pytest.mark.parametrize("how", DAMAGE)
@pytest.mark.parametrize("segment", [0, 1, 2])
def test_a_damaged_index_of_a_closed_segment(log, healthy, suffix, how, segment):
    path, _ = segments(log)[segment]
    index = path.with_suffix(suffix)
    assert index.stat().st_size >= 24
    _damage(index, how, seed=segment)
    assert any(str(index) in e for e in verify_errors(log)), how
    # Range reads use the index: exact rows, or an error naming it
    for options in ({}, {"startingOffsets": '{"t":{"0":333}}'},
                    {"startingTimestamp": str(1_700_000_000_500)}):
        _exact_or_an_error_naming(log, healthy[0], options, log)


def test_a_salvaging_read_rebuilds_an_unusable_index(log, healthy):
    path, _ = segments(log)[1]
    _damage(path.with_suffix(".index"), "shuffled", seed=3)
    assert read(log, failOnDataLoss="false") == healthy[1]


@pytest.mark.parametrize("segment", [0, 1, 2])
@pytest.mark.parametrize("kept", [0.0, 0.5, 0.9])
def test_a_time_index_that_lost_its_last_entries(log, healthy, segment, kept):
    """A closed segment's time index ends with its largest timestamp (written at the roll), and
    ListOffsets skips a segment whose largest timestamp is below the one asked for. Cut at an
    entry boundary, the index still passes every check of its own; a timestamp from the lost
    part must then give the healthy log's rows or an error naming the index, never the next
    segment's offsets."""
    path, headers = segments(log)[segment]
    index = path.with_suffix(".timeindex")
    entries = index.stat().st_size // 12
    assert entries >= 2
    index.write_bytes(index.read_bytes()[:12 * int(entries * kept)])
    # timestamps after the kept entries: the segment's last batches
    for header in headers[-3:]:
        _exact_or_an_error_naming(log, healthy[0], {"startingTimestamp": str(header.max_timestamp)},
                                  index)
    # a closed segment's (an empty one is what an upgraded old broker leaves: the batches tell;
    # the active segment's largest timestamp comes from its batches)
    if kept and segment < len(segments(log)) - 1:
        assert any(str(index) in e and "largest timestamp" in e for e in verify_errors(log))
