"""readStream.format("segmentlog") in real streaming queries: a segmentlog -> segmentlog pipeline
tails a log that a separate process appends to (segments rolling), is stopped at random
moments and its driver killed, and restarts from its checkpoint; the output ends with every
input record exactly once, in order per partition, accepted by Kafka's own Java reader."""

from __future__ import annotations

import os
from pathlib import Path
import random
import signal
import subprocess
import sys
import time

import pytest

from tests.conftest import shared_dir
from tests.spark import stream_pipeline as sp
from tests.storage.written_logs import assert_no_verify_errors

pytestmark = pytest.mark.spark
REPO = Path(__file__).resolve().parents[2]


class Appender:
    """tests/storage/append_child.py appending to `<base>/in/c-0` for `seconds`, in its own
    process (small segments: they roll every few hundred records)."""

    def __init__(self, base: Path, seconds: float, seed: int):
        self.said = base / "appender.out"     # (a file: a pipe nobody reads would fill up)
        with open(self.said, "w") as out:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "tests.storage.append_child", "append",
                 str(base / "in" / "c-0"), str(seed), str(32 * 1024), str(seconds)],
                cwd=REPO, stdout=out, text=True)
        deadline = time.monotonic() + 60
        while not self.said.read_text().startswith("ready"):
            assert self.proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)

    def finish(self) -> int:
        """Wait for it to close the log; the log end offset."""
        assert self.proc.wait(timeout=120) == 0
        last = self.said.read_text().strip().splitlines()[-1].split()
        assert last[0] == "closed"
        return int(last[1])


def _wait_until_reading(query, timeout_s: float = 120) -> None:
    deadline = time.monotonic() + timeout_s
    while query.status["message"] != "Processing new data" and not query.recentProgress:
        assert query.exception() is None and time.monotonic() < deadline, query.status
        time.sleep(0.05)


def _finish_and_check(spark, base: Path, end: int) -> None:
    query = sp.start(spark, base, available_now=True)
    query.awaitTermination()
    assert sp.check_prefix(sp.written(base), end) == end
    assert_no_verify_errors(base / "out")
    logs = sorted(str(p) for p in (base / "out").glob("*/*.log"))
    verified = subprocess.run([str(shared_dir() / "tools" / "kafka-verify" / "verify-log"),
                               *logs], capture_output=True, text=True, timeout=600)
    assert verified.returncode == 0, verified.stderr
    assert len(verified.stdout.splitlines()) == end


def test_a_pipeline_stopped_at_random_moments_while_its_input_grows(spark, tmp_path):
    rng = random.Random(19)
    appender = Appender(tmp_path, seconds=12, seed=3)
    progress = []
    for run in range(8):
        query = sp.start(spark, tmp_path, maxOffsetsPerTrigger=str(rng.choice([2000, 20000])))
        # A random moment once it reads: a query's start (its Python workers, importing) takes
        # 1 to 15 s, with the machine, which a fixed moment would mostly fall in; and every
        # other run, a moment after one more micro-batch committed (or the query caught up),
        # however slow the machine.
        _wait_until_reading(query)
        if run % 2:
            before = _commits(tmp_path)
            deadline = time.monotonic() + 120
            while _commits(tmp_path) == before and query.isActive \
                    and query.status["message"] != "Waiting for data to arrive":
                assert time.monotonic() < deadline, "no micro-batch committed in 120 s"
                time.sleep(0.05)
            time.sleep(rng.uniform(0.0, 1.0))
        else:
            time.sleep(rng.uniform(0.0, 3.0))
        query.stop()
        progress.append(sp.check_prefix(sp.written(tmp_path)))
    end = appender.finish()
    print("records after each stop", progress, "of", end)
    assert len(list((tmp_path / "in" / "c-0").glob("*.log"))) >= 5, "segments must roll"
    # (stopped while the input grew: some stops left part of it for the next run)
    assert progress == sorted(progress) and any(0 < p < end for p in progress)
    _finish_and_check(spark, tmp_path, end)


def _commits(base: Path) -> int:
    done = base / "checkpoint" / "commits"
    return sum(1 for f in done.iterdir() if f.name.isdigit()) if done.exists() else 0


def _run_driver(base: Path, after_s: float, ready=None) -> None:
    """The pipeline's driver in its own process group, SIGKILLed `after_s` after it started
    (or, given `ready`, `after_s` after `ready()` first says so)."""
    said = base / "driver.err"    # (a file: a pipe nobody reads would fill up)
    with open(said, "w") as err:
        proc = subprocess.Popen([sys.executable, "-m", "tests.spark.stream_pipeline", str(base)],
                                cwd=REPO, stdout=subprocess.PIPE, stderr=err, text=True,
                                start_new_session=True)
    try:
        assert proc.stdout.readline().strip() == "started"
        deadline = time.monotonic() + 300
        while ready is not None and not ready():
            # why it died is in the last lines of its stderr (Spark logs a lot before them)
            assert proc.poll() is None, "the driver died: " + said.read_text()[-1500:]
            assert time.monotonic() < deadline, "the driver made no progress in 300 s"
            time.sleep(0.5)
        time.sleep(after_s)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


@pytest.mark.slow  # about a minute and a half: each driver needs several seconds to start
def test_sigkill_the_pipelines_driver_then_restart_from_the_checkpoint(spark, tmp_path):
    rng = random.Random(23)
    appender = Appender(tmp_path, seconds=20, seed=4)
    progress = []
    for run in range(3):
        # A fresh driver takes several seconds to its first micro-batch (far longer on a loaded
        # machine): the first two die at random moments, before it or in it; the last a
        # moment after one more micro-batch committed (or once nothing is left to read).
        if run < 2:
            _run_driver(tmp_path, rng.uniform(4.0, 12.0))
        else:
            before = _commits(tmp_path)

            def continue_after():
                if _commits(tmp_path) > before:
                    return True
                if appender.proc.poll() is None:
                    return False
                try:
                    return sp.check_prefix(sp.written(tmp_path)) == appender.finish()
                except Exception:   # (read while a micro-batch is being written: ask later)
                    return False
            _run_driver(tmp_path, rng.uniform(0.0, 2.0), continue_after)
        progress.append(sp.check_prefix(sp.written(tmp_path)))
    end = appender.finish()
    print("records after each kill", progress, "of", end)
    assert progress == sorted(progress) and progress[-1] > 0
    _finish_and_check(spark, tmp_path, end)


def test_read_committed_holds_the_stream_behind_an_open_transaction_until_it_aborts(spark,
                                                                                    tmp_path):
    """Another process opens a transaction and leaves it open while appending more; the
    read_committed stream stops before it (the last stable offset) and, once the ABORT marker
    is written, goes on with every committed record and none of the aborted ones."""
    go = tmp_path / "go"
    child = subprocess.Popen([sys.executable, "-m", "tests.spark.stream_logs",
                              str(tmp_path / "in" / "t-0"), str(go)],
                             cwd=REPO, stdout=subprocess.PIPE, text=True)
    said, first = child.stdout.readline().split()
    assert said == "open" and int(first) == 20
    out = tmp_path / "out"
    query = (spark.readStream.format("segmentlog").option("startingOffsets", "earliest")
             .option("kafka.isolation.level", "read_committed").load(str(tmp_path / "in"))
             .selectExpr("value").writeStream.format("segmentlog").option("topic", "o")
             .option("numPartitions", "1").option("checkpointLocation", str(tmp_path / "chk"))
             .trigger(processingTime="100 milliseconds").start(str(out)))

    def values():
        from tests.storage.written_logs import kafka_python_rows
        return [int(r[4]) for r in kafka_python_rows(out / "o-0")] if (out / "o-0").exists() \
            else []

    try:
        deadline = time.monotonic() + 60
        while len(values()) < 20 and time.monotonic() < deadline:
            time.sleep(0.2)
        time.sleep(2)                 # triggers go by: the open transaction holds the rest
        assert values() == list(range(20))
        go.touch()
        said, end = child.stdout.readline().split()
        assert said == "done" and child.wait(timeout=30) == 0
        plain = list(range(20)) + list(range(30, 40)) + list(range(int(end) - 10, int(end)))
        deadline = time.monotonic() + 60
        while values() != plain and time.monotonic() < deadline:
            time.sleep(0.2)
        assert values() == plain
    finally:
        query.stop()


def test_a_pipeline_tailing_what_the_batch_writer_appends(spark, tmp_path):
    """The input appended by segmentlog's batch writer in another process (commits of two
    partitions, segments rolling); the pipeline stopped now and then meanwhile: per key, the
    output holds the input's records in the input's order, once."""
    rng = random.Random(29)
    (tmp_path / "in").mkdir()
    writer = subprocess.Popen([sys.executable, "-m", "tests.spark.stream_pipeline", "write",
                               str(tmp_path), "16"], cwd=REPO, stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, text=True)
    assert writer.stdout.readline().strip() == "ready"
    snapshots = []
    while writer.poll() is None:
        query = sp.start(spark, tmp_path)
        if len(snapshots) % 2:
            # every other run stops a moment after one more micro-batch committed, however
            # slow the machine (a loaded one may take longer than 6 s to start a query)
            before, deadline = _commits(tmp_path), time.monotonic() + 120
            while _commits(tmp_path) == before and query.isActive \
                    and time.monotonic() < deadline:
                time.sleep(0.05)
            time.sleep(rng.uniform(0.0, 1.0))
        else:
            time.sleep(rng.uniform(3.0, 6.0))
        query.stop()
        snapshots.append(sp.written(tmp_path))
    said = writer.stdout.read().split()
    assert writer.returncode == 0 and said[-1] == "6400"
    assert all(len(list(part.glob("*.log"))) >= 2 for part in (tmp_path / "in").glob("w-*")), \
        "segments must roll"
    inputs = sp.input_by_key(tmp_path)
    counts = [sp.check_by_key(found, inputs) for found in snapshots]
    print("records after each stop", counts, "of 6400")
    assert len(snapshots) >= 3 and counts == sorted(counts) and 0 < max(counts)
    query = sp.start(spark, tmp_path, available_now=True)
    query.awaitTermination()
    assert sp.check_by_key(sp.written(tmp_path), inputs, complete=True) == 6400
