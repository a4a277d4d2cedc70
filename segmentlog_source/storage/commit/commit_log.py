"""Commit manifests and committed micro-batches: the durable state of segmentlog's writer.

    <log dir>/_segmentlog/commits/<commit id>.json   a commit in progress (or interrupted)
    <log dir>/_segmentlog/queries/<query id>.json    the last micro-batch a query committed

A manifest is written (atomically, synced) *before* the first byte of a commit reaches a log,
and removed only after every byte is appended and synced. While it exists, the partitions it
names hold, from `start_offset` on, data that is not committed: readers stop there
(`pending_commit_offsets`) and the next writer finishes or undoes it (committer.py).

Manifest (JSON)::

    {"version": 1, "commitId": str, "job": str, "queryId": str|null, "batchId": int|null,
     "logAppendTime": ms|null, "createdMs": int,
     "partitions": [{"topic": str, "partition": int, "startOffset": int, "endOffset": int,
                     "files": [{"path": str, "batches": int, "records": int, "size": int}]}]}
"""

from __future__ import annotations

from dataclasses import dataclass
import json
import re

from ...errors import BadOptionError, CorruptDataError
from ..io.local import LOCAL
from ..log_files import STATE_DIR
from .staging import StagedFile

COMMITS = "commits"
QUERIES = "queries"
_VERSION = 1
_SAFE_NAME = re.compile(r"[A-Za-z0-9._-]+")


@dataclass(frozen=True)
class PartitionCommit:
    """One partition of a commit: staged files appended in order at [start_offset, end_offset)."""

    topic: str
    partition: int
    start_offset: int
    end_offset: int
    files: tuple[StagedFile, ...]

    @property
    def key(self) -> tuple[str, int]:
        return self.topic, self.partition


@dataclass(frozen=True)
class CommitManifest:
    commit_id: str
    job: str
    query_id: str | None
    batch_id: int | None
    log_append_time: int | None   # LogAppendTime: the append time stamped into every batch
    created_ms: int
    partitions: tuple[PartitionCommit, ...]

    @property
    def keys(self) -> set[tuple[str, int]]:
        return {p.key for p in self.partitions}

    def to_json(self) -> bytes:
        return json.dumps({
            "version": _VERSION, "commitId": self.commit_id, "job": self.job,
            "queryId": self.query_id, "batchId": self.batch_id,
            "logAppendTime": self.log_append_time, "createdMs": self.created_ms,
            "partitions": [{"topic": p.topic, "partition": p.partition,
                            "startOffset": p.start_offset, "endOffset": p.end_offset,
                            "files": [{"path": f.path, "batches": f.batches,
                                       "records": f.records, "size": f.size} for f in p.files]}
                           for p in self.partitions]}, indent=1).encode()

    @classmethod
    def from_json(cls, data: bytes, path: str) -> "CommitManifest":
        try:
            doc = json.loads(data)
            if doc["version"] != _VERSION:
                raise CorruptDataError(f"unknown manifest version {doc['version']}", path)
            parts = tuple(
                PartitionCommit(p["topic"], int(p["partition"]), int(p["startOffset"]),
                                int(p["endOffset"]),
                                tuple(StagedFile(p["topic"], int(p["partition"]), f["path"],
                                                 int(f["batches"]), int(f["records"]),
                                                 int(f["size"])) for f in p["files"]))
                for p in doc["partitions"])
            return cls(doc["commitId"], doc["job"], doc["queryId"], doc["batchId"],
                       doc["logAppendTime"], int(doc["createdMs"]), parts)
        except (ValueError, KeyError, TypeError) as exc:
            raise CorruptDataError(f"unreadable commit manifest ({exc!r}); if no writer is "
                                   "running, check the partitions it names and remove it",
                                   path) from None


def _dir(log_dir: str, name: str, fs) -> str:
    return fs.join(log_dir, STATE_DIR, name)


def manifest_path(log_dir: str, commit_id: str, fs=LOCAL) -> str:
    return fs.join(_dir(log_dir, COMMITS, fs), f"{commit_id}.json")


def write_manifest(log_dir: str, manifest: CommitManifest, *, fsync: bool, fs=LOCAL) -> None:
    # Another commit's tidy-up removes the state directories once empty, and may do so between
    # our makedirs and our write: then they are made again (a few times at most, it is a race).
    for attempt in range(5):
        fs.makedirs(_dir(log_dir, COMMITS, fs))
        try:
            fs.write_atomic(manifest_path(log_dir, manifest.commit_id, fs), manifest.to_json(),
                            fsync=fsync)
            return
        except FileNotFoundError:
            if attempt == 4:
                raise


def remove_manifest(log_dir: str, commit_id: str, *, fsync: bool, fs=LOCAL) -> None:
    """The commit point of a finished commit (or the end of an undone one)."""
    fs.remove(manifest_path(log_dir, commit_id, fs))
    if fsync:
        fs.fsync_dir(_dir(log_dir, COMMITS, fs))


def read_pending(log_dir: str, fs=LOCAL) -> list[CommitManifest]:
    """Every manifest present: commits running now, or interrupted ones."""
    directory = _dir(log_dir, COMMITS, fs)
    try:   # (another commit may remove the empty directory at any moment)
        names = fs.list_dir(directory) if fs.is_dir(directory) else []
    except FileNotFoundError:
        names = []
    manifests = []
    for name in names:
        if not name.endswith(".json"):  # write_atomic's .tmp: not a manifest (yet)
            continue
        path = fs.join(directory, name)
        try:
            data = fs.read_all(path)
        except FileNotFoundError:  # finished while we listed
            continue
        manifests.append(CommitManifest.from_json(data, path))
    return manifests


def pending_commit_offsets(log_dir: str, fs=LOCAL) -> dict[tuple[str, int], int]:
    """{(topic, partition): first uncommitted offset} for partitions an unfinished commit names.

    A reader must read a partition's log end offset *before* calling this, and cap it here.
    Then every byte below the end offset it saw was appended either by a commit that has
    finished by now (committed: nothing will undo it) or by one whose manifest, written before
    that byte, is still present (so it is capped). Read in the other order, a commit starting
    between the two reads would have uncommitted bytes below the end offset and no manifest
    seen, and an undo (a full disk) could take back rows a reader already returned.

    What the order does not give is alignment: a read may stop inside a commit that finished
    while it was being planned (its first batches seen, the rest on the next read), the way a
    Kafka consumer may stop inside a producer's batch of sends.
    """
    pending: dict[tuple[str, int], int] = {}
    for manifest in read_pending(log_dir, fs):
        for part in manifest.partitions:
            pending[part.key] = min(part.start_offset, pending.get(part.key, part.start_offset))
    return pending


def check_query_id(query_id: str) -> str:
    if not _SAFE_NAME.fullmatch(query_id or ""):
        raise BadOptionError("queryName", query_id, "a streaming query id must be made of "
                             "a-z A-Z 0-9 . _ - (it names a file)")
    return query_id


def _query_path(log_dir: str, query_id: str, fs) -> str:
    return fs.join(_dir(log_dir, QUERIES, fs), f"{check_query_id(query_id)}.json")


def last_committed_batch(log_dir: str, query_id: str, fs=LOCAL) -> int | None:
    path = _query_path(log_dir, query_id, fs)
    if not fs.exists(path):
        return None
    try:
        doc = json.loads(fs.read_all(path))
        return int(doc["batchId"])
    except (ValueError, KeyError, TypeError) as exc:
        raise CorruptDataError(f"unreadable committed-batch marker ({exc!r})", path) from None


def record_committed_batch(log_dir: str, query_id: str, batch_id: int, *, fsync: bool,
                           fs=LOCAL) -> None:
    """Remember that `batch_id` of the query is in the log; never moves backwards."""
    last = last_committed_batch(log_dir, query_id, fs)
    if last is not None and last >= batch_id:
        return
    fs.makedirs(_dir(log_dir, QUERIES, fs))
    fs.write_atomic(_query_path(log_dir, query_id, fs),
                    json.dumps({"version": _VERSION, "queryId": query_id,
                                "batchId": batch_id}).encode(), fsync=fsync)
