"""`segmentlog reindex`: rebuild each segment's `.index`, `.timeindex` and `.txnindex` from its
`.log`, as the broker's recovery does (Kafka's LogSegment.recover).

Files are replaced atomically (written to a temporary file, then renamed), under the partition's
writer lock. The broker's recovery would also truncate a `.log` at its first invalid byte and
empty a segment whose offsets cannot be indexed; this command never changes a `.log`: such a
segment, and the rest of its partition, is left alone and reported (see `segmentlog verify`).

Object stores are read-only to segmentlog: a URI among the paths is refused before anything is
read or written (reindex a local copy, then upload the indexes).
"""

from __future__ import annotations

from dataclasses import dataclass
import sys

from ..errors import BadOptionError, CorruptDataError
from ..format.batch import INT32_MAX
from ..storage.io.filesystem import filesystem_for
from ..storage.log.abstract_index import DEFAULT_INDEX_INTERVAL_BYTES
from ..storage.log.checkpoints import LeaderEpochCache
from ..storage.log.log_config import LogConfig
from ..storage.log.log_loader import recover_segment
from ..storage.log.log_segment import LogSegment, relative_offset_fits
from ..storage.log.offset_index import OFFSET_ENTRY_SIZE
from ..storage.log.partition_log import PartitionLog
from ..storage.log.segment_indexer import rebuild_indexes
from ..storage.log.time_index import TIME_ENTRY_SIZE
from ..storage.log_files import LEADER_EPOCH_CHECKPOINT, PARTITION_LOCK
from ..storage.txn.producer_state_manager import (ProducerStateManager, read_snapshot,
                                                  snapshot_offsets, snapshot_path)
from ..storage.txn.transaction_index import TXN_ENTRY_SIZE
from .progress import Progress, show_bar
from .verify import log_bytes, partition_dirs

HELP = "rebuild the .index, .timeindex and .txnindex of every segment from its .log"


@dataclass
class RebuiltSegment:
    log_path: str
    entries: dict[str, int]   # suffix -> entries now (.txnindex: 0 when there is none)
    changed: list[str]        # suffixes whose bytes changed

    def describe(self) -> str:
        parts = [f"{suffix} {n} entr{'y' if n == 1 else 'ies'}"
                 f"{' (rewritten)' if suffix in self.changed else ' (unchanged)'}"
                 for suffix, n in self.entries.items()]
        return f"{self.log_path[:-len('.log')]}: {', '.join(parts)}"


def reindex_partition(path: str, *, index_interval_bytes: int = DEFAULT_INDEX_INTERVAL_BYTES,
                      out=None, fs=None, progress=None) -> list[RebuiltSegment]:
    """Rebuild the indexes of every segment of one partition directory (`fs` serves it; None:
    the one its path names). `progress` is called with the bytes of each segment done.

    Raises CorruptDataError (naming the file and byte) for the first segment whose `.log` the
    broker's recovery would cut; the segments before it are rebuilt, it and later ones are not.
    Raises ReadOnlyStoreError, having written nothing, for a store segmentlog only reads.
    """
    if fs is None:
        fs, path = filesystem_for(path)
    fs.ensure_writable(path)
    log = PartitionLog.open(path, fs)
    config = LogConfig(index_interval_bytes=index_interval_bytes)
    lock = fs.lock(fs.join(path, PARTITION_LOCK), f"partition {log.name} ({path})")
    rebuilt = []
    try:
        state = _producer_state_at(log)
        # Recovery also updates the leader-epoch cache; reindexing must not, so it gets a copy.
        epochs = LeaderEpochCache(fs.join(path, LEADER_EPOCH_CHECKPOINT), fs)
        for segment in log.segments:
            _check_recoverable(segment, config)
            before = [_read(fs, p) for p in _index_paths(segment)]
            cut = recover_segment(segment, state, epochs, config)
            if cut:  # _check_recoverable makes this impossible; never let it pass silently
                raise CorruptDataError(f"recovery truncated {cut} bytes", segment.log_path)
            after = [_read(fs, p) for p in _index_paths(segment)]
            sizes = [len(data or b"") for data in after]
            entries = {".index": sizes[0] // OFFSET_ENTRY_SIZE,
                       ".timeindex": sizes[1] // TIME_ENTRY_SIZE,
                       ".txnindex": sizes[2] // TXN_ENTRY_SIZE}
            changed = [s for s, b, a in zip(entries, before, after) if b != a]
            done = RebuiltSegment(segment.log_path, entries, changed)
            rebuilt.append(done)
            if out is not None:
                print(done.describe(), file=out, flush=True)
            if progress is not None:
                progress(segment.size)
    finally:
        lock.release()
    return rebuilt


def _index_paths(segment: LogSegment) -> tuple[str, str, str]:
    return segment.index_path, segment.time_index_path, segment.txn_index_path


def _read(fs, path: str) -> bytes | None:
    return fs.read_all(path) if fs.exists(path) else None


def _producer_state_at(log: PartitionLog) -> ProducerStateManager:
    """Producer state at the first segment: its snapshot if there is one (open transactions
    started before it matter for the `.txnindex`), else empty."""
    if not log.segments:
        return ProducerStateManager()
    base = log.segments[0].base_offset
    if base in snapshot_offsets(log.directory, log.fs):
        try:
            snapshot = read_snapshot(snapshot_path(log.directory, base, log.fs), log.fs)
            return ProducerStateManager(snapshot, base)
        except CorruptDataError:
            pass  # the broker also ignores an unreadable snapshot and starts from nothing
    return ProducerStateManager(map_end_offset=base)


def _check_recoverable(segment: LogSegment, config: LogConfig) -> None:
    """Raise where the broker's recovery would cut this `.log`: an invalid batch, a torn tail, or
    offsets its indexes cannot take."""
    scan = segment.iter_entries(verify_crc=True, allow_torn_tail=True)

    def checked_headers():
        previous = None
        for header, _ in scan:
            if not relative_offset_fits(segment.base_offset, header.last_offset):
                raise CorruptDataError(f"offset {header.last_offset} does not fit relative to "
                                       f"the segment base offset {segment.base_offset}",
                                       segment.log_path, header.position)
            if previous is not None and header.last_offset <= previous:
                raise CorruptDataError(f"last offset {header.last_offset} does not follow the "
                                       f"previous batch's {previous}", segment.log_path,
                                       header.position)
            previous = header.last_offset
            yield header

    try:
        rebuild_indexes(checked_headers(), segment.base_offset, config.index_interval_bytes,
                        max_index_bytes=config.segment_index_bytes)
    except CorruptDataError as err:
        # An error without a path comes from the in-memory indexes (a full index): no log byte.
        where = err if err.path is not None else CorruptDataError(err.reason, segment.log_path)
        raise CorruptDataError(f"{where.reason}; not reindexed (broker recovery would cut the "
                               "log here)", where.path, where.position) from None
    if scan.torn_tail is not None:
        raise CorruptDataError(f"the last {scan.torn_tail.length} bytes are not a whole batch; not "
                               "reindexed (broker recovery would cut the log here)",
                               segment.log_path, scan.torn_tail.position)


def add_arguments(parser) -> None:
    parser.add_argument("paths", nargs="+", metavar="DIR",
                        help="data directories or partition directories (local: object-store "
                        "URIs are refused)")
    parser.add_argument("--index-interval-bytes", type=int, default=DEFAULT_INDEX_INTERVAL_BYTES,
                        metavar="N", help="the topic's index.interval.bytes")


def run(args) -> int:
    if not 0 <= args.index_interval_bytes <= INT32_MAX:
        raise BadOptionError("--index-interval-bytes", args.index_interval_bytes,
                             f"must be between 0 and {INT32_MAX}")
    config = getattr(args, "store_config", None)
    for given in args.paths:  # every path is checked before any partition is touched
        fs, path = filesystem_for(given, config)
        fs.ensure_writable(path)
    failed = False
    parts = partition_dirs(args.paths, config)
    shown = show_bar(getattr(args, "quiet", False))
    with Progress(sum(map(log_bytes, parts)) if shown else 0, "reindex", shown=shown) as progress:
        out, err_out = progress.around_bar(sys.stdout), progress.around_bar(sys.stderr)
        for part in parts:
            try:
                reindex_partition(part.path, index_interval_bytes=args.index_interval_bytes,
                                  out=out, fs=part.fs, progress=progress.update)
            except CorruptDataError as err:
                print(f"segmentlog: {err}", file=err_out, flush=True)
                failed = True
    return 1 if failed else 0
