"""Which partitions a read plans, and how each is opened: a local partition directory, a remote
tier's copies below it (option remoteTier), or a remote tier alone (load() of its root).

With a remote tier, `__remote_log_metadata` says which copies are live: its partitions are
found in the directories of option remoteLogMetadata, else in the data directories read
beside the tier (a broker keeps them there); with neither, the tier's listing is read alone,
with a warning (storage/tiered/tiered_log.py says what that can get wrong).
"""

from __future__ import annotations

from dataclasses import dataclass
import logging

from ..errors import BadOptionError, LogNotFoundError
from ..format.remote_log_metadata import TOPIC as REMOTE_LOG_METADATA_TOPIC
from ..storage.io.filesystem import filesystem_for
from ..storage.log.log_directory import METADATA_TOPIC, find_partitions
from ..storage.log.partition_log import PartitionLog
from ..storage.tiered.remote_tier import RemoteTier, is_remote_tier, tier_hint
from ..values.decoding_spec import KAFKA_INTERNAL
from .options import ReadOptions

log = logging.getLogger("segmentlog")


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
        for name, value in (("remoteLogMetadata", opts.remote_log_metadata),
                            ("remoteTierPrivateKey", opts.remote_private_key)):
            if value:
                raise BadOptionError(name, ",".join(value) if isinstance(value, tuple)
                                     else value, "it is for a remote tier: give remoteTier, "
                                     "or load() the tier itself")
        return [PartitionSource(p.topic, p.partition, p.fs, p.path)
                for p in _local(opts, allow_empty=False)]
    local = [] if remote_roots else _local(opts, allow_empty=True)
    metadata = opts.remote_log_metadata or tuple(
        p.path for p in local if p.topic == REMOTE_LOG_METADATA_TOPIC)
    tier = RemoteTier.open(tier_uri, opts.store, metadata_paths=metadata, stats=stats,
                           private_key=opts.remote_private_key)
    sources = [PartitionSource(p.topic, p.partition, p.fs, p.path, tier) for p in local
               if p.topic != REMOTE_LOG_METADATA_TOPIC]
    known = {(s.topic, s.partition) for s in sources}
    unknown = [tp for tp in tier.partitions() if tp not in known]
    if remote_roots:
        return sources + [PartitionSource(t, p, tier.fs, None, tier) for t, p in unknown]
    for topic, partition in unknown:
        # A partition directory all of whose segments are remote (no active segment left),
        # or none at all: a partition the brokers no longer hold is not theirs to read.
        found = _empty_partition_dir(opts, topic, partition)
        if found is not None:
            sources.append(PartitionSource(topic, partition, found[0], found[1], tier))
        else:
            log.warning("segmentlog: the remote tier %s holds copies of %s-%d, which no data "
                        "directory read holds: not read (load() the tier to read them)",
                        tier_uri, topic, partition)
    return sorted(sources, key=lambda s: (s.topic, s.partition))


def _local(opts: ReadOptions, *, allow_empty: bool):
    return find_local_partitions(list(opts.paths), opts.store, allow_empty=allow_empty,
                                 metadata_log=reads_metadata_log(opts))


def reads_metadata_log(opts: ReadOptions) -> bool:
    """Whether a read may take KRaft's `__cluster_metadata` partition (given itself): only
    decoded, since its raw values may hold secrets, which valueFormat=kafka-internal redacts,
    or without values at all (view=batches or segments, includePayload=false). A path naming
    it in a read that would show raw values is refused."""
    if opts.decoding.value.format == KAFKA_INTERNAL or opts.view != "records" \
            or not opts.include_payload:
        return True
    for path in opts.paths:
        if path.rstrip("/").rsplit("/", 1)[-1].startswith(METADATA_TOPIC + "-"):
            raise BadOptionError("valueFormat", opts.decoding.value.format,
                                 f"{path} is KRaft's metadata log, read only with "
                                 "valueFormat=kafka-internal (its values may hold secrets, "
                                 "which that format redacts)")
    return False


def find_local_partitions(paths: list[str], config=None, *, allow_empty: bool = False,
                          metadata_log: bool = False):
    """find_partitions, its error completed when a path is part of a remote tier (the CLI's
    commands read a broker's log directories through it too)."""
    try:
        return find_partitions(paths, config=config, allow_empty=allow_empty,
                               metadata_log=metadata_log)
    except LogNotFoundError as err:
        hints = [h for h in (tier_hint(p, config) for p in paths) if h]
        if not hints:
            raise
        raise LogNotFoundError(f"{err}: {'; '.join(hints)}") from None


def _empty_partition_dir(opts: ReadOptions, topic: str, partition: int):
    """(fs, path) of a `<topic>-<partition>` directory without segments in a data directory
    read, if there is one."""
    for path in opts.paths:
        fs, root = filesystem_for(path, opts.store)
        candidate = fs.join(root, f"{topic}-{partition}")
        if fs.is_dir(candidate):
            return fs, candidate
    return None
