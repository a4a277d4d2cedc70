"""writeStream.format("segmentlog"): every input row in the log exactly once, in order per
partition, however the query is stopped or its driver killed; readers see only whole commits."""

from __future__ import annotations

import os
from pathlib import Path
import random
import select
import signal
import subprocess
import sys
import time

import pytest

from segmentlog_source.storage.commit.commit_log import read_pending
from tests.spark import stream_query as sq
from tests.storage.written_logs import assert_no_verify_errors

pytestmark = pytest.mark.spark
REPO = Path(__file__).resolve().parents[2]


def test_stop_at_random_moments_and_restart_commits_every_row_once(spark, tmp_path):
    rng = random.Random(7)
    total = sq.write_inputs(tmp_path / "in", files=16, rows_per_file=25)
    for _ in range(5):
        query = sq.start(spark, tmp_path)
        time.sleep(rng.uniform(0.3, 3.0))
        query.stop()
        sq.check_prefix(sq.logged_ids(tmp_path / "out"), total)
    query = sq.start(spark, tmp_path, available_now=True)
    query.awaitTermination()
    assert sq.check_prefix(sq.logged_ids(tmp_path / "out"), total) == total
    assert_no_verify_errors(tmp_path / "out")


def test_a_reader_in_a_loop_sees_a_consistent_prefix_while_a_query_writes(spark, tmp_path):
    """Every read is, per partition, offsets 0..n-1 holding the first n expected ids in order:
    no gap, no duplicate, nothing out of order, while micro-batches (of several Kafka batches
    per partition: maxRecordsPerBatch=2) are being appended. The input arrives a file at a time,
    the next once a read has seen the last: the reads overlap the writes however slow the
    machine (all of it at once, a loaded machine once read it only before and after)."""
    files = 12
    total = sq.write_inputs(tmp_path / "waiting", files=files, rows_per_file=40)
    (tmp_path / "in").mkdir()
    query = sq.start(spark, tmp_path, maxRecordsPerBatch="2")
    sizes, given, deadline = [], 0, time.monotonic() + 300
    try:
        while not sizes or sizes[-1] < total:
            assert query.isActive and time.monotonic() < deadline, (sizes, given)
            if given < files and (not sizes and given == 0 or sizes and sizes[-1] == given * 40):
                name = f"part-{given:04d}.json"
                os.rename(tmp_path / "waiting" / name, tmp_path / "in" / name)
                given += 1
            if not list((tmp_path / "out").glob("s-*/*.log")):  # the topic is not created yet
                time.sleep(0.1)
                continue
            rows = (spark.read.format("segmentlog").load(str(tmp_path / "out"))
                    .select("partition", "offset", "value").collect())
            by_partition: dict[int, list[tuple[int, int]]] = {}
            for r in rows:
                by_partition.setdefault(r.partition, []).append((r.offset, int(r.value)))
            ids = {}
            for p, pairs in by_partition.items():
                pairs.sort()
                assert [o for o, _ in pairs] == list(range(len(pairs)))  # contiguous from 0
                ids[p] = [v for _, v in pairs]
            sizes.append(sq.check_prefix(ids, total))
    finally:
        query.stop()
    # each file's rows seen arrive; a read may also find the topic created but still empty, or
    # stop inside a commit that finished while it was planned (per partition still a prefix:
    # commit_log.py, "alignment")
    assert sizes == sorted(sizes)
    assert {40 * n for n in range(1, files + 1)} <= set(sizes)
    assert sizes[-1] == total


def process_tree(root: int) -> list[int]:
    """`root` and all its descendants (from /proc), e.g. a driver, its JVM and the JVM's Python
    daemons and workers, which run in process groups of their own."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    tree, todo = [], [root]
    while todo:
        pid = todo.pop()
        tree.append(pid)
        todo.extend(children.get(pid, []))
    return tree


def kill_tree(root: int) -> None:
    """SIGKILL a whole process tree at once, as a crash of the driver's machine would: stop
    every process first (so none can react to another's death), then kill them."""
    stopped: set[int] = set()
    while new := set(process_tree(root)) - stopped:
        for pid in new:
            try:
                os.kill(pid, signal.SIGSTOP)
            except ProcessLookupError:
                pass
        stopped |= new
    for pid in stopped:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def committed_batches(base: Path) -> int:
    commits = base / "checkpoint" / "commits"
    return len([p for p in commits.iterdir() if p.name.isdigit()]) if commits.exists() else 0


def commit_in_progress(base: Path) -> bool:
    commits = base / "out" / "_segmentlog" / "commits"
    return commits.exists() and any(p.suffix == ".json" for p in commits.iterdir())


def run_driver(base: Path, kill: tuple[int, float, bool] | None) -> bool:
    """Run the query's driver. With `kill` = (batches, delay, in_commit): once it committed
    `batches` more micro-batches (0: once it started) and, with `in_commit`, a sink commit is
    under way (its manifest exists), wait `delay` s and SIGKILL its whole process tree (Python,
    JVM, Python workers). Progress, not the clock, places the kill: the machine's load does not
    matter. True if the driver finished first."""
    with open(base / "driver.err", "ab") as err:   # (the last driver's is shown on failure)
        child = subprocess.Popen([sys.executable, "-m", "tests.spark.stream_query", str(base)],
                                 cwd=REPO, stdout=subprocess.PIPE, stderr=err)
    out, deadline, before = b"", None, committed_batches(base)
    try:
        while b"finished" not in out:
            if (deadline is None and kill is not None and b"started" in out
                    and committed_batches(base) >= before + kill[0]
                    and (not kill[2] or commit_in_progress(base))):
                deadline = time.monotonic() + kill[1]
            timeout = 0.001 if deadline is None else max(0.0, deadline - time.monotonic())
            ready, _, _ = select.select([child.stdout], [], [], timeout)
            if deadline is not None and time.monotonic() >= deadline:
                break
            if ready:
                chunk = os.read(child.stdout.fileno(), 4096)
                if not chunk:
                    break
                out += chunk
    finally:
        kill_tree(child.pid)
        child.wait()
        child.stdout.close()
    return b"finished" in out


@pytest.mark.slow  # about a minute: each of the four drivers needs ~15 s to get going
def test_sigkill_the_driver_at_random_moments_then_restart_from_the_checkpoint(tmp_path):
    rng = random.Random(11)
    total = sq.write_inputs(tmp_path / "in", files=30, rows_per_file=10)
    progress, pending = [], []
    for _ in range(3):
        # a micro-batch takes ~0.3 s once running (the first after a start 6-9 s), of which
        # the sink's commit ~10 ms: every other kill waits for a commit to be under way
        in_commit = len(progress) % 2 == 1
        kill = (rng.randint(0, 3), rng.uniform(0.0, 0.005 if in_commit else 0.4), in_commit)
        assert not run_driver(tmp_path, kill), "the query finished before its kill"
        progress.append(sq.check_prefix(sq.logged_ids(tmp_path / "out"), total))
        pending.append(len(read_pending(str(tmp_path / "out"))))
    print("rows after each kill", progress, "commits interrupted", pending)
    assert 0 < progress[-1] < total
    (tmp_path / "driver.err").unlink(missing_ok=True)
    assert run_driver(tmp_path, kill=None), (tmp_path / "driver.err").read_text()[-3000:]
    assert sq.check_prefix(sq.logged_ids(tmp_path / "out"), total) == total
    assert_no_verify_errors(tmp_path / "out")
