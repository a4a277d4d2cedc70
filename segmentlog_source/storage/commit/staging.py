"""Staged task output: v2 batches a Spark task wrote for one partition, not yet in the log.

Layout under a data directory (`_segmentlog` is not a `<topic>-<partition>` name, so readers
and `find_partitions` never take it for a partition)::

    <log dir>/_segmentlog/staging/<job>/
        t<task>-a<attempt>-<task attempt id>-<random>.<topic>-<partition>.batches

`<job>` is `job-<uuid>` for a batch write and `query-<query id>-batch-<batch id>` for a
micro-batch. A staged file is batches laid end to end exactly as in a `.log`, with offsets
from 0; the commit (committer.py) appends them to the log, where the offsets are assigned.

Every attempt writes its own files (the random part keeps a replayed micro-batch, whose task
attempt ids restart after a driver restart, from overwriting the files a pending commit names),
so a failed or losing attempt only leaves orphans, and orphans go with their job directory.
"""

from __future__ import annotations

import re
from typing import Iterator, NamedTuple
import uuid

import numpy as np

from ...errors import CorruptDataError, LogNotFoundError
from ...format.batch import DEFAULT_MAX_BATCH_BYTES, LOG_OVERHEAD, MIN_V2_BATCH_LENGTH
from ..io.local import LOCAL
from ..log_files import STATE_DIR

STAGING = "staging"
STAGED_SUFFIX = ".batches"
READ_CHUNK_BYTES = 4 * 1024 * 1024

_STREAM_JOB = re.compile(r"query-(?P<query>.+)-batch-(?P<batch>\d+)")


class StagedFile(NamedTuple):
    """One task attempt's batches for one partition, as its commit message reports them."""

    topic: str
    partition: int
    path: str
    batches: int
    records: int
    size: int


def state_dir(log_dir: str, fs=LOCAL) -> str:
    return fs.join(log_dir, STATE_DIR)


def staging_root(log_dir: str, fs=LOCAL) -> str:
    return fs.join(log_dir, STATE_DIR, STAGING)


def job_dir(log_dir: str, job: str, fs=LOCAL) -> str:
    return fs.join(staging_root(log_dir, fs), job)


def batch_job_name(job_id: str) -> str:
    return f"job-{job_id}"


def stream_job_name(query_id: str, batch_id: int) -> str:
    return f"query-{query_id}-batch-{batch_id}"


def parse_stream_job(name: str) -> tuple[str, int] | None:
    """(query id, batch id) of a micro-batch's job name, or None for a batch job."""
    m = _STREAM_JOB.fullmatch(name)
    return (m["query"], int(m["batch"])) if m else None


class StagedFileWriter:
    """Appends encoded batches to one staged file; `finish()` says what it holds.

    The file is opened per write (each write is a flush of about a MiB) rather than held open:
    a task writing to a thousand partitions must not hold a thousand descriptors.
    """

    def __init__(self, directory: str, task_name: str, topic: str, partition: int, fs=LOCAL,
                 *, fsync: bool = False):
        self.fs = fs
        self.topic, self.partition = topic, partition
        self.path = fs.join(directory, f"{task_name}.{topic}-{partition}{STAGED_SUFFIX}")
        self.fsync = fsync   # finish() syncs: each write's bytes start to the disk at once
        self.batches = self.records = self.size = 0

    def write(self, data, batches: int, records: int) -> None:
        with self.fs.open_append(self.path) as f:
            f.write_at(self.size, data)
            if self.fsync:
                f.start_writeback(self.size, len(data))
        self.size += len(data)
        self.batches += batches
        self.records += records

    def finish(self) -> StagedFile | None:
        """What the file holds (synced if the writer was made to: a commit that survives a
        crash must find it); None when nothing was written."""
        if self.size == 0:
            return None
        if self.fsync:
            with self.fs.open_append(self.path) as f:
                f.fsync()
        return StagedFile(self.topic, self.partition, self.path, self.batches, self.records,
                          self.size)


JOB_MARKER = ".job"   # in a batch job's staging directory while the job runs


def task_file_prefix(partition_id: int, attempt: int, task_attempt_id: int) -> str:
    return f"t{partition_id:05d}-a{attempt}-{task_attempt_id}-{uuid.uuid4().hex[:8]}"


def make_job_dir(log_dir: str, job: str, fs=LOCAL) -> str:
    """Create (if needed) and return a job's staging directory.

    A committer tidying up removes *empty* state directories; should that happen between two
    steps of our makedirs, the next step finds its parent gone: simply try again.
    """
    path = job_dir(log_dir, job, fs)
    for attempt in range(5):
        try:
            fs.makedirs(path)
            return path
        except FileNotFoundError:
            if attempt == 4:
                raise
    return path


def start_job(log_dir: str, job: str, fs=LOCAL) -> str:
    """The driver's part for a batch write: the job's staging directory, made before any task
    runs and kept non-empty (a tidying committer removes only empty ones), so that a task
    attempt still running after the job was committed or aborted finds it gone
    (`open_job_dir`) instead of leaving staged files no one will remove."""
    path = make_job_dir(log_dir, job, fs)
    fs.write_atomic(fs.join(path, JOB_MARKER), b"", fsync=False)
    return path


def open_job_dir(log_dir: str, job: str, fs=LOCAL) -> str:
    path = job_dir(log_dir, job, fs)
    if not fs.exists(fs.join(path, JOB_MARKER)):
        raise LogNotFoundError(f"the write job {job} is over (committed or aborted): this task "
                               f"attempt came too late to stage in {path}")
    return path


def is_intact(staged: StagedFile, fs=LOCAL) -> bool:
    """Whether a staged file is still there, as long as its task reported."""
    return fs.is_file(staged.path) and fs.size(staged.path) == staged.size


def iter_staged_chunks(staged: StagedFile, fs=LOCAL) -> Iterator[memoryview]:
    """The staged batches in chunks of about READ_CHUNK_BYTES that end on a batch boundary (a
    bigger batch is a chunk of its own), each read into a buffer of its own (writable: the
    commit has the log set offsets in it, PartitionLog.append(in_place=True)). The log appends
    a chunk in one call and walks its headers in compiled code, so only the batches' lengths
    are read here (parsing every header in Python as well took 0.14 s of a 250 MB commit;
    copying each chunk into a bytearray and carrying its partial last batch over, 0.18 s
    more)."""
    with fs.open_read(staged.path) as f:
        position = 0
        while position < staged.size:
            want = min(READ_CHUNK_BYTES, staged.size - position)
            data = _read(f, position, want)
            end = _whole_batches(data, staged.path, position)
            if end == 0 and len(data) >= LOG_OVERHEAD:   # a batch bigger than a chunk
                want = min(int.from_bytes(data[8:12], "big") + LOG_OVERHEAD,
                           staged.size - position)
                data = _read(f, position, want)
                end = _whole_batches(data, staged.path, position)
            if len(data) < want:
                raise CorruptDataError(f"shorter than the {staged.size} bytes its task wrote",
                                       staged.path, position + len(data))
            if end == 0:
                raise CorruptDataError(f"the last {staged.size - position} bytes are not a "
                                       "whole batch", staged.path, position)
            yield data[:end]
            position += end   # (a partial last batch is read again with the next chunk)


def _read(f, position: int, length: int) -> memoryview:
    buffer = np.empty(length, np.uint8)   # (not zero-filled first, as a bytearray would be)
    return memoryview(buffer)[:f.read_into(position, buffer)]


def _whole_batches(data: memoryview, path: str, position: int) -> int:
    """How many bytes at the start of `data` (read at `position`) are whole batches, by their
    lengths (the log checks the rest of each header, and the CRC, as it appends)."""
    end, n = 0, len(data)
    while n - end >= LOG_OVERHEAD:
        length = int.from_bytes(data[end + 8:end + 12], "big", signed=True)
        if not MIN_V2_BATCH_LENGTH <= length <= DEFAULT_MAX_BATCH_BYTES - LOG_OVERHEAD:
            raise CorruptDataError(f"batch length {length} is no v2 batch's", path,
                                   position + end)
        if end + LOG_OVERHEAD + length > n:
            break
        end += LOG_OVERHEAD + length
    return end


def remove_job(log_dir: str, job: str, fs=LOCAL) -> None:
    fs.remove_tree(job_dir(log_dir, job, fs))


def remove_stale_jobs(log_dir: str, *, keep: set[str], query_batch: tuple[str, int] | None,
                      now_ms: int, retention_ms: int, fs=LOCAL) -> list[str]:
    """Remove job directories that no commit can still need; returns their names.

    `keep`: jobs a pending commit names. Removed: the same query's micro-batches up to the one
    just committed (retries and replays of committed batches), and any job untouched for
    `retention_ms` (a batch job whose driver died: no one else knows whether it still runs,
    so age is the only safe sign).
    """
    root = staging_root(log_dir, fs)
    if not fs.is_dir(root):
        return []
    removed = []
    for name in fs.list_dir(root):
        if name in keep:
            continue
        stream = parse_stream_job(name)
        old_batch = (query_batch is not None and stream is not None
                     and stream[0] == query_batch[0] and stream[1] <= query_batch[1])
        path = fs.join(root, name)
        try:
            too_old = now_ms - fs.mtime_ms(path) > retention_ms
        except FileNotFoundError:
            continue
        if old_batch or too_old:
            fs.remove_tree(path)
            removed.append(name)
    return removed
