"""Writers and readers sharing a directory, each in its own process (issue #16).

- reads (the data source's own planner and executor: plan_read + GroupScan, failOnDataLoss
  true) while another process appends with PartitionLog or commits with the committer: every
  read succeeds and returns a prefix of whole batches, each row the value its offset was
  written with, never going back; and the two races such reads can lose, made certain by
  letting a writer process run at the exact moment (a roll between the planner's listings,
  another writer's tidying between seeing `_segmentlog/commits` and listing it);
- `verify` while another process appends: only the active segment's in-progress state may be
  reported;
- a second writer: waits for the first up to lockTimeoutMs, then fails naming the partition
  and the lock file, or goes ahead once the lock is free; two writers committing at once
  serialize whole commits;
- SIGKILL mid-append: the reader sees whole batches only, verify at most the torn tail, and a
  new writer recovers and appends after exactly what was there.

The writers are tests/storage/append_child.py; every value says which offset and batch it was
written for (`parse_value`), so a row can be checked on its own.
"""

from __future__ import annotations

import collections
from pathlib import Path
import random
import subprocess
import sys
import time

import pytest

from segmentlog_source.cli.verify import verify_partition
from segmentlog_source.errors import LogLockedError, SegmentLogError
from segmentlog_source.plan import read_plan
from segmentlog_source.plan.options import parse_read_options
from segmentlog_source.plan.predicates import fold
from segmentlog_source.spark.reader import GroupScan, ScanSettings
from segmentlog_source.storage.io.local import LocalFileSystem
from segmentlog_source.storage.log.log_segment import LogSegment
from segmentlog_source.storage.log.partition_log import PartitionLog
from segmentlog_source.storage.log_files import PARTITION_LOCK, offset_from_file_name
from tests.storage import kill_child
from tests.storage.append_child import build_batch, log_config, parse_value
from tests.storage.written_logs import (assert_no_verify_errors, assert_valid_log,
                                        kafka_python_rows)

pytestmark = pytest.mark.slow

WRITE_SECONDS = 3.0        # how long a writer runs while the test reads
SEGMENT_BYTES = 16 * 1024  # small: segments roll every few dozen appends
INTERVAL = 1024            # the writers' index.interval.bytes
CHILD_TIMEOUT_S = 60       # no child may outlive this


class Child:
    """`python -m tests.storage.append_child ARGS`, stdout and stderr into files (a writer
    printing a line per append must never block on a pipe nobody reads)."""

    def __init__(self, tmp_path: Path, name: str, *args: str, stdin: bool = False):
        self.out, self.err = tmp_path / f"{name}.out", tmp_path / f"{name}.err"
        with open(self.out, "wb") as out, open(self.err, "wb") as err:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "tests.storage.append_child", *args], cwd=kill_child.REPO,
                stdout=out, stderr=err,
                stdin=subprocess.PIPE if stdin else subprocess.DEVNULL)

    def lines(self) -> list[str]:
        """The whole lines printed so far."""
        return self.out.read_text().split("\n")[:-1]

    def wait_for(self, prefix: str, timeout: float = CHILD_TIMEOUT_S) -> str:
        deadline = time.monotonic() + timeout
        while True:
            found = [line for line in self.lines() if line.startswith(prefix)]
            if found:
                return found[0]
            if self.proc.poll() is not None:
                raise AssertionError(f"child exited ({self.proc.returncode}) before printing "
                                     f"{prefix!r}: {self.err.read_text()[-3000:]}")
            if time.monotonic() > deadline:
                raise AssertionError(f"child printed no {prefix!r} within {timeout} s")
            time.sleep(0.01)

    def running(self) -> bool:
        return self.proc.poll() is None

    def finish(self, expect: int = 0) -> list[str]:
        try:
            code = self.proc.wait(CHILD_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"child still running after {CHILD_TIMEOUT_S} s") from None
        assert code == expect, f"child exit status {code}: {self.err.read_text()[-3000:]}"
        return self.lines()

    def release(self) -> None:
        """Close its stdin (the `hold` child lets go of its lock then)."""
        self.proc.stdin.close()

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        if self.proc.stdin is not None and not self.proc.stdin.closed:
            self.proc.stdin.close()


@pytest.fixture
def children(tmp_path):
    """Start children with `children(name, *args)`; all are killed when the test ends."""
    started: list[Child] = []

    def start(name: str, *args: str, stdin: bool = False) -> Child:
        child = Child(tmp_path, name, *args, stdin=stdin)
        started.append(child)
        return child

    yield start
    for child in started:
        child.kill()


SETTINGS = ScanSettings(row_filter=fold([]), read_committed=False, verify_checksums=True,
                        include_payload=True, include_headers=False, fail_on_data_loss=True)


def read_rows(data_dir: Path, **options: str) -> tuple[list[int], list[bytes]]:
    """(offsets, values) as the data source reads them, without Spark: the driver's plan,
    then each group scanned as an executor scans it."""
    plan = read_plan.plan_read(parse_read_options({"path": str(data_dir), **options}))
    offsets, values = [], []
    for group in plan.groups:
        for batch in GroupScan(group, SETTINGS):
            offsets += batch.column("offset").to_pylist()
            values += batch.column("value").to_pylist()
    return offsets, values


def check_prefix(offsets: list[int], values: list[bytes], start: int = 0) -> tuple[int, bool]:
    """Asserts the rows are offsets start.. with no gap or repeat, each holding the value written
    for its offset, ending on a whole batch. Returns (end offset, whether the last unit (a
    commit) is whole too)."""
    assert offsets == list(range(start, start + len(offsets))), \
        f"not consecutive from {start}: {offsets[:3]}..{offsets[-3:]} ({len(offsets)} rows)"
    for offset, value in zip(offsets, values):
        n, batch_first, batch_last, unit_first, unit_last = parse_value(value)
        assert n == offset and batch_first <= offset <= batch_last, (offset, value[:60])
        assert unit_first <= batch_first <= batch_last <= unit_last, (offset, value[:60])
    if not offsets:
        return start, True
    last = parse_value(values[-1])
    assert last[2] == offsets[-1], f"the read ends inside the batch {last[1]}..{last[2]}"
    return offsets[-1] + 1, last[4] == offsets[-1]


def partition_of(data_dir: Path) -> Path:
    return data_dir / "c-0"


def segment_bases(part: Path) -> list[int]:
    return sorted(offset_from_file_name(p.name) for p in part.glob("*.log"))


# -- reads while a writer writes ------------------------------------------------------------

@pytest.mark.parametrize("writer", ["append", "commit"])
def test_reads_while_a_writer_writes_return_a_prefix_of_whole_batches(tmp_path, children,
                                                                      writer):
    data = tmp_path / "data"
    part = partition_of(data)
    overlapped = tmp_path / "overlapped"   # (the writer goes on past WRITE_SECONDS until then)
    if writer == "append":   # PartitionLog.append, one batch at a time
        child = children("writer", "append", str(part), "1", str(SEGMENT_BYTES),
                         str(WRITE_SECONDS), str(overlapped))
        child.wait_for("ready")
    else:                    # committer.commit, what Spark's writer calls: commits of batches
        child = children("writer", "commit", str(data), "1", str(WRITE_SECONDS),
                         str(overlapped))
        child.wait_for("done")
    rng = random.Random(16)
    failures: list[str] = []
    ends, reads, tail_reads, inside_a_commit, end = set(), 0, 0, 0, 0
    while child.running():
        tail = reads % 3 == 2 and end > 0   # now and then a range starting at an earlier offset
        start = rng.randrange(end) if tail else 0
        options = {"startingOffsets": f'{{"c": {{"0": {start}}}}}'} if tail else {}
        try:
            offsets, values = read_rows(data, **options)
        except SegmentLogError as err:
            failures.append(f"{type(err).__name__}: {err}")
            continue
        finally:
            reads += 1
        new_end, whole_unit = check_prefix(offsets, values, start)
        assert new_end >= end, f"a read went back from offset {end} to {new_end}"
        end, tail_reads = new_end, tail_reads + tail
        ends.add(end)
        inside_a_commit += not whole_unit
        if reads >= 5 and len(ends) >= 3:
            overlapped.touch()
    lines = child.finish()
    assert not failures, (f"{len(failures)} of {reads} reads failed while the writer wrote: "
                          f"{failures[:3]}")
    assert reads >= 5 and len(ends) >= 3, (reads, sorted(ends))  # they did overlap the writes
    total = int(lines[-1].split()[1])   # `closed <log end offset>`
    offsets, values = read_rows(data)
    assert check_prefix(offsets, values) == (total, True)
    assert [(r[0], r[4]) for r in kafka_python_rows(part)] == list(zip(offsets, values))
    if writer == "append":
        assert len(segment_bases(part)) >= 20   # rolls happened under the reads
        assert_valid_log(data, interval=INTERVAL)   # one writer session: indexes exact
    else:
        assert_no_verify_errors(data, interval=INTERVAL)   # a session per commit
        assert not (data / "_segmentlog").exists()
    # A read may stop inside a commit that finished while it was being planned (commit_log.py,
    # pending_commit_offsets): batches are whole, commits need not be.
    print(f"{writer}: {reads} reads ({tail_reads} from an earlier offset), {len(ends)} "
          f"distinct ends, {inside_a_commit} stopped inside a commit, {total} records")


def test_planning_survives_a_roll_between_its_listings(tmp_path, children, monkeypatch):
    """The race above, made certain: another process appends (rolling segments) right after
    the planner listed the partition's segments and before it looks for lost data."""
    data = tmp_path / "data"
    part = partition_of(data)
    first_end = int(children("first", "append", str(part), "1", str(SEGMENT_BYTES), "0.2")
                    .finish()[-1].split()[1])
    listed = segment_bases(part)
    open_for_reading, rolled = PartitionLog.open, []

    def open_then_let_a_writer_roll(*args, **kwargs):
        log = open_for_reading(*args, **kwargs)
        if not rolled:
            rolled.extend(children("second", "append", str(part), "2", str(SEGMENT_BYTES),
                               "0.2").finish())
        return log

    monkeypatch.setattr(PartitionLog, "open", open_then_let_a_writer_roll)
    offsets, values = read_rows(data)
    monkeypatch.undo()
    assert len(segment_bases(part)) > len(listed)   # the second writer rolled segments
    end, _ = check_prefix(offsets, values)
    assert first_end <= end <= int(rolled[-1].split()[1])


def test_looking_for_unfinished_commits_survives_another_writer_tidying_up(tmp_path, children,
                                                                          monkeypatch):
    """Another race, made certain: a commit that has just finished removes the empty
    `_segmentlog/commits` directory (committer._tidy) while a reader (or the next writer) is
    between seeing that directory and listing it (commit_log.read_pending)."""
    data = tmp_path / "data"
    children("first", "contend", str(data), "first", "1", "20000").finish()
    (data / "_segmentlog" / "commits").mkdir(parents=True)  # between a commit's end and its tidy
    commits, is_dir, tidied = str(data / "_segmentlog" / "commits"), LocalFileSystem.is_dir, []

    def is_dir_then_let_a_writer_commit(self, path):
        found = is_dir(self, path)
        if path == commits and not tidied:
            tidied.extend(children("second", "contend", str(data), "second", "1", "20000")
                          .finish())
        return found

    monkeypatch.setattr(LocalFileSystem, "is_dir", is_dir_then_let_a_writer_commit)
    plan = read_plan.plan_read(parse_read_options({"path": str(data)}))
    monkeypatch.undo()
    assert tidied and not (data / "_segmentlog").exists()
    assert plan.groups


# -- verify while a writer writes -------------------------------------------------------------

IN_PROGRESS = ("not a whole batch", "is not the start of a batch", "past the segment's last batch",
               "... and ")


def in_progress(problem, active_from: int) -> bool:
    """A problem of a segment that was the active one during the check (its base offset is at
    least the last base offset listed just before), of a kind an unfinished append causes: a
    batch being written (torn tail), index entries for batches written after the scan."""
    base = offset_from_file_name(Path(problem.path).name)
    return (base is not None and base >= active_from
            and any(kind in problem.message for kind in IN_PROGRESS))


def test_verify_while_a_writer_appends_reports_only_the_active_segment(tmp_path, children):
    data = tmp_path / "data"
    part = partition_of(data)
    child = children("writer", "append", str(part), "3", str(SEGMENT_BYTES), str(WRITE_SECONDS))
    child.wait_for("ready")
    checks, in_progress_seen = 0, collections.Counter()
    false_errors: list[str] = []
    while child.running():
        active_from = segment_bases(part)[-1]
        report = verify_partition(str(part), index_interval_bytes=INTERVAL)  # never raises
        checks += 1
        for problem in report.errors:
            if in_progress(problem, active_from):
                in_progress_seen[next(k for k in IN_PROGRESS if k in problem.message)] += 1
            else:
                false_errors.append(str(problem))
    child.finish()
    assert checks >= 3, checks
    print(f"{checks} checks; in-progress reports of the active segment: {dict(in_progress_seen)}")
    assert not false_errors, (f"{len(false_errors)} errors about a healthy log, in {checks} "
                              f"checks; first: {false_errors[:3]}")
    assert_valid_log(data, interval=INTERVAL)   # and once the writer is done: no problem at all


# -- a second writer ----------------------------------------------------------------------------

RACER_JOBS = 8


def contend_lines(lines: list[str]) -> dict[str, tuple[int, int, int]]:
    """{job: (start, end, waited ms)} from a contend child's `done` lines."""
    return {f[1]: (int(f[2]), int(f[3]), int(f[4]))
            for f in (line.split() for line in lines) if f[0] == "done"}


def test_a_second_writer_waits_for_the_lock_then_fails_clearly_or_proceeds(tmp_path, children):
    data = tmp_path / "data"
    part = partition_of(data)
    holder = children("holder", "hold", str(part), stdin=True)
    holder.wait_for("locked")

    # the storage writer does not wait: the lock is taken, or LogLockedError at once
    began = time.monotonic()
    with pytest.raises(LogLockedError) as refused:
        PartitionLog.open_for_append(str(part), topic="c", partition=0,
                                     config=log_config(SEGMENT_BYTES))
    assert time.monotonic() - began < 1.0
    message = str(refused.value)
    assert "partition c-0" in message and str(part / PARTITION_LOCK) in message, message

    # a committer waits lockTimeoutMs, then fails naming the partition and the lock file;
    # another one, more patient, started at the same time, goes ahead once the lock is free
    impatient = children("impatient", "contend", str(data), "impatient", "1", "600")
    patient = children("patient", "contend", str(data), "patient", "3", "20000")
    _, waited, message = impatient.finish(expect=3)[-1].split(" ", 2)
    assert 600 <= int(waited) < 600 + 5000, waited
    for part_of_message in ("partition c-0", str(part / PARTITION_LOCK), "locked by another writer",
                            "waited 600 ms", "lockTimeoutMs"):
        assert part_of_message in message, (part_of_message, message)
    patient.wait_for("staged patient-0")
    time.sleep(0.3)   # it is in its commit, waiting for the lock
    assert not any(line.startswith("done") for line in patient.lines())
    holder.release()
    assert holder.finish()[-1] == "released"
    done = {"patient": contend_lines(patient.finish())}
    assert done["patient"]["patient-0"][0] == 5              # right after the holder's 5 records
    assert done["patient"]["patient-0"][2] >= 300            # it did wait

    # two writers committing at once serialize, commit by commit (a pause between a writer's
    # commits gives the other its turn: the lock is polled, not queued, so a writer committing
    # back to back can keep it for as long as it goes on)
    go = tmp_path / "go"
    racers = [children(name, "contend", str(data), name, str(RACER_JOBS), "20000", "30",
                        str(go))
              for name in ("left", "right")]
    for racer in racers:
        racer.wait_for("waiting")   # past its imports
    go.touch()
    for name, racer in zip(("left", "right"), racers):
        done[name] = contend_lines(racer.finish())

    rows = kafka_python_rows(part)
    assert [r[0] for r in rows] == list(range(len(rows)))
    assert [parse_value(r[4])[0] for r in rows[:5]] == list(range(5))   # the holder's batch
    jobs: dict[str, list[tuple[int, int, int]]] = {}        # job -> [(offset, k, count)]
    order: list[str] = []
    for offset, _, _, _, value, _ in rows[5:]:
        name, job, k, count, _ = value.split(b"|")
        job = job.decode()
        if not order or order[-1] != job:
            assert job not in jobs, f"{job} is split: offset {offset} follows {order[-1]}"
            order.append(job)
        jobs.setdefault(job, []).append((offset, int(k), int(count)))
    expected = {job: span for spans in done.values() for job, span in spans.items()}
    assert sorted(jobs) == sorted(expected) and len(expected) == 3 + 2 * RACER_JOBS
    for job, found in jobs.items():
        start, end, _ = expected[job]
        assert [o for o, _, _ in found] == list(range(start, end)), job
        assert [k for _, k, _ in found] == list(range(found[0][2])) == list(range(end - start))
    offsets, values = read_rows(data)
    assert list(zip(offsets, values)) == [(r[0], r[4]) for r in rows]
    assert_no_verify_errors(data, interval=INTERVAL)
    # what the writers leave: the lock files (unlocked), no commit state
    assert (part / PARTITION_LOCK).exists() and (data / ".lock").exists()
    assert not (data / "_segmentlog").exists()
    PartitionLog.open_for_append(str(part), topic="c", partition=0,
                                 config=log_config(SEGMENT_BYTES)).close()   # nobody holds them
    switches = sum(a.split("-")[0] != b.split("-")[0] for a, b in zip(order, order[1:]))
    assert switches >= 2, f"the two writers did not take turns: {order}"
    print(f"commit order switched writers {switches} times: {order}")


# -- SIGKILL mid-append -------------------------------------------------------------------------

KILL_ROUNDS = 8


def torn_tail(part: Path):
    """The torn tail of the last segment (TornTail), or None."""
    last = segment_bases(part)[-1]
    segment = LogSegment(str(part), last)
    scan = segment.iter_entries(allow_torn_tail=True)
    for _ in scan:
        pass
    return scan.torn_tail, segment.log_path


def test_sigkill_mid_append_then_read_verify_and_append(tmp_path):
    rng = random.Random(20261122)
    data = tmp_path / "data"
    part = partition_of(data)
    rows: tuple[list[int], list[bytes]] = ([], [])
    acknowledged_total, natural_tears, made_tears = 0, 0, 0
    for round_number in range(KILL_ROUNDS):
        delay = rng.uniform(0.0, 0.25)
        lines = kill_child.run_until_killed(
            "tests.storage.append_child",
            ["append", str(part), str(round_number), str(SEGMENT_BYTES), "0"],
            lambda out: delay if b"\n" in out else None)
        assert lines[0] == f"ready {len(rows[0])}", lines[0]
        acked = [tuple(map(int, line.split())) for line in lines[1:]]
        acknowledged_total += len(acked)
        acked_end = acked[-1][1] + 1 if acked else len(rows[0])

        tear, log_path = torn_tail(part)
        natural_tears += tear is not None
        if tear is None and round_number % 2:
            # the kill landed between writes: make the tear a kill inside a write leaves (the
            # first bytes of a batch the writer was appending), to read and recover from it
            batch = build_batch(acked_end + 10**6, 30, rng)
            with open(log_path, "ab") as f:
                f.write(batch[:rng.randrange(1, len(batch))])
            tear, _ = torn_tail(part)
            made_tears += 1

        # the reader: whole batches, every acknowledged one, at most one batch more
        offsets, values = read_rows(data)
        end, _ = check_prefix(offsets, values)
        assert (offsets[:len(rows[0])], values[:len(rows[0])]) == rows, "committed rows changed"
        assert end >= acked_end, f"acknowledged offsets {end}..{acked_end - 1} are not read"
        beyond = {parse_value(v)[1] for o, v in zip(offsets, values) if o >= acked_end}
        assert len(beyond) <= 1, f"more than one unacknowledged batch: {sorted(beyond)}"

        # verify: at most the torn tail
        report = verify_partition(str(part), index_interval_bytes=INTERVAL)
        errors = [str(e) for e in report.errors]
        if tear is None:
            assert not errors, errors
        else:
            assert len(errors) == 1 and "not a whole batch" in errors[0], errors
            assert report.errors[0].path == log_path
            assert report.errors[0].position == tear.position

        # a new writer recovers (cutting the tear) and appends right after what was read
        log = PartitionLog.open_for_append(str(part), topic="c", partition=0,
                                           config=log_config(SEGMENT_BYTES))
        assert log.log_end_offset == end
        assert (tear is None) or any(t[0] == log_path for t in log.recovery_report.truncated)
        first, last = log.append(build_batch(end, 7, rng))
        log.close()
        assert (first, last) == (end, end + 6)
        after = read_rows(data)
        assert check_prefix(*after) == (end + 7, True)
        assert (after[0][:end], after[1][:end]) == (offsets, values)
        rows = after
    assert acknowledged_total > KILL_ROUNDS and natural_tears + made_tears > 0
    assert [(r[0], r[4]) for r in kafka_python_rows(part)] == list(zip(*rows))
    assert_no_verify_errors(data, interval=INTERVAL)
    print(f"{acknowledged_total} acknowledged appends; torn tails: {natural_tears} from the kill, "
          f"{made_tears} made")
