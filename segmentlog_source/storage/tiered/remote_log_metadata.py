"""Kafka's `__remote_log_metadata` topic replayed as a broker's RemoteLogMetadataCache replays it:
which remote segments a partition has, in which state, and which of them a reader reads.

The topic-based RemoteLogMetadataManager keeps no snapshot: on assignment it reads each metadata
partition from its start. All events of one user partition are in one metadata partition
(partition_metadata_partition), so what matters is the offset order inside it; the metadata
partitions are replayed one after the other.

Per user partition the cache keeps (RemoteLogMetadataCache, RemoteLogLeaderEpochState):
  - each segment's latest state. An event the state machine does not allow is dropped (Kafka logs
    an error), and so is an update of a segment it does not know; both are logged as warnings
    here and listed in `problems`. DELETE_SEGMENT_FINISHED forgets the segment (`segments()`
    still lists it, in that state);
  - per leader epoch, the COPY_SEGMENT_FINISHED segments by their start offset within the epoch.
    A finished copy that starts at or before the epoch's last entry and reaches at least the
    epoch's highest copied offset replaces that entry (a retried copy, or a new leader's copy of
    a superset); one that starts later stays beside it, and a lookup takes the floor entry.

`live_segments` answers what a reader reads, each offset once: see there.
"""

from __future__ import annotations

import base64
import bisect
import logging
from dataclasses import replace
from typing import NamedTuple

from ...errors import CorruptDataError, LogNotFoundError
from ...format.partitioner import murmur2
from ...format.record_decoder import decode_batch
from ...format.remote_log_metadata import (
    COPY_SEGMENT_FINISHED, COPY_SEGMENT_STARTED, DELETE_PARTITION_FINISHED,
    DELETE_SEGMENT_FINISHED, DELETE_SEGMENT_STARTED, PARTITION_DELETE_STATES, SEGMENT_STATES,
    TOPIC, RemoteLogSegmentMetadata, RemoteLogSegmentMetadataSnapshot,
    RemoteLogSegmentMetadataUpdate, RemotePartitionDeleteMetadata, decode_value)
from ..log.log_directory import find_partitions
from ..log.partition_log import PartitionLog
from .remote_segment_lineage import (LiveSegment, LiveSegments, Shadowed, derive_lineage,
                                     epoch_end, filtered_epochs, lineage_violation, resolve)

log = logging.getLogger("segmentlog")

# RemoteLogSegmentState.isValidTransition / RemotePartitionDeleteState.isValidTransition
_SEGMENT_NEXT = {None: {COPY_SEGMENT_STARTED},
                 COPY_SEGMENT_STARTED: {COPY_SEGMENT_STARTED, COPY_SEGMENT_FINISHED,
                                        DELETE_SEGMENT_STARTED},
                 COPY_SEGMENT_FINISHED: {COPY_SEGMENT_FINISHED, DELETE_SEGMENT_STARTED},
                 DELETE_SEGMENT_STARTED: {DELETE_SEGMENT_STARTED, DELETE_SEGMENT_FINISHED},
                 DELETE_SEGMENT_FINISHED: {DELETE_SEGMENT_FINISHED}}
_PARTITION_NEXT = {None: {0}, 0: {0, 1}, 1: {1, 2}, 2: {2}}

__all__ = ["LiveSegment", "LiveSegments", "Problem", "RemoteLogMetadata", "Shadowed",
           "lineage_violation", "partition_metadata_partition"]


class Problem(NamedTuple):
    """An event the replay dropped, as Kafka's cache drops it (with an error in its log)."""

    metadata_partition: int
    offset: int                 # of the record in its metadata partition
    segment_id: str | None
    reason: str

    def __str__(self) -> str:
        return f"{TOPIC}-{self.metadata_partition} offset {self.offset}: {self.reason}"


def partition_metadata_partition(topic_id: str, partition: int, num_partitions: int) -> int:
    """The `__remote_log_metadata` partition that holds a user partition's events
    (RemoteLogMetadataTopicPartitioner): toPositive(murmur2(the 4 big-endian bytes of
    Objects.hash(id's least significant long, its most significant long, partition))) % n."""
    raw = _uuid_bytes(topic_id)
    msb, lsb = int.from_bytes(raw[:8], "big"), int.from_bytes(raw[8:], "big")
    h = 1
    for value in (_long_hash(lsb), _long_hash(msb), partition):
        h = (31 * h + value) & 0xFFFFFFFF      # Arrays.hashCode, int arithmetic
    return (murmur2(h.to_bytes(4, "big")) & 0x7FFFFFFF) % num_partitions


def _long_hash(unsigned: int) -> int:
    return (unsigned ^ (unsigned >> 32)) & 0xFFFFFFFF      # Long.hashCode


def _uuid_bytes(topic_id: str) -> bytes:
    raw = base64.urlsafe_b64decode(topic_id + "==")
    if len(raw) != 16:
        raise ValueError(f"{topic_id!r} is not a Kafka Uuid (22 URL-safe base64 characters)")
    return raw


class _EpochState:
    """RemoteLogLeaderEpochState: one leader epoch's finished copies by their start in it."""

    __slots__ = ("starts", "ids", "unreferenced", "highest")

    def __init__(self):
        self.starts: list[int] = []          # offsetToId's keys, ascending
        self.ids: list[str] = []             # and its values
        self.unreferenced: set[str] = set()  # started, being deleted, or replaced copies
        self.highest: int | None = None      # highestLogOffset

    def copy_finished(self, start: int, segment_id: str, end: int) -> None:
        while self.starts and self.starts[-1] >= start and self.highest <= end:
            self.starts.pop()
            self.unreferenced.add(self.ids.pop())
        i = bisect.bisect_left(self.starts, start)
        if i < len(self.starts) and self.starts[i] == start:
            # Kafka's put over an entry the loop kept (it reached further): the older copy
            # drops out of this epoch without becoming unreferenced
            self.ids[i] = segment_id
        else:
            self.starts.insert(i, start)
            self.ids.insert(i, segment_id)
        self.unreferenced.discard(segment_id)
        if self.highest is None or end > self.highest:
            self.highest = end

    def delete_started(self, start: int, segment_id: str) -> None:
        i = bisect.bisect_left(self.starts, start)
        if i < len(self.starts) and self.starts[i] == start and self.ids[i] == segment_id:
            del self.starts[i], self.ids[i]
        self.unreferenced.add(segment_id)


class _Partition:
    """One user partition's RemoteLogMetadataCache, and its partition-delete state."""

    def __init__(self, topic: str, home: int):
        self.topic = topic
        self.home = home                     # the metadata partition its events are in
        self.segments: dict[str, RemoteLogSegmentMetadata] = {}   # by id, the latest state
        self.order: dict[str, int] = {}      # the replay's sequence number of each id's start
        self.epochs: dict[int, _EpochState] = {}
        self.delete: RemotePartitionDeleteMetadata | None = None

    def epoch(self, epoch: int) -> _EpochState:
        state = self.epochs.get(epoch)
        if state is None:
            state = self.epochs[epoch] = _EpochState()
        return state


class RemoteLogMetadata:
    """The replayed `__remote_log_metadata`: `load()` it, then ask about a partition."""

    def __init__(self):
        self.problems: list[Problem] = []
        self.replayed: dict[int, int] = {}   # metadata partition -> the offset replayed up to
        self._partitions: dict[tuple[str, int], _Partition] = {}
        self._topic_ids: dict[str, dict[str, tuple[int, int]]] = {}
        self._seq = 0

    # -- loading -----------------------------------------------------------------------------
    @classmethod
    def load(cls, paths: list[str], fs=None, stats=None, *,
             end_offsets: dict[int, int] | None = None) -> "RemoteLogMetadata":
        """Replay the `__remote_log_metadata-N` partition directories at `paths` (each one such
        directory, or a data directory holding them). `end_offsets`: replay metadata partition
        N only below offset end_offsets[N] (the cache as it was then)."""
        paths = [paths] if isinstance(paths, str) else list(paths)
        found = [p for p in find_partitions(paths, fs, allow_empty=True) if p.topic == TOPIC]
        if not found:
            raise LogNotFoundError(f"no {TOPIC}-<n> partition directories under "
                                   f"{', '.join(map(str, paths))}")
        metadata = cls()
        for part in found:
            partition_log = PartitionLog.open(part.path, part.fs, topic=part.topic,
                                              partition=part.partition, stats=stats)
            end = None if end_offsets is None else end_offsets.get(part.partition)
            metadata._replay_log(partition_log, end)
        return metadata

    def _replay_log(self, partition_log: PartitionLog, end: int | None) -> None:
        n = partition_log.partition
        replayed = partition_log.log_start_offset
        aborted = None
        for segment, header, entry in partition_log.iter_entries(verify_crc=True):
            if end is not None and header.base_offset >= end:
                break
            replayed = header.next_offset if end is None else min(end, header.next_offset)
            if header.is_control:
                continue
            try:
                batch = decode_batch(entry, header, verify_crc=False)   # (checked by the scan)
            except CorruptDataError as err:
                raise (err.located(segment.log_path) if err.path is None else err) from None
            if header.is_transactional and aborted is None:
                # (the RLMM's producer is idempotent, never transactional)
                aborted = partition_log.aborted_transactions(partition_log.log_start_offset,
                                                             partition_log.log_end_offset)
            for record in batch.records:
                if end is not None and record.offset >= end:
                    break
                if header.is_transactional and any(
                        t.producer_id == header.producer_id
                        and t.first_offset <= record.offset <= t.last_offset for t in aborted):
                    continue
                try:
                    value = decode_value(record.value)
                except CorruptDataError as err:
                    where = "" if err.position is None else f", byte {err.position} of its value"
                    raise CorruptDataError(f"{TOPIC}-{n} record at offset {record.offset}"
                                           f"{where}: {err.reason}", segment.log_path,
                                           header.position) from None
                self._apply(value, n, record.offset)
        self.replayed[n] = replayed

    # -- the replay --------------------------------------------------------------------------
    def _problem(self, n: int, offset: int, segment_id: str | None, reason: str) -> None:
        problem = Problem(n, offset, segment_id, reason)
        log.warning("segmentlog: %s", problem)
        self.problems.append(problem)

    def _apply(self, value, n: int, offset: int) -> None:
        self._seq += 1
        if isinstance(value, RemoteLogSegmentMetadataSnapshot):
            self._problem(n, offset, value.segment_id, "a RemoteLogSegmentMetadataSnapshotRecord "
                          "in the topic (Kafka's consumer handles none there): dropped")
            return
        key = (value.topic_id, value.partition)
        name = f"{value.topic}-{value.partition} (topic id {value.topic_id})"
        part = self._partitions.get(key)
        if part is None:
            part = self._partitions[key] = _Partition(value.topic, n)
        elif part.home != n:
            self._problem(n, offset, None, f"events of {name} are in metadata partitions "
                          f"{part.home} and {n}; a user partition's events are in one")
        ids = self._topic_ids.setdefault(value.topic, {})
        ids[value.topic_id] = max(ids.get(value.topic_id, (0, 0)),
                                  (value.event_timestamp, self._seq))
        if isinstance(value, RemotePartitionDeleteMetadata):
            self._delete_partition(part, value, name, n, offset)
        elif part.delete is not None and part.delete.state == DELETE_PARTITION_FINISHED:
            self._problem(n, offset, value.segment_id, f"an event of {name} after its remote "
                          "partition was deleted (DELETE_PARTITION_FINISHED): dropped")
        elif isinstance(value, RemoteLogSegmentMetadata):
            self._add_segment(part, value, name, n, offset)
        else:
            self._update_segment(part, value, name, n, offset)

    def _add_segment(self, part: _Partition, m: RemoteLogSegmentMetadata, name: str, n: int,
                     offset: int) -> None:
        what = f"segment {m.segment_id} ({m.start_offset}..{m.end_offset}) of {name}"
        existing = part.segments.get(m.segment_id)
        # a finished delete is forgotten by Kafka's cache: the id may start again
        current = None if existing is None or existing.state == DELETE_SEGMENT_FINISHED \
            else existing.state
        if m.state != COPY_SEGMENT_STARTED:
            self._problem(n, offset, m.segment_id, f"{what} arrives in state {m.state_name}; "
                          "a segment starts in COPY_SEGMENT_STARTED: dropped")
            return
        if m.state not in _SEGMENT_NEXT[current]:
            self._problem(n, offset, m.segment_id, f"{what}: {SEGMENT_STATES[current]} cannot "
                          f"become {m.state_name}: dropped")
            return
        for epoch, _ in m.segment_leader_epochs:
            part.epoch(epoch).unreferenced.add(m.segment_id)
        part.segments[m.segment_id] = m
        part.order[m.segment_id] = self._seq

    def _update_segment(self, part: _Partition, u: RemoteLogSegmentMetadataUpdate, name: str,
                        n: int, offset: int) -> None:
        existing = part.segments.get(u.segment_id)
        if existing is None or existing.state == DELETE_SEGMENT_FINISHED:
            known = "unknown" if existing is None else \
                f"deleted ({existing.start_offset}..{existing.end_offset})"
            self._problem(n, offset, u.segment_id, f"{u.state_name} for segment {u.segment_id} "
                          f"of {name}, which is {known}: dropped")
            return
        what = f"segment {u.segment_id} ({existing.start_offset}..{existing.end_offset}) of {name}"
        if u.state not in _SEGMENT_NEXT[existing.state] or u.state == COPY_SEGMENT_STARTED:
            self._problem(n, offset, u.segment_id, f"{what}: {existing.state_name} cannot become "
                          f"{u.state_name}{' by an update' if u.state == existing.state else ''}"
                          ": dropped")
            return
        m = replace(existing, broker_id=u.broker_id, event_timestamp=u.event_timestamp,
                    custom_metadata=u.custom_metadata, state=u.state)
        for epoch, start in m.segment_leader_epochs:
            state = part.epoch(epoch)
            if u.state == COPY_SEGMENT_FINISHED:
                state.copy_finished(start, m.segment_id, epoch_end(m, epoch))
            elif u.state == DELETE_SEGMENT_STARTED:
                state.delete_started(start, m.segment_id)
            else:
                state.unreferenced.discard(m.segment_id)
        part.segments[m.segment_id] = m

    def _delete_partition(self, part: _Partition, d: RemotePartitionDeleteMetadata, name: str,
                          n: int, offset: int) -> None:
        current = None if part.delete is None else part.delete.state
        if d.state not in _PARTITION_NEXT[current]:
            before = "no delete" if current is None else PARTITION_DELETE_STATES[current]
            self._problem(n, offset, None, f"{name}: {before} cannot become {d.state_name}: "
                          "dropped")
            return
        part.delete = d

    # -- questions ---------------------------------------------------------------------------
    def topic_ids(self, topic: str) -> list[str]:
        """The topic ids seen for a topic name, the one with the newest event last."""
        ids = self._topic_ids.get(topic, {})
        return sorted(ids, key=ids.__getitem__)

    def metadata_partition_of(self, topic_id: str, partition: int) -> int | None:
        """The metadata partition a user partition's events were found in."""
        part = self._partitions.get((topic_id, partition))
        return None if part is None else part.home

    def segments(self, topic_id: str, partition: int) -> list[RemoteLogSegmentMetadata]:
        """Every segment the partition's events named, in its latest state, by start offset."""
        part = self._partitions.get((topic_id, partition))
        if part is None:
            return []
        return sorted(part.segments.values(),
                      key=lambda m: (m.start_offset, part.order[m.segment_id]))

    def custom_metadata(self) -> dict[str, bytes]:
        """Segment id -> the custom metadata its copy recorded (a plugin's own: Aiven's says
        where the segment's objects are when not under the configured prefix)."""
        return {m.segment_id: m.custom_metadata for part in self._partitions.values()
                for m in part.segments.values() if m.custom_metadata is not None}

    def partition_deleted(self, topic_id: str, partition: int
                          ) -> RemotePartitionDeleteMetadata | None:
        """The partition's latest remote delete state (None: no delete was recorded; Kafka
        4.4 records none, its topic deletes finish each segment's delete instead)."""
        part = self._partitions.get((topic_id, partition))
        return None if part is None else part.delete

    def log_start_offset(self, topic_id: str, partition: int,
                         leader_epochs: list[tuple[int, int]] | None = None) -> int | None:
        """RemoteLogManager.findLogStartOffset from the metadata alone: for the earliest epoch
        (of `leader_epochs`, else of those the cache knows) that lists a segment, the start
        offset of its first (started, finished or being deleted) segment. None: no segment."""
        part = self._live_partition(topic_id, partition)
        if part is None:
            return None
        epochs = sorted(part.epochs) if leader_epochs is None else [e for e, _ in leader_epochs]
        for epoch in epochs:
            state = part.epochs.get(epoch)
            if state is None or not (state.ids or state.unreferenced):
                continue
            if not state.unreferenced:       # listed in offset order, as Kafka lists them
                return part.segments[state.ids[0]].start_offset
            return min(part.segments[i].start_offset
                       for i in [*state.ids, *state.unreferenced])
        return None

    def live_segments(self, topic_id: str, partition: int,
                      leader_epochs: list[tuple[int, int]] | None = None,
                      log_end_offset: int | None = None) -> LiveSegments:
        """What a reader reads of the remote tier, each offset from one segment, in order.

        Candidates are the COPY_SEGMENT_FINISHED segments. With `leader_epochs` (the partition's
        leader-epoch-checkpoint: (epoch, start offset) ascending) a segment must pass Kafka's
        isRemoteSegmentWithinLeaderEpochs against it (and end below `log_end_offset` when that
        is given); the others are `outside_lineage`. Each lineage epoch's offsets are then
        served as Kafka's fetch serves them: the epoch's floor entry among the valid copies the
        cache kept for that epoch, up to that copy's end within the epoch. A copy the cache
        replaced, or whose offsets a later entry takes over, is `shadowed` for those offsets
        (LiveSegment.first_offset/last_offset say what to read of a copy cut short).

        Without `leader_epochs` the lineage is derived from the finished copies: that of the
        copy with the highest last epoch (then the highest end offset, then the latest), the
        newest leader's, whose log every replica truncates to; then extended back, below its
        first offset, by the copy that holds the offset just below with the highest epoch not
        above the lineage's first (then reaching furthest, then latest), until no copy starts
        below. Not the copy with the highest end offset: a deposed leader's copy can reach past
        what its successor copied, and that successor's log no longer has those offsets.
        """
        part = self._live_partition(topic_id, partition)
        if part is None:
            return LiveSegments((), (), (), (), ())
        finished = sorted((m for m in part.segments.values() if m.state == COPY_SEGMENT_FINISHED),
                          key=lambda m: part.order[m.segment_id])
        if leader_epochs is None:
            lineage = derive_lineage(finished)
        else:
            lineage = filtered_epochs(sorted(leader_epochs))
        if not lineage:
            return LiveSegments((), (), (), (), ())
        valid: dict[str, RemoteLogSegmentMetadata] = {}
        outside = []
        for m in finished:
            reason = lineage_violation(m, lineage, log_end_offset)
            if reason is None:
                valid[m.segment_id] = m
            else:
                outside.append(Shadowed(m, m.start_offset, m.end_offset, reason))
        entries = {e: [(s, i) for s, i in zip(st.starts, st.ids) if i in valid]
                   for e, st in part.epochs.items()}
        referenced = {i for kept in entries.values() for _, i in kept}
        return resolve(valid, entries, referenced, lineage, log_end_offset, tuple(outside))

    def _live_partition(self, topic_id: str, partition: int) -> _Partition | None:
        part = self._partitions.get((topic_id, partition))
        if part is None or (part.delete is not None
                            and part.delete.state == DELETE_PARTITION_FINISHED):
            return None       # Kafka drops a deleted partition's cache
        return part
