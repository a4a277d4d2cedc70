"""The commit protocol without Spark: staged files in, all-or-nothing appends out; interrupted
commits finished or undone by the next writer; micro-batches committed exactly once."""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path
import threading
import time

import pytest

from segmentlog_source.storage.log.checkpoints import read_offset_checkpoint
from segmentlog_source.errors import BadOptionError, DataLossError, LogLockedError
from segmentlog_source.format.batch import LOG_APPEND_TIME, iter_headers
from segmentlog_source.storage.commit import committer
from segmentlog_source.storage.commit.commit_log import (CommitManifest, PartitionCommit,
                                                         last_committed_batch,
                                                         pending_commit_offsets, read_pending,
                                                         write_manifest)
from segmentlog_source.storage.commit.staging import batch_job_name, job_dir, stream_job_name
from segmentlog_source.storage.io import local as io
from segmentlog_source.storage.log.checkpoints import read_leader_epoch_checkpoint
from segmentlog_source.storage.log.data_dir import topic_partition_counts
from segmentlog_source.storage.log.log_config import LogConfig
from segmentlog_source.storage.log.partition_log import PartitionLog
from tests.storage.written_logs import (assert_no_verify_errors, assert_valid_log,
                                        kafka_python_rows, stage, values_of)

CONFIG = LogConfig(segment_bytes=600, index_interval_bytes=100, fsync="close")
SETTINGS = committer.CommitSettings(CONFIG, lock_timeout_ms=2000)


def vals(prefix: str, n: int) -> list[bytes]:
    return [f"{prefix}{i}".encode() for i in range(n)]


def first_batches(staged, count: int) -> bytes:
    """The first `count` whole batches of a staged file (what a crash may have appended)."""
    data = Path(staged.path).read_bytes()
    headers = list(iter_headers(data))
    return data[:headers[count - 1].end]


def request(job, files, counts, **kw):
    return committer.CommitRequest(job, tuple(files), counts, **kw)


def write(tmp: Path, job: str, rows, counts=None, settings=SETTINGS, **kw):
    files = stage(tmp, job, rows)
    counts = counts or {t: 1 + max(p for tt, p in rows if tt == t) for t, _ in rows}
    return committer.commit(str(tmp), request(job, files, counts, **kw), settings)


def test_commit_appends_in_order_and_leaves_a_broker_shaped_directory(tmp_path):
    r1 = write(tmp_path, "job-a", {("t", 0): vals("a", 7), ("t", 1): vals("b", 2)})
    r2 = write(tmp_path, "job-b", {("t", 0): vals("c", 4)}, counts={"t": 2})
    assert r1.offsets == {("t", 0): (0, 7), ("t", 1): (0, 2)}
    assert r2.offsets == {("t", 0): (7, 11)}
    assert values_of(tmp_path / "t-0") == vals("a", 7) + vals("c", 4)
    assert [r[0] for r in kafka_python_rows(tmp_path / "t-0")] == list(range(11))
    # staging and state directories are gone: a broker could load this data directory, and
    # its recovery point (what is flushed) is each log end: a broker recovers nothing below
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        ".lock", "recovery-point-offset-checkpoint", "t-0", "t-1"]
    assert read_offset_checkpoint(str(tmp_path / "recovery-point-offset-checkpoint")) == {
        ("t", 0): 11, ("t", 1): 2}
    assert_valid_log(tmp_path, {"t-0": [7]}, interval=100)
    # every partition of a new topic exists, with one topic id and leader epoch 0
    ids = {(tmp_path / f"t-{p}" / "partition.metadata").read_text() for p in (0, 1)}
    assert len(ids) == 1
    assert read_leader_epoch_checkpoint(str(tmp_path / "t-0" / "leader-epoch-checkpoint")) \
        == [(0, 0)]


def test_a_new_topic_gets_all_its_partitions_and_keeps_the_count(tmp_path):
    write(tmp_path, "job-a", {("n", 0): vals("a", 1)}, counts={"n": 3})
    assert sorted(p.name for p in tmp_path.glob("n-*")) == ["n-0", "n-1", "n-2"]
    with pytest.raises(BadOptionError, match="has 3 partitions now, but the rows were routed "
                                             "for 2"):
        write(tmp_path, "job-b", {("n", 1): vals("b", 1)}, counts={"n": 2})
    assert values_of(tmp_path / "n-1") == []


@pytest.mark.parametrize("made", [0, 1, 2])
def test_a_writer_killed_while_creating_a_topic_leaves_its_count(tmp_path, monkeypatch, made):
    """Killed after `made` of a new topic's 3 partitions: the topic already counts 3 (a stream
    restarted with numPartitions=3 was refused when the lowest came first), and the next commit
    makes the partitions it needs, with the topic's id."""
    real, calls = PartitionLog.open_for_append, []

    def dies(path, *args, **kwargs):
        if len(calls) == made:
            Path(path).mkdir(parents=True, exist_ok=True)   # (killed just after the mkdir)
            raise KeyboardInterrupt("killed")
        calls.append(path)
        return real(path, *args, **kwargs)

    monkeypatch.setattr(PartitionLog, "open_for_append", dies)
    with pytest.raises(KeyboardInterrupt):
        write(tmp_path, "job-a", {("n", 0): vals("a", 2)}, counts={"n": 3})
    monkeypatch.setattr(PartitionLog, "open_for_append", real)
    # (one empty directory alone is no topic yet: then the next writer creates it whole)
    assert topic_partition_counts(str(tmp_path)).get("n", 3) == 3
    write(tmp_path, "job-b", {("n", 0): vals("b", 2), ("n", 1): vals("c", 1)},
          counts={"n": 3})
    assert values_of(tmp_path / "n-0") == vals("b", 2)
    assert values_of(tmp_path / "n-1") == vals("c", 1)
    ids = {(tmp_path / f"n-{p}" / "partition.metadata").read_text()
           for p in range(3) if (tmp_path / f"n-{p}" / "partition.metadata").exists()}
    assert len(ids) <= 1


def test_an_interrupted_commit_caps_readers_and_is_finished_by_the_next_writer(tmp_path):
    write(tmp_path, "job-a", {("t", 0): vals("a", 5), ("t", 1): vals("b", 5)})
    # job-b crashed after its manifest, with t-0 half appended and t-1 untouched
    files = stage(tmp_path, "job-b", {("t", 0): vals("c", 6), ("t", 1): vals("d", 2)})
    manifest = CommitManifest("c1", "job-b", None, None, None, 0, (
        PartitionCommit("t", 0, 5, 11, (files[0],)), PartitionCommit("t", 1, 5, 7, (files[1],))))
    write_manifest(str(tmp_path), manifest, fsync=False)
    with PartitionLog.open_for_append(str(tmp_path / "t-0"), config=CONFIG) as log:
        log.append(first_batches(files[0], 1))  # 3 records
        assert log.log_end_offset == 8
    assert pending_commit_offsets(str(tmp_path)) == {("t", 0): 5, ("t", 1): 5}
    # the next writer (to t-1 only) settles job-b first: t-0 is truncated and appended again
    write(tmp_path, "job-c", {("t", 1): vals("e", 1)}, counts={"t": 2})
    assert pending_commit_offsets(str(tmp_path)) == {}
    assert values_of(tmp_path / "t-0") == vals("a", 5) + vals("c", 6)
    assert values_of(tmp_path / "t-1") == vals("b", 5) + vals("d", 2) + vals("e", 1)
    assert not Path(job_dir(str(tmp_path), "job-b")).exists()


@pytest.mark.parametrize("appended", ["none", "all"])
def test_settling_a_partition_already_at_its_start_or_end(tmp_path, appended):
    write(tmp_path, "job-a", {("t", 0): vals("a", 2)})
    files = stage(tmp_path, "job-b", {("t", 0): vals("c", 4)})
    write_manifest(str(tmp_path), CommitManifest("c1", "job-b", None, None, None, 0, (
        PartitionCommit("t", 0, 2, 6, tuple(files)),)), fsync=False)
    if appended == "all":
        with PartitionLog.open_for_append(str(tmp_path / "t-0"), config=CONFIG) as log:
            log.append(Path(files[0].path).read_bytes())
    assert committer.recover(str(tmp_path), SETTINGS) == ["c1"]
    assert values_of(tmp_path / "t-0") == vals("a", 2) + vals("c", 4)  # once, either way


def test_an_interrupted_commit_without_its_staged_files_is_undone(tmp_path):
    write(tmp_path, "job-a", {("t", 0): vals("a", 3)})
    files = stage(tmp_path, "job-b", {("t", 0): vals("c", 9)}, max_records=2)
    write_manifest(str(tmp_path), CommitManifest("c1", "job-b", None, None, None, 0, (
        PartitionCommit("t", 0, 3, 12, tuple(files)),)), fsync=False)
    with PartitionLog.open_for_append(str(tmp_path / "t-0"), config=CONFIG) as log:
        log.append(first_batches(files[0], 2))
    committer.abort(str(tmp_path), "job-b", SETTINGS)  # Spark's abort: staging gone, undone
    assert read_pending(str(tmp_path)) == []
    assert values_of(tmp_path / "t-0") == vals("a", 3)
    assert_valid_log(tmp_path, interval=100)


def test_committed_data_missing_below_a_manifest_stops_every_writer(tmp_path):
    write(tmp_path, "job-a", {("t", 0): vals("a", 2)})
    files = stage(tmp_path, "job-b", {("t", 0): vals("c", 1)})
    write_manifest(str(tmp_path), CommitManifest("c1", "job-b", None, None, None, 0, (
        PartitionCommit("t", 0, 5, 6, tuple(files)),)), fsync=False)
    with pytest.raises(DataLossError, match="below the start 5 of the unfinished commit c1"):
        write(tmp_path, "job-c", {("t", 0): vals("d", 1)})
    assert values_of(tmp_path / "t-0") == vals("a", 2)


class DiskFull:
    """io.AppendFile.write_at failing with ENOSPC once `budget` bytes were written, after
    writing part of the failing write (a torn batch), as a full disk does. `once`: later
    writes succeed again (the undo's truncation freed the space)."""

    def __init__(self, monkeypatch, budget: int, once: bool = False):
        self.budget, self.once, self.failed = budget, once, False
        original = io.AppendFile.write_at

        def write_at(file, position, data):
            data = bytes(data)
            if self.budget < len(data) and not (self.once and self.failed):
                original(file, position, data[:max(0, self.budget)])
                self.budget, self.failed, self.failed_path = 0, True, file.path
                raise OSError(errno.ENOSPC, "No space left on device", file.path)
            self.budget -= len(data)
            original(file, position, data)

        monkeypatch.setattr(io.AppendFile, "write_at", write_at)


def test_a_disk_filling_up_mid_commit_rolls_back_to_the_committed_rows(tmp_path, monkeypatch):
    write(tmp_path, "job-a", {("t", 0): vals("a", 10), ("t", 1): vals("b", 10)})
    files = stage(tmp_path, "job-b", {("t", 0): vals("c", 30), ("t", 1): vals("d", 30)})
    disk = DiskFull(monkeypatch, budget=2200, once=True)
    with pytest.raises(OSError, match="No space left"):
        committer.commit(str(tmp_path), request("job-b", files, {"t": 2}), SETTINGS)
    monkeypatch.undo()
    assert disk.failed_path.endswith(".log") and "t-1" in disk.failed_path  # t-0 was done
    assert read_pending(str(tmp_path)) == []
    assert values_of(tmp_path / "t-0") == vals("a", 10)
    assert values_of(tmp_path / "t-1") == vals("b", 10)
    assert_valid_log(tmp_path, interval=100)
    # the staged files are intact: the same commit, retried, now goes through once
    committer.commit(str(tmp_path), request("job-b", files, {"t": 2}), SETTINGS)
    assert values_of(tmp_path / "t-0") == vals("a", 10) + vals("c", 30)
    assert values_of(tmp_path / "t-1") == vals("b", 10) + vals("d", 30)


def test_when_even_the_undo_fails_the_next_writer_finishes_the_commit(tmp_path, monkeypatch):
    write(tmp_path, "job-a", {("t", 0): vals("a", 4)})
    files = stage(tmp_path, "job-b", {("t", 0): vals("c", 40)})
    DiskFull(monkeypatch, budget=700)

    def no_truncate(self, offset):
        raise OSError(errno.EIO, "I/O error")

    monkeypatch.setattr(PartitionLog, "truncate_to", no_truncate)
    with pytest.raises(OSError, match="No space left"):
        committer.commit(str(tmp_path), request("job-b", files, {"t": 1}), SETTINGS)
    monkeypatch.undo()
    assert pending_commit_offsets(str(tmp_path)) == {("t", 0): 4}  # readers stop at 4
    assert values_of(tmp_path / "t-0")[:4] == vals("a", 4)
    write(tmp_path, "job-c", {("t", 0): vals("e", 1)})
    assert values_of(tmp_path / "t-0") == vals("a", 4) + vals("c", 40) + vals("e", 1)
    assert pending_commit_offsets(str(tmp_path)) == {}
    assert_valid_log(tmp_path, {"t-0": [4]}, interval=100)


def test_a_micro_batch_is_committed_once_however_often_it_is_replayed(tmp_path):
    query = "q-1"
    for batch_id, run in [(0, "a"), (0, "b"), (1, "c"), (0, "d"), (1, "e"), (2, "f")]:
        result = write(tmp_path, stream_job_name(query, batch_id), {("s", 0): vals(run, 2)},
                       query_id=query, batch_id=batch_id)
        assert result.committed == (run in "acf")
    assert values_of(tmp_path / "s-0") == vals("a", 2) + vals("c", 2) + vals("f", 2)
    assert last_committed_batch(str(tmp_path), query) == 2
    assert not (tmp_path / "_segmentlog" / "staging").exists()
    assert json.loads((tmp_path / "_segmentlog" / "queries" / "q-1.json").read_text()) \
        ["batchId"] == 2


def test_a_replayed_micro_batch_finishes_its_own_interrupted_commit_first(tmp_path):
    query = "q-2"
    write(tmp_path, stream_job_name(query, 0), {("s", 0): vals("a", 1)}, counts={"s": 2},
          query_id=query, batch_id=0)
    # batch 1's first run died mid-commit; its replay routes keyless rows elsewhere (s-1)
    first = stage(tmp_path, stream_job_name(query, 1), {("s", 0): vals("b", 3)})
    write_manifest(str(tmp_path), CommitManifest("c1", stream_job_name(query, 1), query, 1, None,
                                                 0, (PartitionCommit("s", 0, 1, 4, tuple(first)),)),
                   fsync=False)
    result = write(tmp_path, stream_job_name(query, 1), {("s", 1): vals("b", 3)},
                   counts={"s": 2}, query_id=query, batch_id=1)
    assert (result.committed, result.settled) == (False, ["c1"])
    assert values_of(tmp_path / "s-0") == vals("a", 1) + vals("b", 3)
    assert values_of(tmp_path / "s-1") == []


def test_log_append_time_is_the_commit_time(tmp_path):
    settings = committer.CommitSettings(LogConfig(fsync="none", clock_ms=lambda: 1234567),
                                        log_append_time=True)
    write(tmp_path, "job-a", {("t", 0): vals("a", 5)}, settings=settings)
    data = next((tmp_path / "t-0").glob("*.log")).read_bytes()
    headers = list(iter_headers(data))
    assert all(h.timestamp_type == LOG_APPEND_TIME and h.max_timestamp == 1234567
               for h in headers)
    assert {r[1] for r in kafka_python_rows(tmp_path / "t-0")} == {1234567}
    assert all(h.crc_is_valid(data[h.position:h.end]) for h in headers)


def test_a_second_writer_waits_for_the_lock_then_gives_up_clearly(tmp_path):
    write(tmp_path, "job-a", {("t", 0): vals("a", 1)})
    holder = PartitionLog.open_for_append(str(tmp_path / "t-0"), config=CONFIG)
    impatient = committer.CommitSettings(CONFIG, lock_timeout_ms=200)
    with pytest.raises(LogLockedError, match="lockTimeoutMs"):
        write(tmp_path, "job-b", {("t", 0): vals("b", 1)}, settings=impatient)
    threading.Timer(0.3, holder.close).start()
    started = time.monotonic()
    write(tmp_path, "job-c", {("t", 0): vals("c", 1)})  # waits for the holder, then commits
    assert time.monotonic() - started >= 0.2
    assert values_of(tmp_path / "t-0") == vals("a", 1) + vals("c", 1)


def test_stale_staging_goes_at_commit_but_not_what_a_pending_commit_needs(tmp_path):
    stage(tmp_path, batch_job_name("old"), {("t", 0): vals("x", 1)})
    stage(tmp_path, stream_job_name("q", 3), {("t", 0): vals("x", 1)})
    stage(tmp_path, stream_job_name("q", 9), {("t", 0): vals("x", 1)})
    stage(tmp_path, stream_job_name("other", 1), {("t", 0): vals("x", 1)})
    orphan = stage(tmp_path, stream_job_name("q", 5), {("t", 0): vals("x", 1)}, task=7)
    os.utime(tmp_path / "_segmentlog" / "staging" / batch_job_name("old"), (0, 0))  # a dead job
    write(tmp_path, stream_job_name("q", 5), {("t", 0): vals("a", 1)}, query_id="q", batch_id=5)
    left = sorted(p.name for p in (tmp_path / "_segmentlog" / "staging").iterdir())
    assert left == [stream_job_name("other", 1), stream_job_name("q", 9)]
    assert not Path(orphan[0].path).exists()


def test_truncate_to_drops_later_segments_and_rebuilds_indexes(tmp_path):
    files = stage(tmp_path, "job", {("t", 0): vals("value-", 60)}, max_records=2)
    path = tmp_path / "t-0"
    with PartitionLog.open_for_append(str(path), config=CONFIG) as log:
        log.append(Path(files[0].path).read_bytes(), leader_epoch=0)
        assert len(log.segments) > 3
        with pytest.raises(BadOptionError, match="not a batch boundary"):
            log.truncate_to(21)
        log.truncate_to(30)
        assert log.log_end_offset == 30
        assert all(s.base_offset <= 30 for s in log.segments)
        log.append(first_batches(files[0], 3), leader_epoch=1)
    assert values_of(path) == vals("value-", 30) + vals("value-", 6)
    assert read_leader_epoch_checkpoint(str(path / "leader-epoch-checkpoint")) == [(0, 0), (1, 30)]
    assert sorted(int(p.stem) for p in path.glob("*.snapshot"))[-1] == 36
    assert_valid_log(tmp_path, {"t-0": [30]}, interval=100)


def test_abort_undoes_a_batch_job_even_when_all_its_rows_were_appended(tmp_path):
    write(tmp_path, "job-a", {("t", 0): vals("a", 2)})
    files = stage(tmp_path, "job-b", {("t", 0): vals("c", 3)})
    write_manifest(str(tmp_path), CommitManifest("c1", "job-b", None, None, None, 0, (
        PartitionCommit("t", 0, 2, 5, tuple(files)),)), fsync=False)
    with PartitionLog.open_for_append(str(tmp_path / "t-0"), config=CONFIG) as log:
        log.append(Path(files[0].path).read_bytes())
    committer.abort(str(tmp_path), "job-b", SETTINGS)  # Spark reported the job failed
    assert values_of(tmp_path / "t-0") == vals("a", 2)


def test_a_micro_batch_past_its_commit_point_is_finished_never_undone(tmp_path, monkeypatch):
    from segmentlog_source.storage.commit import commit_log

    query = "q-3"

    def removal_fails(*args, **kwargs):
        raise OSError(errno.EIO, "I/O error")

    monkeypatch.setattr(committer, "remove_manifest", removal_fails)
    with pytest.raises(OSError):  # the batch id was recorded, then the manifest stayed
        write(tmp_path, stream_job_name(query, 0), {("s", 0): vals("a", 3)}, query_id=query,
              batch_id=0)
    monkeypatch.undo()
    assert last_committed_batch(str(tmp_path), query) == 0
    assert pending_commit_offsets(str(tmp_path)) == {("s", 0): 0}
    # Spark aborts batch 0 (its commit raised): the rows stay, the manifest goes
    committer.abort(str(tmp_path), stream_job_name(query, 0), SETTINGS)
    assert commit_log.read_pending(str(tmp_path)) == []
    assert values_of(tmp_path / "s-0") == vals("a", 3)
    # ...and the replay of batch 0 is skipped
    result = write(tmp_path, stream_job_name(query, 0), {("s", 0): vals("a", 3)},
                   query_id=query, batch_id=0)
    assert not result.committed and values_of(tmp_path / "s-0") == vals("a", 3)


def test_staged_files_are_read_back_in_whole_batch_chunks(tmp_path, monkeypatch):
    from segmentlog_source.errors import CorruptDataError
    from segmentlog_source.format.batch import iter_headers
    from segmentlog_source.storage.commit import staging

    monkeypatch.setattr(staging, "READ_CHUNK_BYTES", 100)  # smaller than a batch: carried over
    [staged] = stage(tmp_path, "job", {("t", 0): vals("value-", 50)}, max_records=4)
    chunks = list(staging.iter_staged_chunks(staged))
    assert b"".join(chunks) == Path(staged.path).read_bytes()
    assert sum(len(list(iter_headers(c))) for c in chunks) == staged.batches
    with open(staged.path, "r+b") as f:
        f.truncate(staged.size - 10)
    with pytest.raises(CorruptDataError, match="shorter than"):
        list(staging.iter_staged_chunks(staged))
    short = staged._replace(size=staged.size - 10)
    with pytest.raises(CorruptDataError, match="not a whole batch"):
        list(staging.iter_staged_chunks(short))


def test_two_concurrent_writers_serialise_on_the_partition_locks(tmp_path):
    errors = []

    def writer(name: str) -> None:
        try:
            for i in range(15):
                rows = {("t", p): [f"{name}{i}-{p}-{k}".encode() for k in range(5)]
                        for p in (0, 1)}
                write(tmp_path, f"job-{name}{i}", rows, counts={"t": 2})
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(n,)) for n in "xy"]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    for p in (0, 1):
        values = values_of(tmp_path / f"t-{p}")
        assert len(values) == 2 * 15 * 5
        runs = [values[i:i + 5] for i in range(0, len(values), 5)]  # each commit contiguous
        assert all(len({v.rsplit(b"-", 1)[0] for v in run}) == 1 for run in runs)
    assert read_pending(str(tmp_path)) == []


def test_appending_to_a_real_brokers_data_directory(tmp_path):
    import shutil

    from segmentlog_source.format.batch import iter_headers as headers_of
    from tests.conftest import shared_fixture

    data = tmp_path / "broker"
    shutil.copytree(shared_fixture("kafka-real", "agelenler-broker-2"), data)
    part = data / "payment-response-1"
    before = kafka_python_rows(part)
    result = write(tmp_path / "broker", "job-a", {("payment-response", 1): vals("new", 4)},
                   counts={"payment-response": 3})
    leo = before[-1][0] + 1
    assert result.offsets == {("payment-response", 1): (leo, leo + 4)}
    after = kafka_python_rows(part)
    assert after[:len(before)] == before and [r[4] for r in after[len(before):]] == vals("new", 4)
    last = sorted(part.glob("*.log"))[-1].read_bytes()
    assert {h.partition_leader_epoch for h in headers_of(last) if h.base_offset >= leo} == {6}
    assert_no_verify_errors(data)
