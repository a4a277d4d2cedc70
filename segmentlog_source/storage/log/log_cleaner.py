"""Compaction: keep the newest record of every key, as Kafka's log cleaner does
(LogCleaner / Cleaner / LogCleanerManager, spec §2.8, §12.1).

One cleaning of a partition:

1. The cleanable range is [first dirty, first uncleanable): first dirty is the
   cleaner-offset-checkpoint's offset (the log start offset when it is missing or outside the
   log); first uncleanable is the lowest of the last stable offset (open transactions, the high
   watermark), the active segment's base offset and the first segment newer than
   min.compaction.lag.ms, rounded down to the base offset of the segment holding it.
2. The offset map (offset_map.py) gets the newest offset of every key in that range, records
   of aborted transactions left out. A full map ends the range early; the rest waits for the
   next pass. End offset = the map's latest offset + 1: the next first dirty offset.
3. Every segment below the end offset, grouped so that each group fits one segment, is
   rewritten into one `.cleaned` segment at the group's base offset, batch by batch
   (`_Round.filter`, batch_filter.py), and swapped in (local_log.py). Before the first swap,
   the end offset is written to the partition's CLEANING_INTENT file, which readers take as
   the cleaner's reach until the caller has recorded the checkpoint and removed the file.

A record stays if it lies past the map's latest offset, or has a key and is that key's newest
record, and either has a value or is a tombstone whose delete horizon has not passed (the
first cleaning that keeps a tombstone sets the horizon: now + delete.retention.ms). Keyless
records go. Aborted data goes; markers go once their transaction is fully cleaned and their
horizon has passed (cleaned_transactions.py). A batch holding a producer's last sequence, or
ending at the round's upper bound, is kept even when emptied (61-byte header). Offsets are never
renumbered. The active segment is never touched.
"""

from __future__ import annotations

from dataclasses import dataclass
import bisect

import numpy as np

from ...errors import CorruptDataError
from ...format.batch import INT32_MAX, BatchHeader, parse_header
from ...format.batch_filter import filter_batch
from ...format.control import parse_control_key
from ...format.record_decoder import ColumnarDecoder, decode_batch
from ...format.records import RecordColumns
from ..log_files import (CLEANED_SUFFIX, CLEANING_INTENT, INDEX_SUFFIX, LOG_SUFFIX,
                         TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX, file_name)
from ..txn.cleaned_transactions import CleanedTransactions
from .local_log import replace_segments
from .log_config import LogConfig
from .log_retention import high_watermark
from .log_segment import LogSegment
from .offset_index import OffsetIndex
from .offset_map import OffsetMap
from .partition_log import PartitionLog
from .segment_indexer import SegmentIndexer
from .time_index import TimeIndex

# A producer idle this long with no open transaction is forgotten (producer.id.expiration.ms):
# its last batch no longer needs keeping.
PRODUCER_ID_EXPIRATION_MS = 24 * 3600 * 1000
_DECODER = ColumnarDecoder(verify_crc=False)   # batches are CRC-checked as they are read
_KEY_DECODER = ColumnarDecoder(verify_crc=False, fields={"key"})   # the map needs keys only


@dataclass
class CleanResult:
    topic: str
    partition: int
    first_dirty: int
    first_uncleanable: int
    end_offset: int              # the next first dirty offset (cleaner-offset-checkpoint)
    segments_read: int = 0
    segments_written: int = 0
    bytes_read: int = 0
    bytes_written: int = 0
    records_read: int = 0
    records_kept: int = 0
    map_entries: int = 0
    map_full: bool = False

    @property
    def cleaned(self) -> bool:
        return self.segments_read > 0


def cleanable_range(log: PartitionLog, checkpoint: int | None, config: LogConfig,
                    now_ms: int) -> tuple[int, int]:
    start, leo = log.log_start_offset, log.log_end_offset
    first_dirty = checkpoint if checkpoint is not None and start <= checkpoint <= leo else start
    bound = min(log.last_stable_offset(high_watermark(log)), log.segments[-1].base_offset)
    if config.min_compaction_lag_ms > 0:
        for segment in _overlapping(log.segments[:-1], first_dirty, bound):
            if segment.largest_timestamp > now_ms - config.min_compaction_lag_ms:
                bound = min(bound, segment.base_offset)
                break
    holding = log.segment_for(bound)   # whole segments only
    bound = max(first_dirty, holding.base_offset if holding is not None else bound)
    return first_dirty, bound


def _overlapping(segments: list[LogSegment], start: int, end: int) -> list[LogSegment]:
    """The segments holding offsets in [start, end): from the one holding `start` on."""
    bases = [s.base_offset for s in segments]
    first = max(0, bisect.bisect_right(bases, start) - 1)
    return [s for s in segments[first:] if s.base_offset < end]


def clean(log: PartitionLog, config: LogConfig, now_ms: int, checkpoint: int | None,
          offset_map: OffsetMap) -> CleanResult:
    """One cleaning of `log` (opened for append: its lock is held). The caller records
    `end_offset` in the cleaner-offset-checkpoint."""
    first_dirty, upper = cleanable_range(log, checkpoint, config, now_ms)
    result = CleanResult(log.topic, log.partition, first_dirty, upper, first_dirty)
    if first_dirty >= upper:
        return result
    round_ = _Round(log, config, now_ms, offset_map, upper, result)
    round_.build_offset_map(first_dirty)
    result.end_offset = offset_map.latest_offset + 1
    result.map_entries, result.map_full = len(offset_map), offset_map.full
    round_.clean_segments(result.end_offset, first_dirty)
    return result


class _Round:
    def __init__(self, log: PartitionLog, config: LogConfig, now_ms: int, offset_map: OffsetMap,
                 upper: int, result: CleanResult):
        self.log, self.config, self.now_ms, self.map = log, config, now_ms, offset_map
        self.upper, self.result = upper, result
        self.txns = CleanedTransactions()
        self.last_of_producers = {
            e.producer_id: e for e in log.producer_state.producers.values()
            if e.current_txn_first_offset >= 0
            or now_ms - e.last_timestamp < PRODUCER_ID_EXPIRATION_MS}

    # -- the offset map ---------------------------------------------------------------------
    def build_offset_map(self, start: int) -> None:
        txns = CleanedTransactions()
        txns.add_aborted(self.log.aborted_transactions(start, self.upper))
        self.map.latest_offset = start - 1
        segments = self.log.segments
        mapped = _overlapping(segments, start, self.upper)
        first = segments.index(mapped[0]) if mapped else 0
        for i, segment in enumerate(mapped, first):
            if not self._map_segment(segment, start, txns):
                return    # the map is full
            # a whole segment mapped: up to the next one's base (the active one at the latest)
            self.map.latest_offset = segments[i + 1].base_offset - 1

    def _map_segment(self, segment: LogSegment, start: int, txns: CleanedTransactions) -> bool:
        for header, entry in _batches(segment):
            if header.last_offset < start:
                continue
            if header.is_control:
                txns.on_control(header.producer_id, header.last_offset,
                                _control_type(header, entry))
            elif not txns.on_batch(header.producer_id, header.last_offset,
                                   header.is_transactional):
                columns = _decode(header, entry, keys_only=True)
                if self.map.put(columns.keys, columns.offsets, start) < columns.num_rows:
                    return False   # full: the records not put wait for the next pass
            self.map.latest_offset = max(self.map.latest_offset, header.last_offset)
        return True

    # -- rewriting ----------------------------------------------------------------------------
    def clean_segments(self, end_offset: int, first_dirty: int) -> None:
        log = self.log
        segments = [s for s in log.segments[:-1] if s.base_offset < end_offset]
        clean_below = [s for s in log.segments if s.base_offset < first_dirty]
        mtime = log.fs.mtime_ms(clean_below[-1].log_path) if clean_below else 0
        legacy_horizon = mtime - self.config.delete_retention_ms if clean_below else 0
        nexts = {s.base_offset: f.base_offset for s, f in zip(log.segments, log.segments[1:])}
        if not segments:
            return
        # Read before any swap: the swaps delete the files the transaction indexes are in.
        aborted = log.aborted_transactions(segments[0].base_offset,
                                           nexts[segments[-1].base_offset])
        # Every batch to rewrite is checked before the first swap: damage found half-way
        # would leave some groups swapped (the log valid, but changed before the error).
        for segment in segments:
            for _ in _batches(segment):
                pass
        # Readers must know how far the cleaner reaches before the checkpoint can say it (a
        # crash between the swaps and the checkpoint leaves cleaned segments past it); an
        # interrupted cleaning's announced reach is kept if it went further.
        previous = log.cleaning_intent()
        reach = end_offset if previous is None else max(previous, end_offset)
        log.fs.write_atomic(log.fs.join(log.directory, CLEANING_INTENT), b"%d\n" % reach,
                            fsync=self.config.fsync != "none")
        for group in group_segments_by_size(segments, self.config, self.upper):
            writer = _CleanedSegment(log.fs, log.directory, group[0].base_offset, self.config)
            try:
                for segment in group:
                    # Kafka's collectAbortedTransactions: a transaction whose marker lies below
                    # the log start offset is unknown (its data counts as committed)
                    upper = nexts[segment.base_offset]
                    lowest = max(segment.base_offset, log.log_start_offset)
                    self.txns.add_aborted(t for t in aborted if t.first_offset < upper
                                          and t.last_offset >= lowest)
                    retain_legacy_deletes = log.fs.mtime_ms(segment.log_path) > legacy_horizon
                    for header, entry in _batches(segment):
                        self.result.bytes_read += header.size
                        out = self.filter(header, entry, retain_legacy_deletes)
                        if out is not None:
                            writer.append(out)
                writer.finish(self.txns.kept_aborts, log.fs.mtime_ms(group[-1].log_path),
                              sync=self.config.fsync != "none")
            except BaseException:
                writer.discard()
                raise
            self.txns.kept_aborts = []
            replace_segments(log.fs, log.directory, [group[0].base_offset], group,
                             sync=self.config.fsync != "none")
            self.result.segments_read += len(group)
            self.result.segments_written += 1
            self.result.bytes_written += writer.size

    def filter(self, header: BatchHeader, entry, retain_legacy_deletes: bool) -> bytes | None:
        """checkBatchRetention + shouldRetainRecord + filterTo, for one batch."""
        if header.is_control:
            can_discard = self.txns.on_control(header.producer_id, header.last_offset,
                                               _control_type(header, entry))
            discard = (can_discard and header.has_delete_horizon
                       and header.base_timestamp <= self.now_ms)
        else:
            can_discard = self.txns.on_batch(header.producer_id, header.last_offset,
                                             header.is_transactional)
            discard = can_discard
        retain_empty = header.producer_id >= 0 and self._last_of_producer(header) \
            or header.next_offset == self.upper
        if discard and not retain_empty:
            return None
        columns = _decode(header, entry)
        count = columns.num_rows
        self.result.records_read += count
        if discard:
            keep = np.zeros(count, bool)
        elif header.is_control:
            keep = np.ones(count, bool)
        else:
            keep = self._keep_records(header, columns, retain_legacy_deletes)
        tombstone_kept = (not header.is_control and columns.values.valid is not None
                          and bool((keep & ~columns.values.valid).any()))
        horizon = None
        if header.magic >= 2 and not header.has_delete_horizon and (
                tombstone_kept or (can_discard and header.is_control)):
            horizon = self.now_ms + self.config.delete_retention_ms
        self.result.records_kept += int(keep.sum())
        return filter_batch(header, entry, columns, keep, retain_empty=retain_empty,
                            delete_horizon=horizon)

    def _last_of_producer(self, header: BatchHeader) -> bool:
        entry = self.last_of_producers.get(header.producer_id)
        if entry is None:
            return False
        if entry.last_offset >= 0:
            return header.last_offset == entry.last_offset
        return header.is_control and header.producer_epoch == entry.producer_epoch

    def _keep_records(self, header: BatchHeader, columns: RecordColumns,
                      retain_legacy_deletes: bool) -> np.ndarray:
        if header.magic >= 2:
            retain_deletes = (not header.has_delete_horizon
                              or self.now_ms < header.base_timestamp)
        else:
            retain_deletes = retain_legacy_deletes
        keys, offsets = columns.keys, columns.offsets
        has_key = np.ones(len(offsets), bool) if keys.valid is None else keys.valid
        has_value = (np.ones(len(offsets), bool) if columns.values.valid is None
                     else columns.values.valid)
        newest = offsets >= self.map.get(keys)     # a key not in the map: -1, so newest
        keep = (offsets > self.map.latest_offset) | (has_key & newest
                                                     & (has_value | retain_deletes))
        return keep


def group_segments_by_size(segments: list[LogSegment], config: LogConfig,
                           upper: int) -> list[list[LogSegment]]:
    """Consecutive segments merged while the result stays within segment.bytes, both index
    sizes within segment.index.bytes, and offsets within 2**31 of the group's base."""
    groups = []
    i = 0
    while i < len(segments):
        group = [segments[i]]
        size, index, time_index = (segments[i].size, len(segments[i].offset_index) * 8,
                                   len(segments[i].time_index) * 12)
        i += 1
        while i < len(segments):
            nxt = segments[i]
            last = segments[i + 1].base_offset - 1 if i + 1 < len(segments) else upper - 1
            if (size + nxt.size > config.segment_bytes
                    or index + len(nxt.offset_index) * 8 > config.segment_index_bytes
                    or time_index + len(nxt.time_index) * 12 > config.segment_index_bytes
                    or (nxt.size > 0 and last - group[0].base_offset > INT32_MAX)):
                break
            group.append(nxt)
            size += nxt.size
            index += len(nxt.offset_index) * 8
            time_index += len(nxt.time_index) * 12
            i += 1
        groups.append(group)
    return groups


def _batches(segment: LogSegment):
    return segment.iter_entries(0, verify_crc=True)


def _decode(header: BatchHeader, entry, keys_only: bool = False) -> RecordColumns:
    if header.magic < 2:
        return RecordColumns.from_records(decode_batch(entry, header, verify_crc=False).records)
    return (_KEY_DECODER if keys_only else _DECODER).decode([(header, entry)])


def _control_type(header: BatchHeader, entry) -> int | None:
    """The control record's type, or None for a control batch the cleaner emptied."""
    records = decode_batch(entry, header, verify_crc=False).records
    if not records:
        return None
    return parse_control_key(records[0].key)[1]


class _CleanedSegment:
    """A new segment written beside the live ones as `<base>.log.cleaned` and its indexes."""

    def __init__(self, fs, directory: str, base_offset: int, config: LogConfig):
        self.fs, self.directory, self.base = fs, directory, base_offset
        self.paths = {suffix: fs.join(directory, file_name(base_offset, suffix) + CLEANED_SUFFIX)
                      for suffix in (LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX,
                                     TXN_INDEX_SUFFIX)}
        self.file = fs.open_append(self.paths[LOG_SUFFIX])
        self.file.truncate(0)
        self.offset_index = OffsetIndex(base_offset, max_index_bytes=config.segment_index_bytes)
        self.time_index = TimeIndex(base_offset, max_index_bytes=config.segment_index_bytes)
        self.indexer = SegmentIndexer(self.offset_index, self.time_index,
                                      config.index_interval_bytes)
        self.size = 0

    def append(self, batch: bytes) -> None:
        header = parse_header(batch, 0, len(batch), base_position=self.size)
        if header is None:
            raise CorruptDataError("internal error: the cleaner built an incomplete batch",
                                   self.paths[LOG_SUFFIX], self.size)
        self.file.write_at(self.size, batch)
        self.indexer.add_batch(header)
        self.size += len(batch)

    def finish(self, aborted, mtime_ms: int, sync: bool) -> None:
        self.indexer.final_entry()
        if sync:
            self.file.fsync()
        self.file.close()
        self.fs.write_atomic(self.paths[INDEX_SUFFIX], self.offset_index.to_bytes(), fsync=sync)
        self.fs.write_atomic(self.paths[TIME_INDEX_SUFFIX], self.time_index.to_bytes(),
                             fsync=sync)
        if aborted:
            self.fs.write_atomic(self.paths[TXN_INDEX_SUFFIX],
                                 b"".join(t.to_bytes() for t in aborted), fsync=sync)
        for suffix in (LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX):
            self.fs.set_mtime_ms(self.paths[suffix], mtime_ms)

    def discard(self) -> None:
        self.file.close()
        for path in self.paths.values():
            self.fs.remove(path)
