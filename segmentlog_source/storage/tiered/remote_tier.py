"""A remote tier opened for reading: its layout's segment copies by partition, and the
`__remote_log_metadata` that says which of them are live.

    tier = RemoteTier.open(uri, config, metadata_paths=[data dir, ...])
    log, live = tier.partition_log("orders", 3, local=PartitionLog.open(...) or None)

The layout is found from what is at `uri`: Kafka's reference LocalTieredStorage keeps a
`kafka-tiered-storage` directory (local_tiered_storage.py).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from ...errors import LogNotFoundError
from ..io.filesystem import filesystem_for
from ..log.partition_log import PartitionLog
from .local_tiered_storage import RemoteCopy, list_copies, tiered_storage_root
from .tiered_log import LiveCopies, from_listing, from_metadata, leader_epochs, tiered_log

log = logging.getLogger("segmentlog")


def is_remote_tier(path: str, config=None) -> bool:
    """Whether `path` is a remote tier's root (what `load()` then reads alone)."""
    fs, path = filesystem_for(path, config)
    return tiered_storage_root(fs, path) is not None


@dataclass
class RemoteTier:
    uri: str
    fs: object
    copies: dict[tuple[str, int], list[RemoteCopy]]
    metadata: object = None          # a RemoteLogMetadata, or None: the listing alone

    @classmethod
    def open(cls, uri: str, config=None, metadata_paths=(), stats=None) -> "RemoteTier":
        fs, path = filesystem_for(uri, config)
        root = tiered_storage_root(fs, path)
        if root is None:
            raise LogNotFoundError(f"{uri}: no remote tier there (Kafka's LocalTieredStorage "
                                   f"keeps a kafka-tiered-storage directory)")
        copies: dict[tuple[str, int], list[RemoteCopy]] = {}
        for copy in list_copies(fs, root):
            copies.setdefault((copy.topic, copy.partition), []).append(copy)
        metadata = None
        if metadata_paths:
            from .remote_log_metadata import RemoteLogMetadata
            metadata = RemoteLogMetadata.load(list(metadata_paths), stats=stats)
        return cls(uri, fs, copies, metadata)

    def partitions(self) -> list[tuple[str, int]]:
        return sorted(self.copies)

    def topic_id(self, topic: str, partition: int, local: PartitionLog | None) -> str | None:
        """The topic id whose copies are read: the local partition's (a re-created topic
        leaves the old id's copies behind); else the metadata's newest for the name, or the
        only one the listing holds."""
        if local is not None and local.topic_id is not None:
            return local.topic_id
        ids = sorted({c.topic_id for c in self.copies.get((topic, partition), ())})
        if self.metadata is not None:
            known = [i for i in self.metadata.topic_ids(topic) if i in ids]
            if known:
                return known[-1]
        if len(ids) > 1:
            raise LogNotFoundError(
                f"{topic}-{partition}: the remote tier {self.uri} holds copies of {len(ids)} "
                f"topics of that name (topic ids {', '.join(ids)}); give the broker's data "
                f"directory, or its __remote_log_metadata (option remoteLogMetadata), to tell "
                f"which is current")
        return ids[0] if ids else None

    def live(self, topic: str, partition: int, local: PartitionLog | None) -> LiveCopies:
        topic_id = self.topic_id(topic, partition, local)
        listed = self.copies.get((topic, partition), ())
        copies = [c for c in listed if c.topic_id == topic_id]
        name = f"{topic}-{partition}"
        others = sorted({c.topic_id for c in listed} - {topic_id})
        if others:
            log.warning("segmentlog: %s: the remote tier's copies of topic ids %s are left "
                        "aside: the partition is topic id %s (a deleted and re-created topic "
                        "leaves its old copies behind)", name, ", ".join(others), topic_id)
        if self.metadata is None:
            live = from_listing(copies, name)
        else:
            live = from_metadata(self.metadata, copies, topic_id, partition,
                                 leader_epochs=leader_epochs(local),
                                 log_end_offset=None if local is None
                                 else local.log_end_offset)
        for warning in live.warnings:
            log.warning("segmentlog: %s", warning)
        return live

    def copy_fs(self, copy: RemoteCopy):
        return self.fs

    def partition_log(self, topic: str, partition: int, local: PartitionLog | None, *,
                      stats=None, salvage: bool = False) -> tuple[PartitionLog, LiveCopies]:
        live = self.live(topic, partition, local)
        return tiered_log(f"{topic}-{partition}", live, local, self.copy_fs, stats=stats,
                          salvage=salvage), live
