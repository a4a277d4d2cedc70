"""A segment listed by the planner, then deleted (by retention) before the planner opened it
(issue #35): the partition is listed again. The deletion is made to happen at that moment,
between the listing and the first open, not timed."""

from __future__ import annotations

from pathlib import Path

import pytest

from segmentlog_source.cli.generate import generate_log
from segmentlog_source.errors import DataLossError
from segmentlog_source.plan import partition_sources
from segmentlog_source.plan.options import parse_read_options
from segmentlog_source.plan.read_plan import RELISTS_ON_DELETION, plan_read
from segmentlog_source.storage.log.partition_log import PartitionLog


@pytest.fixture
def partition(tmp_path) -> Path:
    generate_log(str(tmp_path / "data"), quiet=True, topics=["t"], records=3000, value_size=100,
                 segment_bytes=60_000, records_per_batch=20, seed=5)
    path = tmp_path / "data" / "t-0"
    assert len(list(path.glob("*.log"))) >= RELISTS_ON_DELETION + 3
    return path


def delete_oldest_segment(directory: Path) -> int:
    """What retention does to the oldest segment: all of its files go. Its base offset."""
    oldest = min(directory.glob("*.log"))
    for f in directory.glob(oldest.stem + ".*"):
        f.unlink()
    return int(oldest.stem)


@pytest.fixture
def retention_after_listing(monkeypatch):
    """Deletes the oldest segment of a partition right after the planner listed it, `times`
    times (the first plans of each read)."""
    deleted = []

    class Listed(PartitionLog):
        times = 1

        @classmethod
        def open(cls, path, *args, **kwargs):
            log = PartitionLog.open(path, *args, **kwargs)
            if len(deleted) < Listed.times:
                deleted.append(delete_oldest_segment(Path(path)))
            return log

    monkeypatch.setattr(partition_sources, "PartitionLog", Listed)
    return Listed, deleted


def plan(path: Path, **options):
    opts = parse_read_options({"path": str(path), **options})
    return plan_read(opts)


def test_a_range_that_no_longer_needs_the_segment_is_planned_without_it(
        partition, retention_after_listing):
    _, deleted = retention_after_listing
    second = sorted(int(p.stem) for p in partition.glob("*.log"))[1]
    result = plan(partition)     # earliest: the log now starts at the second segment
    assert deleted == [0]
    tasks = [t for g in result.groups for t in g.tasks]
    assert min(t.offset_lo for t in tasks) == second
    assert all(Path(t.path).exists() for t in tasks)


def test_a_range_that_needs_it_fails_with_data_loss_saying_so(partition,
                                                              retention_after_listing):
    with pytest.raises(DataLossError) as err:
        plan(partition, startingOffsets='{"t":{"0":0}}')
    message = str(err.value)
    assert message.startswith("startingOffsets: offset 0 of t-0 is outside the log")
    assert "00000000000000000000.log was listed, then deleted (by retention) while the read " \
           "was planned" in message
    assert "check the path" not in message


def test_a_log_that_keeps_changing_fails_with_data_loss(partition, retention_after_listing):
    listed, deleted = retention_after_listing
    listed.times = RELISTS_ON_DELETION + 1
    with pytest.raises(DataLossError) as err:
        plan(partition)
    assert len(deleted) == RELISTS_ON_DELETION + 1
    assert "is gone since the read was planned (deleted by retention" in str(err.value)
