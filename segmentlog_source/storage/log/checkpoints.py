"""The small text files: offset checkpoints, `leader-epoch-checkpoint`, `partition.metadata` (§1.3).

Checkpoint layout (UTF-8, `\\n` line ends)::

    <version>\\n <entry count>\\n <entry>\\n ...

    offset checkpoints (version 0)    `<topic> <partition> <offset>`
    leader-epoch-checkpoint (0)       `<leaderEpoch> <startOffset>`, ascending epochs

An empty file, or one with only the version line, holds no entries. `partition.metadata` is
exactly `version: 0\\ntopic_id: <base64url UUID, 22 chars>` with no trailing newline.
Writers replace files atomically (temp file, fsync, rename), as the broker does.
"""

from __future__ import annotations

import base64
import re
from typing import Callable, NamedTuple, TypeVar
import uuid

from ...errors import BadOptionError, CorruptDataError, LogNotFoundError
from ..io.local import LOCAL

OFFSET_CHECKPOINT_VERSION = 0
LEADER_EPOCH_CHECKPOINT_VERSION = 0
PARTITION_METADATA_VERSION = 0

T = TypeVar("T")
_SPACES = re.compile(r"\s+")


class EpochEntry(NamedTuple):
    epoch: int
    start_offset: int


def parse_checkpoint(data: bytes, version: int, parse_entry: Callable[[list[str]], T],
                     path: str | None = None) -> list[T]:
    """Entries of a generic checkpoint file (CheckpointFile.CheckpointReadBuffer)."""
    lines, starts, pos = [], [], 0
    for line in _text(data, path).split("\n"):
        lines.append(line)
        starts.append(pos)
        pos += len(line.encode("utf-8")) + 1
    if lines and lines[-1] == "":  # the final newline ends the last line; it starts no new one
        lines.pop()
    if not lines:
        return []

    def bad(i: int, why: str) -> CorruptDataError:
        return CorruptDataError(f"checkpoint line {i + 1} ({lines[i]!r}): {why}", path, starts[i])

    def integer(i: int, text: str) -> int:
        try:
            return int(text)
        except ValueError:
            raise bad(i, f"{text!r} is not an integer") from None

    found = integer(0, lines[0].strip())
    if found != version:
        raise bad(0, f"unsupported checkpoint version (expected {version})")
    if len(lines) < 2:
        return []
    expected = integer(1, lines[1].strip())
    entries = []
    for i in range(2, len(lines)):
        try:
            entries.append(parse_entry(_SPACES.split(lines[i].strip())))
        except (ValueError, IndexError):
            raise bad(i, "malformed entry") from None
    if len(entries) != expected:
        raise CorruptDataError(f"expected {expected} entries in checkpoint, found {len(entries)}",
                               path, None)
    return entries


def _text(data: bytes, path: str | None) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise CorruptDataError(f"not UTF-8 text ({err.reason} at byte {err.start}): not a "
                               f"checkpoint file", path, err.start) from None


def format_checkpoint(version: int, entries: list[str]) -> bytes:
    return "".join(f"{line}\n" for line in [str(version), str(len(entries)), *entries]).encode()


def _java_int(text: str, bits: int) -> int:
    """An integer as Kafka parses it (Integer/Long.parseLong): out of range is malformed."""
    value = int(text)
    if not -(1 << (bits - 1)) <= value < 1 << (bits - 1):
        raise ValueError(f"{text} does not fit {bits} bits")
    return value


def _offset_entry(fields: list[str]) -> tuple[tuple[str, int], int]:
    topic, partition, offset = fields
    return (topic, _java_int(partition, 32)), _java_int(offset, 64)


def _epoch_entry(fields: list[str]) -> EpochEntry:
    epoch, start_offset = fields
    return EpochEntry(_java_int(epoch, 32), _java_int(start_offset, 64))


def read_offset_checkpoint(path: str, fs=LOCAL) -> dict[tuple[str, int], int]:
    """`{(topic, partition): offset}`; a missing file holds nothing (anything else of that name
    that is not a readable checkpoint is an error naming it)."""
    if not fs.exists(path):
        return {}
    return dict(parse_checkpoint(fs.read_all(path), OFFSET_CHECKPOINT_VERSION, _offset_entry, path))


def write_offset_checkpoint(path: str, offsets: dict[tuple[str, int], int], fs=LOCAL) -> None:
    # The broker writes hash-map order; any order reads the same, so ours is sorted.
    lines = [f"{topic} {partition} {offset}"
             for (topic, partition), offset in sorted(offsets.items())]
    fs.write_atomic(path, format_checkpoint(OFFSET_CHECKPOINT_VERSION, lines))


def update_offset_checkpoint(path: str, changes: dict[tuple[str, int], int | None],
                             fs=LOCAL) -> None:
    """Rewrite the checkpoint with `changes` applied (None removes an entry); the caller holds
    the data directory's lock, as the broker's checkpointing is one writer at a time."""
    offsets = read_offset_checkpoint(path, fs)
    for key, offset in changes.items():
        if offset is None:
            offsets.pop(key, None)
        else:
            offsets[key] = offset
    write_offset_checkpoint(path, offsets, fs)


def read_leader_epoch_checkpoint(path: str, fs=LOCAL) -> list[EpochEntry]:
    if not fs.exists(path):
        return []
    return parse_checkpoint(fs.read_all(path), LEADER_EPOCH_CHECKPOINT_VERSION, _epoch_entry, path)


def write_leader_epoch_checkpoint(path: str, entries: list[EpochEntry], fs=LOCAL,
                                  fsync: bool = True) -> None:
    lines = [f"{e.epoch} {e.start_offset}" for e in entries]
    fs.write_atomic(path, format_checkpoint(LEADER_EPOCH_CHECKPOINT_VERSION, lines), fsync=fsync)


# -- topic ids and partition.metadata --------------------------------------------------------

def topic_id_string(topic_id: str | bytes | uuid.UUID) -> str:
    """A topic id as Kafka prints it (`Uuid.toString`: base64url, no padding, 22 characters)."""
    if isinstance(topic_id, uuid.UUID):
        raw = topic_id.bytes
    elif isinstance(topic_id, (bytes, bytearray)):
        raw = bytes(topic_id)
    else:
        raw = topic_id_bytes(topic_id)
    if len(raw) != 16:
        raise BadOptionError("topic_id", topic_id, "a topic id is 16 bytes")
    if raw == bytes(16):
        raise BadOptionError("topic_id", topic_id, "the all-zero UUID is reserved")
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def topic_id_bytes(text: str) -> bytes:
    if len(text) != 22:
        raise BadOptionError("topic_id", text, "a topic id is 22 base64url characters")
    try:
        return base64.urlsafe_b64decode(text + "==")
    except ValueError:
        raise BadOptionError("topic_id", text, "not base64url") from None


def read_partition_metadata(path: str, fs=LOCAL) -> str | None:
    """The topic id in a `partition.metadata` file, or None when the file is missing."""
    if not fs.exists(path):
        return None
    fields = {}
    for line in _text(fs.read_all(path), path).splitlines():
        parts = re.split(r":\s+", line, maxsplit=1)
        if len(parts) != 2:
            raise CorruptDataError(f"partition metadata line {line!r} is not `key: value`", path)
        fields[parts[0]] = parts[1]
    if fields.get("version") != str(PARTITION_METADATA_VERSION):
        raise CorruptDataError(f"unsupported partition metadata version {fields.get('version')!r}",
                               path)
    topic_id = fields.get("topic_id")
    if topic_id is None:
        raise CorruptDataError("partition metadata has no topic_id", path)
    try:
        return topic_id_string(topic_id)
    except BadOptionError as err:
        raise CorruptDataError(f"partition metadata topic_id {topic_id!r}: {err.reason}",
                               path) from None


def write_partition_metadata(path: str, topic_id: str | bytes | uuid.UUID, fs=LOCAL) -> None:
    text = f"version: {PARTITION_METADATA_VERSION}\ntopic_id: {topic_id_string(topic_id)}"
    fs.write_atomic(path, text.encode("utf-8"))


def check_partition_metadata(path: str, topic_id, fs=LOCAL) -> None:
    """A writer given a topic id: the partition's `partition.metadata` must hold it (written
    when missing)."""
    if topic_id is None:
        return
    wanted = topic_id_string(topic_id)
    existing = read_partition_metadata(path, fs)
    if existing is None:
        write_partition_metadata(path, wanted, fs)
    elif existing != wanted:
        raise BadOptionError("topic_id", topic_id, f"{path} holds topic id {existing}")


def read_cleaning_intent(path: str, log_end_offset: int, fs=LOCAL) -> int | None:
    """The end offset a cleaning under way wrote (log_cleaner.py), None once it is gone."""
    try:
        text = fs.read_all(path).decode("ascii").strip()
    except UnicodeDecodeError:
        text = "?"
    except LogNotFoundError:   # the cleaning finished meanwhile: the checkpoint says it
        return None
    if not text.isdigit() or int(text) > log_end_offset:
        raise CorruptDataError(f"{text[:40]!r} is not an offset of the log: a cleaning's "
                               f"intent file holds one, at most the log end offset", path)
    return int(text)


class LeaderEpochCache:
    """Leader epoch -> start offset, kept in `leader-epoch-checkpoint` (LeaderEpochFileCache)."""

    def __init__(self, path: str, fs=LOCAL):
        self.path = path
        self.fs = fs
        self.entries = read_leader_epoch_checkpoint(path, fs)

    @property
    def latest_epoch(self) -> int | None:
        return self.entries[-1].epoch if self.entries else None

    def assign(self, epoch: int, start_offset: int) -> bool:
        """Record a batch's leader epoch: only a new, higher epoch starts an entry."""
        if epoch < 0 or (self.entries and epoch <= self.entries[-1].epoch):
            return False
        self.entries.append(EpochEntry(epoch, start_offset))
        return True

    def truncate_from_end(self, end_offset: int) -> bool:
        """Forget epochs that start at or after `end_offset` (the log was truncated there)."""
        kept = [e for e in self.entries if e.start_offset < end_offset]
        changed = len(kept) != len(self.entries)
        self.entries = kept
        return changed

    def truncate_from_start(self, start_offset: int) -> bool:
        """The log now starts at `start_offset`: epochs wholly below it go, and the one it
        falls in starts there (LeaderEpochFileCache.truncateFromStart)."""
        below = [e for e in self.entries if e.start_offset <= start_offset]
        if not below:
            return False
        kept = [EpochEntry(below[-1].epoch, start_offset)] + self.entries[len(below):]
        changed = kept != self.entries
        self.entries = kept
        return changed

    def write(self, fsync: bool = True) -> None:
        write_leader_epoch_checkpoint(self.path, self.entries, self.fs, fsync=fsync)
