"""Loading a partition directory for writing, the way `LogLoader` does after a crash (spec §9).

1. Marker files: `*.deleted`, `*.cleaned`, `*.tmp` are removed; `*.swap` files finish their swap
   (the segments they replace are removed, the suffix is dropped), except those from an
   interrupted split (base offset >= the smallest `.cleaned` one), which are removed.
2. Index files without a `.log` are removed; a segment without its `.index` is recovered.
3. Crash detection. The broker uses a data-directory marker and checkpoint; a partition we write
   carries its own evidence instead: a clean close leaves a producer snapshot at the log end
   offset and trimmed, consistent indexes. If that is not what we find, the segments from the
   one holding the latest snapshot onwards are recovered: indexes rebuilt (§4.5), the `.log`
   truncated at its first invalid byte, and every later segment deleted.
4. Producer state is rebuilt from the latest snapshot <= LEO plus the batches after it, and a
   snapshot is written at the LEO; stray snapshots go, as `removeStraySnapshots` does.
"""

from __future__ import annotations

import bisect
import copy
from dataclasses import dataclass, field
import logging

from ...errors import CorruptDataError
from ..log_files import (CLEANED_SUFFIX, DELETED_SUFFIX, INDEX_SUFFIXES, LEADER_EPOCH_CHECKPOINT,
                         LOG_START_OFFSET_CHECKPOINT, LOG_SUFFIX, SWAP_SUFFIX, TMP_SUFFIX,
                         file_name, kind_of, offset_from_file_name)
from ..txn.producer_state_manager import (ProducerStateManager, read_end_txn_marker, read_snapshot,
                                          snapshot_offsets, snapshot_path, write_snapshot)
from ..txn.transaction_index import AbortedTxn
from .checkpoints import LeaderEpochCache, read_offset_checkpoint
from .log_config import LogConfig
from .log_segment import LogSegment, relative_offset_fits
from .offset_index import OffsetIndex
from .segment_indexer import SegmentIndexer
from .time_index import TimeIndex

log = logging.getLogger(__name__)


@dataclass
class FilePlan:
    """What a directory listing means: the `.log` holding each base offset (a `.log.swap`
    while its swap is unfinished), and what loading for writing deletes and renames."""

    logs: dict[int, str]
    delete: list[str]
    rename: list[tuple[str, str]]
    names: list[str]     # the listing all of this was decided on


def plan_files(fs, directory: str) -> FilePlan:
    """§9.1 steps 2-4 as a plan, without touching the files (readers use it as a view)."""
    names = fs.list_dir(directory)
    cleaned = [offset_from_file_name(n) for n in names if n.endswith(CLEANED_SUFFIX)]
    min_cleaned = min((o for o in cleaned if o is not None), default=None)
    delete, swaps = [], []
    for name in names:
        if name.endswith((DELETED_SUFFIX, CLEANED_SUFFIX, TMP_SUFFIX)):
            delete.append(name)
        elif name.endswith(SWAP_SUFFIX) and offset_from_file_name(name) is not None:
            split = min_cleaned is not None and offset_from_file_name(name) >= min_cleaned
            (delete if split else swaps).append(name)  # an interrupted split is dropped
    swap_logs = [n for n in swaps if n.endswith(LOG_SUFFIX + SWAP_SUFFIX)]
    if swap_logs:
        low = min(offset_from_file_name(n) for n in swap_logs)
        high = max(LogSegment(directory, offset_from_file_name(n), fs,
                              log_path=fs.join(directory, n)).read_next_offset()
                   for n in swap_logs)
        for name in names:
            offset = offset_from_file_name(name)
            if (name not in swaps and name not in delete and offset is not None
                    and low <= offset < high):
                delete.append(name)
    logs = {}
    for name in names:
        kind = kind_of(name)
        if name not in delete and kind is not None and kind[1] == LOG_SUFFIX:
            logs[kind[0]] = name
    for name in swap_logs:
        logs[offset_from_file_name(name)] = name
    for name in names:  # index files whose segment is gone
        kind = kind_of(name)
        if (kind is not None and kind[1] in INDEX_SUFFIXES and kind[0] not in logs
                and name not in delete):
            delete.append(name)
    return FilePlan(logs, delete, [(n, n[:-len(SWAP_SUFFIX)]) for n in swaps], names)


@dataclass
class RecoveryReport:
    removed_files: list[str] = field(default_factory=list)
    renamed_files: list[tuple[str, str]] = field(default_factory=list)
    recovered_segments: list[int] = field(default_factory=list)
    truncated: list[tuple[str, int, int]] = field(default_factory=list)  # (path, at, bytes cut)
    deleted_segments: list[int] = field(default_factory=list)

    @property
    def was_clean(self) -> bool:
        return not (self.recovered_segments or self.truncated or self.deleted_segments)


@dataclass
class LoadedLog:
    segments: list[LogSegment]
    producer_state: ProducerStateManager
    leader_epochs: LeaderEpochCache
    log_start_offset: int
    report: RecoveryReport


def recover_segment(segment: LogSegment, state: ProducerStateManager, epochs: LeaderEpochCache,
                    config: LogConfig) -> int:
    """LogSegment.recover: validate every batch, rebuild the indexes and the txn index, update
    producer state and leader epochs, truncate the `.log` at the first invalid byte. Returns
    the number of bytes truncated."""
    fs, base = segment.fs, segment.base_offset
    segment.forget_cached_state()
    size = segment.size
    before = copy.deepcopy(state)
    offset_index = OffsetIndex(base, max_index_bytes=config.segment_index_bytes)
    time_index = TimeIndex(base, max_index_bytes=config.segment_index_bytes)
    indexer = SegmentIndexer(offset_index, time_index, config.index_interval_bytes)
    aborted, valid, epochs_before = [], 0, list(epochs.entries)
    try:
        for header, entry in segment.iter_entries(verify_crc=True, allow_torn_tail=True):
            if not relative_offset_fits(base, header.last_offset):
                raise CorruptDataError(f"offset {header.last_offset} does not fit relative to the "
                                       f"segment base offset {base}", segment.log_path,
                                       header.position)
            try:
                indexer.add_batch(header)
            except CorruptDataError as err:
                # Kafka's InvalidOffsetException: the whole segment is emptied.
                log.warning("%s: %s; emptying the segment as the broker does",
                            segment.log_path, err)
                state.producers, state.map_end_offset = before.producers, before.map_end_offset
                epochs.entries = epochs_before
                offset_index = OffsetIndex(base, max_index_bytes=config.segment_index_bytes)
                time_index = TimeIndex(base, max_index_bytes=config.segment_index_bytes)
                indexer = SegmentIndexer(offset_index, time_index, config.index_interval_bytes)
                aborted, valid = [], 0
                break
            if header.magic >= 2:
                epochs.assign(header.partition_leader_epoch, header.base_offset)
                _update_producer_state(state, segment, header, entry, aborted)
            else:
                state.map_end_offset = header.next_offset
            valid = header.end
    except CorruptDataError as err:
        log.warning("found invalid bytes in %s at byte %d: %s", segment.log_path, valid, err)
    indexer.final_entry()
    sync = config.fsync != "none"
    fs.write_atomic(segment.index_path, offset_index.to_bytes(), fsync=sync)
    fs.write_atomic(segment.time_index_path, time_index.to_bytes(), fsync=sync)
    if aborted:
        fs.write_atomic(segment.txn_index_path, b"".join(t.to_bytes() for t in aborted), fsync=sync)
    else:
        fs.remove(segment.txn_index_path)
    if valid < size:
        fs.truncate(segment.log_path, valid)
    segment.forget_cached_state()
    return size - valid


def _tail_is_clean(segment: LogSegment) -> int | None:
    """The segment's next offset if it is in a clean-close state, else None.

    Clean: both index files present, trimmed and sane, no invalid or partial batch after the
    last offset-index entry, and the time index ends with the running maximum timestamp.
    """
    try:
        if not segment.has_index_files:
            return None
        offset_index, time_index = segment.offset_index, segment.time_index
        if not (offset_index.is_trimmed and time_index.is_trimmed):
            return None
        position = offset_index.last_entry()[1]
        max_ts, next_offset = time_index.last_entry()[0], segment.base_offset
        for header, _ in segment.iter_entries(position, verify_crc=True):
            if header.max_timestamp > max_ts:
                return None
            next_offset = header.next_offset
        return next_offset
    except CorruptDataError:
        return None
    finally:
        segment.forget_cached_state()


def _txn_index_is_sane(segment: LogSegment) -> bool:
    try:
        segment.txn_index.sanity_check()
        return True
    except CorruptDataError:
        return False
    finally:
        segment.forget_cached_state()


def _state_at(fs, directory: str, segments: list[LogSegment], offset: int) -> ProducerStateManager:
    """Producer state at `offset`: the latest readable snapshot <= offset, then the batches.

    With no snapshot at all the state starts empty at `offset`, as the broker's clean
    "upgrade" path does, rather than scanning the whole log for producer ids.
    """
    state = None
    for snap in reversed([s for s in snapshot_offsets(directory, fs) if s <= offset]):
        path = snapshot_path(directory, snap, fs)
        try:
            state = ProducerStateManager(read_snapshot(path, fs), snap)
            break
        except CorruptDataError as err:
            log.warning("removing unreadable producer snapshot: %s", err)
            fs.remove(path)
    if state is None:
        return ProducerStateManager(map_end_offset=offset)
    replay_producer_state(state, segments, offset)
    return state


def _update_producer_state(state: ProducerStateManager, segment: LogSegment, header, entry,
                           aborted: list[AbortedTxn]) -> None:
    """Feed one batch to `state`; an ABORT marker's transaction goes into `aborted`."""
    marker = None
    if header.is_control and header.producer_id >= 0:
        try:
            marker = read_end_txn_marker(header, entry)
        except CorruptDataError as err:
            raise err.located(segment.log_path) from None  # decoders report header.position
    txn = state.update(header, marker)
    if txn is not None:
        aborted.append(txn)


def last_stable_offset(fs, directory: str, segments: list[LogSegment], log_start: int,
                       end: int) -> int:
    """Kafka's last stable offset at `end`: the first offset of the oldest transaction that no
    marker has ended yet, else `end` (never below the log start, as UnifiedLog clamps it).

    Producer state comes from the latest snapshot at or below `end` (read, never repaired: this
    is a reader's question), then the batches after it; with no snapshot, from the first
    segment. A transaction left open by a crash, or by a copy cut before its marker, holds the
    LSO where it began: a read_committed consumer gets nothing at or past it.
    """
    first_base = segments[0].base_offset if segments else end
    snaps = [s for s in snapshot_offsets(directory, fs) if first_base <= s <= end]
    if snaps:
        state = ProducerStateManager(read_snapshot(snapshot_path(directory, snaps[-1], fs), fs),
                                     snaps[-1])
    else:
        state = ProducerStateManager(map_end_offset=first_base)
    replay_producer_state(state, segments, end)
    unstable = state.first_unstable_offset()
    return end if unstable is None else max(log_start, min(unstable, end))


def replay_producer_state(state: ProducerStateManager, segments: list[LogSegment], upto: int
                          ) -> list[AbortedTxn]:
    """Feed `state` the batches in [state.map_end_offset, upto); return the transactions that
    their ABORT markers ended (what `.txnindex` files would list)."""
    aborted: list[AbortedTxn] = []
    start = state.map_end_offset
    first_segment = max(0, bisect.bisect_right([s.base_offset for s in segments], start) - 1)
    for segment in segments[first_segment:]:
        if segment.base_offset >= upto:
            break
        first = segment.translate_offset(start) if start > segment.base_offset else None
        position = first.position if first is not None else 0
        for header, entry in segment.iter_entries(position, allow_torn_tail=True):
            if header.base_offset >= upto:
                return aborted
            if header.last_offset < start:
                continue
            _update_producer_state(state, segment, header, entry, aborted)
    state.map_end_offset = max(state.map_end_offset, upto)
    return aborted


def _delete_segment(fs, segment: LogSegment) -> None:
    for path in (segment.log_path, segment.index_path, segment.time_index_path,
                 segment.txn_index_path):
        fs.remove(path)


def _remove_stray_snapshots(fs, directory: str, base_offsets: list[int], report) -> None:
    """Keep snapshots at segment base offsets and the largest one above them all."""
    bases, stray = set(base_offsets), None
    for offset in snapshot_offsets(directory, fs):
        if offset in bases:
            continue
        if stray is not None:
            fs.remove(snapshot_path(directory, stray, fs))
            report.removed_files.append(file_name(stray, ".snapshot"))
        stray = offset
    if stray is not None and base_offsets and stray < max(base_offsets):
        fs.remove(snapshot_path(directory, stray, fs))
        report.removed_files.append(file_name(stray, ".snapshot"))


def load_for_append(fs, directory: str, topic: str, partition: int, config: LogConfig) -> LoadedLog:
    report = RecoveryReport()
    plan = plan_files(fs, directory)
    for name in plan.delete:
        fs.remove(fs.join(directory, name))
    for src, dst in plan.rename:
        fs.rename(fs.join(directory, src), fs.join(directory, dst))
    if plan.delete or plan.rename:
        fs.fsync_dir(directory)
    report.removed_files += plan.delete
    report.renamed_files += plan.rename
    segments = [LogSegment(directory, base, fs, max_index_bytes=config.segment_index_bytes)
                for base in sorted(plan.logs)]
    epochs = LeaderEpochCache(fs.join(directory, LEADER_EPOCH_CHECKPOINT), fs)
    epochs_before = list(epochs.entries)
    checkpoint = read_offset_checkpoint(
        fs.join(fs.dirname(directory), LOG_START_OFFSET_CHECKPOINT), fs)
    log_start = checkpoint.get((topic, partition), 0)

    if segments:
        segments[-1].active = True
        snapshots = snapshot_offsets(directory, fs)
        leo = _tail_is_clean(segments[-1])
        if snapshots and leo is not None and snapshots[-1] == leo:
            first = len(segments)  # a clean close: nothing to recover
        else:
            point = snapshots[-1] if snapshots else segments[-1].base_offset
            if leo is not None:
                point = min(point, leo)
            first = max(0, bisect.bisect_right([s.base_offset for s in segments], point) - 1)
        state = None
        for i, segment in enumerate(segments):
            broken = not fs.exists(segment.index_path) or not _txn_index_is_sane(segment)
            if i < first and not broken:
                continue
            if state is None or i < first:
                state = _state_at(fs, directory, segments[:i], segment.base_offset)
            truncated = recover_segment(segment, state, epochs, config)
            report.recovered_segments.append(segment.base_offset)
            if i < first:
                state = None  # a lone broken segment: its state is not carried forward
            if truncated:
                report.truncated.append((segment.log_path, segment.size, truncated))
                for later in segments[i + 1:]:
                    _delete_segment(fs, later)
                    report.deleted_segments.append(later.base_offset)
                segments = segments[:i + 1]
                break
        segments[-1].active = True
    if segments and segments[-1].read_next_offset() < log_start:
        for segment in segments:  # §9.1 step 6: everything is below the log start offset
            _delete_segment(fs, segment)
            report.deleted_segments.append(segment.base_offset)
        segments = []
    if not segments:
        segments = [create_empty_segment(fs, directory, log_start, config)]
    log_start = max(log_start, segments[0].base_offset)
    leo = segments[-1].read_next_offset()

    epochs.truncate_from_end(leo)
    if epochs.entries != epochs_before:
        epochs.write(fsync=config.fsync != "none")
    for offset in snapshot_offsets(directory, fs):
        if offset > leo:
            fs.remove(snapshot_path(directory, offset, fs))
            report.removed_files.append(file_name(offset, ".snapshot"))
    state = _state_at(fs, directory, segments, leo)
    if leo not in snapshot_offsets(directory, fs):
        write_snapshot(directory, state, fs, fsync=config.fsync != "none")
    _remove_stray_snapshots(fs, directory, [s.base_offset for s in segments], report)
    if not report.was_clean:
        log.warning("recovered partition %s-%d in %s: %s", topic, partition, directory, report)
    return LoadedLog(segments, state, epochs, log_start, report)


def create_empty_segment(fs, directory: str, base_offset: int, config: LogConfig) -> LogSegment:
    segment = LogSegment(directory, base_offset, fs, active=True,
                      max_index_bytes=config.segment_index_bytes)
    for path in (segment.log_path, segment.index_path, segment.time_index_path):
        fs.open_append(path).close()
    if config.fsync != "none":
        fs.fsync_dir(directory)
    return segment

