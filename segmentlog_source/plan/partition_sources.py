"""Which partitions a read plans, and how each is opened: a local partition directory, a remote
tier's copies below it (option remoteTier), or a remote tier alone (load() of its root).

With a remote tier, `__remote_log_metadata` says which copies are live: its partitions are
found in the directories of option remoteLogMetadata, else in the data directories read
beside the tier (a broker keeps them there); with neither, the tier's listing is read alone,
with a warning (storage/tiered/tiered_log.py says what that can get wrong).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import BadOptionError
from ..storage.log.log_directory import find_partitions
from ..storage.log.partition_log import PartitionLog
from ..storage.tiered.remote_tier import RemoteTier, is_remote_tier
from .options import ReadOptions

REMOTE_LOG_METADATA_TOPIC = "__remote_log_metadata"


@dataclass(frozen=True)
class PartitionSource:
    topic: str
    partition: int
    fs: object                        # the file system of `path` (or of the tier, alone)
    path: str | None = None           # the local partition directory; None: the tier alone
    tier: RemoteTier | None = None

    def open(self, *, stats=None, salvage: bool = False,
             read_log_start_checkpoint: bool = True) -> tuple[PartitionLog, list[str]]:
        """The partition's log, and what its tier lists as live but lacks (lost data)."""
        local = None
        if self.path is not None:
            local = PartitionLog.open(self.path, self.fs, topic=self.topic,
                                      partition=self.partition, stats=stats, salvage=salvage,
                                      read_log_start_checkpoint=read_log_start_checkpoint)
        if self.tier is None:
            return local, []
        log, live = self.tier.partition_log(self.topic, self.partition, local, stats=stats,
                                            salvage=salvage)
        return log, live.lost


def partition_sources(opts: ReadOptions, stats=None) -> list[PartitionSource]:
    """Every partition under the read's paths (and its remote tier), selected or not."""
    remote_roots = [p for p in opts.paths if is_remote_tier(p, opts.store)]
    if remote_roots and (len(opts.paths) > 1 or opts.remote_tier is not None):
        raise BadOptionError("path", ",".join(opts.paths), "a remote tier is read alone "
                             "(load(<tier>)), or below data directories (load(<data dir>) "
                             "with option remoteTier=<tier>), not both")
    tier_uri = remote_roots[0] if remote_roots else opts.remote_tier
    if tier_uri is None:
        return [PartitionSource(p.topic, p.partition, p.fs, p.path)
                for p in find_partitions(list(opts.paths), config=opts.store)]
    local = [] if remote_roots else find_partitions(list(opts.paths), config=opts.store,
                                                    allow_empty=True)
    metadata = opts.remote_log_metadata or tuple(
        p.path for p in local if p.topic == REMOTE_LOG_METADATA_TOPIC)
    tier = RemoteTier.open(tier_uri, opts.store, metadata_paths=metadata, stats=stats,
                           private_key=opts.remote_private_key)
    sources = [PartitionSource(p.topic, p.partition, p.fs, p.path, tier) for p in local
               if p.topic != REMOTE_LOG_METADATA_TOPIC]
    known = {(s.topic, s.partition) for s in sources}
    if not remote_roots:
        # (a partition whose local directory is gone is no longer the broker's: not read)
        return sources
    return sources + [PartitionSource(topic, partition, tier.fs, None, tier)
                      for topic, partition in tier.partitions()
                      if (topic, partition) not in known]
