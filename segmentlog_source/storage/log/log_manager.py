"""The upkeep of a data directory's logs, as a broker's LogManager does it: retention
(log_retention.py), compaction (log_cleaner.py) and the checkpoint files around them.

Each partition is opened for append, so its lock keeps other segmentlog writers out (one that
holds it gets a clear LogLockedError, and nothing is touched) and a crashed writer's leftovers
are recovered first. After each partition the data directory's checkpoints are brought up to
date under the directory's `.lock`, as a broker keeps them:

- recovery-point-offset-checkpoint: the log end offset (everything is flushed: a broker
  loading the directory without the clean-shutdown marker recovers nothing below it);
- log-start-offset-checkpoint: the log start offset when it lies above the first segment's
  base offset, else no entry (the broker's rule: the first segment says it);
- cleaner-offset-checkpoint: the first dirty offset after a cleaning.

Configs: topic_configs.py: Kafka's defaults, the cluster's configs from its metadata log when a
`metadata_configs` function is given and the data directory has one, the topic's file, then
`overrides` (Kafka's config names) on top.
Topics Kafka and its ecosystem create compacted (`__consumer_offsets`, `_schemas`, ...)
default to cleanup.policy=compact.
"""

from __future__ import annotations

from dataclasses import dataclass, field
import time
from typing import Callable, Iterable, Mapping

from ...errors import BadOptionError
from ..io.filesystem import filesystem_for
from ..io.local import retry_while_locked
from ..log_files import (CLEANER_OFFSET_CHECKPOINT, CLEANING_INTENT,
                         LOG_START_OFFSET_CHECKPOINT, RECOVERY_POINT_CHECKPOINT)
from .batch_sequence import compacted_by_default
from .checkpoints import read_offset_checkpoint, update_offset_checkpoint
from .log_cleaner import CleanResult, clean
from .log_config import LogConfig
from .log_directory import PartitionDir, find_partitions
from .log_retention import RetentionResult, apply_retention
from .offset_map import DEFAULT_DEDUPE_BUFFER_BYTES, OffsetMap
from .partition_log import PartitionLog
from .topic_configs import (CachedMetadataConfigs, MetadataConfigs, cluster_topic_configs,
                            topic_log_config)

DATA_DIR_LOCK = ".lock"        # the broker's own data-directory lock (and the committer's)
DEFAULT_LOCK_TIMEOUT_MS = 60_000
MAX_CLEANING_PASSES = 10_000    # each pass maps at least one record; a guard, not a limit
CHECKPOINTS = (RECOVERY_POINT_CHECKPOINT, LOG_START_OFFSET_CHECKPOINT, CLEANER_OFFSET_CHECKPOINT)


@dataclass
class PartitionCompaction:
    topic: str
    partition: int
    passes: list[CleanResult] = field(default_factory=list)
    skipped: str | None = None    # why it was not compacted

    @property
    def end_offset(self) -> int | None:
        return self.passes[-1].end_offset if self.passes else None


class LogManager:
    def __init__(self, path: str, *, fs=None, topics: Iterable[str] | None = None,
                 overrides: Mapping[str, str] | None = None,
                 clock_ms: Callable[[], int] | None = None,
                 dedupe_buffer_bytes: int = DEFAULT_DEDUPE_BUFFER_BYTES,
                 lock_timeout_ms: int = DEFAULT_LOCK_TIMEOUT_MS,
                 metadata_configs: MetadataConfigs | None = None):
        if fs is None:
            fs, path = filesystem_for(path)
        fs.ensure_writable(path)
        self.fs, self.path = fs, path
        self.topics = None if topics is None else set(topics)
        self.overrides = dict(overrides or {})
        self.clock_ms = clock_ms or (lambda: int(time.time() * 1000))
        if dedupe_buffer_bytes < 1024:
            raise BadOptionError("dedupe_buffer_bytes", dedupe_buffer_bytes, "must be >= 1024")
        self.dedupe_buffer_bytes = dedupe_buffer_bytes
        self.lock_timeout_ms = lock_timeout_ms
        self.metadata_configs = (None if metadata_configs is None
                                 else CachedMetadataConfigs(metadata_configs))

    def partitions(self) -> list[PartitionDir]:
        found = find_partitions(self.path, self.fs)
        if self.topics is not None:
            missing = self.topics - {p.topic for p in found}
            if missing:
                raise BadOptionError("topic", sorted(missing)[0],
                                     f"no partition of this topic under {self.path}")
            found = [p for p in found if p.topic in self.topics]
        return found

    def cluster_configs(self, data_dir: str, topic: str) -> dict[str, tuple[str, str]]:
        """{name: (value, source)} of the topic's configs in the cluster's metadata ({} with no
        metadata log), read once per data directory."""
        return cluster_topic_configs(self.metadata_configs, self.fs, data_dir, topic)

    def config(self, part: PartitionDir) -> LogConfig:
        base = LogConfig(cleanup_policy="compact") if compacted_by_default(part.topic) else None
        data_dir = self.fs.dirname(part.path)
        return topic_log_config(data_dir, part.topic, self.overrides, base, self.fs,
                                self.cluster_configs(data_dir, part.topic))

    # -- retention --------------------------------------------------------------------------
    def retain(self) -> list[RetentionResult]:
        return [self.retain_partition(part) for part in self.partitions()]

    def retain_partition(self, part: PartitionDir) -> RetentionResult:
        config = self.config(part)
        with self._open(part, config) as log:
            result = apply_retention(log, config, self.clock_ms())
            self._checkpoint(part, log)
        return result

    # -- compaction -------------------------------------------------------------------------
    def compact(self) -> list[PartitionCompaction]:
        return [self.compact_partition(part) for part in self.partitions()]

    def compact_partition(self, part: PartitionDir) -> PartitionCompaction:
        """Clean until the whole cleanable range is clean (one pass per full offset map)."""
        config = self.config(part)
        found = PartitionCompaction(part.topic, part.partition)
        if not config.compact:
            if self.topics is not None:
                raise BadOptionError("cleanup.policy", config.cleanup_policy,
                                     f"topic {part.topic} is not compacted; set "
                                     "cleanup.policy=compact (`segmentlog config`) to compact it")
            found.skipped = f"cleanup.policy={config.cleanup_policy}"
            return found
        for _ in range(MAX_CLEANING_PASSES):
            with self._open(part, config) as log:
                checkpoint = log.data_dir_checkpoint(CLEANER_OFFSET_CHECKPOINT).get(
                    (part.topic, part.partition))
                result = clean(log, config, self.clock_ms(), checkpoint,
                               OffsetMap(self.dedupe_buffer_bytes))
                found.passes.append(result)
            with self._open(part, config) as log:    # the swapped-in segments, reloaded
                self._checkpoint(part, log, cleaner_offset=result.end_offset)
                # The checkpoint says how far the cleaner reached, once it reaches as far as
                # the announced cleaning (an interrupted one's may reach further)
                intent = log.cleaning_intent()
                if intent is not None and result.end_offset >= intent:
                    self.fs.remove(self.fs.join(part.path, CLEANING_INTENT))
            if not result.map_full or result.end_offset >= result.first_uncleanable:
                return found
        raise BadOptionError("dedupe_buffer_bytes", self.dedupe_buffer_bytes,
                             f"{part.topic}-{part.partition} needed more than "
                             f"{MAX_CLEANING_PASSES} cleaning passes")

    # -- shared -----------------------------------------------------------------------------
    def _open(self, part: PartitionDir, config: LogConfig) -> PartitionLog:
        # A running broker holds its data directory's lock: nothing of its logs is touched.
        data_dir = self.fs.dirname(part.path)
        _data_dir_lock(self.fs, data_dir, self.lock_timeout_ms).release()
        for name in CHECKPOINTS:   # each one readable before a file changes, not after
            read_offset_checkpoint(self.fs.join(data_dir, name), self.fs)
        return retry_while_locked(
            lambda: PartitionLog.open_for_append(part.path, self.fs, topic=part.topic,
                                                 partition=part.partition, config=config),
            self.lock_timeout_ms, "for another writer")

    def _checkpoint(self, part: PartitionDir, log: PartitionLog,
                    cleaner_offset: int | None = None) -> None:
        key = (part.topic, part.partition)
        above_first = log.log_start_offset > log.segments[0].base_offset
        changes = {RECOVERY_POINT_CHECKPOINT: {key: log.log_end_offset},
                   LOG_START_OFFSET_CHECKPOINT: {key: log.log_start_offset if above_first
                                                 else None}}
        if cleaner_offset is not None:
            changes[CLEANER_OFFSET_CHECKPOINT] = {key: cleaner_offset}
        update_checkpoints(self.fs, self.fs.dirname(part.path), changes, self.lock_timeout_ms)


def update_checkpoints(fs, data_dir: str, changes: dict[str, dict[tuple[str, int], int | None]],
                       lock_timeout_ms: int) -> None:
    """Apply `changes` ({checkpoint file name: {(topic, partition): offset, or None to
    remove}}) to the data directory's checkpoint files, under its `.lock`."""
    lock = _data_dir_lock(fs, data_dir, lock_timeout_ms)
    try:
        for name, entries in changes.items():
            update_offset_checkpoint(fs.join(data_dir, name), entries, fs)
    finally:
        lock.release()


def _data_dir_lock(fs, data_dir: str, lock_timeout_ms: int):
    return retry_while_locked(
        lambda: fs.lock(fs.join(data_dir, DATA_DIR_LOCK), f"data directory {data_dir}"),
        lock_timeout_ms, "for the data directory's lock")
