"""Publishing staged batches into partition logs: all or nothing, exactly once.

One commit is one Spark write job or one micro-batch. Its tasks staged v2 batches (staging.py);
the driver publishes them here:

1. Topics. Under the data directory's topic lock, a topic nobody created yet gets all of its
   partitions (empty, one fresh topic id); an existing topic must still have the partition
   count the tasks routed with (keyed rows went to murmur2(key) % count).
2. Locks. Every partition to write, plus every partition of an unfinished manifest that
   touches them or belongs to the same streaming query, opened for append (its lock) in sorted
   order, so two committers cannot deadlock; a held lock is retried until `lock_timeout_ms`,
   then LogLockedError.
3. Recovery. Those unfinished manifests belong to dead writers (a live one would hold the
   locks): each is finished when the staged files of its incomplete partitions are intact,
   else undone (`_LockedLogs.settle_pending`, `_settle`).
4. Exactly once for streams: a batch id at or below the query's recorded one was committed
   before (Spark replays the last batch after a crash); it is skipped.
5. Intent: the manifest (start = log end offset, staged files in order, expected end), synced.
6. Publish: append every staged batch (the log assigns offsets), sync. Any failure truncates
   every partition back to its start and removes the manifest; if even that fails, the
   manifest stays and the next writer settles it (3).
7. Commit point: for a micro-batch, recording its batch id; then (for every commit) removing
   the manifest. Readers cap a partition a manifest names at its start offset until then
   (commit_log.pending_commit_offsets). A micro-batch past its recorded batch id is only ever
   finished, never undone: Spark would not replay it.

Settling a manifest, per partition, from its log end offset (LEO): LEO == start: append the
staged files; LEO == end: done; in between: truncate to start, append again. Undoing truncates
to start. LEO below start means committed data vanished (DataLossError: no writer proceeds).
"""

from __future__ import annotations

from dataclasses import dataclass, field
import logging
from typing import Mapping
import uuid

from ...errors import (BadOptionError, CorruptDataError, DataLossError, LogLockedError,
                       SegmentLogError)
from ...format.batch import iter_headers, set_log_append_time
from ..io.local import LOCAL, retry_while_locked
from ..log.checkpoints import read_leader_epoch_checkpoint
from ..log.data_dir import partition_dir, topic_id_of, topic_partition_counts
from ..log.log_config import LogConfig
from ..log.log_directory import PartitionDir
from ..log.log_manager import DATA_DIR_LOCK, LogManager, update_checkpoints
from ..log.topic_configs import (MetadataConfigs, cluster_topic_configs, read_topic_config,
                                 topic_log_config)
from ..log.partition_log import PartitionLog
from ..log_files import LEADER_EPOCH_CHECKPOINT, RECOVERY_POINT_CHECKPOINT
from .commit_log import (COMMITS, CommitManifest, PartitionCommit, last_committed_batch,
                         manifest_path, read_pending, record_committed_batch, remove_manifest,
                         write_manifest)
from .staging import (StagedFile, is_intact, iter_staged_chunks, remove_job, remove_stale_jobs,
                      staging_root, state_dir)

log = logging.getLogger("segmentlog")

# Topic creation is serialised on the data directory's `.lock` (log_manager.DATA_DIR_LOCK), the
# file a broker keeps there too (the one lock file a broker-shaped directory may hold).
_MAX_LOCK_ROUNDS = 20

Key = tuple[str, int]


@dataclass(frozen=True)
class CommitSettings:
    config: LogConfig
    log_append_time: bool = False
    lock_timeout_ms: int = 60_000
    staging_retention_ms: int = 24 * 3600 * 1000
    # Topic configs given for this write (Kafka's names): over the topic's file, which is over
    # the cluster's configs (a Kafka 4.x data directory's metadata log, read by
    # `metadata_configs`; give a CachedMetadataConfigs to read it once per commit), which are
    # over `config`.
    topic_configs: Mapping[str, str] = field(default_factory=dict)
    metadata_configs: MetadataConfigs | None = None

    @property
    def sync(self) -> bool:
        return self.config.fsync != "none"

    def config_for(self, log_dir: str, topic: str, fs=LOCAL) -> LogConfig:
        return topic_log_config(log_dir, topic, self.topic_configs, self.config, fs,
                                self._cluster(log_dir, topic, fs))

    def retention_overrides(self, log_dir: str, topic: str, fs=LOCAL) -> dict[str, str] | None:
        """The overrides the sink's retention after a commit runs with, or None when it does
        not retain the topic. It retains when the topic's cleanup.policy includes delete and
        retention.ms or retention.bytes is configured (in the cluster's metadata, its file or
        as an option), and then by that limit only: Kafka's default of 7 days never deletes
        what a backfill writes, so a topic given retention.bytes alone is kept to that size."""
        given = {**self._cluster(log_dir, topic, fs), **read_topic_config(log_dir, topic, fs),
                 **self.topic_configs}
        if not (("retention.ms" in given or "retention.bytes" in given)
                and self.config_for(log_dir, topic, fs).delete):
            return None
        return {**({} if "retention.ms" in given else {"retention.ms": "-1"}),
                **self.topic_configs}

    def _cluster(self, log_dir: str, topic: str, fs) -> dict[str, tuple[str, str]]:
        return cluster_topic_configs(self.metadata_configs, fs, log_dir, topic)


@dataclass(frozen=True)
class CommitRequest:
    job: str
    files: tuple[StagedFile, ...]          # in append order (task order, then write order)
    topic_partitions: Mapping[str, int]    # the partition count each topic was routed with
    query_id: str | None = None
    batch_id: int | None = None


@dataclass
class CommitResult:
    committed: bool                        # False: this micro-batch was committed before
    offsets: dict[Key, tuple[int, int]] = field(default_factory=dict)  # [start, end) per partition
    settled: list[str] = field(default_factory=list)  # interrupted commits finished or undone


def commit(log_dir: str, request: CommitRequest, settings: CommitSettings,
           fs=LOCAL) -> CommitResult:
    for staged in request.files:  # refuse before touching any log
        if not is_intact(staged, fs):
            raise CorruptDataError(f"staged file of {staged.topic}-{staged.partition} is missing "
                                   f"or not {staged.size} bytes long (was the staging "
                                   f"directory removed?)", staged.path)
    if request.topic_partitions:
        _prepare_topics(log_dir, request.topic_partitions, settings, fs)
    wanted = {(s.topic, s.partition) for s in request.files}
    with _LockedLogs(log_dir, wanted, request.query_id, settings, fs, request.job) as locked:
        result = CommitResult(committed=True, settled=locked.settle_pending())
        if request.query_id is not None and request.batch_id is not None:
            last = last_committed_batch(log_dir, request.query_id, fs)
            if last is not None and request.batch_id <= last:
                result.committed = False
        if result.committed and (request.files or request.query_id is not None):
            manifest = _manifest(request, locked.logs, settings)
            write_manifest(log_dir, manifest, fsync=settings.sync, fs=fs)
            _settle(log_dir, manifest, locked.logs, settings, fs, forward=True)
            result.offsets = {p.key: (p.start_offset, p.end_offset) for p in manifest.partitions}
    _tidy(log_dir, request, settings, fs)
    if result.offsets and settings.sync:
        # what a broker's flush records: a broker loading the directory recovers nothing below
        update_checkpoints(fs, log_dir, {RECOVERY_POINT_CHECKPOINT: {
            key: end for key, (_, end) in result.offsets.items()}}, settings.lock_timeout_ms)
    if result.committed:
        _retain(log_dir, wanted, settings, fs)
    return result


def _retain(log_dir: str, written: set[Key], settings: CommitSettings, fs) -> None:
    """Retention on the partitions just written, where the topic asks for it. The commit is
    done: a partition another writer holds past lock_timeout_ms is left for the next commit."""
    for topic in sorted({topic for topic, _ in written}):
        overrides = settings.retention_overrides(log_dir, topic, fs)
        if overrides is None:
            continue
        manager = LogManager(log_dir, fs=fs, topics=[topic], overrides=overrides,
                             lock_timeout_ms=settings.lock_timeout_ms,
                             metadata_configs=settings.metadata_configs)
        for partition in sorted(p for t, p in written if t == topic):
            part = PartitionDir(partition_dir(log_dir, topic, partition, fs), topic, partition)
            try:
                manager.retain_partition(part)
            except LogLockedError as err:
                log.warning("segmentlog: retention skipped after the commit: %s", err)


def abort(log_dir: str, job: str, settings: CommitSettings, fs=LOCAL) -> list[str]:
    """Forget a job: its staging goes, and an unfinished commit of it is undone (unless it is
    a micro-batch past its commit point, which is finished). Returns the manifests settled."""
    remove_job(log_dir, job, fs)
    mine = [m for m in read_pending(log_dir, fs) if m.job == job]
    settled = []
    for manifest in mine:
        with _LockedLogs(log_dir, manifest.keys, None, settings, fs) as locked:
            settled += locked.settle_pending(prefer_undo=job)
    _remove_empty_state_dirs(log_dir, fs)
    return settled


def recover(log_dir: str, settings: CommitSettings, fs=LOCAL) -> list[str]:
    """Settle every unfinished commit of the data directory (what any writer does first)."""
    settled = []
    for manifest in read_pending(log_dir, fs):
        with _LockedLogs(log_dir, manifest.keys, None, settings, fs) as locked:
            settled += locked.settle_pending()
    return settled


# -- topics ---------------------------------------------------------------------------------

def _prepare_topics(log_dir: str, routed: Mapping[str, int], settings: CommitSettings,
                    fs) -> None:
    """Create new topics whole; check existing ones still have the routed partition count."""
    fs.makedirs(log_dir)
    lock = _wait_for(lambda: fs.lock(fs.join(log_dir, DATA_DIR_LOCK),
                                     f"topic creation in {log_dir}"), settings)
    try:
        counts = topic_partition_counts(log_dir, fs)
        for topic, n in sorted(routed.items()):
            existing = counts.get(topic)
            if existing is None:
                topic_id = uuid.uuid4()
                # Highest partition first: a topic's count is its highest partition + 1, so a
                # writer killed part way leaves the count right (a partition still missing is
                # made, with the topic's id, by the commit that needs it); lowest first left a
                # topic of 2 partitions where 3 were asked for, which every restart refused.
                for p in reversed(range(n)):
                    _wait_for(lambda: PartitionLog.open_for_append(
                        partition_dir(log_dir, topic, p, fs), fs, topic=topic, partition=p,
                        config=settings.config_for(log_dir, topic, fs), topic_id=topic_id),
                        settings).close()
            elif existing != n:
                raise BadOptionError("topic", topic, f"has {existing} partitions now, but the "
                                     f"rows were routed for {n} (another writer created it "
                                     "meanwhile); write again")
    finally:
        lock.release()


# -- locks ----------------------------------------------------------------------------------

def _wait_for(open_locked, settings: CommitSettings):
    return retry_while_locked(open_locked, settings.lock_timeout_ms,
                              "for another writer's commit (option lockTimeoutMs)")


class _LockedLogs:
    """The partitions a commit needs, opened for append, and the manifests it must settle."""

    def __init__(self, log_dir: str, wanted: set[Key], query_id: str | None,
                 settings: CommitSettings, fs, current_job: str | None = None):
        self.log_dir, self.wanted, self.query_id = log_dir, set(wanted), query_id
        self.current_job = current_job
        self.settings, self.fs = settings, fs
        self.logs: dict[Key, PartitionLog] = {}
        self.pending: list[CommitManifest] = []

    def _closure(self, pending: list[CommitManifest]) -> tuple[set[Key], list[CommitManifest]]:
        need, mine, grew = set(self.wanted), [], True
        while grew:
            grew = False
            for m in pending:
                if m not in mine and (m.keys & need or (self.query_id is not None
                                                        and m.query_id == self.query_id)):
                    mine.append(m)
                    grew = grew or not m.keys <= need
                    need |= m.keys
        return need, mine

    def __enter__(self) -> "_LockedLogs":
        for _ in range(_MAX_LOCK_ROUNDS):
            need, _ = self._closure(read_pending(self.log_dir, self.fs))
            try:
                for key in sorted(need):
                    self.logs[key] = _wait_for(lambda: self._open(key), self.settings)
                # With these locks held, no live writer can add a manifest touching them: any
                # we see now is a dead writer's. One that names more partitions: lock again.
                need_now, self.pending = self._closure(read_pending(self.log_dir, self.fs))
            except BaseException:
                self._close_all()
                raise
            if need_now <= need:
                return self
            self._close_all()
        raise LogLockedError(f"unfinished commits in {self.log_dir} kept changing while taking "
                             "partition locks")

    def _open(self, key: Key) -> PartitionLog:
        topic, partition = key
        path = partition_dir(self.log_dir, topic, partition, self.fs)
        # A partition missing inside an existing topic's range (a broker's data directory may
        # hold only some) is created with the topic's id; existing ones keep their metadata.
        topic_id = None if self.fs.is_dir(path) else topic_id_of(self.log_dir, topic, self.fs)
        return PartitionLog.open_for_append(path, self.fs, topic=topic, partition=partition,
                                            config=self.settings.config_for(
                                                self.log_dir, topic, self.fs),
                                            topic_id=topic_id)

    def settle_pending(self, prefer_undo: str | None = None) -> list[str]:
        """Finish or undo every unfinished manifest found (oldest first). `prefer_undo`: a job
        being aborted, whose commit is undone unless it passed its commit point."""
        settled = []
        for manifest in sorted(self.pending, key=lambda m: m.created_ms):
            forward = self._must_finish(manifest) or (
                manifest.job != prefer_undo and self._can_finish(manifest))
            log.warning("segmentlog: %s the interrupted commit %s (%s) in %s",
                        "finishing" if forward else "undoing", manifest.commit_id, manifest.job,
                        self.log_dir)
            _settle(self.log_dir, manifest, self.logs, self.settings, self.fs, forward=forward)
            settled.append(manifest.commit_id)
            if manifest.job != self.current_job:  # a replayed micro-batch stages in the same
                remove_job(self.log_dir, manifest.job, self.fs)  # directory: that one stays
        self.pending = []
        return settled

    def _must_finish(self, manifest: CommitManifest) -> bool:
        """A micro-batch whose batch id is recorded passed its commit point: it is only missing
        its manifest's removal, and undoing it would lose a batch Spark will not replay."""
        if manifest.query_id is None or manifest.batch_id is None:
            return False
        last = last_committed_batch(self.log_dir, manifest.query_id, self.fs)
        return last is not None and last >= manifest.batch_id

    def _can_finish(self, manifest: CommitManifest) -> bool:
        """Every partition still short of its end has its staged files intact."""
        return all(is_intact(f, self.fs) for p in manifest.partitions
                   if self.logs[p.key].log_end_offset < p.end_offset for f in p.files)

    def _close_all(self) -> None:
        logs, self.logs = self.logs, {}
        for partition_log in logs.values():
            try:
                partition_log.close()
            except Exception as exc:
                # Release every lock even when one close fails. What close adds (the last
                # time-index entry, a producer snapshot) is what recovery rebuilds, and the
                # commit point is behind us or the data was undone: nothing to report upwards.
                log.warning("segmentlog: closing %s failed (recovery will repair it): %s",
                            partition_log.name, exc)

    def __exit__(self, *exc) -> None:
        self._close_all()


# -- manifests ------------------------------------------------------------------------------

def _manifest(request: CommitRequest, logs: dict[Key, PartitionLog],
              settings: CommitSettings) -> CommitManifest:
    by_partition: dict[Key, list[StagedFile]] = {}
    for staged in request.files:
        by_partition.setdefault((staged.topic, staged.partition), []).append(staged)
    parts = []
    for key in sorted(by_partition):
        start = logs[key].log_end_offset
        files = tuple(by_partition[key])
        parts.append(PartitionCommit(key[0], key[1], start,
                                     start + sum(f.records for f in files), files))
    now = settings.config.clock_ms()
    return CommitManifest(uuid.uuid4().hex, request.job, request.query_id, request.batch_id,
                          now if settings.log_append_time else None, now, tuple(parts))


def _settle(log_dir: str, manifest: CommitManifest, logs: dict[Key, PartitionLog],
            settings: CommitSettings, fs, *, forward: bool) -> None:
    """Finish (forward) or undo a manifest whose partitions `logs` holds locked.

    Publishing may fail (a full disk): it is then undone and the error re-raised; if undoing
    fails too, the manifest stays for the next writer. Once published, the commit point is
    passed in `_mark_done` (for a stream: the recorded batch id), which is never undone: a
    failure there leaves a manifest whose partitions are all at their end, which the next
    writer (or abort) simply finishes.
    """
    try:
        _move_partitions(log_dir, manifest, logs, settings, forward=forward)
    except BaseException:
        if forward:
            try:
                _move_partitions(log_dir, manifest, logs, settings, forward=False)
                remove_manifest(log_dir, manifest.commit_id, fsync=settings.sync, fs=fs)
            except BaseException as undo_error:
                log.error("segmentlog: could not undo commit %s (%s); it stays pending for the "
                          "next writer: %s", manifest.commit_id, manifest.job, undo_error)
        raise
    if forward and manifest.query_id is not None and manifest.batch_id is not None:
        record_committed_batch(log_dir, manifest.query_id, manifest.batch_id,
                               fsync=settings.sync, fs=fs)
    remove_manifest(log_dir, manifest.commit_id, fsync=settings.sync, fs=fs)


def _move_partitions(log_dir: str, manifest: CommitManifest, logs: dict[Key, PartitionLog],
                     settings: CommitSettings, *, forward: bool) -> None:
    """Bring every partition of the manifest to its end (forward) or back to its start."""
    for part in manifest.partitions:
        partition_log = logs[part.key]
        leo = partition_log.log_end_offset
        if leo < part.start_offset:
            raise DataLossError(
                f"{partition_log.name} ends at offset {leo}, below the start {part.start_offset} "
                f"of the unfinished commit {manifest.commit_id}: committed data is gone. Check "
                f"the log, then remove {manifest_path(log_dir, manifest.commit_id)}")
        if leo > part.end_offset:
            raise CorruptDataError(f"{partition_log.name} ends at offset {leo}, past the end "
                                   f"{part.end_offset} of the unfinished commit "
                                   f"{manifest.commit_id}", partition_log.directory)
        if forward and leo == part.end_offset:
            continue  # this partition was complete when the writer stopped
        if leo > part.start_offset:
            partition_log.truncate_to(part.start_offset)
        if forward:
            _append_staged(partition_log, part, manifest.log_append_time)
    if settings.sync:
        for part in manifest.partitions:
            logs[part.key].flush()


def _append_staged(partition_log: PartitionLog, part: PartitionCommit,
                   log_append_time: int | None) -> None:
    epoch = _leader_epoch(partition_log)
    for staged in part.files:
        chunks = iter_staged_chunks(staged, partition_log.fs)
        if log_append_time is not None:
            chunks = (_stamped(chunk, log_append_time) for chunk in chunks)
        try:
            partition_log.append(chunks, leader_epoch=epoch, in_place=True)
        except CorruptDataError as err:
            raise err.located(staged.path) if err.path is None else err
    if partition_log.log_end_offset != part.end_offset:
        raise CorruptDataError(f"the staged files of {partition_log.name} hold "
                               f"{partition_log.log_end_offset - part.start_offset} records, "
                               f"their tasks reported {part.end_offset - part.start_offset}",
                               part.files[0].path)


def _stamped(chunk: memoryview, timestamp: int) -> memoryview:
    """The chunk (the commit's own buffer) with the broker's LogAppendTime, set at append, in
    every batch."""
    for header in iter_headers(chunk):
        set_log_append_time(chunk[header.position:header.end], timestamp)
    return chunk


def _leader_epoch(partition_log: PartitionLog) -> int:
    """The partition's current leader epoch (0 for a new log), as a leader stamps it."""
    entries = read_leader_epoch_checkpoint(
        partition_log.fs.join(partition_log.directory, LEADER_EPOCH_CHECKPOINT), partition_log.fs)
    return entries[-1].epoch if entries else 0


def _tidy(log_dir: str, request: CommitRequest, settings: CommitSettings, fs) -> None:
    """Best effort, after the commit point: staging no commit can need any more goes, and so
    do empty state directories (a Kafka broker refuses non-partition directories in a data
    directory, so a batch-written log is left exactly as a broker would have it)."""
    try:
        keep = {m.job for m in read_pending(log_dir, fs)}
        if request.job not in keep:
            remove_job(log_dir, request.job, fs)
        query_batch = ((request.query_id, request.batch_id)
                       if request.query_id is not None and request.batch_id is not None else None)
        remove_stale_jobs(log_dir, keep=keep, query_batch=query_batch,
                          now_ms=settings.config.clock_ms(),
                          retention_ms=settings.staging_retention_ms, fs=fs)
        _remove_empty_state_dirs(log_dir, fs)
    except (OSError, SegmentLogError) as exc:  # the data is committed; leftovers are harmless
        log.warning("segmentlog: could not clean up staging in %s: %s", log_dir, exc)


def _remove_empty_state_dirs(log_dir: str, fs) -> None:
    for directory in (staging_root(log_dir, fs), fs.join(state_dir(log_dir, fs), COMMITS),
                      state_dir(log_dir, fs)):
        fs.remove_empty_dir(directory)
