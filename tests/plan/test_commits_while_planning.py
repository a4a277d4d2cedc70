"""A commit that starts while a read is being planned: each partition's unfinished commits are
read after its log end offset (storage/commit/commit_log.py says why), so a partition opened
after the commit began is capped at the commit's start, never read into rows an undo could
take back. The commit is made to begin at that moment (after the first partition's reads,
before the second partition is opened), not timed."""

from __future__ import annotations

from pathlib import Path

import pytest

from segmentlog_source.plan import read_plan
from segmentlog_source.plan.options import parse_read_options
from segmentlog_source.storage.commit import committer
from segmentlog_source.storage.commit.commit_log import (CommitManifest, PartitionCommit,
                                                         write_manifest)
from segmentlog_source.storage.log.log_config import LogConfig
from segmentlog_source.storage.log.partition_log import PartitionLog
from tests.storage.written_logs import stage

SETTINGS = committer.CommitSettings(LogConfig(fsync="none"), lock_timeout_ms=2000)


def values(prefix: str, n: int) -> list[bytes]:
    return [f"{prefix}{i}".encode() for i in range(n)]


def begin_commit(data: Path, commit_id: str, partition: int, start: int, count: int) -> None:
    """A commit of `count` records to t-`partition` (at `start`) that has written its manifest
    and appended its batches, and not finished."""
    late = stage(data, f"job-{commit_id}", {("t", partition): values(commit_id, count)})
    write_manifest(str(data), CommitManifest(commit_id, f"job-{commit_id}", None, None, None, 0, (
        PartitionCommit("t", partition, start, start + count, tuple(late)),)), fsync=False)
    with PartitionLog.open_for_append(str(data / f"t-{partition}"), config=SETTINGS.config) as log:
        log.append(Path(late[0].path).read_bytes())


@pytest.fixture
def data(tmp_path) -> Path:
    """Two partitions of 5 committed records."""
    data = tmp_path / "data"
    files = stage(data, "job-a", {("t", 0): values("a", 5), ("t", 1): values("b", 5)})
    committer.commit(str(data), committer.CommitRequest("job-a", tuple(files), {"t": 2}),
                     SETTINGS)
    return data


def on_the_first_read_of_unfinished_commits(monkeypatch, then) -> None:
    """`then()` runs right after the planner's first read of the unfinished commits (in
    planning t-0, after its log end offset was read; before t-1 is opened)."""
    reads, original = [], read_plan.pending_commit_offsets

    def pending(log_dir, fs):
        found = original(log_dir, fs)
        if not reads:
            then()
        reads.append(found)
        return found

    monkeypatch.setattr(read_plan, "pending_commit_offsets", pending)


@pytest.fixture
def commit_starts_after_the_first_partition(data, monkeypatch) -> Path:
    """Two commits begin once the planner has read the unfinished commits for the first time:
    one to t-0, whose end offset was read before (so it never shows in this read), one to
    t-1, opened after (so it must be capped)."""
    on_the_first_read_of_unfinished_commits(monkeypatch, lambda: (
        begin_commit(data, "c0", 0, 5, 3), begin_commit(data, "c1", 1, 5, 3)))
    return data


def test_a_read_planned_meanwhile_stops_at_the_commits_start(
        commit_starts_after_the_first_partition):
    data = commit_starts_after_the_first_partition
    plan = read_plan.plan_read(parse_read_options({"path": str(data)}))
    ends = {}
    for group in plan.groups:
        for task in group.tasks:
            ends[task.partition] = max(ends.get(task.partition, 0), task.offset_hi)
    assert [PartitionLog.open(str(data / f"t-{p}")).log_end_offset for p in (0, 1)] == [8, 8]
    assert ends == {0: 5, 1: 5}


def test_a_streams_offsets_taken_meanwhile_stop_at_the_commits_start(
        commit_starts_after_the_first_partition):
    data = commit_starts_after_the_first_partition
    offsets = read_plan.stream_offsets(parse_read_options({"path": str(data)}))
    assert [PartitionLog.open(str(data / f"t-{p}")).log_end_offset for p in (0, 1)] == [8, 8]
    assert {key: o.end for key, o in offsets.items()} == {("t", 0): 5, ("t", 1): 5}


def test_a_salvaging_read_of_a_damaged_partition_stops_at_the_commits_start(data, monkeypatch):
    """failOnDataLoss=false, t-1's index damaged: its segments are planned whole, and still
    capped at the unfinished commit's start."""
    def commit_then_damage():
        begin_commit(data, "c1", 1, 5, 3)
        (data / "t-1" / f"{0:020d}.index").write_bytes(b"\xff" * 5)   # not 8-byte entries

    on_the_first_read_of_unfinished_commits(monkeypatch, commit_then_damage)
    plan = read_plan.plan_read(parse_read_options({"path": str(data),
                                                   "failOnDataLoss": "false"}))
    assert any("reading the segments of t-1 whole" in note for note in plan.notes)
    tasks = [task for group in plan.groups for task in group.tasks if task.partition == 1]
    assert tasks and max(task.offset_hi for task in tasks) == 5
