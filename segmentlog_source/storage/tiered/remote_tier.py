"""A remote tier opened for reading: its layout's segment copies by partition, and the
`__remote_log_metadata` that says which of them are live.

    tier = RemoteTier.open(uri, config, metadata_paths=[data dir, ...])
    log, live = tier.partition_log("orders", 3, local=PartitionLog.open(...) or None)

The layout is found from what is at `uri`: Kafka's reference LocalTieredStorage keeps a
`kafka-tiered-storage` directory (local_tiered_storage.py); Aiven's plugin keeps
`<topic>-<topic id>/<partition>/<offset>-<segment id>.rsm-manifest` objects under its key
prefix, which `uri` must end with (aiven_segment.py).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from ...errors import CorruptDataError, LogNotFoundError
from ..io.filesystem import filesystem_for
from ..log.log_segment import LogSegment
from ..log.partition_log import PartitionLog
from .aiven_manifest import parse_manifest
from .aiven_segment import list_aiven_segments
from .local_tiered_storage import (FINISHED_SUFFIXES, TIERED_STORAGE_DIR, RemoteCopy,
                                   list_copies, parse_partition_dir, tiered_storage_root)
from .remote_log_metadata import RemoteLogMetadata
from .remote_names import split_topic_dir
from .tiered_log import LiveCopies, from_listing, from_metadata, leader_epochs, tiered_log

log = logging.getLogger("segmentlog")


def is_remote_tier(path: str, config=None) -> bool:
    """Whether `path` is a remote tier's root (what `load()` then reads alone). A data
    directory's `<topic>-<partition>` names never parse as Aiven's `<topic>-<topic id>`, so
    it costs one listing."""
    fs, path = filesystem_for(path, config)
    base, key_prefix = _aiven_base(fs, path)
    if base is None:
        return False
    return (not key_prefix and tiered_storage_root(fs, path) is not None) or any(
        name.startswith(key_prefix) and split_topic_dir(name[len(key_prefix):]) is not None
        for name in fs.list_dir(base))


def tier_hint(path: str, config=None) -> str | None:
    """What `path` is, when it is part of a remote tier rather than a broker's log
    directories, and what to give instead; None otherwise (also when it is a tier's root)."""
    fs, path = filesystem_for(path, config)
    path = path.rstrip("/")
    name, parent = fs.basename(path), fs.dirname(path)
    if fs.basename(parent) == TIERED_STORAGE_DIR and parse_partition_dir(name) is not None:
        return (f"{path} is one partition's copies in a remote tier (Kafka's "
                f"LocalTieredStorage): read the tier, {fs.dirname(parent)}")
    if split_topic_dir(name) is not None and is_remote_tier(parent, config):
        return (f"{path} is one topic's copies in a remote tier (Aiven's plugin): read the "
                f"tier, {parent}")
    if fs.is_dir(path):
        tiers = [n for n in fs.list_dir(path) if is_remote_tier(fs.join(path, n), config)]
        if tiers:
            return (f"{path} holds a remote tier under the key prefix {tiers[0]}/ (Aiven's "
                    f"plugin): read {fs.join(path, tiers[0])}")
    return None


def _aiven_base(fs, path: str) -> tuple[str | None, str]:
    """(the directory to list, the key prefix's part in it): Aiven's plugin glues its
    `key.prefix` to the keys without a separator, so a tier's URI may end inside a name
    (`.../pfx-` for objects `pfx-<topic>-<topic id>/...`)."""
    path = path.rstrip("/")
    if fs.is_dir(path):
        return path, ""
    parent = fs.dirname(path)
    return (parent, fs.basename(path)) if parent and fs.is_dir(parent) else (None, "")


class _AivenCopyFiles:
    """An Aiven copy's objects as files, opened (its manifest read) on first use: a plan
    passes over most copies of a long tier without reading them."""

    def __init__(self, tier: "RemoteTier", listing):
        self._tier, self._listing, self._files = tier, listing, None

    def _open(self):
        if self._files is None:
            ref = self._listing.ref(self._tier.fs, private_key=self._tier.private_key)
            self._files = ref.files(self._tier.config)
        return self._files

    def __getattr__(self, name):
        return getattr(self._open(), name)

    def opener(self):
        """What a task carries to an executor to open the copy there."""
        return self._open().ref(self._listing.root, private_key=self._tier.private_key)

    @property
    def unchecked_bytes(self) -> bool:
        """zstd chunks without encryption: no check covers them but the batches' CRCs."""
        manifest = self._open().manifest
        return bool(manifest.compression) and manifest.encryption is None


def _check_key_prefix(fs, uri: str, found) -> None:
    """One manifest per topic directory says whose segments it holds: a key prefix read into
    the topic's name (`pfx-orders` for `orders` under key.prefix `pfx-`) is refused, naming
    the URI to give instead."""
    seen = set()
    for listing in found:
        if (listing.topic, listing.topic_id) in seen:
            continue
        seen.add((listing.topic, listing.topic_id))
        path = fs.join(listing.root, listing.manifest_key)
        meta = parse_manifest(fs.read_all(path), path).metadata
        if meta is None or meta.topic == listing.topic:
            continue
        if listing.topic.endswith(meta.topic):
            prefix = listing.topic[:-len(meta.topic)]
            raise LogNotFoundError(
                f"{uri}: its objects of topic {meta.topic} are under the key prefix "
                f"{prefix!r} (Aiven's key.prefix, glued to the keys): give "
                f"{uri.rstrip('/')}/{prefix} as the remote tier")
        raise CorruptDataError(f"the manifest names topic {meta.topic}, but its key says "
                               f"{listing.topic}", path)


@dataclass
class RemoteTier:
    uri: str
    fs: object
    copies: dict[tuple[str, int], list[RemoteCopy]]
    metadata: object = None          # a RemoteLogMetadata, or None: the listing alone
    config: object = None            # the fs.* options (StoreConfig)
    private_key: str | None = None   # option remoteTierPrivateKey (Aiven's encryption)
    missing_hint: str = ""           # what a copy the store lacks may be, in this layout

    @classmethod
    def open(cls, uri: str, config=None, metadata_paths=(), stats=None,
             private_key: str | None = None) -> "RemoteTier":
        fs, path = filesystem_for(uri, config)
        metadata = None
        if metadata_paths:
            try:
                metadata = RemoteLogMetadata.load(list(metadata_paths), stats=stats)
            except CorruptDataError as err:   # (failOnDataLoss=false salvages rows, not this)
                raise err.hinted("give an intact copy of the __remote_log_metadata "
                                 "partitions (option remoteLogMetadata), or leave them out "
                                 "to read the tier's listing") from None
        tier = cls(uri, fs, {}, metadata, config, private_key)
        base, key_prefix = _aiven_base(fs, path)
        root = tiered_storage_root(fs, path) if base is not None and not key_prefix else None
        if root is not None:
            listed = list_copies(fs, root)
        else:
            tier.missing_hint = (" (Aiven's plugin in Iceberg mode writes none: read its table "
                                 "as Iceberg)")
            found = [] if base is None else list_aiven_segments(
                fs, base, key_prefix=key_prefix, custom_metadata=None if metadata is None
                else metadata.custom_metadata())
            _check_key_prefix(fs, uri, found)
            listed = [RemoteCopy(a.topic, a.partition, a.topic_id, a.segment_id,
                                 a.start_offset, fs.join(a.root, a.key), FINISHED_SUFFIXES,
                                 listing=a) for a in found]
        if not listed and root is None:
            raise LogNotFoundError(
                f"{uri}: no remote tier there (Kafka's LocalTieredStorage keeps a "
                f"kafka-tiered-storage directory; Aiven's plugin <topic>-<topic id>/"
                f"<partition>/*.rsm-manifest objects under its key prefix)")
        for copy in listed:
            tier.copies.setdefault((copy.topic, copy.partition), []).append(copy)
        return tier

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
            live = from_listing(copies, name, self._next_offset)
        else:
            live = from_metadata(self.metadata, copies, topic_id, partition,
                                 leader_epochs=leader_epochs(local),
                                 missing_hint=self.missing_hint,
                                 # (no local segment: the local log has no end to check)
                                 log_end_offset=None if local is None or not local.segments
                                 else local.log_end_offset)
        for warning in live.warnings:
            log.warning("segmentlog: %s", warning)
        return live

    def _next_offset(self, copy: RemoteCopy) -> int:
        """Where a copy's batches end, from its files (its index and tail)."""
        segment = LogSegment(self.fs.dirname(copy.prefix), copy.start_offset,
                             self.copy_fs(copy), log_path=copy.log_path,
                             files_prefix=copy.prefix)
        return segment.read_next_offset()

    def copy_fs(self, copy: RemoteCopy):
        return self.fs if copy.listing is None else _AivenCopyFiles(self, copy.listing)

    def partition_log(self, topic: str, partition: int, local: PartitionLog | None, *,
                      stats=None, salvage: bool = False) -> tuple[PartitionLog, LiveCopies]:
        live = self.live(topic, partition, local)
        return tiered_log(f"{topic}-{partition}", live, local, self.copy_fs, stats=stats,
                          salvage=salvage), live
