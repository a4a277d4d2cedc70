"""The writers test_concurrency.py runs as separate processes, one partition directory each.

Every record's value says where it belongs: `<n>|<batch first>|<batch last>|<unit first>|<unit
last>|` and padding, where n counts the records this partition ever got from these writers (so
it is the record's offset in a log they alone wrote), the batch is the RecordBatch holding it
and the unit what one call made visible at once (a batch for `append`, a commit for `commit`).
A reader checks each row on its own, and whether it ends on a whole batch or unit.

    append PATH SEED SEGMENT_BYTES SECONDS [STOP_FILE]
                                             PartitionLog.append, paced over SECONDS (0: until
                                             killed); `ready <leo>`, then `<first> <last>` after
                                             each append returned, `closed <leo>` at the end
    commit LOG_DIR SEED SECONDS [STOP_FILE]  committer.commit of jobs of several batches into
                                             partition `c-0`; `done <first> <last>` per commit
    (with STOP_FILE, SECONDS is the least: the writer goes on until that file exists, for at
    most MAX_SECONDS, so that a reader on a loaded machine gets to overlap its writes)
    hold PATH                                open_for_append, one batch, `locked <first> <last>`,
                                             then keeps the lock until stdin closes: `released`
    contend LOG_DIR NAME JOBS TIMEOUT_MS [PAUSE_MS GO_FILE]
                                             JOBS commits into `c-0` (lockTimeoutMs TIMEOUT_MS),
                                             PAUSE_MS apart, the first once GO_FILE exists
                                             (`waiting` before that);
                                             `staged <job>` before each, then
                                             `done <job> <start> <end> <waited ms>`, or
                                             `locked <waited ms> <message>` (after aborting the
                                             job, as Spark's writer does) and exit status 3
"""

from __future__ import annotations

import os
import random
import sys
import time

from kafka.record.default_records import DefaultRecordBatchBuilder

from segmentlog_source.errors import LogLockedError
from segmentlog_source.storage.commit import committer
from segmentlog_source.storage.log.log_config import LogConfig
from segmentlog_source.storage.log.partition_log import PartitionLog

TOPIC = "c"
TIMESTAMP = 1_700_000_000_000
GZIP = 1
APPEND_BATCHES_PER_S = 600
MAX_SECONDS = 120
COMMITS_PER_S = 150


def log_config(segment_bytes: int) -> LogConfig:
    return LogConfig(segment_bytes=segment_bytes, index_interval_bytes=1024, fsync="none")


def value(n: int, batch: tuple[int, int], unit: tuple[int, int], pad: int) -> bytes:
    return f"{n}|{batch[0]}|{batch[1]}|{unit[0]}|{unit[1]}|".encode() + b"x" * pad


def parse_value(data: bytes) -> tuple[int, int, int, int, int]:
    """(n, batch first, batch last, unit first, unit last) of a value written here."""
    fields = data.split(b"|")
    assert len(fields) == 6 and fields[5] == b"x" * len(fields[5]), data[:80]
    return tuple(int(f) for f in fields[:5])


def build_batch(first: int, count: int, rng: random.Random) -> bytes:
    """One v2 batch of records first..first+count-1, built by kafka-python (an encoder
    independent of segmentlog's); the log assigns its base offset."""
    builder = DefaultRecordBatchBuilder(magic=2, compression_type=GZIP if rng.random() < 0.2 else 0,
                                        is_transactional=False, producer_id=-1, producer_epoch=-1,
                                        base_sequence=-1, batch_size=1 << 30)
    span = (first, first + count - 1)
    for k in range(count):
        builder.append(k, timestamp=TIMESTAMP + first + k, key=None,
                       value=value(first + k, span, span, rng.randint(0, 120)), headers=[])
    return bytes(builder.build())


class Pacer:
    """Spreads `per_second` steps evenly: sleeps only when ahead of schedule."""

    def __init__(self, per_second: float):
        self.per_second, self.start, self.steps = per_second, time.monotonic(), 0

    def step(self) -> None:
        self.steps += 1
        ahead = self.start + self.steps / self.per_second - time.monotonic()
        if ahead > 0:
            time.sleep(ahead)


def going_on(stop: float, stop_file: str | None) -> bool:
    """Whether a writer told to write until the monotonic time `stop` (and then until
    `stop_file` exists, when given) writes on."""
    now = time.monotonic()
    if now < stop:
        return True
    return stop_file is not None and now < stop + MAX_SECONDS and not os.path.exists(stop_file)


def append(path: str, seed: int, segment_bytes: int, seconds: float,
           stop_file: str | None = None) -> None:
    rng = random.Random(seed)
    log = PartitionLog.open_for_append(path, topic=TOPIC, partition=0,
                                       config=log_config(segment_bytes))
    print("ready", log.log_end_offset, flush=True)
    pacer, stop = Pacer(APPEND_BATCHES_PER_S), time.monotonic() + seconds
    while seconds == 0 or going_on(stop, stop_file):
        # now and then a batch of about 10 KB, whose write a SIGKILL can cut short
        count = 100 if rng.random() < 0.03 else rng.randint(1, 20)
        first, last = log.append(build_batch(log.log_end_offset, count, rng))
        print(first, last, flush=True)
        pacer.step()
    log.close()
    print("closed", log.log_end_offset, flush=True)


def commit(log_dir: str, seed: int, seconds: float, stop_file: str | None = None) -> None:
    from tests.storage.written_logs import stage  # (imports the decoder: not for `append`)

    rng = random.Random(seed)
    settings = committer.CommitSettings(log_config(16 * 1024), lock_timeout_ms=10_000)
    pacer, stop, n = Pacer(COMMITS_PER_S), time.monotonic() + seconds, 0
    for i in range(10**9):
        if not going_on(stop, stop_file):
            break
        per_batch, count = rng.choice([1, 3, 10]), rng.randint(1, 40)
        values = []
        for k in range(count):
            b = k // per_batch * per_batch
            batch = (n + b, n + min(b + per_batch, count) - 1)
            values.append(value(n + k, batch, (n, n + count - 1), rng.randint(0, 60)))
        job = f"job-{seed}-{i}"
        files = stage(log_dir, job, {(TOPIC, 0): values}, max_records=per_batch)
        result = committer.commit(log_dir, committer.CommitRequest(job, tuple(files), {TOPIC: 1}),
                                  settings)
        start, end = result.offsets[(TOPIC, 0)]
        assert (start, end) == (n, n + count), ((start, end), n, count)  # the only writer
        n = end
        print("done", start, end - 1, flush=True)
        pacer.step()
    print("closed", n, flush=True)


def hold(path: str) -> None:
    log = PartitionLog.open_for_append(path, topic=TOPIC, partition=0, config=log_config(16 * 1024))
    first, last = log.append(build_batch(log.log_end_offset, 5, random.Random(0)))
    print("locked", first, last, flush=True)
    sys.stdin.read()  # until the test closes our stdin (or dies: then so does the pipe)
    log.close()
    print("released", flush=True)


def contend(log_dir: str, name: str, jobs: int, timeout_ms: int, pause_ms: int = 0,
            go_file: str | None = None) -> None:
    """Values here are `<name>|<job>|<k>|<count>|`: the offsets are not known in advance."""
    from tests.storage.written_logs import stage

    settings = committer.CommitSettings(log_config(16 * 1024), lock_timeout_ms=timeout_ms)
    rng = random.Random(name)
    if go_file is not None:
        print("waiting", flush=True)
    deadline = time.monotonic() + 30
    while go_file is not None and not os.path.exists(go_file) and time.monotonic() < deadline:
        time.sleep(0.002)   # so that two writers start together, their imports done
    for i in range(jobs):
        if i and pause_ms:
            time.sleep(pause_ms / 1000)
        job, count = f"{name}-{i}", rng.randint(1, 60)
        values = [f"{name}|{job}|{k}|{count}|".encode() + b"y" * rng.randint(0, 50)
                  for k in range(count)]
        files = stage(log_dir, job, {(TOPIC, 0): values}, max_records=rng.choice([1, 4, 16]))
        print("staged", job, flush=True)
        began = time.monotonic()
        try:
            result = committer.commit(
                log_dir, committer.CommitRequest(job, tuple(files), {TOPIC: 1}), settings)
        except LogLockedError as err:
            waited = round((time.monotonic() - began) * 1000)
            committer.abort(log_dir, job, settings)  # what Spark's writer does with a failed job
            print("locked", waited, str(err).replace("\n", " "), flush=True)
            sys.exit(3)
        waited = round((time.monotonic() - began) * 1000)
        start, end = result.offsets[(TOPIC, 0)]
        print("done", job, start, end, waited, flush=True)


if __name__ == "__main__":
    mode, args = sys.argv[1], sys.argv[2:]
    if mode == "append":
        append(args[0], int(args[1]), int(args[2]), float(args[3]), *args[4:5])
    elif mode == "commit":
        commit(args[0], int(args[1]), float(args[2]), *args[3:4])
    elif mode == "hold":
        hold(args[0])
    elif mode == "contend":
        contend(args[0], args[1], int(args[2]), int(args[3]), *map(int, args[4:5]), *args[5:6])
    else:
        raise SystemExit(f"unknown mode {mode}")
