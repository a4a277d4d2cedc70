"""The remote tier as Kafka's reference RemoteStorageManager, LocalTieredStorage, lays it out.

    <root>/kafka-tiered-storage/<topic>-<partition>-<topic id>/
        <20-digit start offset>-<segment id>.log   .index  .timeindex  [.txnindex]
                                              .leader_epoch_checkpoint  .snapshot

Both ids are Kafka Uuids (remote_names.py parses the names). Each copy of a segment has its
own segment id: a retried or re-led copy sits beside the first one with the same start offset.
The files are the broker's own, byte for byte (indexes trimmed to their entries), so a copy is
read as a local segment whose files are named by its prefix. Nothing here says whether a copy
finished: `__remote_log_metadata` does (remote_log_metadata.py); the listing alone is a guess.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..log_files import INDEX_SUFFIX, LOG_SUFFIX, SNAPSHOT_SUFFIX, TIME_INDEX_SUFFIX
from .remote_names import LEADER_EPOCH_SUFFIX, split_segment_stem, split_topic_dir

TIERED_STORAGE_DIR = "kafka-tiered-storage"
# What a finished copy holds at least (.txnindex only when the segment had one).
FINISHED_SUFFIXES = (LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX, LEADER_EPOCH_SUFFIX,
                     SNAPSHOT_SUFFIX)


@dataclass(frozen=True)
class RemoteCopy:
    """One copy of a segment in a remote tier: where its files are (`prefix` + suffix)."""

    topic: str
    partition: int
    topic_id: str
    segment_id: str
    start_offset: int
    prefix: str
    suffixes: tuple[str, ...] = ()
    listing: object = None   # Aiven's listing of it (its objects are not plain files)

    @property
    def log_path(self) -> str:
        return self.prefix + LOG_SUFFIX

    @property
    def complete(self) -> bool:
        """Whether the listing holds every file a finished copy has."""
        return all(s in self.suffixes for s in FINISHED_SUFFIXES)


def tiered_storage_root(fs, path: str) -> str | None:
    """The `kafka-tiered-storage` directory at or right under `path`, if there is one."""
    if fs.basename(path.rstrip("/")) == TIERED_STORAGE_DIR and fs.is_dir(path):
        return path.rstrip("/")
    inner = fs.join(path, TIERED_STORAGE_DIR)
    return inner if fs.is_dir(inner) else None


def parse_partition_dir(name: str) -> tuple[str, int, str] | None:
    """(topic, partition, topic id) of a `<topic>-<partition>-<topic id>` directory name."""
    split = split_topic_dir(name)
    if split is None:
        return None
    topic, dash, partition = split[0].rpartition("-")
    if not (dash and topic and partition.isascii() and partition.isdigit()):
        return None
    return topic, int(partition), split[1]


def list_copies(fs, root: str) -> list[RemoteCopy]:
    """Every segment copy under a `kafka-tiered-storage` directory, by topic, partition and
    start offset; files that fit no name are ignored (a tier is shared with nothing else,
    but a listing is no place to fail)."""
    copies = []
    for name in fs.list_dir(root):
        parsed = parse_partition_dir(name)
        if parsed is None or not fs.is_dir(fs.join(root, name)):
            continue
        topic, partition, topic_id = parsed
        directory = fs.join(root, name)
        files: dict[tuple[int, str], list[str]] = {}
        for file in fs.list_dir(directory):
            stem, dot, suffix = file.partition(".")
            found = split_segment_stem(stem) if dot else None
            if found is not None:
                files.setdefault(found, []).append("." + suffix)
        for (offset, segment_id), suffixes in files.items():
            prefix = fs.join(directory, f"{offset:020d}-{segment_id}")
            copies.append(RemoteCopy(topic, partition, topic_id, segment_id, offset, prefix,
                                     tuple(sorted(suffixes))))
    return sorted(copies, key=lambda c: (c.topic, c.partition, c.start_offset, c.segment_id))
