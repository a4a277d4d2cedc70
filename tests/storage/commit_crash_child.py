"""The committer test_commit_crash.py kills: stages and commits jobs across three partitions
until SIGKILL, printing `staged <job> <rows per partition>` before each commit and
`done <job>` after it returns (flushed). Even seeds append by runs, odd ones batch by batch."""

from __future__ import annotations

import random
import sys

from segmentlog_source.storage.commit import committer
from segmentlog_source.storage.log import batch_run
from segmentlog_source.storage.log.log_config import LogConfig
from tests.storage.written_logs import stage

PARTITIONS = 3
SETTINGS = committer.CommitSettings(
    LogConfig(segment_bytes=20_000, index_interval_bytes=500, fsync="none"), lock_timeout_ms=5000)


def rows_for(job: str, counts: list[int]) -> dict[tuple[str, int], list[bytes]]:
    return {("c", p): [f"{job}|{p}|{k}".encode() + b"." * 40 for k in range(n)]
            for p, n in enumerate(counts) if n}


def main(log_dir: str, seed: int) -> None:
    rng = random.Random(seed)
    if seed % 2 == 0:   # even rounds append in runs (storage/log/batch_run.py) whatever the size
        batch_run.RUN_MIN_BYTES, batch_run.RUN_MIN_BATCHES = 0, 1
    for i in range(10**9):
        job = f"job-{seed}-{i}"
        counts = [rng.choice([0, 1, 40, 300, 1000]) for _ in range(PARTITIONS)]
        files = stage(log_dir, job, rows_for(job, counts), max_records=rng.choice([1, 3, 50]))
        print("staged", job, *counts, flush=True)
        committer.commit(log_dir, committer.CommitRequest(job, tuple(files), {"c": PARTITIONS}),
                         SETTINGS)
        print("done", job, flush=True)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
