"""Kill a committing process at random points, many times: readers only ever see whole
commits, every commit that returned survives once, and the next writer (or `recover`) finishes
or undoes the interrupted one. Half the rounds leave the recovery to the next child."""

from __future__ import annotations

from pathlib import Path
import random

from segmentlog_source.storage.commit import committer
from segmentlog_source.storage.commit.commit_log import pending_commit_offsets, read_pending
from segmentlog_source.storage.log.partition_log import PartitionLog
from tests.storage import kill_child
from tests.storage.commit_crash_child import PARTITIONS, SETTINGS
from tests.storage.written_logs import assert_no_verify_errors, kafka_python_rows

ROUNDS = 20


def run_until_killed(log_dir: Path, seed: int, rng: random.Random) -> list[list[str]]:
    aim_anywhere, target_commit = rng.random() < 0.5, rng.randint(1, 6)

    def kill_delay(out: bytes) -> float | None:
        if out.count(b"staged") < target_commit:
            return None
        # aimed at a commit: a few ms after its `staged` line, the commit is running
        return rng.uniform(0.0, 0.4 if aim_anywhere else 0.02)

    lines = kill_child.run_until_killed("tests.storage.commit_crash_child",
                                        [str(log_dir), str(seed)], kill_delay)
    return [line.split() for line in lines]


def visible_jobs(log_dir: Path, staged: dict[str, list[int]]) -> dict[str, list[int]]:
    """What a reader sees (each partition up to its capped end), as rows per job per partition;
    asserts rows come in whole jobs, in commit order, with nothing else in between."""
    seen: dict[str, list[int]] = {}
    for p in range(PARTITIONS):
        path = log_dir / f"c-{p}"
        if not path.exists():
            continue
        end = PartitionLog.open(str(path)).log_end_offset  # first the end, then the manifests
        end = min(end, pending_commit_offsets(str(log_dir)).get(("c", p), end))
        rows = [r for r in kafka_python_rows(path) if r[0] < end]
        assert [r[0] for r in rows] == list(range(end))
        for offset, _, _, _, value, _ in rows:
            job, partition, k = value.split(b".")[0].decode().split("|")
            counts = seen.setdefault(job, [0] * PARTITIONS)
            assert int(partition) == p and int(k) == counts[p], (job, p, k, counts)
            counts[p] += 1
    for job, counts in seen.items():
        assert counts == staged[job], f"{job} is visible in part: {counts} of {staged[job]}"
    return seen


def test_sigkill_mid_commit_never_shows_a_partial_commit_and_loses_no_returned_one(tmp_path):
    rng = random.Random(20240607)
    log_dir = tmp_path / "data"
    staged: dict[str, list[int]] = {}
    done: set[str] = set()
    interrupted_seen = 0
    for round_number in range(ROUNDS):
        for line in run_until_killed(log_dir, round_number, rng):
            if line[0] == "staged":
                staged[line[1]] = [int(n) for n in line[2:]]
            else:
                done.add(line[1])
        interrupted_seen += bool(read_pending(str(log_dir)))
        seen = visible_jobs(log_dir, staged)          # as the crash left it, through the cap
        assert done <= set(seen) | {j for j, c in staged.items() if not any(c)}
        if round_number % 2:
            committer.recover(str(log_dir), SETTINGS)  # else the next child's commit does it
            assert read_pending(str(log_dir)) == []
            after = visible_jobs(log_dir, staged)
            assert set(seen) <= set(after) and len(set(after) - set(seen)) <= 1
    committer.recover(str(log_dir), SETTINGS)
    visible_jobs(log_dir, staged)
    assert_no_verify_errors(log_dir, interval=500)
    assert len(done) > ROUNDS
    assert interrupted_seen > 0  # some kill did land inside a commit
