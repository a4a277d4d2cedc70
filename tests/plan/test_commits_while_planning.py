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


@pytest.fixture
def commit_starts_after_the_first_partition(tmp_path, monkeypatch) -> Path:
    """Two partitions of 5 committed records; once the planner has read the unfinished
    commits for the first time, a commit of 3 more records to t-1 begins (its manifest, then
    its batches) and stays unfinished."""
    data = tmp_path / "data"
    files = stage(data, "job-a", {("t", 0): values("a", 5), ("t", 1): values("b", 5)})
    committer.commit(str(data), committer.CommitRequest("job-a", tuple(files), {"t": 2}),
                     SETTINGS)
    late = stage(data, "job-b", {("t", 1): values("c", 3)})
    reads, original = [], read_plan.pending_commit_offsets

    def pending(log_dir, fs):
        found = original(log_dir, fs)
        if not reads:
            write_manifest(str(data), CommitManifest("c1", "job-b", None, None, None, 0, (
                PartitionCommit("t", 1, 5, 8, tuple(late)),)), fsync=False)
            with PartitionLog.open_for_append(str(data / "t-1"), config=SETTINGS.config) as log:
                log.append(Path(late[0].path).read_bytes())
        reads.append(found)
        return found

    monkeypatch.setattr(read_plan, "pending_commit_offsets", pending)
    return data


def test_a_read_planned_meanwhile_stops_at_the_commits_start(
        commit_starts_after_the_first_partition):
    data = commit_starts_after_the_first_partition
    plan = read_plan.plan_read(parse_read_options({"path": str(data)}))
    ends = {}
    for group in plan.groups:
        for task in group.tasks:
            ends[task.partition] = max(ends.get(task.partition, 0), task.offset_hi)
    assert PartitionLog.open(str(data / "t-1")).log_end_offset == 8   # the commit's batches
    assert ends == {0: 5, 1: 5}


def test_a_streams_offsets_taken_meanwhile_stop_at_the_commits_start(
        commit_starts_after_the_first_partition):
    data = commit_starts_after_the_first_partition
    offsets = read_plan.stream_offsets(parse_read_options({"path": str(data)}))
    assert PartitionLog.open(str(data / "t-1")).log_end_offset == 8
    assert {key: o.end for key, o in offsets.items()} == {("t", 0): 5, ("t", 1): 5}
