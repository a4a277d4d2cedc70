"""One segment: a `.log` of batches and its indexes (spec §4, §8, §9): offsets and timestamps
looked up through the indexes, the log end found from the tail, indexes rebuilt when missing.
The `.log` itself is read as entries by entry_scan.py, in bounded chunks.
"""

from __future__ import annotations

from typing import Iterator

from ...errors import CorruptDataError
from ...format.batch import DEFAULT_MAX_BATCH_BYTES, INT32_MAX, V2_HEADER_SIZE, BatchHeader
from ..io.local import LOCAL
from ..io.read_once import ReadOnceFiles
from ..io.stats import IOStats
from ..log_files import (INDEX_SUFFIX, LOG_SUFFIX, SWAP_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX,
                         file_name)
from ..txn.transaction_index import TransactionIndex
from .abstract_index import DEFAULT_MAX_INDEX_BYTES
from .entry_scan import DEFAULT_CHUNK_BYTES, EntryScan
from .offset_index import OffsetIndex
from .resync import find_next_batch
from .segment_indexer import rebuild_indexes
from .time_index import TimeIndex

# A closed segment's tail this near the batch a time index entry names is read in the same
# object-store request as the headers up to it (_time_entry_batch).
CONFIRMING_READ_BYTES = 32 * 1024


class LogSegment:
    """A segment's files, found by base offset (Kafka's LogSegment). Indexes are opened (or
    rebuilt in memory, when a file is missing) on first use; `active` marks the last segment,
    whose indexes may lag."""

    def __init__(self, directory: str, base_offset: int, fs=LOCAL, *, log_path: str | None = None,
                 active: bool = False, max_index_bytes: int = DEFAULT_MAX_INDEX_BYTES,
                 stats: IOStats | None = None, rebuild_bad_indexes: bool = False,
                 files_prefix: str | None = None, read_once: bool = False,
                 vouched: tuple[int, int] | None = None):
        self.directory = directory
        self.base_offset = base_offset
        self.fs = fs
        # A remote tier names a copy's files `<base offset>-<segment id>.<suffix>`: the path
        # of its files up to the suffix (storage/tiered); locally they follow the base offset.
        self.files_prefix = files_prefix
        self.log_path = log_path or self.path_for(LOG_SUFFIX)
        self.index_path = self.path_for(INDEX_SUFFIX)
        self.time_index_path = self.path_for(TIME_INDEX_SUFFIX)
        self.txn_index_path = self.path_for(TXN_INDEX_SUFFIX)
        if self.log_path.endswith(SWAP_SUFFIX):  # an unfinished swap read as if it were done
            self.index_path, self.time_index_path, self.txn_index_path = (
                p + SWAP_SUFFIX if fs.exists(p + SWAP_SUFFIX) else p
                for p in (self.index_path, self.time_index_path, self.txn_index_path))
        self.active = active
        self.max_index_bytes = max_index_bytes
        self.stats = stats
        self._offset_index: OffsetIndex | None = None
        self._time_index: TimeIndex | None = None
        self._txn_index: TransactionIndex | None = None
        self._indexes_from_files = False   # (not rebuilt from the `.log`: cheap to open again)
        self._tail: tuple | None = None
        self._size: int | None = None
        self._confirmed_max: tuple[int, int] | None = None
        self._confirmed_next: int | None = None
        # (max timestamp, next offset) of a remote copy, from its __remote_log_metadata record
        # (CRC-covered by its batch): lookups pass over the copy on them, reading none of its
        # files, as Kafka's remote ListOffsets does (skipped_by_metadata).
        self.vouched = vouched
        if vouched is not None:
            self._confirmed_next = vouched[1]
        # Salvaging, an index that fails its checks is rebuilt from the `.log` (in memory)
        # instead of failing the read; index_problem says why.
        self.rebuild_bad_indexes = rebuild_bad_indexes
        self.index_problem: CorruptDataError | None = None
        # A reader's segment without index files reads each `.log` byte once (read_once.py):
        # its indexes are rebuilt by a walk of its headers, and lookups return to those bytes.
        self.read_once = read_once

    def __repr__(self) -> str:
        return f"LogSegment({self.log_path!r})"

    def path_for(self, suffix: str) -> str:
        if self.files_prefix is not None:
            return self.files_prefix + suffix
        return self.fs.join(self.directory, file_name(self.base_offset, suffix))

    @property
    def size(self) -> int:
        return self._size if self._size is not None else self.fs.size(self.log_path)

    # -- indexes ---------------------------------------------------------------------------
    @property
    def offset_index(self) -> OffsetIndex:
        if self._offset_index is None:
            self._load_indexes()
        return self._offset_index

    @property
    def time_index(self) -> TimeIndex:
        if self._time_index is None:
            self._load_indexes()
        return self._time_index

    @property
    def txn_index(self) -> TransactionIndex:
        if self._txn_index is None:
            self._txn_index = TransactionIndex(self.txn_index_path, self.base_offset, self.fs)
        return self._txn_index

    @property
    def has_index_files(self) -> bool:
        return self.fs.exists(self.index_path) and self.fs.exists(self.time_index_path)

    def _load_indexes(self) -> None:
        if self.has_index_files:
            try:
                offset_index = OffsetIndex.open(self.index_path, self.base_offset, self.fs,
                                                max_index_bytes=self.max_index_bytes)
                time_index = TimeIndex.open(self.time_index_path, self.base_offset, self.fs,
                                            max_index_bytes=self.max_index_bytes)
                # Lookups binary-search these: unsorted entries or positions past the end of
                # the log would give wrong answers silently, so they are refused here.
                offset_index.sanity_check(log_size=self.size)
                time_index.sanity_check()
                self._offset_index, self._time_index = offset_index, time_index
                self._indexes_from_files = True
                return
            except CorruptDataError as err:
                if not self.rebuild_bad_indexes:
                    raise
                self.index_problem = err
        # What the broker does at load when `.index` is missing (or, salvaging, unusable):
        # rebuild, here in memory.
        if self.read_once and not isinstance(self.fs, ReadOnceFiles):
            self.fs = ReadOnceFiles(self.fs, self.log_path, self.stats)
        headers = (h for h, _ in self.iter_headers(allow_torn_tail=self.active
                                                   or self.rebuild_bad_indexes))
        self._offset_index, self._time_index = rebuild_indexes(
            headers, self.base_offset, max_index_bytes=self.max_index_bytes,
            log_path=self.log_path)

    def release_indexes(self) -> None:
        """Let go of a reader's loaded offset and time indexes; the next use opens (and checks)
        them again. A planner calls it once it has what it needs of a segment: a mapped index
        holds a file descriptor (and an object store's, its bytes), and a log may have tens of
        thousands of segments. Indexes rebuilt from the `.log` or appended to are kept; the
        `.log` bytes kept for them (read_once.py) are let go."""
        if isinstance(self.fs, ReadOnceFiles):
            self.fs.release()
        if not self._indexes_from_files or any(
                index is not None and index.writable
                for index in (self._offset_index, self._time_index)):
            return
        self._offset_index = self._time_index = None
        self._indexes_from_files = False

    # -- scans -----------------------------------------------------------------------------
    def iter_entries(self, start: int = 0, end: int | None = None, *,
                     chunk_bytes: int = DEFAULT_CHUNK_BYTES, verify_crc: bool = False,
                     allow_torn_tail: bool = False,
                     max_batch_bytes: int = DEFAULT_MAX_BATCH_BYTES) -> EntryScan:
        """Entries in [start, end) of the `.log`, read sequentially in chunks of `chunk_bytes`."""
        return EntryScan(self.fs, self.log_path, start, end, chunk_bytes=chunk_bytes,
                         verify_crc=verify_crc, allow_torn_tail=allow_torn_tail,
                         max_batch_bytes=max_batch_bytes, stats=self.stats)

    def iter_headers(self, start: int = 0, end: int | None = None, *,
                     chunk_bytes: int = 64 * 1024, allow_torn_tail: bool = False) -> EntryScan:
        """Like iter_entries, but reads only the headers (the view is None)."""
        return EntryScan(self.fs, self.log_path, start, end, chunk_bytes=chunk_bytes,
                         allow_torn_tail=allow_torn_tail, bodies=False, stats=self.stats)

    def _check_above_base(self, header: BatchHeader, first: int) -> None:
        """A batch's offsets start at or above its segment's base offset (the file name,
        which no CRC covers): a renamed file shows here."""
        if first < self.base_offset:
            raise CorruptDataError(f"batch offsets {first}..{header.last_offset} lie below the "
                                   f"segment's base offset {self.base_offset} (its file name)",
                                   self.log_path, header.position)

    def _check_follows(self, header: BatchHeader, first: int, previous: int | None) -> None:
        """A batch's offsets start after the last offset of the batch before it (None: none
        seen); offsets are outside the CRC."""
        if previous is not None and first <= previous:
            raise CorruptDataError(
                f"batch offsets {header.base_offset}..{header.last_offset} do not follow the "
                f"previous batch's last offset {previous} (offsets must increase)",
                self.log_path, header.position)

    def _scan_from_index_entry(self, slot: int, position: int, bodies: bool,
                               chunk_bytes: int = 8 * 1024):
        """Scan from an index position, blaming the index when the position is not a batch."""
        # Lookups stop within about an index interval of `position`: read a little at a time
        # (a ListOffsets lookup read 1 MiB with the scan default, for one ~16 KiB batch; on an
        # object store a 64 KiB chunk read 4x the interval). A bigger batch is still read whole.
        scan = (self.iter_entries(position, allow_torn_tail=self.active, chunk_bytes=chunk_bytes)
                if bodies else self.iter_headers(position, allow_torn_tail=self.active,
                                                 chunk_bytes=chunk_bytes))
        index_offset = self.offset_index.entry(slot)[0] if slot >= 0 else None
        try:
            first = True
            for header, entry in scan:
                self._check_above_base(header, header.base_offset if header.first_offset_known
                                       else header.last_offset)
                if first and index_offset is not None and not (
                        self.base_offset <= header.base_offset <= index_offset):
                    raise CorruptDataError(
                        f"offset index entry {slot} says offset {index_offset} is at byte "
                        f"{position}, but the batch there holds offsets {header.base_offset}.."
                        f"{header.last_offset}", self.index_path, slot * 8)
                first = False
                yield header, entry
        except CorruptDataError as err:
            if index_offset is None or err.path != self.log_path or err.position != position:
                raise
            raise CorruptDataError(f"{err.reason} (the position comes from offset index entry "
                                   f"{slot} of {self.index_path})", err.path,
                                   err.position) from None

    # -- offsets and timestamps --------------------------------------------------------------
    def translate_offset(self, offset: int, probe_bytes: int = 64 * 1024) -> BatchHeader | None:
        """The first batch whose last offset is >= `offset` (§8.1); None if the segment has none.

        The forward scan from the index entry reads `probe_bytes` per request: a planner that
        wants to read little more than the headers it hops over passes a header's size.
        """
        return self.locate(offset, probe_bytes)[0]

    def locate(self, offset: int, probe_bytes: int = 64 * 1024, *, entry_early: bool = True
               ) -> tuple[BatchHeader | None, int | None]:
        """(translate_offset's batch, the last offset of the batch before it), the second None
        when the batch is the segment's first; with no such batch, (None, the segment's last
        offset, or None when it has no batch).

        The hop starts one index entry early and reads one header past the answer, so the
        batches on both sides of it are seen: offsets are outside the CRC, and the headers
        hopped over must have increasing offsets. (`entry_early=False`: from the entry at or
        below the offset itself.)
        """
        slot = self.offset_index.slot_for(offset - self.base_offset) - (1 if entry_early else 0)
        position = self.offset_index.entry(slot)[1] if slot >= 0 else 0
        previous, found, before_found = None, None, None
        for header, _ in self._scan_from_index_entry(slot, position, bodies=False,
                                                     chunk_bytes=probe_bytes):
            first = header.base_offset if header.first_offset_known else header.last_offset
            self._check_follows(header, first, previous)
            if found is not None:   # the batch after the answer vouches for its offsets too
                return found, before_found
            if header.last_offset >= offset:
                found, before_found = header, previous
            previous = header.last_offset
        return (found, before_found) if found is not None else (None, previous)

    def _tail_summary(self) -> tuple[int, int, int, int]:
        """(next offset, max timestamp, its offset, end of the last whole batch), scanning only
        past the last index entry.

        Index entries are confirmed by the `.log`: one that points at no whole batch (a crash
        wrote the entry, not all of its batch) sends the scan back to the entry before it, and
        a time-index entry past the last whole batch is not believed; so a torn tail never
        turns into a shorter segment than its whole batches make.
        """
        if self._tail is None:
            slot = len(self.offset_index) - 1
            while True:
                position = self.offset_index.entry(slot)[1] if slot >= 0 else 0
                last, scanned = None, (-1, self.base_offset)
                for header in self._tail_headers(slot, position):
                    last = header
                    if header.max_timestamp > scanned[0]:
                        scanned = (header.max_timestamp, header.last_offset)
                if last is not None or slot < 0:
                    break
                slot -= 1
            if last is not None and last.last_offset < self.base_offset:
                raise CorruptDataError(f"the segment's batches end at offset {last.last_offset}, "
                                       f"below its base offset {self.base_offset} (its file "
                                       f"name)", self.log_path, last.position)
            next_offset = self.base_offset if last is None else last.next_offset
            max_ts, max_ts_offset = self.time_index.last_entry()
            if 0 <= max_ts and last is not None and position <= self._position_of(max_ts_offset) \
                    and max_ts_offset < next_offset:
                # an entry among the batches just read: they confirm it, or it is wrong
                holder = self.locate(max_ts_offset, V2_HEADER_SIZE)[0]
                if holder is not None and holder.first_offset_known:
                    if holder.base_offset > max_ts_offset:
                        raise CorruptDataError(f"time index entry ({max_ts}, {max_ts_offset}) "
                                               f"names an offset no batch holds",
                                               self.time_index_path, None)
                    self._confirm_time_entry(max_ts, max_ts_offset, holder)
            if max_ts >= 0 and max_ts_offset >= next_offset:
                # the time index speaks of batches that are not there: ask the batches
                max_ts, max_ts_offset = -1, self.base_offset
                if slot >= 0:
                    scanned = max(((h.max_timestamp, h.last_offset) for h, _ in
                                   self.iter_headers(allow_torn_tail=self.active)),
                                  key=lambda t: t[0], default=scanned)
            if scanned[0] > max_ts:
                max_ts, max_ts_offset = scanned
            self._tail = (next_offset, max_ts, max_ts_offset,
                          position if last is None else last.end)
        return self._tail

    def _tail_headers(self, slot: int, position: int) -> Iterator[BatchHeader]:
        """The batches from index entry `slot` to the end, which decide the log end offset: so
        each one's CRC is checked and their offsets must increase (a moved base offset or a
        length that swallows the rest of the file would otherwise end the log early).
        Salvaging (rebuild_bad_indexes), damaged bytes are passed over to the next whole batch
        (index_problem says what was)."""
        previous = None
        scan = self._scan_from_index_entry(slot, position, bodies=True)
        while True:
            try:
                for header, entry in scan:
                    if not header.crc_is_valid(entry):
                        raise CorruptDataError(f"CRC mismatch: stored {header.crc}, computed "
                                               f"{header.compute_crc(entry)}", self.log_path,
                                               header.position)
                    first = header.base_offset if header.first_offset_known \
                        else header.last_offset
                    if previous is not None and first <= previous:
                        raise CorruptDataError(
                            f"batch offsets {header.base_offset}..{header.last_offset} do not "
                            f"follow the previous batch's last offset {previous}",
                            self.log_path, header.position)
                    previous = header.last_offset
                    yield header
                return
            except CorruptDataError as err:
                if (not self.rebuild_bad_indexes or err.path != self.log_path
                        or err.position is None):
                    raise
                self.index_problem = err
                resume = find_next_batch(self.fs, self.log_path, err.position + 1, self.size,
                                         stats=self.stats)
                if resume is None:
                    return
                scan = self.iter_entries(resume, allow_torn_tail=True,
                                         chunk_bytes=64 * 1024)

    def read_next_offset(self) -> int:
        """The offset after the last batch (the base offset for an empty segment)."""
        return self._tail_summary()[0]

    def valid_size(self) -> int:
        """Where the last whole batch ends: the size a reader may plan with while a writer (or a
        crash) leaves a partial batch after it."""
        return self._tail_summary()[3]

    @property
    def max_timestamp_and_offset(self) -> tuple[int, int]:
        """maxTimestampSoFar and its offset; (-1, base offset) when no batch has a timestamp.
        A closed segment's comes from its time index's last entry, confirmed by the batch it
        names (ListOffsets skips whole segments on it)."""
        if self.active:
            return self._tail_summary()[1:3]
        if self._confirmed_max is None and self.judged_by_batches:
            self._confirmed_max = self._largest_of_batches()
        if self._confirmed_max is None:
            timestamp, offset = self.time_index.last_entry()
            if len(self.time_index) == 0 and self.size > 0:
                # no entry at all, though a closed segment ends with one: the batches tell
                timestamp, offset = max(((h.max_timestamp, h.last_offset) for h, _ in
                                         self.iter_headers()), key=lambda t: t[0],
                                        default=(-1, self.base_offset))
            elif timestamp >= 0:
                header, before = self._time_entry_batch(offset)
                # (a legacy wrapper's first offset is known only inside it: the batch before
                # it ending below the offset places the offset in it)
                if header is None or (header.base_offset > offset if header.first_offset_known
                                      else before is not None and before >= offset):
                    raise CorruptDataError(f"time index entry ({timestamp}, {offset}) names an "
                                           f"offset no batch holds", self.time_index_path, None)
                self._confirm_time_entry(timestamp, offset, header)
                self._confirm_largest(timestamp, offset, header)
            self._confirmed_max = (timestamp, offset)
        return self._confirmed_max

    @property
    def judged_by_batches(self) -> bool:
        """Whether the largest timestamp and log end come from the batches, not the indexes: a
        closed segment of at most CONFIRMING_READ_BYTES on an object store, whose `.log` a lookup
        reads whole with its first header (segment_order.confirm_names; so it reads neither)."""
        return (not (self.active or self.rebuild_bad_indexes) and self.vouched is None and 0 <
                self.size <= CONFIRMING_READ_BYTES and self.fs.warms_ranges)

    def _largest_of_batches(self) -> tuple[int, int]:
        """A sound time index's last entry, from every batch (CRC-checked: _tail_headers)."""
        best, last = (-1, self.base_offset), self.base_offset - 1
        for header in self._tail_headers(-1, 0):
            last = header.last_offset
            if header.max_timestamp > best[0]:   # (the first batch to reach it, as the index)
                best = (header.max_timestamp, header.last_offset)
        self._confirmed_next = last + 1
        return best

    def skipped_by_metadata(self, timestamp: int) -> bool:
        """Whether the copy's metadata says none of its records has a timestamp >= `timestamp`
        (its max timestamp is below it; one of -1, no timestamp at all, decides nothing)."""
        return self.vouched is not None and 0 <= self.vouched[0] < timestamp

    @property
    def largest_timestamp(self) -> int:
        """The segment's max timestamp, or the `.log` mtime when it has none (§8.2)."""
        max_ts = self.max_timestamp_and_offset[0]
        return max_ts if max_ts >= 0 else self.fs.mtime_ms(self.log_path)

    def offset_for_timestamp(self, timestamp: int, log_start_offset: int = 0
                             ) -> tuple[int, int] | None:
        """(offset, timestamp) of the first record with timestamp >= `timestamp` (§8.2, 2-3)."""
        # the decoder needs the numba kernels: load them only when a lookup needs records
        from ...format.record_decoder import decode_batch

        entry_ts, time_offset = self.time_index.lookup(timestamp)
        slot = self.offset_index.slot_for(max(time_offset, log_start_offset) - self.base_offset)
        position = self.offset_index.entry(slot)[1] if slot >= 0 else 0
        previous, found = None, None
        for header, entry in self._scan_from_index_entry(slot, position, bodies=True):
            first = header.base_offset if header.first_offset_known else header.last_offset
            self._check_follows(header, first, previous)
            if found is not None:    # the batch after the answer vouches for its offsets
                return found
            previous = header.last_offset
            if not header.crc_is_valid(entry):   # its maxTimestamp decides: only after its CRC
                raise CorruptDataError(f"CRC mismatch: stored {header.crc}, computed "
                                       f"{header.compute_crc(entry)}", self.log_path,
                                       header.position)
            if entry_ts >= 0 and header.first_offset_known \
                    and header.base_offset <= time_offset <= header.last_offset:
                self._confirm_time_entry(entry_ts, time_offset, header)
            if header.max_timestamp < timestamp:
                continue
            try:
                records = decode_batch(entry, header).records
            except CorruptDataError as err:
                raise err.located(self.log_path) from None  # decoders report header.position
            if records:   # (a legacy wrapper's first offset is known only now)
                self._check_above_base(header, records[0].offset)
            found = next(((r.offset, r.timestamp) for r in records
                          if r.timestamp >= timestamp and r.offset >= log_start_offset), None)
        return found

    def confirm_records(self, offset: int) -> None:
        """Decode the batch holding `offset` (CRC checked): the decoder fails on records that
        pass the offsets the header claims, which no check of headers alone can see."""
        from ...format.record_decoder import decode_batch

        header = self.locate(offset, probe_bytes=V2_HEADER_SIZE)[0]
        if header is None:
            return
        for found, entry in self.iter_entries(header.position, header.end):
            try:
                decode_batch(entry, found)
            except CorruptDataError as err:
                raise err.located(self.log_path) from None

    def _position_of(self, offset: int) -> int:
        """The offset index's position at or below `offset` (0 when there is none)."""
        slot = self.offset_index.slot_for(offset - self.base_offset)
        return self.offset_index.entry(slot)[1] if slot >= 0 else 0

    def _time_entry_batch(self, offset: int) -> tuple[BatchHeader | None, int | None]:
        """locate() for a time index entry's `offset`, from the offset index entry at or below
        it.

        On an object store, where each read is a request, one request: the header alone where
        the offset index names that batch itself (brokers index a batch by its last offset,
        the offset a time index entry names, and every batch that outgrows the index interval
        has an entry), else everything up to the next index entry (the batch starts before
        it) and the segment's tail when that is near, which _confirm_largest reads next."""
        slot = self.offset_index.slot_for(offset - self.base_offset)
        position = self.offset_index.entry(slot)[1] if slot >= 0 else 0
        if self.fs.warms_ranges and not (slot >= 0 and self.offset_index.entry(slot)[0] == offset):
            following = (self.offset_index.entry(slot + 1)[1]
                         if slot + 1 < len(self.offset_index) else self.size)
            end = following + V2_HEADER_SIZE
            self.fs.prefetch_range(self.log_path, position, self.size if self.size - end <=
                                   CONFIRMING_READ_BYTES else end, self.stats)
        return self.locate(offset, V2_HEADER_SIZE, entry_early=False)

    def _confirm_time_entry(self, timestamp: int, offset: int, header: BatchHeader) -> None:
        """A time-index entry (T, O) is written where the running maximum rose to T, so the
        batch holding O has maxTimestamp T, whatever broker version wrote it: lookups that skip
        on T must see that the `.log` agrees."""
        if header.max_timestamp != timestamp:
            raise CorruptDataError(
                f"time index entry ({timestamp}, {offset}) disagrees with the batch holding "
                f"offset {offset} (at byte {header.position} of {self.log_path}), whose largest "
                f"timestamp is {header.max_timestamp}", self.time_index_path, None)

    def _confirm_largest(self, timestamp: int, offset: int, holder: BatchHeader) -> None:
        """A closed segment's time index ends with its largest timestamp (written at the roll),
        so no batch after the one holding that entry's offset has a larger one: one that does
        says the index lost its last entries, and lookups would skip the segment on them. Every
        header after it is read (bodies skipped): the roll's entry names the segment's largest
        timestamp, so with timestamps in order that is the last batch or two."""
        previous = holder.last_offset
        for header, _ in self.iter_headers(holder.end, self.size,
                                           chunk_bytes=self.fs.read_ahead_bytes):
            if header.max_timestamp > timestamp:
                raise CorruptDataError(
                    f"the last time index entry ({timestamp}, {offset}) is not the segment's "
                    f"largest timestamp: the batch at byte {header.position} of {self.log_path} "
                    f"has {header.max_timestamp} (entries lost?)", self.time_index_path, None)
            first = header.base_offset if header.first_offset_known else header.last_offset
            self._check_follows(header, first, previous)
            previous = header.last_offset
        self._confirmed_next = previous + 1    # (the walk reached the end: next_offset_seen)

    def next_offset_seen(self) -> int:
        """read_next_offset, without a read when confirming the largest timestamp walked the
        headers to the end already (a lookup by timestamp passing over the segment)."""
        return self._confirmed_next if self._confirmed_next is not None \
            else self.read_next_offset()

    def offset_of_max_timestamp(self) -> tuple[int, int] | None:
        """(offset, timestamp) of the first record holding the segment's max timestamp (-3)."""
        from ...format.record_decoder import decode_batch

        max_ts, max_offset = self.max_timestamp_and_offset
        if max_ts < 0:
            return None
        slot = self.offset_index.slot_for(max_offset - self.base_offset)
        position = self.offset_index.entry(slot)[1] if slot >= 0 else 0
        for header, entry in self._scan_from_index_entry(slot, position, bodies=True):
            if header.max_timestamp == max_ts:
                for record in decode_batch(entry, header).records:
                    if record.timestamp == max_ts:
                        return record.offset, record.timestamp
        return None

    def forget_cached_state(self) -> None:
        """Drop loaded indexes and scan results (after the files were rewritten)."""
        for index in (self._offset_index, self._time_index, self._txn_index):
            if index is not None:
                index.close()
        self._offset_index = self._time_index = self._txn_index = None
        self._indexes_from_files = False
        self._tail = None
        self._size = None
        self._confirmed_max = None
        self._confirmed_next = None if self.vouched is None else self.vouched[1]


def relative_offset_fits(base_offset: int, offset):
    """Whether `offset` (an int, or an array of them: then one answer each) fits an index of
    the segment at `base_offset`."""
    relative = offset - base_offset
    return (relative >= 0) & (relative <= INT32_MAX)
