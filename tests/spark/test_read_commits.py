"""plan_read against real files: unfinished writer commits stay invisible."""

from __future__ import annotations

from segmentlog_source.cli.generate import generate_log
from segmentlog_source.plan.options import parse_read_options
from segmentlog_source.plan.predicates import fold
from segmentlog_source.plan.read_plan import plan_read
from segmentlog_source.spark.reader import GroupScan, ScanSettings
from segmentlog_source.storage.commit.commit_log import (CommitManifest, PartitionCommit,
                                                         write_manifest)
from segmentlog_source.storage.log.partition_log import PartitionLog


def read_offsets(path) -> dict[int, list[int]]:
    plan = plan_read(parse_read_options({"path": str(path)}))
    settings = ScanSettings(fold([]), False, True, False, False, True)
    out: dict[int, list[int]] = {}
    for group in plan.groups:
        for batch in GroupScan(group, settings):
            for p, o in zip(batch.column("partition").to_pylist(),
                            batch.column("offset").to_pylist()):
                out.setdefault(p, []).append(o)
    return out


def test_a_half_appended_commit_is_not_read(tmp_path):
    generate_log(str(tmp_path), topics=["t"], partitions=2, records=600, seed=1)
    before = read_offsets(tmp_path)
    part = PartitionLog.open(str(tmp_path / "t-0"))
    start = part.log_end_offset
    # A commit in progress: its manifest is durable, and half of its batches are appended.
    write_manifest(str(tmp_path), CommitManifest("c1", "job", None, None, None, 0, (
        PartitionCommit("t", 0, start, start + 400, ()),)), fsync=False)
    generate_log(str(tmp_path), topics=["t"], partitions=2, records=400, seed=2)
    during = read_offsets(tmp_path)
    assert during[0] == before[0]                  # capped at the commit's start
    assert len(during[1]) > len(before[1])         # other partitions are not held back

