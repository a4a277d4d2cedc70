"""`segmentlog verify`: check every partition directory under the given paths, file by file.

Errors (exit status 1) are what a broker or a consumer would trip over or silently get wrong:
a bad CRC, a batch or record that does not decode, offsets that do not increase (within a
batch, across batches and across segments), a torn or garbage tail, an unreadable producer
snapshot or checkpoint, an index that fails its sanity check, is not trimmed on a closed segment,
or has an entry that is not a batch start or would make a lookup skip data, and a `.txnindex`
entry that names no ABORT marker.

A problem that follows from another is listed under it, marked as such: an index that disagrees
with a damaged batch, offsets that do not follow a damaged batch's, data lost past where a
damaged segment's scan stopped. One flipped byte is one cause, then its echoes.

Warnings (exit status 0 unless --strict) are differences that brokers legitimately produce:
index entries DumpLogSegments --verify-index-only would report as mismatches, indexes of closed
segments that differ from the ones rebuilt from the `.log` (follower, cleaner or restarted
segments), and missing index files (the broker rebuilds them at load).

A path may be a URI (s3://bucket/kafka-logs, with --fs-option for the store): the tree is listed
once, then read with ranged reads; nothing is written, and problems name the objects.
"""

from __future__ import annotations

import bisect
import sys

import numpy as np

from ..errors import BadOptionError, CorruptDataError, DataLossError
from ..format.batch import INT32_MAX, BatchHeader
from ..format.record_decoder import ColumnarDecoder, decode_batch
from ..storage.log.abstract_index import DEFAULT_INDEX_INTERVAL_BYTES
from ..storage.log.batch_sequence import BatchSequence
from ..storage.log.checkpoints import read_leader_epoch_checkpoint, read_partition_metadata
from ..plan.partition_sources import find_local_partitions
from ..storage.log.log_directory import PartitionDir
from ..storage.log.log_segment import LogSegment
from ..storage.log.offset_index import OffsetIndex
from ..storage.log.partition_log import PartitionLog
from ..storage.log.segment_indexer import rebuild_indexes
from ..storage.log.time_index import TimeIndex
from ..storage.log_files import (INDEX_SUFFIXES, LEADER_EPOCH_CHECKPOINT, LOG_SUFFIX,
                                 PARTITION_METADATA, kind_of)
from ..storage.txn.producer_state_manager import (checked_end_txn_marker, read_snapshot,
                                                   snapshot_offsets, snapshot_path)
from ..storage.txn.transaction_index import TXN_ENTRY_SIZE
from .progress import Progress, show_bar
from .verify_batches import SegmentBatches
from .verify_report import PartitionReport, Reporter

HELP = "check every segment and index of partition directories; exit 1 on any error"


def partition_dirs(paths: list[str], config=None) -> list[PartitionDir]:
    """Partition directories under each path (local, or a URI whose store `config`, a
    StoreConfig, reaches), each with the file system that serves it. Paths are searched one by
    one: two data directories (two brokers) may well hold replicas of the same partition."""
    return [p for path in paths for p in find_local_partitions([path], config)]


def log_bytes(part: PartitionDir) -> int:
    """The bytes of a partition's `.log` files, from its listing (a progress bar's total)."""
    fs = part.fs
    return sum(fs.size(fs.join(part.path, name)) for name in fs.list_dir(part.path)
               if (kind_of(name) or (None, None))[1] == LOG_SUFFIX)


def verify_paths(paths: list[str], *, index_interval_bytes: int = DEFAULT_INDEX_INTERVAL_BYTES,
                 config=None) -> list[PartitionReport]:
    return [verify_partition(p.path, index_interval_bytes=index_interval_bytes, fs=p.fs)
            for p in partition_dirs(paths, config)]


def verify_partition(path: str, *, index_interval_bytes: int = DEFAULT_INDEX_INTERVAL_BYTES,
                     fs=None, progress=None) -> PartitionReport:
    """Check one partition directory; `fs` serves it (None: the one its path names). Every
    problem is reported against the file it is in, and checking goes on past it. `progress`
    is called with the bytes of each segment checked."""
    opened = []
    try:
        log = PartitionLog.open(path, fs)
    except CorruptDataError as err:   # the data directory's log start checkpoint
        opened.append(err)
        log = PartitionLog.open(path, fs, read_log_start_checkpoint=False)
    report = PartitionReport(log.name, path, segments=len(log.segments))
    problems = Reporter(report)
    for err in opened:
        problems.located(err, path)
    snapshots = _check_small_files(log, problems)
    checker = _LogChecker(log, report, problems)
    leo, batches = None, None
    following = [s.base_offset for s in log.segments[1:]] + [None]
    earlier = _EarlierStarts(log.segments[0].base_offset if log.segments else 0)
    for segment, next_base in zip(log.segments, following):
        batches = checker.check_segment(segment, next_base)
        if progress is not None:
            progress(segment.size)
        if segment.active and batches.complete:
            leo = batches.last_offsets[-1] + 1 if batches.last_offsets else segment.base_offset
        # A closed segment's indexes are final; so are the active one's after a clean close,
        # which leaves a producer snapshot at the log end offset.
        closed = not segment.active or (leo is not None and snapshots and snapshots[-1] == leo)
        # Below this offset the cleaner may have removed records (aborted data among them)
        cleaned_below = ((checker.dirty_from if checker.dirty_from is not None else 2**63)
                         if checker.compacted else -1)
        _check_indexes(segment, batches, closed, snapshots, index_interval_bytes, problems,
                       earlier, cleaned_below, log.log_start_offset)
        earlier.add(batches)
    if leo is not None:
        try:
            for what in log.lost_data(end=leo):   # (the last segment's damage may end it early)
                problems.error(path, None, f"data loss: {what}",
                               cause=batches.tail_cause() if batches is not None
                               and getattr(what, "past_end", False) else None)
        except CorruptDataError as err:   # a data-directory checkpoint that is no checkpoint
            problems.located(err, path)
    problems.finish()
    return report


def _check_small_files(log: PartitionLog, problems: Reporter) -> list[int]:
    fs, directory = log.fs, log.directory
    snapshots = snapshot_offsets(directory, fs)
    for offset in snapshots:
        try:
            read_snapshot(snapshot_path(directory, offset, fs), fs)
        except CorruptDataError as err:
            problems.located(err, snapshot_path(directory, offset, fs))
    for name, read in ((LEADER_EPOCH_CHECKPOINT, read_leader_epoch_checkpoint),
                       (PARTITION_METADATA, read_partition_metadata)):
        try:
            read(fs.join(directory, name), fs)
        except CorruptDataError as err:
            problems.located(err, fs.join(directory, name))
    first = log.segments[0].base_offset if log.segments else None
    for name in fs.list_dir(directory):
        kind = kind_of(name)
        if (kind is not None and kind[1] in INDEX_SUFFIXES and first is not None
                and kind[0] < first):
            problems.warning(fs.join(directory, name), None, "index file without a .log, below "
                             "the first segment (left by retention; the broker deletes it)")
    return snapshots


class _EarlierStarts:
    """Where the transactions of the segments checked so far began: a `.txnindex` entry may
    name a first offset in an earlier segment (a transaction spanning a roll)."""

    def __init__(self, first_base: int):
        self.first_base = first_base   # (a transaction that began below it: not ours to know)
        self.starts: set[tuple[int, int]] = set()
        self.complete = True   # every earlier segment scanned to its end

    def add(self, batches: SegmentBatches) -> None:
        self.starts.update(batches.txn_starts)
        # (a torn tail lost the batches after it: their transactions' entries say no more)
        self.complete = self.complete and batches.complete and not batches.torn


class _LogChecker:
    """Scans every batch of every segment, in order, keeping the previous batch's last offset."""

    def __init__(self, log: PartitionLog, report: PartitionReport, problems: Reporter):
        self.report = report
        self.problems = problems
        try:
            self.compacted, self.dirty_from = log.compacted, log.dirty_from
        except CorruptDataError as err:   # the data directory's cleaner-offset-checkpoint
            problems.located(err, log.directory)
            self.compacted, self.dirty_from = False, None
        self.sequence: BatchSequence | None = None
        self.decoder = ColumnarDecoder(verify_crc=False, fields=())

    def check_segment(self, segment: LogSegment, next_base: int | None) -> SegmentBatches:
        """Check one segment; `next_base` is the next segment's base offset (None: the last)."""
        batches = SegmentBatches()
        self.sequence = BatchSequence(segment.log_path, segment.base_offset,
                                      compacted=self.compacted, dirty_from=self.dirty_from)
        scan = segment.iter_entries(allow_torn_tail=True)
        try:
            self.report.size += segment.size
            for header, entry in scan:
                self._check_batch(segment, header, entry, batches)
        except CorruptDataError as err:   # the batch the scan could not read is damaged
            batches.damage.setdefault(len(batches.positions),
                                      self.problems.located(err, segment.log_path))
            batches.complete = False
        if scan.torn_tail is not None:
            batches.torn = True
            tail = scan.torn_tail
            batches.damage.setdefault(len(batches.positions), self.problems.error(
                segment.log_path, tail.position, f"the last {tail.length} bytes are not a whole "
                "batch (a torn write, or garbage; broker recovery truncates them)"))
        try:
            if next_base is not None and batches.complete:
                self.sequence.next_offset_is(next_base, scan.position, next_segment=True)
            self.sequence.finish()
        except CorruptDataError as err:
            problem = self.problems.located(err, segment.log_path)
            j = None if err.position is None else batches.at_position(err.position)
            if j is not None:   # (a gap found at the end: the batch after it is the damaged)
                batches.damage.setdefault(j, problem)
        except DataLossError as err:
            self.problems.error(segment.log_path, None, str(err))
        self.compacted = self.sequence.compacted
        return batches

    def _check_batch(self, segment: LogSegment, header: BatchHeader, entry, batches) -> None:
        path, where = segment.log_path, header.position
        self.report.batches += 1
        if not 0 <= header.last_offset - segment.base_offset <= INT32_MAX:
            self.problems.error(path, where, f"last offset {header.last_offset} does not fit "
                                f"relative to the segment base offset {segment.base_offset}")
        offsets, max_timestamp = np.empty(0, np.int64), header.max_timestamp
        j, before = len(batches.positions), len(self.report.problems)
        if not header.crc_is_valid(entry):
            self.problems.error(path, where, f"CRC mismatch: stored {header.crc}, computed "
                                f"{header.compute_crc(entry)}", kind="CRC mismatch")
        else:
            try:
                offsets, max_timestamp = self._decode(header, entry, batches)
            except CorruptDataError as err:  # record errors are located at their batch
                self.problems.error(path, where, err.reason)
        first_known = header.first_offset_known or not len(offsets)
        base = header.base_offset if first_known else int(offsets[0])
        batches.add(header, base, max_timestamp)
        self.report.records += len(offsets)
        if len(offsets) and not (base <= offsets[0] and offsets[-1] <= header.last_offset):
            self.problems.error(path, where, f"record offsets {offsets[0]}..{offsets[-1]} lie "
                                f"outside the batch's {base}..{header.last_offset}")
        if (np.diff(offsets) <= 0).any():
            self.problems.error(path, where, "record offsets do not increase within the batch")
        try:
            self.sequence.add(header, base)
        except CorruptDataError as err:   # reported; the scan goes on from this batch
            # (offsets that do not follow a damaged batch's: an echo of that damage)
            self.problems.located(err, path, cause=batches.damage.get(j - 1))
            self.sequence.rewind(header.last_offset)
        if self.report.first_offset is None:
            self.report.first_offset = base
        self.report.last_offset = header.last_offset
        found = [p for p in self.report.problems[before:] if p.cause is None]
        if found:
            batches.damage[j] = found[0]

    def _decode(self, header: BatchHeader, entry, batches) -> tuple[np.ndarray, int]:
        """(record offsets, max record timestamp) of a batch; structure errors raise."""
        if header.magic >= 2 and not header.is_control:
            columns = self.decoder.decode([(header, entry)])
            timestamps = columns.timestamps
            # an emptied batch (the cleaner's, §2.8) keeps its maxTimestamp, which the broker
            # indexed when it appended the batch: that is its largest timestamp
            return columns.offsets, (int(timestamps.max()) if len(timestamps)
                                     else header.max_timestamp)
        records = decode_batch(entry, header, verify_crc=False).records
        if header.is_control:
            marker = checked_end_txn_marker(header, entry)   # a well-formed marker, or corrupt
            if marker is not None:
                batches.markers[records[0].offset] = header.producer_id
            if marker is not None and marker[0]:
                batches.abort_markers[records[0].offset] = header.producer_id
        return (np.array([r.offset for r in records], np.int64),
                max((r.timestamp for r in records), default=-1))


def _check_indexes(segment: LogSegment, batches: SegmentBatches, closed: bool, snapshots,
                   interval: int, problems: Reporter, earlier: _EarlierStarts,
                   cleaned_below: int = -1, log_start: int = 0) -> None:
    fs = segment.fs
    missing = [p for p in (segment.index_path, segment.time_index_path) if not fs.exists(p)]
    if missing:
        names = " and ".join(fs.basename(p) for p in missing)
        problems.warning(fs.dirname(segment.log_path), None,
                         f"{names} missing (the broker rebuilds them when it loads the log)")
    offset_index = _open_index(OffsetIndex, segment.index_path, segment, closed, problems)
    time_index = _open_index(TimeIndex, segment.time_index_path, segment, closed, problems)
    if batches.complete:
        # A writer may append to the active segment while we check: its index entries for
        # batches written after our scan are not errors (those of a closed segment are).
        live = not closed
        if offset_index is not None:
            _check_offset_entries(offset_index, batches, problems, live)
        if time_index is not None:
            _check_time_entries(time_index, batches, problems, live)
            if not segment.active:
                _check_largest_timestamp(time_index, batches, problems)
        if closed and offset_index is not None and time_index is not None:
            _compare_with_rebuilt(segment, offset_index, time_index, snapshots, interval, problems,
                                  batches)
    try:
        _check_txn_index(segment, batches, problems, closed, earlier, cleaned_below, log_start)
    except CorruptDataError as err:
        problems.located(err, segment.txn_index_path)


def _open_index(cls, path: str, segment: LogSegment, closed: bool, problems: Reporter):
    if not segment.fs.exists(path):
        return None
    try:
        index = cls.open(path, segment.base_offset, segment.fs)
        if cls is OffsetIndex:
            index.sanity_check(log_size=segment.size)
        else:
            index.sanity_check()
    except CorruptDataError as err:
        problems.located(err, path)
        return None
    if closed and not index.is_trimmed:
        problems.error(path, len(index) * index.dtype.itemsize, "the index of a closed segment is "
                       "not trimmed: a broker reads every slot of the file as an entry")
    return index


def _check_offset_entries(index: OffsetIndex, batches: SegmentBatches, problems: Reporter,
                          live: bool = False):
    scanned_end = batches.positions[-1] if batches.positions else 0
    last = batches.last_offsets[-1] if batches.last_offsets else None
    for i in range(len(index)):
        offset, position = index.entry(i)
        where = i * index.dtype.itemsize
        if live and position > scanned_end:
            break
        if last is not None and offset > last:   # readers take it for where the segment ends
            problems.error(index.path, where, f"entry {i} names offset {offset}, past the "
                           f"segment's last batch (which ends at {last})",
                           kind="entry past the end", cause=batches.cause_at(offset=offset))
            continue
        j = batches.at_position(position)
        if j is None:
            problems.error(index.path, where, f"entry {i} ({offset}, {position}): byte {position} "
                           "is not the start of a batch", kind="entry not at a batch start",
                           cause=batches.cause_at(position=position))
            continue
        if batches.base_offsets[j] > offset or (j > 0 and batches.last_offsets[j - 1] >= offset):
            problems.error(index.path, where, f"entry {i} says offset {offset} is at byte "
                           f"{position}, but the batch there holds "
                           f"{batches.base_offsets[j]}..{batches.last_offsets[j]}",
                           kind="entry at the wrong batch", cause=batches.cause_at(j))
        elif batches.last_offsets[j] != offset:
            problems.warning(index.path, where, f"entry {i}: offset {offset}, but the batch at "
                             f"byte {position} ends at {batches.last_offsets[j]} (DumpLogSegments "
                             "mismatch; normal for follower and cleaner indexes)",
                             kind="index mismatch", cause=batches.cause_at(j))


def _check_time_entries(index: TimeIndex, batches: SegmentBatches, problems: Reporter,
                        live: bool = False):
    last_offsets = batches.last_offsets
    for i in range(len(index)):
        timestamp, offset = index.entry(i)
        where = i * index.dtype.itemsize
        if live and (not last_offsets or offset > last_offsets[-1]):
            break
        j = bisect.bisect_left(last_offsets, offset)
        if j == len(last_offsets):
            problems.error(index.path, where, f"entry {i} ({timestamp}, {offset}): offset {offset} "
                           "is past the segment's last batch", kind="entry past the end",
                           cause=batches.cause_at(offset=offset))
        elif batches.base_offsets[j] > offset:
            problems.error(index.path, where, f"entry {i} ({timestamp}, {offset}): no batch holds "
                           f"offset {offset}", kind="entry in no batch", cause=batches.cause_at(j))
        else:
            if last_offsets[j] != offset:
                problems.warning(index.path, where, f"entry {i}: offset {offset} is not a "
                                 f"batch's last offset (DumpLogSegments 'not found'; normal for "
                                 "3.7 and older leaders)", kind="time index offset not found",
                                 cause=batches.cause_at(j))
            # An entry is written where the running maximum rose: to the largest timestamp of
            # the batch holding its offset. Another value misleads every lookup by time.
            if batches.record_max_timestamps[j] != timestamp:
                problems.error(index.path, where, f"entry {i}: timestamp {timestamp}, but the "
                               f"largest record timestamp of the batch holding offset {offset} "
                               f"is {batches.record_max_timestamps[j]}",
                               kind="timestamp mismatch", cause=batches.cause_at(j))


def _check_largest_timestamp(index: TimeIndex, batches: SegmentBatches,
                             problems: Reporter) -> None:
    """A closed segment's time index ends with the segment's largest timestamp (the broker
    appends it at the roll); lookups by time skip the segment on that entry, so one below a
    batch's timestamp (entries lost) would skip records the lookup wants."""
    if not len(index) or not batches.record_max_timestamps:
        return
    timestamp, offset = index.entry(len(index) - 1)
    largest = max(batches.record_max_timestamps)
    if timestamp < largest:
        j = batches.record_max_timestamps.index(largest)
        problems.error(index.path, (len(index) - 1) * index.dtype.itemsize,
                       f"the last entry ({timestamp}, {offset}) is not the segment's largest "
                       f"timestamp: the batch at offsets {batches.base_offsets[j]}.."
                       f"{batches.last_offsets[j]} has {largest} (entries lost?)",
                       kind="largest timestamp missing", cause=batches.cause_at(j))


def _compare_with_rebuilt(segment: LogSegment, offset_index: OffsetIndex, time_index: TimeIndex,
                          snapshots, interval: int, problems: Reporter,
                          batches: SegmentBatches) -> None:
    headers = (h for h, _ in segment.iter_headers(allow_torn_tail=True))
    # Producer snapshots inside the segment mark broker restarts, which add entries (§4.5).
    try:
        rebuilt = rebuild_indexes(headers, segment.base_offset, interval,
                                  restart_offsets=snapshots, log_path=segment.log_path)
    except CorruptDataError as err:   # batches no index can hold: nothing to compare with
        problems.located(err, segment.log_path, cause=batches.cause_at(position=err.position))
        return
    for index, expected in zip((offset_index, time_index), rebuilt):
        actual, wanted = index.entries(), expected.entries()
        if actual != wanted:
            i = next((k for k, (a, b) in enumerate(zip(actual, wanted)) if a != b),
                     min(len(actual), len(wanted)))
            mine = actual[i] if i < len(actual) else "none"
            theirs = wanted[i] if i < len(wanted) else "none"
            # Where they part: the later offset of the two entries (an offset entry is
            # (offset, position), a time entry (timestamp, offset)). A time entry written at a
            # damaged batch may name an earlier batch's offset (the largest timestamp so far),
            # but then the other one names the damaged batch's.
            at = 0 if index is offset_index else 1
            parted = max(e[at] for e in (mine, theirs) if e != "none")
            problems.warning(index.path, i * index.dtype.itemsize, f"differs from the index "
                             f"rebuilt from the log ({len(actual)} vs {len(wanted)} entries; "
                             f"entry {i} is {mine}, rebuilt {theirs}); normal for follower, "
                             "cleaner and restarted segments",
                             cause=batches.cause_at(offset=parted))


def _check_txn_index(segment: LogSegment, batches: SegmentBatches, problems: Reporter,
                     closed: bool, earlier: _EarlierStarts, cleaned_below: int = -1,
                     log_start: int = 0) -> None:
    """The `.txnindex` against the batches. Where the log cleaner has been (`cleaned_below`),
    an aborted transaction's data is gone while its entry (kept with its marker for a while)
    stays, and a marker kept until its delete horizon has no entry once its data is gone.
    Markers and batches below the log start offset are no reader's concern (the cleaner
    forgets their transactions too, and may leave such a batch before a later marker)."""
    fs, path = segment.fs, segment.txn_index_path
    if not fs.exists(path):
        unlisted = [o for o in batches.abort_markers if o >= log_start
                    and (o >= cleaned_below or _has_txn_data(batches, o, log_start))]
        if batches.complete and unlisted and segment.has_index_files:
            report = problems.error if closed else problems.warning
            report(path, None, f"missing, but the segment holds {len(unlisted)} ABORT "
                   f"marker(s), from offset {min(unlisted)}: read_committed would return their "
                   f"aborted records")
        return
    if fs.size(path) % TXN_ENTRY_SIZE:
        problems.warning(path, fs.size(path) - fs.size(path) % TXN_ENTRY_SIZE,
                         "a partial entry at the end (ignored by the broker)")
    previous = None
    for i, txn in enumerate(segment.txn_index.entries):
        where = i * TXN_ENTRY_SIZE
        if not 0 <= txn.last_stable_offset <= txn.last_offset + 1:
            # the LSO when the transaction ended: no later than its marker; lookups stop at it
            problems.error(path, where, f"entry {i}: last stable offset "
                           f"{txn.last_stable_offset} lies past the transaction's ABORT marker "
                           f"at {txn.last_offset}", kind="bad last stable offset")
        if txn.last_offset < segment.base_offset or not 0 <= txn.first_offset <= txn.last_offset:
            problems.error(path, where, f"entry {i}: offsets {txn.first_offset}..{txn.last_offset}"
                           f" do not fit the segment (base offset {segment.base_offset})")
        if previous is not None and txn.last_offset <= previous:
            problems.error(path, where, f"entry {i}: last offset {txn.last_offset} is not above "
                           f"the previous entry's {previous}")
        starts, scanned = ((batches.txn_starts, batches.complete)
                           if txn.first_offset >= segment.base_offset
                           else (earlier.starts, earlier.complete
                                 and txn.first_offset >= earlier.first_base))
        if (scanned and (txn.producer_id, txn.first_offset) not in starts
                and txn.first_offset >= cleaned_below):
            problems.error(path, where, f"entry {i}: no transactional batch of producer "
                           f"{txn.producer_id} starts at offset {txn.first_offset}",
                           kind="no first batch")
        if batches.complete and batches.abort_markers.get(txn.last_offset) != txn.producer_id:
            problems.error(path, where, f"entry {i}: no ABORT marker of producer "
                           f"{txn.producer_id} at offset {txn.last_offset} in the segment",
                           kind="no ABORT marker")
        previous = txn.last_offset
    listed = {txn.last_offset for txn in segment.txn_index.entries}
    if batches.complete:
        for offset in sorted(set(batches.abort_markers) - listed):
            if offset < log_start or (offset < cleaned_below
                                      and not _has_txn_data(batches, offset, log_start)):
                continue
            report = problems.error if closed else problems.warning
            report(path, None, f"no entry for the ABORT marker at offset {offset}: "
                   f"read_committed would return its aborted records", kind="missing entry")


def _has_txn_data(batches: SegmentBatches, marker: int, log_start: int) -> bool:
    """Whether the segment holds data of the transaction the marker at `marker` ended: a
    transactional batch of its producer after its previous marker, past the log start."""
    producer = batches.markers[marker]
    previous = max([o for o, p in batches.markers.items() if p == producer and o < marker] or [-1])
    return any(p == producer and previous < base < marker and last >= log_start
               for (p, base), last in batches.txn_starts.items())


def add_arguments(parser) -> None:
    parser.add_argument("paths", nargs="+", metavar="DIR",
                        help="data directories or partition directories (paths or URIs)")
    parser.add_argument("--index-interval-bytes", type=int, default=DEFAULT_INDEX_INTERVAL_BYTES,
                        metavar="N", help="the topic's index.interval.bytes, for comparing "
                        "indexes with rebuilt ones")
    parser.add_argument("--strict", action="store_true", help="fail on warnings too")


def run(args) -> int:
    if not 0 <= args.index_interval_bytes <= INT32_MAX:
        raise BadOptionError("--index-interval-bytes", args.index_interval_bytes,
                             f"must be between 0 and {INT32_MAX}")
    failed = False
    parts = partition_dirs(args.paths, getattr(args, "store_config", None))
    shown = show_bar(getattr(args, "quiet", False))
    with Progress(sum(map(log_bytes, parts)) if shown else 0, "verify", shown=shown) as progress:
        out = progress.around_bar(sys.stdout)
        for part in parts:
            report = verify_partition(part.path, index_interval_bytes=args.index_interval_bytes,
                                      fs=part.fs, progress=progress.update)
            print(report.summary(), file=out, flush=True)
            for line in report.report_lines():
                print(f"  {line}", file=out)
            failed |= bool(report.errors or (args.strict and report.warnings))
    return 1 if failed else 0
