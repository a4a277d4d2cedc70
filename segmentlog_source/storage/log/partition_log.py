"""A partition directory as one log: its segments, lookups by offset and timestamp, appends.

Reading needs no lock and writes nothing. Writing (`open_for_append`) takes the partition's lock,
recovers what a crash left (log_loader.py), and then behaves like a leader's `UnifiedLog.append`:
one batch per append, rolls on size, time, full indexes or offset overflow, a producer snapshot
at every roll and at close, and a close that leaves the state a clean broker shutdown leaves.
"""

from __future__ import annotations

import bisect
import struct
from typing import Iterator

from ...errors import BadOptionError, CorruptDataError, DataLossError, LogNotFoundError
from ...format.batch import V2_LEADER_EPOCH_AT, BatchHeader, header_at, parse_header
from ..io.filesystem import filesystem_for
from ..io.stats import IOStats
from ..log_files import (CLEANER_OFFSET_CHECKPOINT, CLEANING_INTENT, LOG_START_OFFSET_CHECKPOINT,
                         PARTITION_LOCK, PARTITION_METADATA, SNAPSHOT_SUFFIX, kind_of)
from ..txn.producer_state_manager import (ProducerStateManager, read_end_txn_marker,
                                          write_snapshot)
from ..txn.transaction_index import AbortedTxn
from . import batch_run
from .batch_sequence import compacted_by_default
from .checkpoints import (check_partition_metadata, read_cleaning_intent,
                          read_offset_checkpoint, read_partition_metadata)
from .log_config import LogConfig
from .log_directory import parse_partition_dir_name
from .log_loader import (_delete_segment, create_empty_segment, last_stable_offset,
                         load_for_append, plan_files, replay_producer_state)
from .entry_scan import DEFAULT_CHUNK_BYTES
from .local_log import delete_segments
from .log_segment import LogSegment
from .lost_data import lost_data
from .segment_appender import SegmentAppender
from .list_offsets import LookupChecks, offset_for_timestamp

_BASE_OFFSET = struct.Struct(">q")
_LEADER_EPOCH = struct.Struct(">i")


class PartitionLog:
    def __init__(self, fs, directory: str, topic: str, partition: int, segments: list[LogSegment],
                 log_start_offset: int):
        self.fs = fs
        self.directory = directory
        self.topic = topic
        self.partition = partition
        self.segments = segments
        self._base_offsets = [s.base_offset for s in segments]
        self.log_start_offset = log_start_offset
        self.config: LogConfig | None = None
        self.recovery_report = None
        self._appender: SegmentAppender | None = None
        self._state = None
        self._epochs = None
        self._lock = None
        self.lookups = LookupChecks(self)   # what lookups by timestamp confirmed of the files
        self.listing: list[str] | None = None   # the directory as open() found it

    def __repr__(self) -> str:
        return f"PartitionLog({self.topic}-{self.partition}, {len(self.segments)} segments)"

    @property
    def name(self) -> str:
        return f"{self.topic}-{self.partition}"

    # -- opening -----------------------------------------------------------------------------
    @staticmethod
    def _identify(fs, path: str, topic: str | None, partition: int | None) -> tuple[str, int]:
        if topic is not None and partition is not None:
            return topic, partition
        parsed = parse_partition_dir_name(fs.basename(path))
        if parsed is None:
            raise BadOptionError("path", path, "the directory name is not <topic>-<partition>; "
                                 "pass topic= and partition=")
        return parsed

    @classmethod
    def open(cls, path: str, fs=None, *, topic: str | None = None, partition: int | None = None,
             stats: IOStats | None = None, salvage: bool = False,
             read_log_start_checkpoint: bool = True) -> "PartitionLog":
        """Open a partition directory for reading (it is not modified). `salvage`: an index
        that fails its checks is rebuilt from the `.log` rather than an error (failOnDataLoss
        false; each segment's index_problem says so)."""
        if fs is None:
            fs, path = filesystem_for(path)
        if not fs.is_dir(path):
            raise LogNotFoundError(f"no such partition directory: {path}")
        topic, partition = cls._identify(fs, path, topic, partition)
        # An unfinished swap is read as if it had finished; marker files are ignored (§9.1).
        files = plan_files(fs, path)
        segments = [LogSegment(path, base, fs, log_path=fs.join(path, name), stats=stats,
                               rebuild_bad_indexes=salvage, read_once=True)
                    for base, name in sorted(files.logs.items())]
        if segments:
            segments[-1].active = True
        checkpoint = read_offset_checkpoint(
            fs.join(fs.dirname(path), LOG_START_OFFSET_CHECKPOINT), fs) \
            if read_log_start_checkpoint else {}
        start = max(checkpoint.get((topic, partition), 0),
                    segments[0].base_offset if segments else 0)
        log = cls(fs, path, topic, partition, segments, start)
        log.listing = files.names
        return log

    @classmethod
    def open_for_append(cls, path: str, fs=None, *, topic: str | None = None,
                        partition: int | None = None, config: LogConfig | None = None,
                        topic_id=None) -> "PartitionLog":
        """Open (creating if needed) a partition directory for appending.

        A second writer gets LogLockedError. A crashed writer's leftovers are recovered first
        (`recovery_report` says what was done). `topic_id` writes `partition.metadata`, or must
        match the one there.
        """
        if fs is None:
            fs, path = filesystem_for(path)
        config = config or LogConfig()
        topic, partition = cls._identify(fs, path, topic, partition)
        fs.makedirs(path)
        lock = fs.lock(fs.join(path, PARTITION_LOCK), f"partition {topic}-{partition} ({path})")
        try:
            check_partition_metadata(fs.join(path, PARTITION_METADATA), topic_id, fs)
            loaded = load_for_append(fs, path, topic, partition, config)
            log = cls(fs, path, topic, partition, loaded.segments, loaded.log_start_offset)
            log.config, log._lock, log.recovery_report = config, lock, loaded.report
            log._state, log._epochs = loaded.producer_state, loaded.leader_epochs
            log._appender = SegmentAppender(log.segments[-1], config)
        except BaseException:
            lock.release()
            raise
        return log

    @property
    def producer_state(self) -> ProducerStateManager | None:
        """The producers' state at the log end offset (a writer's log only)."""
        return self._state

    @property
    def topic_id(self) -> str | None:
        return read_partition_metadata(self.fs.join(self.directory, PARTITION_METADATA), self.fs)

    # -- what the neighbours say -------------------------------------------------------------
    def data_dir_checkpoint(self, name: str) -> dict[tuple[str, int], int]:
        return read_offset_checkpoint(self.fs.join(self.fs.dirname(self.directory), name),
                                      self.fs)

    @property
    def compacted(self) -> bool:
        """Whether the partition shows signs of the log cleaner (batch_sequence.py says why it
        matters): a topic compacted by default, an entry in the data directory's
        cleaner-offset-checkpoint, or a cleaning under way."""
        cleaned = self.data_dir_checkpoint(CLEANER_OFFSET_CHECKPOINT)
        return (compacted_by_default(self.topic) or (self.topic, self.partition) in cleaned
                or self.cleaning_intent() is not None)

    @property
    def dirty_from(self) -> int | None:
        """Where the log cleaner has not been: no record at or past it was removed (None: the
        data directory's cleaner-offset-checkpoint does not list the partition).

        The checkpoint's offset (or a later one a cleaning under way announced, log_cleaner.py
        CLEANING_INTENT) ends the cleaned range, but the cleaner rewrites whole segments: one
        cleaned in part (a full offset map) lost aborted batches past it. So the bound is the
        first segment base at or past that offset."""
        cleaned = self.data_dir_checkpoint(CLEANER_OFFSET_CHECKPOINT).get(
            (self.topic, self.partition))
        intent = self.cleaning_intent()
        if intent is not None:
            cleaned = intent if cleaned is None else max(cleaned, intent)
        if cleaned is None:
            return None
        i = bisect.bisect_left(self._base_offsets, cleaned)
        return self._base_offsets[i] if i < len(self._base_offsets) else cleaned

    def cleaning_intent(self) -> int | None:
        """The end offset a cleaning under way announced (log_cleaner.py), or None."""
        names = self.listing if self.listing is not None else self.fs.list_dir(self.directory)
        if CLEANING_INTENT not in names:
            return None
        return read_cleaning_intent(self.fs.join(self.directory, CLEANING_INTENT),
                                    self.log_end_offset, self.fs)

    def lost_data(self, end: int | None = None) -> list[str]:
        """What the files around the segments say is missing from them (lost_data.py)."""
        return lost_data(self, end)

    def snapshot_offsets(self) -> list[int]:
        """The offsets of the producer snapshots open() listed: where the log ended when each
        was taken (at a roll or a clean close)."""
        names = self.listing if self.listing is not None else self.fs.list_dir(self.directory)
        return sorted(k[0] for k in map(kind_of, names)
                      if k is not None and k[1] == SNAPSHOT_SUFFIX)

    # -- offsets -----------------------------------------------------------------------------
    @property
    def log_end_offset(self) -> int:
        if self._appender is not None:
            return self._appender.next_offset
        return self.segments[-1].read_next_offset() if self.segments else self.log_start_offset

    def segment_for(self, offset: int) -> LogSegment | None:
        """The segment with the greatest base offset <= `offset` (a floor lookup)."""
        i = bisect.bisect_right(self._base_offsets, offset) - 1
        return self.segments[i] if i >= 0 else None

    def position_for_offset(self, offset: int) -> tuple[LogSegment, int]:
        """(segment, byte position) of the first batch whose last offset is >= `offset` (§8.1).

        The log end offset maps to the end of the last segment. Offsets outside
        [log start, log end] raise DataLossError (Kafka's OffsetOutOfRange).
        """
        end = self.log_end_offset
        if not self.log_start_offset <= offset <= end or not self.segments:
            raise DataLossError(f"offset {offset} is outside the log of {self.name}: "
                                f"[{self.log_start_offset}, {end}]")
        first = max(0, bisect.bisect_right(self._base_offsets, offset) - 1)
        for segment in self.segments[first:]:
            header = segment.translate_offset(offset)
            if header is not None:
                return segment, header.position
        return self.segments[-1], self.segments[-1].size

    def offset_for_timestamp(self, timestamp: int) -> int | None:
        """ListOffsets (§8.2): the first offset whose record timestamp is >= `timestamp`, or None
        (list_offsets.py; -2 the log start, -1 the log end, -3 the largest timestamp's)."""
        return offset_for_timestamp(self, timestamp)

    def check_segment_order(self, through: int | None = None) -> None:
        """Confirm the names of the segments up to index `through` (default: all) by their
        first batches, each once (list_offsets.LookupChecks)."""
        self.lookups.confirm_names(through)

    def pass_over(self, i: int) -> None:
        """A lookup by timestamp passes over segment `i` whole (list_offsets.LookupChecks)."""
        self.lookups.pass_over(i)

    def iter_entries(self, start_offset: int | None = None, *,
                     chunk_bytes: int = DEFAULT_CHUNK_BYTES, verify_crc: bool = False
                     ) -> Iterator[tuple[LogSegment, BatchHeader, memoryview]]:
        """Every batch from the one holding `start_offset` (default: the log start) onwards.

        A partial batch at the end of the last segment (a live or crashed writer) ends the
        iteration quietly, as it does for the broker; anywhere else it is CorruptDataError.
        """
        if not self.segments:
            return
        segment, position = self.position_for_offset(
            self.log_start_offset if start_offset is None else start_offset)
        for current in self.segments[self.segments.index(segment):]:
            scan = current.iter_entries(position if current is segment else 0,
                                        chunk_bytes=chunk_bytes, verify_crc=verify_crc,
                                        allow_torn_tail=current is self.segments[-1])
            for header, entry in scan:
                yield current, header, entry

    def last_stable_offset(self, end: int | None = None) -> int:
        """The LSO at `end` (default: the log end): where read_committed stops (log_loader)."""
        end = self.log_end_offset if end is None else end
        return last_stable_offset(self.fs, self.directory, self.segments, self.log_start_offset,
                                  end)

    def aborted_transactions(self, start_offset: int, upper_bound: int, *,
                             from_batches: bool = False) -> list[AbortedTxn]:
        """Aborted transactions overlapping [start_offset, upper_bound), for read_committed (§5).

        A segment whose indexes were never written (a crash, a bare copy of `.log` files) has no
        trustworthy `.txnindex` either; then the aborts are found from the batches themselves,
        as recovery would find them (and so they are with `from_batches`, for a reader that will
        not trust the `.txnindex` files).
        """
        if from_batches or not all(s.has_index_files for s in self.segments):
            # to the log end: a transaction begun below upper_bound may end (with its ABORT
            # marker) past it, as the .txnindex would list it
            state = ProducerStateManager(map_end_offset=self.segments[0].base_offset)
            return [t for t in replay_producer_state(state, self.segments, self.log_end_offset)
                    if t.last_offset >= start_offset and t.first_offset < upper_bound]
        segment = self.segment_for(start_offset)
        if segment is None:
            return []
        found = []
        i = self.segments.index(segment)
        for current, following in zip(self.segments[i:], self.segments[i + 1:] + [None]):
            current.txn_index.sanity_check(following.base_offset if following is not None
                                           else self.log_end_offset)
            txns, complete = current.txn_index.collect_aborted(start_offset, upper_bound)
            found += txns
            if complete:
                break
        return found

    # -- appending ---------------------------------------------------------------------------
    def append_batches(self, data) -> tuple[int, int]:
        """Append v2 batches whose offsets the caller assigned (each base offset >= the log end
        offset). `data` is batches laid end to end, or an iterable of such buffers. Returns the
        (first, last) offset appended."""
        return self._append_all(data, assign_offsets=False, leader_epoch=None)

    def append(self, data, *, leader_epoch: int | None = None, in_place: bool = False):
        """Append v2 batches, assigning offsets from the log end offset as a leader does.
        Only baseOffset (and, with `leader_epoch`, partitionLeaderEpoch) is rewritten; the CRC
        covers neither. Returns the (first, last) offset assigned. `in_place`: the buffers are
        writable and the log's to change (the caller drops them), so runs are patched where
        they are, not copied first (0.12 s of a staged commit's 250 MB)."""
        return self._append_all(data, assign_offsets=True, leader_epoch=leader_epoch,
                                in_place=in_place)

    def _append_all(self, data, *, assign_offsets: bool, leader_epoch: int | None,
                    in_place: bool = False) -> tuple[int, int]:
        self._writable()
        # What was appended is on file before anyone reads it (a truncation, say); a failed
        # write leaves memory ahead of the files: the partition is then reloaded from them.
        try:
            first, last = self._append_each(data, assign_offsets, leader_epoch, in_place)
        except OSError:
            self._reload_from_files(discard=True)
            raise
        except BaseException:    # (the batches before the bad one were appended)
            try:
                self._appender.write()
            except OSError:
                self._reload_from_files(discard=True)
            raise
        if first is None:
            raise BadOptionError("data", b"", "no batch to append")
        return first, last

    def _append_each(self, data, assign_offsets: bool, leader_epoch: int | None,
                     in_place: bool = False) -> tuple[int | None, int | None]:
        first = last = None
        runs = self.config.fsync != "always"     # (that flushes after every batch)
        for view in batch_run.buffers(data):
            pos, misses, one_by_one = 0, 0, 0
            by_runs = runs and batch_run.worth_runs(view)
            while pos < len(view):
                if by_runs and not one_by_one:
                    run = self._append_run(view, pos, assign_offsets, leader_epoch, in_place)
                    if run is not None:
                        first = run.base_offsets[0] if first is None else first
                        last, pos, misses = run.last_offsets[run.count - 1], run.end(), 0
                        continue
                    misses += 1     # (a producer's batches, say: 1, 2, 4... one by one)
                    one_by_one = 1 << min(misses - 1, 12)
                header = parse_header(view, pos, len(view))
                if header is None:
                    raise CorruptDataError(f"the last {len(view) - pos} bytes to append are "
                                           f"not a whole batch", None, pos)
                header = self._append_batch(header, view[pos:header.end], assign_offsets,
                                            leader_epoch)
                first = header.base_offset if first is None else first
                last, pos = header.last_offset, pos + header.size
                one_by_one = max(0, one_by_one - 1)
            self._appender.write()    # (a generator's next buffer may read the log)
        return (None if first is None else int(first)), (None if last is None else int(last))

    def _append_run(self, view: memoryview, pos: int, assign_offsets: bool,
                    leader_epoch: int | None, in_place: bool) -> batch_run.PlainRun | None:
        """The plain batches from view[pos] appended at once (batch_run.py), or None."""
        run = batch_run.PlainRun(view, pos, self.log_end_offset, assign_offsets=assign_offsets,
                                 leader_epoch=leader_epoch,
                                 segment_bytes=self.config.segment_bytes)
        if run.count:
            run.limit(self._appender.run_fits(*run.columns()))
        if not run.count:
            return None
        data = run.patched(assign_offsets, leader_epoch, in_place)
        self._appender.append_run(data, *run.columns())
        if self._epochs.assign(run.leader_epoch, int(run.base_offsets[0])):
            self._appender.write()   # (no file may name an offset the .log does not hold)
            self._epochs.write(fsync=self.config.fsync != "none")
        last = int(run.positions[run.count - 1] - run.positions[0])
        self._state.update(header_at(data, last))   # (no producer: only the map's end moves)
        return run

    def _append_batch(self, header: BatchHeader, entry, assign_offsets: bool,
                      leader_epoch: int | None) -> BatchHeader:
        if assign_offsets or leader_epoch is not None:
            entry = bytearray(entry)
            if assign_offsets:
                delta = header.last_offset - header.base_offset
                _BASE_OFFSET.pack_into(entry, 0, self.log_end_offset)
                header = header._replace(base_offset=self.log_end_offset,
                                         last_offset=self.log_end_offset + delta)
            if leader_epoch is not None:
                _LEADER_EPOCH.pack_into(entry, V2_LEADER_EPOCH_AT, leader_epoch)
                header = header._replace(partition_leader_epoch=leader_epoch)
        return self._append_one(header, entry)

    def _append_one(self, header: BatchHeader, entry) -> BatchHeader:
        if header.magic != 2:
            raise CorruptDataError(f"only v2 batches can be appended (found magic {header.magic})",
                                   None, header.position)
        if not header.crc_is_valid(entry):
            raise CorruptDataError(f"CRC mismatch in the batch to append: stored {header.crc}, "
                                   f"computed {header.compute_crc(entry)}", None, header.position)
        if header.base_offset < self.log_end_offset:
            raise CorruptDataError(f"batch base offset {header.base_offset} is below the log end "
                                   f"offset {self.log_end_offset} of {self.name}", None,
                                   header.position)
        if header.size > self.config.segment_bytes:
            raise BadOptionError("segment_bytes", self.config.segment_bytes,
                                 f"a batch of {header.size} bytes cannot fit in a segment")
        marker = None
        if header.is_control and header.producer_id >= 0:
            marker = read_end_txn_marker(header, entry)
        if self._appender.should_roll(header):
            self._roll(max(header.base_offset, self.log_end_offset))
        header = self._appender.append(header, entry)
        if self._epochs.assign(header.partition_leader_epoch, header.base_offset):
            self._appender.write()   # (no file may name an offset the .log does not hold)
            self._epochs.write(fsync=self.config.fsync != "none")
        aborted = self._state.update(header, marker)
        if aborted is not None:
            self._appender.write()
            self._appender.segment.txn_index.append(aborted)
        if self.config.fsync == "always":
            self._appender.flush()
        return header

    def roll(self) -> None:
        """Start a new, empty active segment at the log end offset (UnifiedLog.roll), as
        retention does before it deletes every segment."""
        self._writable()
        self._roll(self.log_end_offset)

    def _roll(self, new_base: int) -> None:
        """LocalLog.roll: finish the active segment, start one at `new_base` (>= LEO)."""
        old = self._appender
        sync = self.config.fsync != "none"
        old.close(fsync=sync)
        old.segment.active = False
        if old.segment.size == 0 and old.segment.base_offset == new_base:
            old.segment.active = True  # an empty active segment is simply reused
            self._appender = SegmentAppender(old.segment, self.config)
            return
        segment = create_empty_segment(self.fs, self.directory, new_base, self.config)
        self.segments.append(segment)
        self.lookups.forget()
        self._base_offsets.append(new_base)
        self._appender = SegmentAppender(segment, self.config)
        self._state.map_end_offset = new_base
        write_snapshot(self.directory, self._state, self.fs, fsync=sync)

    def delete_oldest_segments(self, count: int) -> None:
        """Delete the `count` oldest segments, never the active one (local_log.py says how);
        the log start offset moves up to the new first segment's base offset."""
        self._writable()
        if not 0 <= count < len(self.segments):
            raise BadOptionError("count", count, f"{self.name} has {len(self.segments)} "
                                 "segments and the active one stays")
        doomed, self.segments = self.segments[:count], self.segments[count:]
        self.lookups.forget()
        self._base_offsets = self._base_offsets[count:]
        self.log_start_offset = max(self.log_start_offset, self.segments[0].base_offset)
        delete_segments(self.fs, self.directory, doomed, sync=self.config.fsync != "none")
        if self._epochs.truncate_from_start(self.log_start_offset):
            self._epochs.write(fsync=self.config.fsync != "none")

    def _writable(self) -> None:
        if self._appender is None:
            raise BadOptionError("mode", "read", "this log was opened for reading; "
                                 "use PartitionLog.open_for_append")

    def flush(self) -> None:
        if self._appender is not None:
            self._appender.flush()

    def truncate_to(self, offset: int) -> None:
        """UnifiedLog.truncateTo for this writer: remove every batch at or after `offset`.

        `offset` must start a batch (or be past the last whole one). Later segments are
        deleted, the one holding `offset` is cut there and loses its indexes, and the partition
        is reloaded as after a crash (log_loader.py rebuilds those indexes, producer state,
        leader epochs, snapshots). It works from the files, not from the in-memory state, so
        it also undoes an append that failed half-way (a torn batch). The lock stays held.
        """
        self._writable()
        if offset < self.log_start_offset:
            raise DataLossError(f"cannot truncate {self.name} to {offset}: below the log start "
                                f"offset {self.log_start_offset}")
        keep = [s for s in self.segments if s.base_offset <= offset] or self.segments[:1]
        last, cut = keep[-1], 0
        for header, _ in last.iter_headers(chunk_bytes=DEFAULT_CHUNK_BYTES, allow_torn_tail=True):
            if header.base_offset >= offset:
                break
            if header.next_offset > offset:
                raise BadOptionError("offset", offset, f"not a batch boundary of {self.name} "
                                     f"(a batch holds {header.base_offset}..{header.last_offset})")
            cut = header.end

        def cut_files() -> None:
            for segment in self.segments[len(keep):]:
                _delete_segment(self.fs, segment)
            if cut < self.fs.size(last.log_path):
                self.fs.truncate(last.log_path, cut)
            for path in (last.index_path, last.time_index_path):
                self.fs.remove(path)  # missing indexes make the reload rebuild them from the .log

        self._reload_from_files(change=cut_files)

    def _reload_from_files(self, *, discard: bool = False, change=None) -> None:
        """The partition's state (segments, indexes, producer state, epochs) loaded again from
        its files, as after a crash, once `change` has changed them; `discard`: what the
        appender holds unwritten is dropped first (a write failed). The lock stays held; if
        even this fails, it is released and the files wait for recovery."""
        if discard:
            self._appender.discard()
        else:
            self._appender.log_file.close()
        self._appender = None
        try:
            for segment in self.segments:
                segment.forget_cached_state()  # no index mapping may outlive the files' change
            if change is not None:
                change()
            loaded = load_for_append(self.fs, self.directory, self.topic, self.partition,
                                     self.config)
            self.segments = loaded.segments
            self.lookups.forget()
            self._base_offsets = [s.base_offset for s in loaded.segments]
            self.log_start_offset, self.recovery_report = loaded.log_start_offset, loaded.report
            self._state, self._epochs = loaded.producer_state, loaded.leader_epochs
            self._appender = SegmentAppender(self.segments[-1], self.config)
        except BaseException:
            self._lock.release()  # the files are in no state to append to: recovery's turn
            raise

    def close(self) -> None:
        """For a writer: the final time-index entry, a producer snapshot at the log end offset,
        fsync per policy, lock released: the state a clean broker shutdown leaves."""
        if self._appender is None:
            return
        sync = self.config.fsync != "none"
        try:
            self._appender.close(fsync=sync)
            self._state.map_end_offset = self._appender.next_offset
            write_snapshot(self.directory, self._state, self.fs, fsync=sync)
            if sync:
                self.fs.fsync_dir(self.directory)
        finally:
            self._appender = None
            self._lock.release()

    def __enter__(self) -> "PartitionLog":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
