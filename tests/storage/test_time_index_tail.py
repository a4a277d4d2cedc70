"""A closed segment's `.timeindex` that lost its last entries: the segment's largest timestamp
is never taken from what is left (the entries are running maxima, so no batch after the one
the last entry names may exceed it; every header after it is read to be sure). Otherwise a
time-range read would skip the segment on a timestamp below its largest, silently losing the
records at the start of the range."""

from __future__ import annotations

import shutil

import pytest

from segmentlog_source.cli.generate import generate_log
from segmentlog_source.errors import CorruptDataError
from segmentlog_source.storage.log.partition_log import PartitionLog


@pytest.fixture(scope="module")
def unordered(tmp_path_factory):
    """Timestamps far out of order (a jitter of 100 s around a constant): a segment's largest
    timestamp lies anywhere in it."""
    path = tmp_path_factory.mktemp("jitter")
    generate_log(str(path), topics=["t"], partitions=1, records=6000, codec="none",
                 segment_bytes=128 * 1024, seed=3, timestamp_step_ms=0,
                 timestamp_jitter_ms=100_000, records_per_batch=20, quiet=True)
    return path / "t-0"


def test_every_lost_tail_of_a_time_index_is_caught_or_harmless(unordered, tmp_path):
    log = PartitionLog.open(str(unordered))
    closed = log.segments[:-1]
    assert len(closed) >= 3
    truth = {s.base_offset: max(h.max_timestamp for h, _ in s.iter_headers()) for s in closed}
    assert all(s.max_timestamp_and_offset[0] == truth[s.base_offset] for s in closed)
    tried = caught = 0
    for segment in closed:
        entries = len(segment.time_index)
        for lost in range(1, min(entries, 6)):
            copy = tmp_path / f"{segment.base_offset}-{lost}"
            shutil.copytree(unordered, copy)
            index = copy / segment.time_index_path.rsplit("/", 1)[1]
            with open(index, "r+b") as f:
                f.truncate((entries - lost) * 12)
            damaged = next(s for s in PartitionLog.open(str(copy)).segments
                           if s.base_offset == segment.base_offset)
            tried += 1
            try:
                largest = damaged.max_timestamp_and_offset[0]
            except CorruptDataError as err:
                assert err.path.endswith(".timeindex")
                caught += 1
                continue
            assert largest == truth[segment.base_offset]
    assert tried >= 10 and caught >= 1
