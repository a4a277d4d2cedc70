"""Kill compaction and retention (SIGKILL, a separate process) at every step, many times: each
reopen gives a valid log with the same newest-value view, and finishing the job then gives the
records an uninterrupted run gives (issue #20).

cleaner_crash_child.py counts the file-system changes the job makes and kills itself just before
change N; an uninterrupted run lists them. Retention is killed before each of its changes. The
compaction (two partitions' worth of passes, some 850 changes) is killed before a seeded sample
of its changes that holds each kind of change (the same step of the swap protocol, a snapshot or
a checkpoint write: kill_points) several times, in different segments and passes: a full sweep
takes minutes, over the time budget. After each kill the partition is reopened for append
(segmentlog's recovery, what a writer or the log manager does first), then checked:

1. `segmentlog verify` finds no error;
2. every record left is a record of the original, unchanged at its offset; the newest
   committed value of every key (a tombstone: no value) is the original's (retention: the
   records left are the original's from a segment on, everything uninterrupted retention keeps
   among them); read_committed hides the aborted records left and no others; the data source
   reads them all;
3. the job run again to the end leaves the records and checkpoints an uninterrupted run left.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from itertools import zip_longest
from pathlib import Path
import queue
import random
import re
import shutil
import subprocess
import sys

from kafka.record import MemoryRecords
import pytest

from segmentlog_source.cli.verify import verify_partition
from segmentlog_source.errors import SegmentLogError
from segmentlog_source.format.control import ABORT, COMMIT, end_txn_marker, parse_control_key
from segmentlog_source.format.record_encoder import encode_batch
from segmentlog_source.format.records import Record
from segmentlog_source.storage.log.checkpoints import read_offset_checkpoint
from segmentlog_source.storage.log.log_config import LogConfig
from segmentlog_source.storage.log.partition_log import PartitionLog
from segmentlog_source.storage.log.topic_configs import log_config_of
from segmentlog_source.storage.log_files import (CLEANER_OFFSET_CHECKPOINT,
                                                 LOG_START_OFFSET_CHECKPOINT,
                                                 RECOVERY_POINT_CHECKPOINT)
from tests.damage.helpers import read
from tests.storage import cleaner_crash_child as child

REPO = Path(__file__).resolve().parents[2]
PART = f"{child.TOPIC}-0"
KEYS = [b"key-%02d" % i for i in range(80)]
TXN_PRODUCERS = (1000, 1001)
IDEMPOTENT_PRODUCER = 500
# Kill points per kind of change (kill_points): compaction's are sampled, within the time budget
# (2 cores); retention's are all taken.
COMPACTION_KILLS_PER_STEP = 4
RETENTION_KILLS_PER_STEP = 10**6
WORKERS = 2


# -- the original partitions -----------------------------------------------------------------
class _Writer:
    """Appends a seeded mix: plain and idempotent batches of duplicated keys, tombstones and
    keyless records, gzip now and then, and transactions of two producers, one in three
    aborted, interleaved with the rest."""

    def __init__(self, path: Path, seed: int):
        self.log = PartitionLog.open_for_append(
            str(path), config=LogConfig(segment_bytes=child.SEGMENT_BYTES, fsync="none"))
        self.rng = random.Random(seed)
        self.timestamp = child.START_MS
        self.keys = KEYS
        self.sequences = {pid: 0 for pid in (*TXN_PRODUCERS, IDEMPOTENT_PRODUCER)}
        self.open_txn = {pid: 0 for pid in TXN_PRODUCERS}   # batches still to write

    def records(self, count: int) -> list[Record]:
        rng, out = self.rng, []
        for i in range(count):
            self.timestamp += rng.randint(1, 20)
            key = None if rng.random() < 0.05 else rng.choice(self.keys)
            value = None if key is not None and rng.random() < 0.15 else \
                b"v%d-" % self.timestamp + bytes(rng.randrange(97, 123)
                                                 for _ in range(rng.randint(0, 30)))
            headers = (("h", b"%d" % i),) if rng.random() < 0.2 else ()
            out.append(Record(i, self.timestamp, key, value, headers))
        return out

    def batch(self) -> None:
        rng = self.rng
        count = rng.randint(1, 4)
        fields = {"codec": "gzip" if rng.random() < 0.15 else "none"}
        pick, pid = rng.random(), None
        if pick < 0.45:
            pid = rng.choice(TXN_PRODUCERS)
            if not self.open_txn[pid]:
                self.open_txn[pid] = rng.randint(1, 3)
            fields.update(producer_id=pid, producer_epoch=0, base_sequence=self.sequences[pid],
                          is_transactional=True)
        elif pick < 0.55:
            pid = IDEMPOTENT_PRODUCER
            fields.update(producer_id=pid, producer_epoch=0, base_sequence=self.sequences[pid])
        self.log.append(encode_batch(self.records(count), **fields))
        if pid is None:
            return
        self.sequences[pid] += count
        if pid in self.open_txn:
            self.open_txn[pid] -= 1
            if not self.open_txn[pid]:
                self.end_txn(pid, COMMIT if rng.random() < 0.67 else ABORT)

    def end_txn(self, pid: int, kind: int) -> None:
        key, value = end_txn_marker(kind, coordinator_epoch=0)
        self.log.append(encode_batch([Record(0, self.timestamp, key, value)], is_control=True,
                                     is_transactional=True, producer_id=pid, producer_epoch=0))

    def write(self, batches: int, keys: list[bytes] = KEYS) -> "_Writer":
        self.keys = keys
        for _ in range(batches):
            self.batch()
        return self

    def close(self) -> None:
        for pid, left in self.open_txn.items():
            if left:
                self.open_txn[pid] = 0
                self.end_txn(pid, COMMIT)
        self.log.close()


def build_compacted_original(data_dir: Path) -> Path:
    """A partition cleaned once (its tombstones and markers got delete horizons, its aborted
    records went), then written on. The killed compaction takes several passes of the offset
    map (37 keys): the new records use 25 keys at first, then 25 more; the last 30 keys keep
    their newest record (a value or a tombstone whose horizon has passed) in the cleaned head."""
    path = data_dir / PART
    _Writer(path, 1).write(60).close()
    child.run(str(data_dir), "compact", now_ms=child.SETUP_NOW_MS)
    _Writer(path, 2).write(60, KEYS[:25]).write(30, KEYS[25:50]).close()
    return path


def build_plain_original(data_dir: Path) -> Path:
    path = data_dir / PART
    _Writer(path, 3).write(150).close()
    return path


# -- reading them back -----------------------------------------------------------------------
def rows(path: Path) -> list[tuple]:
    """(offset, timestamp, key, value, headers, producer id, transactional, control) of every
    record, in log order, by kafka-python (the independent decoder)."""
    out = []
    for log in sorted(path.glob("*.log")):
        records = MemoryRecords(log.read_bytes())
        while (batch := records.next_batch()) is not None:
            assert batch.validate_crc(), f"{log}: CRC mismatch at offset {batch.base_offset}"
            out += [(r.offset, r.timestamp, r.key, r.value, tuple(r.headers), batch.producer_id,
                     batch.is_transactional, batch.is_control_batch) for r in batch]
    return out


def aborted_offsets(original: list[tuple]) -> set[int]:
    """The offsets of the records of aborted transactions, from the markers (the original
    keeps every marker: none of their horizons has passed in it)."""
    aborted, pending = set(), {}
    for offset, _, key, _, _, pid, transactional, control in original:
        if control:
            if parse_control_key(key)[1] == ABORT:
                aborted |= set(pending.get(pid, ()))
            pending[pid] = []
        elif transactional:
            pending.setdefault(pid, []).append(offset)
    assert not any(pending.values()), "the original leaves no transaction open"
    return aborted


def newest_values(found: list[tuple], aborted: set[int]) -> dict[bytes, tuple]:
    """key -> (offset, timestamp, value, headers) of its newest committed record; a key whose
    newest record is a tombstone has none."""
    newest = {}
    for row in found:
        offset, timestamp, key, value, headers, _, _, control = row
        if not control and key is not None and offset not in aborted:
            newest[key] = (offset, timestamp, value, headers)
    return {k: v for k, v in newest.items() if v[2] is not None}


def checkpoints(data_dir: Path) -> dict[str, int | None]:
    return {name: read_offset_checkpoint(str(data_dir / name)).get((child.TOPIC, 0))
            for name in (CLEANER_OFFSET_CHECKPOINT, LOG_START_OFFSET_CHECKPOINT,
                         RECOVERY_POINT_CHECKPOINT)}


# -- running the job -------------------------------------------------------------------------
class Killer:
    """cleaner_crash_child.py's server: runs a job in a forked process, killed or not."""

    def __init__(self):
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tests.storage.cleaner_crash_child"], cwd=REPO,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

    def run(self, data_dir: Path, mode: str, kill_at: int | str, trace: Path | None = None):
        self.process.stdin.write(f"{data_dir}\t{mode}\t{kill_at}\t{trace or '-'}\n")
        self.process.stdin.flush()
        answer = self.process.stdout.readline().strip()
        expected = "killed" if isinstance(kill_at, int) and kill_at > 0 else "exit 0"
        if answer != expected:
            error = Path(f"{data_dir}.error")
            raise AssertionError(f"the job ended with {answer or 'no answer'}, not {expected}:"
                                 f"\n{error.read_text() if error.exists() else ''}")

    def close(self) -> None:
        self.process.stdin.close()
        self.process.wait(timeout=60)


class Killers:
    """A server for each worker thread."""

    def __init__(self):
        self.started = [Killer() for _ in range(WORKERS)]
        self.idle = queue.SimpleQueue()
        for killer in self.started:
            self.idle.put(killer)

    def run(self, data_dir: Path, mode: str, kill_at: int, trace: Path | None = None):
        killer = self.idle.get()
        try:
            killer.run(data_dir, mode, kill_at, trace)
        finally:
            self.idle.put(killer)

    def warm(self, data_dir: Path, mode: str) -> None:
        """Each server runs the job once itself, on a copy (numba loads its kernels then)."""
        for i, killer in enumerate(self.started):
            copy = data_dir.parent / f"warm-{mode}-{i}"
            shutil.copytree(data_dir, copy)
            killer.run(copy, mode, "warm")
            shutil.rmtree(copy)


@pytest.fixture(scope="module")
def killers():
    started = Killers()
    yield started
    for killer in started.started:
        killer.close()


def reopen(data_dir: Path, mode: str) -> None:
    """What a writer or the log manager does first: open for append (recovery), close."""
    config = replace(log_config_of(child.overrides(mode)), fsync="none")   # (a crash test)
    PartitionLog.open_for_append(str(data_dir / PART), config=config).close()


class Original:
    """A partition before the job, and after an uninterrupted run of it (the reference)."""

    def __init__(self, data_dir: Path, mode: str, killers: Killers):
        self.data_dir, self.mode, self.killers = data_dir, mode, killers
        self.rows = rows(data_dir / PART)
        self.by_offset = {row[0]: row for row in self.rows}
        self.aborted = aborted_offsets(self.rows)
        self.view = newest_values(self.rows, self.aborted)
        self.reference = data_dir.parent / f"reference-{mode}"
        shutil.copytree(data_dir, self.reference)
        trace = data_dir.parent / f"{mode}.trace"
        killers.warm(data_dir, mode)
        killers.run(self.reference, mode, 0, trace)
        self.trace = trace.read_text().splitlines()
        self.reference_rows = rows(self.reference / PART)
        self.reference_checkpoints = checkpoints(self.reference)


# -- the checks ------------------------------------------------------------------------------
def verify_errors(path: Path) -> list[str]:
    return [str(p) for p in verify_partition(str(path)).errors]


def visibility_errors(path: Path, found: list[tuple], original: Original) -> list[str]:
    """read_committed must see each transactional record left as the original has it: aborted
    exactly when it was (the `.txnindex` files say it, as a broker serves them)."""
    log = PartitionLog.open(str(path))
    txns = log.aborted_transactions(log.log_start_offset, log.log_end_offset)
    errors = []
    for offset, _, _, _, _, pid, transactional, control in found:
        if transactional and not control:
            aborted = any(t.producer_id == pid and t.first_offset <= offset <= t.last_offset
                          for t in txns)
            if aborted != (offset in original.aborted):
                errors.append(f"offset {offset} reads as {'aborted' if aborted else 'committed'}")
    return errors[:3]


def reader_errors(path: Path, found: list[tuple], original: Original) -> list[str]:
    """The data source (planned and scanned as on Spark), read_committed, reads each committed
    record left, and nothing else."""
    try:
        got = sorted((r[2], r[5], r[6]) for r in read(path, isolationLevel="read_committed"))
    except SegmentLogError as err:
        return [f"the data source fails: {type(err).__name__}: {err}"]
    want = [(row[0], row[2], row[3]) for row in found
            if not row[7] and row[0] not in original.aborted]
    if got == want:
        return []
    first = next((a, b) for a, b in zip_longest(got, want) if a != b)
    return [f"the data source reads {len(got)} records, not the {len(want)} left (first "
            f"difference: {first[0]} where {first[1]} is)"]


def check_compaction_state(path: Path, original: Original) -> list[str]:
    found = rows(path)
    errors = [f"offset {row[0]}: {row} is not the original's {original.by_offset.get(row[0])}"
              for row in found if original.by_offset.get(row[0]) != row][:3]
    view = newest_values(found, original.aborted)
    if view != original.view:
        diff = sorted(k for k in set(view) | set(original.view)
                      if view.get(k) != original.view.get(k))
        errors.append(f"newest values differ for {len(diff)} keys, e.g. {diff[0]!r}: "
                      f"{view.get(diff[0])} instead of {original.view.get(diff[0])}")
    return errors + visibility_errors(path, found, original) + reader_errors(path, found, original)


def check_retention_state(path: Path, original: Original) -> list[str]:
    found = rows(path)
    first = found[0][0] if found else original.rows[-1][0] + 1
    errors = []
    if found != [row for row in original.rows if row[0] >= first]:
        errors.append(f"the records left are not the original's from offset {first} on")
    kept = original.reference_rows[0][0] if original.reference_rows else None
    if kept is not None and first > kept:
        errors.append(f"records {kept}..{first - 1} lost: uninterrupted retention keeps them")
    return errors + visibility_errors(path, found, original) + reader_errors(path, found, original)


def kill_and_check(original: Original, kill_at: int) -> list[str]:
    """The problems found after killing the job before its `kill_at`th change (none: [])."""
    data_dir = original.data_dir.parent / f"kill-{original.mode}-{kill_at}"
    shutil.copytree(original.data_dir, data_dir)
    path = data_dir / PART
    try:
        original.killers.run(data_dir, original.mode, kill_at)
        killed_at = Path(f"{data_dir}.killed-at").read_text()
        assert killed_at == original.trace[kill_at - 1], f"the job died at {killed_at}"
        reopen(data_dir, original.mode)
        problems = verify_errors(path)
        check = check_compaction_state if original.mode == "compact" else check_retention_state
        problems += check(path, original)
        original.killers.run(data_dir, original.mode, 0)   # the job again, to the end
        if rows(path) != original.reference_rows:
            problems.append("finished again, the records differ from an uninterrupted run's")
        if checkpoints(data_dir) != original.reference_checkpoints:
            problems.append(f"finished again, checkpoints {checkpoints(data_dir)} instead of "
                            f"{original.reference_checkpoints}")
        problems += [f"finished again: {e}" for e in verify_errors(path)]
    except Exception as err:   # reported with its kill point, as the other problems are
        problems = [f"{type(err).__name__}: {err}"]
    shutil.rmtree(data_dir)
    for leftover in data_dir.parent.glob(f"{data_dir.name}.*"):
        leftover.unlink()
    step = original.trace[kill_at - 1]
    return [f"killed before change #{kill_at} ({step}): {p}" for p in problems]


def kill_points(trace: list[str], per_step: int, seed: int) -> list[int]:
    """Kill points (1-based) covering every kind of step: changes that differ only in the base
    offsets they name are one kind (the same step for another segment or pass), and up to
    `per_step` of each kind are chosen, seeded."""
    kinds: dict[str, list[int]] = {}
    for i, step in enumerate(trace):
        kinds.setdefault(re.sub(r"\d{20}", "N", step), []).append(i + 1)
    rng = random.Random(seed)
    return sorted(n for points in kinds.values()
                  for n in rng.sample(points, min(per_step, len(points))))


def sweep(original: Original, points: list[int]) -> list[str]:
    with ThreadPoolExecutor(WORKERS) as pool:
        found = pool.map(lambda n: kill_and_check(original, n), points)
        return [p for problems in found for p in problems]


def summary(problems: list[str], points: list[int]) -> str:
    """The problems by kind (numbers and paths aside): how many, at which kill points, the
    first one in full."""
    kinds: dict[str, list[str]] = {}
    for problem in problems:
        what = problem.partition("): ")[2]
        kind = re.sub(r"\d+", "N", re.sub(r"/\S*/", "", what))
        kinds.setdefault(kind, []).append(problem)
    failed = {p.split(" ", 4)[3] for p in problems}
    lines = [f"{len(problems)} problems at {len(failed)} of {len(points)} kill points:"]
    for found in kinds.values():
        at = sorted({int(p.split(" ", 4)[3][1:]) for p in found})
        lines += [f"- {len(found)} times, killed before changes #{at[0]}..#{at[-1]} "
                  f"({len(at)} of them), first:", f"  {found[0]}"]
    return "\n".join(lines)


# -- the tests -------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def compacted(tmp_path_factory, killers) -> Original:
    data_dir = tmp_path_factory.mktemp("cleaner-crash") / "data"
    build_compacted_original(data_dir)
    return Original(data_dir, "compact", killers)


def test_uninterrupted_compaction_keeps_the_newest_values_in_a_valid_log(compacted):
    original = compacted
    assert 6 <= len(list((original.data_dir / PART).glob("*.log"))) <= 15
    # The setup's cleaning gave horizons that have passed now: the job removes tombstones and
    # markers, besides older values and aborted records.
    assert len(original.reference_rows) < len(original.rows) / 2
    newest = {row[2]: row for row in original.rows
              if not row[7] and row[2] is not None and row[0] not in original.aborted}
    deleted = {key for key, row in newest.items() if row[3] is None}
    kept = {row[2] for row in original.reference_rows}
    assert deleted - kept and deleted & kept    # old tombstones went, new ones wait
    markers = {row[0] for row in original.rows if row[7]}
    kept = {row[0] for row in original.reference_rows}
    assert markers - kept and markers & kept
    passes = sum(step.endswith(f" {CLEANER_OFFSET_CHECKPOINT}") for step in original.trace)
    assert passes >= 2, "the offset map fills: the compaction takes several passes"
    problems = ([f"before: {p}" for p in verify_errors(original.data_dir / PART)]
                + [f"after: {p}" for p in verify_errors(original.reference / PART)
                   + check_compaction_state(original.reference / PART, original)])
    assert not problems, "\n".join(problems)


def test_compaction_killed_anywhere_reopens_valid_with_the_same_newest_values(compacted):
    points = kill_points(compacted.trace, COMPACTION_KILLS_PER_STEP, seed=20)
    assert len(points) >= 100
    problems = sweep(compacted, points)
    assert not problems, summary(problems, points)


@pytest.mark.parametrize("mode", ["retain", "retain-all"])
def test_retention_killed_at_every_step_loses_nothing_it_would_keep(tmp_path, killers, mode):
    build_plain_original(tmp_path / "data")
    original = Original(tmp_path / "data", mode, killers)
    assert verify_errors(original.data_dir / PART) == []
    before = sorted(p.name for p in (original.data_dir / PART).glob("*.log"))
    after = sorted(p.name for p in (original.reference / PART).glob("*.log"))
    assert len(before) >= 6 and after[0] > before[0]      # retention deleted segments ...
    if mode == "retain-all":                              # ... all, after a roll at the end
        assert after == [f"{original.rows[-1][0] + 1:020d}.log"]
        assert original.reference_rows == []
    else:
        assert len(after) >= 3
    assert check_retention_state(original.reference / PART, original) == []
    points = kill_points(original.trace, RETENTION_KILLS_PER_STEP, seed=21)
    problems = sweep(original, points)
    assert not problems, summary(problems, points)
