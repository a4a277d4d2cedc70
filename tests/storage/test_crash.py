"""Kill a writing process at random points, many times: every append that returned survives.

Each round starts crash_child.py on the same partition, lets it append for a random while,
SIGKILLs it, and checks the partition: readable as it is (a torn tail at most), then, opened for
writing (recovery), a valid log holding every batch the child reported. Half the rounds leave
the recovery to the next child instead.
"""

from __future__ import annotations

from pathlib import Path
import random
import shutil

from segmentlog_source.storage.log.log_config import LogConfig
from segmentlog_source.storage.log.partition_log import PartitionLog
from tests.storage import kill_child
from tests.storage.helpers import BruteForce

REPO = Path(__file__).resolve().parents[2]
ROUNDS = 30


def run_child_until_killed(path: Path, seed: int, rng: random.Random) -> list[tuple[int, int, int]]:
    delay = rng.uniform(0.0, 0.1)
    lines = kill_child.run_until_killed("tests.storage.crash_child", [str(path), str(seed)],
                                        lambda out: delay if b"\n" in out else None)
    # only whole lines: their appends returned
    assert lines and lines[0].startswith("ready")
    return [tuple(map(int, line.split())) for line in lines[1:]]


def check_log(path: Path, acknowledged: dict[int, tuple[int, int]], *, allow_torn_tail: bool):
    log = PartitionLog.open(str(path))
    found, expected_next = {}, 0
    for segment in log.segments:
        scan = segment.iter_entries(verify_crc=True,
                                    allow_torn_tail=allow_torn_tail and segment is log.segments[-1])
        for header, _ in scan:
            assert header.base_offset == expected_next  # no gap, no overlap
            expected_next = header.next_offset
            found[header.base_offset] = (header.last_offset, header.crc)
    assert log.log_end_offset == expected_next
    missing = {k: v for k, v in acknowledged.items() if found.get(k) != v}
    assert not missing, f"acknowledged batches lost: {sorted(missing)[:5]}"
    return log


def test_sigkill_at_random_points_loses_no_acknowledged_append(tmp_path):
    rng = random.Random(20240601)
    path = tmp_path / "crash-0"
    acknowledged: dict[int, tuple[int, int]] = {}
    recoveries = 0
    for round_number in range(ROUNDS):
        for first, last, crc in run_child_until_killed(path, round_number, rng):
            acknowledged[first] = (last, crc)
        check_log(path, acknowledged, allow_torn_tail=True)  # readable as the crash left it
        if round_number % 2 == 0:
            log = PartitionLog.open_for_append(str(path), config=LogConfig(
                segment_bytes=4_000_000, index_interval_bytes=2000, fsync="none"))
            recoveries += not log.recovery_report.was_clean
            log.close()
            log = check_log(path, acknowledged, allow_torn_tail=False)
            brute = BruteForce(log, records=False)
            for offset in rng.sample(range(log.log_end_offset + 1),
                                     min(200, log.log_end_offset + 1)):
                segment, position = log.position_for_offset(offset)
                assert (segment.base_offset, position) == brute.position(offset)
    assert len(acknowledged) > ROUNDS  # the children did write
    assert recoveries > 0
    assert len(list(path.glob("*.log"))) > 3  # rolls happened along the way
    shutil.rmtree(path)  # tens of megabytes
