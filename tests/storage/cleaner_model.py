"""A brute-force, record-level model of one cleaning by Kafka's log cleaner.

It is a second, independent reading of the cleaner's rules (Kafka's LogCleanerManager
cleanableOffsets, Cleaner.buildOffsetMap / cleanSegments / groupSegmentsBySize,
CleanedTransactionMetadata and MemoryRecords.filterTo; spec §2.8, §12.1), written without
looking at segmentlog's cleaner: the log is read with kafka-python (each `.log` split into
batches by its 12-byte offset/length prefix), the offset map is a plain dict (optionally capped
at Kafka's entry count, to model a small dedupe buffer), and every decision is made per batch
and per record in the order Kafka makes it. Legacy (magic 0/1) batches are read, for the
newest-value view, but a cleaning that would touch one is refused: their tombstones follow the
segment-mtime horizon, which no test here needs.

`cleaner_logs.read_partition(dir)` gives a PartitionState (read with kafka-python);
`clean(state, ...)` gives the Outcome: the whole
log after the cleaning (segments of batches, each cleaned segment with the aborted transactions
its `.txnindex` must list) and the new first dirty offset (the cleaner-offset-checkpoint).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
import heapq
import struct

ABORT, COMMIT = 0, 1
INT32_MAX = 2**31 - 1
PRODUCER_ID_EXPIRATION_MS = 86_400_000      # producer.id.expiration.ms default
SLOT_BYTES = 24                             # SkimpyOffsetMap: MD5 (16) + offset (8)
LOAD_FACTOR = 0.9                           # log.cleaner.io.buffer.load.factor
UNKNOWN_SIZE_LIMIT = 64 * 1024**2


@dataclass(frozen=True)
class Rec:
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple


@dataclass(frozen=True)
class Batch:
    base: int
    last: int
    records: tuple[Rec, ...]
    codec: int
    log_append_time: bool
    transactional: bool
    control: bool
    delete_horizon: int | None
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    leader_epoch: int
    magic: int = 2
    raw: bytes | None = field(default=None, compare=False)  # on-disk bytes, if unchanged

    @property
    def control_type(self) -> int | None:
        if not self.control or not self.records or self.records[0].key is None:
            return None
        return struct.unpack(">hh", self.records[0].key[:4])[1]

    def view(self) -> tuple:
        """Everything a reader can see of the batch, for an exact comparison."""
        return (self.magic, self.base, self.last, self.control, self.transactional,
                self.producer_id, self.producer_epoch, self.base_sequence, self.leader_epoch,
                self.codec, self.log_append_time, self.delete_horizon, self.base_timestamp,
                self.max_timestamp, tuple((r.offset, r.timestamp, r.key, r.value, r.headers)
                                          for r in self.records))


@dataclass(frozen=True)
class AbortedTxn:
    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int


@dataclass
class Segment:
    base: int
    batches: list[Batch]
    size: int | None                 # .log bytes (None: not known, a modelled rewrite)
    index_bytes: int = 0
    time_index_bytes: int = 0
    mtime_ms: int = 0
    aborted: list[AbortedTxn] = field(default_factory=list)   # its .txnindex

    @property
    def largest_timestamp(self) -> int:
        """LogSegment.largestTimestamp: the newest batch timestamp, else the file's mtime."""
        newest = max((b.max_timestamp for b in self.batches), default=-1)
        return newest if newest >= 0 else self.mtime_ms

    @property
    def next_offset(self) -> int:
        return self.batches[-1].last + 1 if self.batches else self.base


@dataclass
class PartitionState:
    topic: str
    partition: int
    segments: list[Segment]
    log_start: int
    checkpoint: int | None           # cleaner-offset-checkpoint entry
    high_watermark: int | None       # replication-offset-checkpoint entry (None: the LEO)

    @property
    def log_end(self) -> int:
        return self.segments[-1].next_offset

    @property
    def hw(self) -> int:
        hw = self.log_end if self.high_watermark is None else self.high_watermark
        return max(self.log_start, min(hw, self.log_end))

    def batches(self):
        return [b for s in self.segments for b in s.batches]

    @property
    def txn_index(self) -> list[AbortedTxn]:
        return [t for s in self.segments for t in s.aborted]


# -- producer state (ProducerStateManager, by replaying the batches) -----------------------------
@dataclass
class Producer:
    epoch: int
    last_data_offset: int | None = None    # absent once a marker bumped the epoch
    last_timestamp: int = -1
    txn_first: int | None = None           # the open transaction's first offset


@dataclass(frozen=True)
class CompletedTxn:
    producer_id: int
    first_offset: int
    marker_offset: int
    aborted: bool


def replay_producers(batches) -> tuple[dict[int, Producer], list[CompletedTxn]]:
    producers: dict[int, Producer] = {}
    completed: list[CompletedTxn] = []
    for b in batches:
        if b.producer_id < 0:
            continue
        if b.control and not b.records:
            continue    # an emptied marker: its transaction is already gone
        p = producers.setdefault(b.producer_id, Producer(b.producer_epoch))
        if b.producer_epoch != p.epoch:          # maybeUpdateProducerEpoch clears the batches
            p.epoch, p.last_data_offset = b.producer_epoch, None
        if b.control:
            if b.control_type not in (ABORT, COMMIT):
                continue
            p.last_timestamp = b.records[0].timestamp
            if p.txn_first is not None:
                completed.append(CompletedTxn(b.producer_id, p.txn_first, b.records[0].offset,
                                              b.control_type == ABORT))
            p.txn_first = None
        else:
            p.last_data_offset, p.last_timestamp = b.last, b.max_timestamp
            if b.transactional and p.txn_first is None:
                p.txn_first = b.base
    return producers, completed


def active_producers(producers: dict[int, Producer], now: int) -> dict[int, Producer]:
    """removeExpiredProducers: idle producers without an open transaction are forgotten."""
    return {pid: p for pid, p in producers.items()
            if p.txn_first is not None or now - p.last_timestamp < PRODUCER_ID_EXPIRATION_MS}


def aborted_by_replay(batches) -> list[tuple[int, int, int]]:
    """(pid, first offset, marker offset) of every aborted transaction, as .txnindex lists them."""
    return [(t.producer_id, t.first_offset, t.marker_offset)
            for t in replay_producers(batches)[1] if t.aborted]


def last_stable_offset(state: PartitionState, producers, completed) -> int:
    """UnifiedLog.lastStableOffset: the first unstable offset (an open transaction, or one whose
    marker is not below the high watermark) if below the high watermark, else the HW."""
    hw = state.hw
    unstable = [p.txn_first for p in producers.values() if p.txn_first is not None]
    unstable += [t.first_offset for t in completed if t.marker_offset >= hw]
    first = min(unstable, default=None)
    return max(state.log_start, first) if first is not None and first < hw else hw


# -- the transactions a cleaning tracks (CleanedTransactionMetadata) -----------------------------
class TxnTracker:
    def __init__(self):
        self._heap: list = []
        self._seq = 0
        self.ongoing_aborted: dict[int, list] = {}   # pid -> [AbortedTxn, observed a batch]
        self.ongoing_committed: set[int] = set()

    def add(self, entries) -> None:
        for e in entries:
            heapq.heappush(self._heap, (e.first_offset, self._seq, e))
            self._seq += 1

    def _consume(self, upto: int) -> None:
        while self._heap and self._heap[0][0] <= upto:
            e = heapq.heappop(self._heap)[2]
            self.ongoing_aborted.setdefault(e.producer_id, [e, False])

    def on_batch(self, b: Batch) -> bool:
        """True: the batch belongs to an aborted transaction."""
        self._consume(b.last)
        if not b.transactional:
            return False
        if b.producer_id in self.ongoing_aborted:
            self.ongoing_aborted[b.producer_id][1] = True
            return True
        self.ongoing_committed.add(b.producer_id)
        return False

    def on_control(self, b: Batch, kept_entries: list | None = None) -> bool:
        """True: the marker may go (once its horizon passed). An ABORT marker whose transaction
        still has batches keeps its txn index entry (appended to `kept_entries`)."""
        self._consume(b.last)
        if not b.records:
            return True
        kind = b.control_type
        if kind == ABORT:
            entry = self.ongoing_aborted.pop(b.producer_id, None)
            if entry is not None and entry[1]:
                if kept_entries is not None:
                    kept_entries.append(entry[0])
                return False
            return True
        if kind == COMMIT:
            if b.producer_id in self.ongoing_committed:
                self.ongoing_committed.remove(b.producer_id)
                return False
            return True
        return False


def collect_aborted(state: PartitionState, from_offset: int, upper: int) -> list[AbortedTxn]:
    """LocalLog.collectAbortedTransactions: the txn indexes from the segment holding
    `from_offset` on, entries not wholly below the log start and beginning below `upper`."""
    floor = _floor(state.segments, from_offset)
    return [t for s in state.segments if s.base >= floor for t in s.aborted
            if t.last_offset >= state.log_start and t.first_offset < upper]


def _floor(segments: list[Segment], offset: int) -> int:
    below = [s.base for s in segments if s.base <= offset]
    return below[-1] if below else segments[0].base


# -- one cleaning -------------------------------------------------------------------------------
@dataclass(frozen=True)
class Settings:
    now: int
    delete_retention_ms: int = 86_400_000
    min_compaction_lag_ms: int = 0
    segment_bytes: int = 1024**3
    segment_index_bytes: int = 10 * 1024**2
    map_entries: int | None = None      # None: unbounded

    @staticmethod
    def entries_for(dedupe_buffer_bytes: int) -> int:
        return int((dedupe_buffer_bytes // SLOT_BYTES) * LOAD_FACTOR)


@dataclass
class Outcome:
    segments: list[Segment]
    first_dirty: int
    first_uncleanable: int
    end_offset: int                # the new first dirty offset
    map_full: bool = False
    cleaned_segments: int = 0      # segments[:cleaned_segments] are the cleaner's rewrites

    @property
    def cleaned(self) -> bool:
        return self.cleaned_segments > 0


def cleanable_range(state: PartitionState, cfg: Settings, producers, completed):
    start, segments = state.log_start, state.segments
    cp = state.checkpoint
    first_dirty = cp if cp is not None and start <= cp <= state.log_end else start
    active = segments[-1].base
    bound = min(last_stable_offset(state, producers, completed), active)
    if cfg.min_compaction_lag_ms > 0:
        floor = _floor(segments, first_dirty)
        for s in segments[:-1]:
            if s.base >= floor and s.largest_timestamp > cfg.now - cfg.min_compaction_lag_ms:
                bound = min(bound, s.base)
                break
    bound = max(first_dirty, bound)
    # LogToClean.firstUncleanableOffset: the base of the (non-active) segment holding it
    first_uncleanable = _floor(segments[:-1], bound) if bound < active else active
    return first_dirty, first_uncleanable


def build_offset_map(state: PartitionState, start: int, end: int, cfg: Settings):
    """Cleaner.buildOffsetMap: key -> newest offset over [start, end), and the map's latest
    offset. Returns (map, latest offset, stopped because full)."""
    offsets: dict[bytes, int] = {}
    latest = -1
    txns = TxnTracker()
    txns.add(collect_aborted(state, start, end))
    floor = _floor(state.segments, start)
    dirty = [s for s in state.segments if floor <= s.base < end]
    for i, seg in enumerate(dirty):
        for b in seg.batches:
            if b.control:
                txns.on_control(b)
            elif not txns.on_batch(b):
                for r in b.records:
                    if r.key is None or r.offset < start:
                        continue
                    # the fill check comes before every put, even of a key already mapped
                    if cfg.map_entries is not None and not len(offsets) < cfg.map_entries:
                        return offsets, latest, True
                    offsets[r.key] = r.offset
                    latest = r.offset
            if b.last >= start:
                latest = b.last
        latest = (dirty[i + 1].base if i + 1 < len(dirty) else end) - 1
    return offsets, latest, False


def _size(segment: Segment, cfg: Settings) -> int:
    """A segment the model rewrote has no known size (recompressed bytes cannot be predicted);
    it is taken as 0, which only holds while segment.bytes dwarfs the whole log."""
    if segment.size is not None:
        return segment.size
    if cfg.segment_bytes < UNKNOWN_SIZE_LIMIT:
        raise ValueError("a modelled segment has no known size: cannot group it by size")
    return 0


def group_by_size(segments: list[Segment], cfg: Settings, first_uncleanable: int):
    """Cleaner.groupSegmentsBySize: consecutive segments while the sums fit."""
    groups, rest = [], list(segments)
    while rest:
        group = [rest.pop(0)]
        size = _size(group[0], cfg)
        index, time_index = group[0].index_bytes, group[0].time_index_bytes
        while rest:
            nxt = rest[0]
            last = (rest[1].base if len(rest) > 1 else first_uncleanable) - 1
            if not (size + _size(nxt, cfg) <= cfg.segment_bytes
                    and index + nxt.index_bytes <= cfg.segment_index_bytes
                    and time_index + nxt.time_index_bytes <= cfg.segment_index_bytes
                    and (nxt.size == 0 or last - group[0].base <= INT32_MAX)):
                break
            group.append(rest.pop(0))
            size += _size(nxt, cfg)
            index += nxt.index_bytes
            time_index += nxt.time_index_bytes
        groups.append(group)
    return groups


class _Filter:
    """MemoryRecords.filterTo with the cleaner's RecordFilter, one batch at a time."""

    def __init__(self, cfg: Settings, offsets: dict, latest: int, upper: int, active: dict):
        self.cfg, self.offsets, self.latest, self.upper = cfg, offsets, latest, upper
        self.active = active
        self.txns = TxnTracker()

    def _last_of_producer(self, b: Batch) -> bool:
        p = self.active.get(b.producer_id)
        if p is None:
            return False
        if p.last_data_offset is not None:
            return b.last == p.last_data_offset
        return b.control and b.producer_epoch == p.epoch

    def _retain_record(self, b: Batch, r: Rec) -> bool:
        if r.offset > self.latest:
            return True                  # not mapped this round: kept whatever it is
        if r.key is None:
            return False
        newest = r.offset >= self.offsets.get(r.key, -1)
        keep_deletes = b.delete_horizon is None or self.cfg.now < b.delete_horizon
        return newest and (r.value is not None or keep_deletes)

    def batch(self, b: Batch, kept_entries: list) -> Batch | None:
        cfg = self.cfg
        discardable = self.txns.on_control(b, kept_entries) if b.control else self.txns.on_batch(b)
        if b.control:
            drop_records = (discardable and b.delete_horizon is not None
                            and b.delete_horizon <= cfg.now)
        else:
            drop_records = discardable
        if b.producer_id >= 0 and self._last_of_producer(b):
            retain_empty = True
        elif b.last + 1 == self.upper:
            retain_empty = True
        elif drop_records:
            return None                  # BatchRetention.DELETE
        else:
            retain_empty = False         # DELETE_EMPTY
        if drop_records:
            kept = []
        elif b.control:
            kept = list(b.records)
        else:
            kept = [r for r in b.records if self._retain_record(b, r)]
        if not kept:
            if not retain_empty:
                return None
            # DefaultRecordBatch.writeEmptyHeader
            return replace(b, records=(), codec=0, delete_horizon=None, base_timestamp=-1,
                           raw=None)
        marker_of_empty_txn = discardable and b.control
        tombstones = any(r.value is None for r in kept)
        set_horizon = (tombstones or marker_of_empty_txn) and b.delete_horizon is None
        if len(kept) == len(b.records) and not set_horizon:
            return b                     # the original bytes, copied
        horizon = cfg.now + cfg.delete_retention_ms if set_horizon else b.delete_horizon
        if b.log_append_time:
            max_ts = b.max_timestamp
        else:
            max_ts = max(r.timestamp for r in kept)
        base_ts = horizon if horizon is not None else kept[0].timestamp
        return replace(b, records=tuple(kept), delete_horizon=horizon, base_timestamp=base_ts,
                       max_timestamp=max_ts, raw=None)


def clean(state: PartitionState, cfg: Settings, producers: dict[int, Producer] | None = None
          ) -> Outcome:
    """One cleaning of `state` at `cfg.now`. `producers`: the producer state at the log end
    (default: a replay of this log; a broker keeps it across cleanings in memory, so a later
    cleaning should get the replay of everything ever appended)."""
    completed = replay_producers(state.batches())[1]
    if producers is None:
        producers = replay_producers(state.batches())[0]
    first_dirty, upper = cleanable_range(state, cfg, producers, completed)
    if first_dirty >= upper:
        return Outcome(state.segments, first_dirty, upper, first_dirty)
    if any(b.magic < 2 for s in state.segments if s.base < upper for b in s.batches):
        raise NotImplementedError("the model cleans v2 batches only")
    offsets, latest, full = build_offset_map(state, first_dirty, upper, cfg)
    end_offset = latest + 1
    to_clean = [s for s in state.segments if s.base < end_offset]
    keep = [s for s in state.segments if s.base >= end_offset]
    filt = _Filter(cfg, offsets, latest, upper, active_producers(producers, cfg.now))
    cleaned = []
    for group in group_by_size(to_clean, cfg, upper):
        out = Segment(group[0].base, [], None, mtime_ms=group[-1].mtime_ms)
        for seg in group:
            following = [s for s in state.segments if s.base > seg.base]
            upper_txn = following[0].base if following else seg.next_offset
            filt.txns.add(collect_aborted(state, seg.base, upper_txn))
            for b in seg.batches:
                kept = filt.batch(b, out.aborted)
                if kept is not None:
                    out.batches.append(kept)
        if all(b.raw is not None for b in out.batches):
            out.size = sum(len(b.raw) for b in out.batches)
        cleaned.append(out)
    return Outcome(cleaned + keep, first_dirty, upper, end_offset, full, len(cleaned))


def clean_until_done(state: PartitionState, cfg: Settings, producers=None) -> list[Outcome]:
    """Cleanings one after the other, as long as a full map left part of the range dirty (a
    broker's later cleaner runs, with the clock standing still)."""
    history = replay_producers(state.batches())[0] if producers is None else producers
    outcomes = []
    while True:
        out = clean(state, cfg, history)
        outcomes.append(out)
        if not out.map_full or out.end_offset >= out.first_uncleanable:
            return outcomes
        state = replace(state, segments=out.segments, checkpoint=out.end_offset)


# -- what a compacted topic says ------------------------------------------------------------------
def newest_values(batches, from_offset: int = 0) -> dict[bytes, tuple[int, bytes | None]]:
    """key -> (offset, value) of each key's newest record at or after `from_offset` that no
    ABORT marker ended (open transactions count), keyless records left out; a tombstone's
    value is None."""
    pending: dict[int, list[Rec]] = {}      # pid -> records of its open transaction
    newest: dict[bytes, tuple[int, bytes | None]] = {}

    def apply(records):
        for r in records:
            if r.offset < from_offset or r.key is None:
                continue
            if r.key not in newest or newest[r.key][0] < r.offset:
                newest[r.key] = (r.offset, r.value)

    for b in batches:
        if b.control:
            if b.control_type in (ABORT, COMMIT):
                records = pending.pop(b.producer_id, [])
                if b.control_type == COMMIT:
                    apply(records)
        elif b.transactional:
            pending.setdefault(b.producer_id, []).extend(b.records)
        else:
            apply(b.records)
    for records in pending.values():
        apply(records)
    return newest

