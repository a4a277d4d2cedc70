"""The writer test_crash.py kills: appends batches until SIGKILL, reporting each append that
returned as `<first> <last> <crc>` on stdout (flushed), after a `ready` line."""

from __future__ import annotations

import random
import sys

from segmentlog_source.format.batch import parse_header
from segmentlog_source.storage.log.log_config import LogConfig
from segmentlog_source.storage.log.partition_log import PartitionLog
from tests.storage.helpers import make_batch


def main(path: str, seed: int) -> None:
    rng = random.Random(seed)
    config = LogConfig(segment_bytes=4_000_000, index_interval_bytes=2000, fsync="none")
    log = PartitionLog.open_for_append(path, config=config)
    print("ready", log.log_end_offset, flush=True)
    while True:
        count = rng.randint(1, 5)
        stamps = [rng.randint(0, 10**6) for _ in range(count)]
        # now and then a batch of megabytes, whose write a SIGKILL can cut short
        size = 300_000 if rng.random() < 0.05 else rng.choice([10, 100, 400, 1500])
        data = make_batch(stamps, value_size=size)
        first, last = log.append(data)
        crc = parse_header(data).crc
        sys.stdout.write(f"{first} {last} {crc}\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
