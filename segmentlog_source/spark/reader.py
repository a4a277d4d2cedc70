"""The executor side of a read: a ReadGroup's byte ranges -> Arrow RecordBatches in Spark's schema.

Each task's range is read sequentially in bounded chunks (storage), decoded a few MB at a time
straight into Arrow buffers (format), and filtered exactly: Spark does not re-check the
filters a source accepts, so every row that leaves here satisfies the options and predicates.
Control batches are never returned; with read_committed, batches of aborted transactions are
dropped the way Kafka's consumer drops them.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import chain
import logging
from typing import Iterator

import numpy as np
import pyarrow as pa

from ..errors import (CorruptDataError, DataLossError, LogNotFoundError,
                      UnrepresentableValueError)
from ..format.arrow import to_arrow
from ..format.batch import ATTR_CODEC_MASK, ATTR_CONTROL, V2_HEADER_SIZE
from ..format.header_walk import ATTRIBUTES
from ..format.record_decoder import ColumnarDecoder
from ..plan.predicates import RowFilter
from ..plan.read_plan import AbortedRange, ReadGroup
from ..plan.scan_plan import ScanTask
from ..storage.io.filesystem import filesystem_for
from ..storage.io.stats import IOStats
from ..storage.io.store_config import DEFAULT_CONFIG, StoreConfig
from ..storage.log.checked_scan import CheckedScan
from ..storage.log.walked_scan import Resume, WalkedScan
from ..storage.log.log_directory import METADATA_TOPIC
from ..storage.txn.producer_state_manager import checked_end_txn_marker
from ..values.record_decoding import RecordDecoding
from .schema import arrow_schema, arrow_schema_of, with_decoded

log = logging.getLogger("segmentlog")

DECODE_BYTES = 16 * 1024 * 1024     # at most this many encoded bytes per Arrow batch


@dataclass(frozen=True)
class ScanSettings:
    """Everything `read()` needs besides the group (it travels pickled to the executors)."""

    row_filter: RowFilter
    read_committed: bool
    verify_checksums: bool
    include_payload: bool
    include_headers: bool
    fail_on_data_loss: bool
    store: StoreConfig = DEFAULT_CONFIG
    decoding: RecordDecoding | None = None     # keyFormat/valueFormat's decoded columns
    projection: tuple[tuple[str, str], ...] | None = None   # a view's columns (schema.py)


def _topic_array(topic: str, n: int) -> pa.Array:
    raw = topic.encode("utf-8")
    offsets = np.arange(0, (n + 1) * len(raw), len(raw) or 1, dtype=np.int32)[:n + 1] \
        if raw else np.zeros(n + 1, np.int32)
    return pa.Array.from_buffers(pa.string(), n, [None, pa.py_buffer(offsets),
                                                  pa.py_buffer(raw * n)])


# Spark's timestamps are microseconds in a long: milliseconds beyond these do not fit.
_MAX_TIMESTAMP_MS = (2**63 - 1) // 1000
_MIN_TIMESTAMP_MS = -(2**63) // 1000 + 1


def _check_timestamps(task: ScanTask, columns) -> None:
    """Refuse a timestamp that would wrap in microseconds, naming where it is (Spark's Kafka
    source fails on it too: DateTimeUtils.fromJavaTimestamp overflows with multiplyExact)."""
    ts = columns.timestamps
    if ts.max() > _MAX_TIMESTAMP_MS or ts.min() < _MIN_TIMESTAMP_MS:
        i = int(np.flatnonzero((ts > _MAX_TIMESTAMP_MS) | (ts < _MIN_TIMESTAMP_MS))[0])
        raise UnrepresentableValueError(
            f"{task.path}: the record at offset {int(columns.offsets[i])} has timestamp "
            f"{int(ts[i])} ms, beyond what a Spark timestamp holds (microseconds in a long, "
            f"+-{_MAX_TIMESTAMP_MS} ms)")


class _AbortTracker:
    """Kafka consumer's read_committed rule over one task's batches, in offset order.

    Like a fetch from the task's first batch: only aborted transactions whose ABORT marker is at
    or after that batch matter (an earlier marker already closed its transaction). The aborted
    transactions come from the `.txnindex` (or, without index files, from the batches): an
    ABORT marker they do not list, or one they list in the range read but that is not there, is
    a damaged index, which would otherwise return aborted rows or drop committed ones.

    Except where the log cleaner has been (below `cleaned_below`): there it removes an aborted
    transaction's data and keeps the marker (until its delete horizon) without an index entry,
    and an entry may outlive the first batch it names. A marker no index lists is harmless
    there when no data of its transaction is among the batches read.
    """

    def __init__(self, aborted: list[AbortedRange], path: str, cleaned_below: int = -1):
        self.aborted = aborted
        self.path = path
        self.cleaned_below = cleaned_below
        self.in_txn: set[int] = set()    # producers with transactional data since their marker
        self.ends = {(a.producer_id, a.last_offset) for a in aborted}
        self.pending: list[AbortedRange] | None = None
        self.ongoing: set[int] = set()
        self.markers_seen: set[tuple[int, int]] = set()
        self.starts: set[tuple[int, int]] = set()   # (producer, base offset) of transactional
        self.span: list[int] = []        # [first offset, last offset] of the batches seen

    def skip(self, header, marker=None) -> bool:
        """Whether the batch is dropped: control batches always (`marker`: their end marker, as
        checked_end_txn_marker read it), aborted data batches too."""
        if self.pending is None:
            first = header.base_offset if header.first_offset_known else header.last_offset
            self.pending = sorted((a for a in self.aborted if a.last_offset >= first),
                                  key=lambda a: a.first_offset)
            self.span = [first, first]
        self.span[1] = header.last_offset
        while self.pending and self.pending[0].first_offset <= header.last_offset:
            self.ongoing.add(self.pending.pop(0).producer_id)
        if header.is_control:
            data_seen = header.producer_id in self.in_txn
            self.in_txn.discard(header.producer_id)
            if marker is not None and marker[0]:   # an ABORT marker ends the abort
                key = (header.producer_id, header.base_offset)
                if key not in self.ends and (data_seen or key[1] >= self.cleaned_below):
                    raise CorruptDataError(
                        f"the ABORT marker of producer {key[0]} at offset {key[1]} is not in "
                        f"the segments' transaction index (.txnindex): it is damaged or "
                        f"incomplete", self.path, header.position)
                self.markers_seen.add(key)
                self.ongoing.discard(header.producer_id)
            return True
        if header.is_transactional:
            self.starts.add((header.producer_id, header.base_offset))
            self.in_txn.add(header.producer_id)
        return header.is_transactional and header.producer_id in self.ongoing

    def finish(self) -> None:
        """Every aborted transaction listed as starting or ending in the batches seen started
        with a batch of its producer, and ended with its ABORT marker, there."""
        if not self.span:
            return
        for a in self.aborted:
            if (self.span[0] <= a.first_offset <= self.span[1]
                    and (a.producer_id, a.first_offset) not in self.starts
                    and a.first_offset >= self.cleaned_below):
                raise CorruptDataError(
                    f"the transaction index lists an aborted transaction of producer "
                    f"{a.producer_id} starting at offset {a.first_offset}, but no transactional "
                    f"batch of it starts there", self.path)
            if (self.span[0] <= a.last_offset <= self.span[1]
                    and (a.producer_id, a.last_offset) not in self.markers_seen):
                raise CorruptDataError(
                    f"the transaction index lists an aborted transaction of producer "
                    f"{a.producer_id} ending at offset {a.last_offset}, but no ABORT marker of "
                    f"it is there", self.path)


def task_files(path: str, opener, store):
    """The file system that serves a task's file, and the file's path there: the path's own,
    or (a remote tier's chunked or encrypted copy) what the task's opener rebuilds."""
    if opener is not None:
        return opener.files(store), path
    return filesystem_for(path, store)


class GroupScan:
    """Scans one ReadGroup; `stats` counts the bytes and requests it cost."""

    def __init__(self, group: ReadGroup, settings: ScanSettings):
        self.group = group
        self.settings = settings
        self.stats = IOStats()
        self._decoder = None
        self.schema = arrow_schema(settings.include_payload, settings.include_headers)
        self.base_names = self.schema.names
        self.dropped = 0                # DROPMALFORMED's rows
        if settings.decoding is not None:
            self.schema = arrow_schema_of(with_decoded(
                settings.include_payload, settings.include_headers, settings.decoding.fields()))

    @property
    def decoder(self) -> ColumnarDecoder:
        # made on first use: it loads the decode kernels, which the metadata views never need
        if self._decoder is None:
            fields = set()
            if self.settings.include_payload:
                fields = {"key", "value"} | ({"headers"} if self.settings.include_headers
                                             else set())
            self._decoder = ColumnarDecoder(verify_crc=self.settings.verify_checksums,
                                            fields=fields)
        return self._decoder

    def __iter__(self) -> Iterator[pa.RecordBatch]:
        yield from self._scan_tasks(self.group.tasks)
        log.info("segmentlog: task read %d bytes in %d requests (%d planned) from %d segment "
                 "range(s) of %s", self.stats.bytes_read, self.stats.read_requests,
                 self.group.nbytes, len(self.group.tasks),
                 self.group.tasks[0].path if self.group.tasks else "-")
        if self.dropped:
            log.warning("segmentlog: mode DROPMALFORMED dropped %d record(s) whose key or value "
                        "did not decode", self.dropped)

    def _scan_tasks(self, tasks: tuple[ScanTask, ...]) -> Iterator[pa.RecordBatch]:
        for task in tasks:
            yield from self._scan_task(task)

    def _scan_task(self, task: ScanTask) -> Iterator[pa.RecordBatch]:
        f = self.settings.row_filter
        lo, hi = max(task.offset_lo, f.offset_lo), min(task.offset_hi, f.offset_hi)
        aborted = [a for a in self.group.aborted
                   if (a.topic, a.partition) == (task.topic, task.partition)]
        cleaned_below = ((task.dirty_from if task.dirty_from is not None else 2**63)
                         if task.compacted else -1)
        tracker = (_AbortTracker(aborted, task.path, cleaned_below)
                   if self.settings.read_committed else None)
        resume = None
        walked = self._walked_scan(task, tracker)
        if walked is not None:
            resume = yield from self._scan_walked(task, walked, lo, hi)
            if resume is None:
                return
        scan = self._opened(self._checked_scan(task, resume=resume), task)
        yield from self._scan_entries(task, scan, lo, hi, tracker)
        if tracker is not None:
            try:
                tracker.finish()
            except CorruptDataError as err:
                if self.settings.fail_on_data_loss:
                    raise
                log.warning("segmentlog: %s (failOnDataLoss=false)", err)

    def _walked_scan(self, task: ScanTask, tracker) -> WalkedScan | None:
        """The task's range read the fast way while it looks healthy (walked_scan.py), or None
        where a batch at a time is needed throughout: salvaging, or read_committed (the abort
        tracker sees every batch)."""
        if not self.settings.fail_on_data_loss or tracker is not None:
            return None
        fs, path = task_files(task.path, task.opener, self.settings.store)
        return WalkedScan(fs, path, task.start, task.end, segment_base=task.segment_base,
                          after_offset=task.after_offset, start_checked=task.start_checked,
                          ends_segment=task.ends_segment,
                          next_segment_base=task.next_segment_base,
                          indexed_last_offset=task.indexed_last_offset,
                          offset_limit=task.offset_hi, chunk_bytes=fs.read_ahead_bytes,
                          stats=self.stats,
                          expected_size=task.file_size if fs.immutable_objects else None)

    def _scan_walked(self, task: ScanTask, walked: WalkedScan, lo: int, hi: int):
        """The walked chunks' rows; returns where the checked scan takes over (None: nowhere).
        A chunk of uncompressed data batches is decoded in one call; one holding compressed or
        control batches goes batch by batch (decompressing, dropping markers). A chunk that
        fails to decode is left to the checked scan, whose error is the one to give."""
        f = self.settings.row_filter
        ranges = dict(offsets=(lo, hi), timestamps=(f.timestamp_lo_ms, f.timestamp_hi_ms))
        chunks = iter(walked)
        try:
            for chunk in chunks:
                if (chunk.rows[:, ATTRIBUTES] & (ATTR_CODEC_MASK | ATTR_CONTROL)).any():
                    yield from self._scan_entries(task, chunk.entries(), lo, hi, None)
                    continue
                try:
                    columns = self.decoder.decode_walked(chunk.buf, chunk.start, chunk.rows,
                                                         **ranges)
                except CorruptDataError:
                    return chunk.resume
                yield from self._to_batches(task, columns)
                del columns
        finally:
            chunks.close()     # (its file, before the checked scan opens it again)
        return walked.resume

    def _scan_entries(self, task: ScanTask, entries, lo: int, hi: int,
                      tracker: _AbortTracker | None) -> Iterator[pa.RecordBatch]:
        """The rows of (header, entry) pairs checked against their neighbours, batch by batch:
        control batches dropped (their marker checked), aborted ones with read_committed."""
        verify = self.settings.verify_checksums
        pending, pending_bytes = [], 0
        for header, entry in entries:
            if header.last_offset < lo:
                continue
            if header.is_control:   # its flags and marker are used unread by the decoder:
                if verify and not header.crc_is_valid(entry):    # trust them after the CRC
                    yield from self._skip_or_raise(task, header, entry)
                    continue
                if task.topic == METADATA_TOPIC:   # KRaft's own (leader changes, voters)
                    continue
                try:   # and only a well-formed transaction marker is dropped as one
                    marker = checked_end_txn_marker(header, entry)
                except CorruptDataError as err:
                    yield from self._skip_or_raise(task, header, entry, err)
                    continue
                if tracker is not None:
                    try:
                        tracker.skip(header, marker)
                    except CorruptDataError as err:
                        yield from self._skip_or_raise(task, header, entry, err)
                continue
            if tracker is not None and tracker.skip(header):
                if verify and not header.crc_is_valid(entry):    # dropped on its producer id
                    yield from self._skip_or_raise(task, header, entry)
                continue
            # One decode per read chunk: the decoder reads views of one buffer in place,
            # but copies batches from two chunks into a new buffer first (~10% of a scan).
            if pending and (entry.obj is not pending[0][1].obj
                            or pending_bytes + header.size > DECODE_BYTES):
                yield from self._emit(task, pending, lo, hi)
                pending, pending_bytes = [], 0
            pending.append((header, entry))
            pending_bytes += header.size
        yield from self._emit(task, pending, lo, hi)

    def _checked_scan(self, task: ScanTask, *, headers_only: bool = False,
                      resume: Resume | None = None) -> CheckedScan:
        """The task's byte range, each batch checked against its neighbours (`headers_only`:
        batch bodies are not read, except legacy compressed wrappers'; `resume`: from where a
        walked scan stopped)."""
        fs, path = task_files(task.path, task.opener, self.settings.store)
        # Reading only headers, a local read takes one header at a time (a 16 KiB batch costs
        # 61 bytes); an object store's requests cost more than its bytes, so it reads ahead.
        chunk = V2_HEADER_SIZE if headers_only and not fs.immutable_objects \
            else fs.read_ahead_bytes
        at = resume or Resume(task.start, task.after_offset, task.start_checked, None)
        return CheckedScan(fs, path, at.position, task.end, segment_base=task.segment_base,
                           after_offset=at.after_offset, start_checked=at.start_checked,
                           prefetched=at.prefetched,
                           ends_segment=task.ends_segment, next_segment_base=task.next_segment_base,
                           next_segment_path=task.next_segment_path,
                           compacted=task.compacted, dirty_from=task.dirty_from,
                           indexed_last_offset=task.indexed_last_offset,
                           named_offsets=task.named_offsets,
                           verify_crc=self.settings.verify_checksums,
                           salvage=not self.settings.fail_on_data_loss,
                           offset_limit=task.offset_hi, chunk_bytes=chunk, stats=self.stats,
                           expected_size=task.file_size if fs.immutable_objects else None,
                           bodies=not headers_only)

    def _opened(self, scan: CheckedScan, task: ScanTask) -> Iterator:
        """The scan, once its file is open. A segment gone since the read was planned was
        deleted by retention or replaced by the cleaner (local_log.py): its offsets are lost
        to this read, as a Kafka consumer's fetch below the log start offset is."""
        entries = iter(scan)
        try:
            first = next(entries)
        except StopIteration:
            return iter(())
        except LogNotFoundError:
            first = max(task.offset_lo, task.segment_base)
            end = min(task.offset_hi, task.next_segment_base or task.offset_hi)
            message = (f"{task.path} is gone since the read was planned (deleted by retention "
                       f"or replaced by compaction): offsets {first}..{end - 1} of "
                       f"{task.topic}-{task.partition} were not read")
            if self.settings.fail_on_data_loss:
                raise DataLossError(message + "; failOnDataLoss=false skips them") from None
            log.warning("segmentlog: %s (failOnDataLoss=false)", message)
            return iter(())
        return chain([first], entries)

    def _skip_or_raise(self, task: ScanTask, header, entry,
                       err: CorruptDataError | None = None) -> Iterator[pa.RecordBatch]:
        err = err.located(task.path) if err is not None else CorruptDataError(
            f"CRC mismatch: stored {header.crc}, computed {header.compute_crc(entry)}",
            task.path, header.position)
        if self.settings.fail_on_data_loss:
            raise err
        self._log_skip(task, header, err)
        return iter(())

    @staticmethod
    def _log_skip(task: ScanTask, header, err: CorruptDataError) -> None:
        log.warning("segmentlog: skipped %s bytes %d..%d (offsets %d..%d) after a corrupt batch "
                    "(failOnDataLoss=false): %s", task.path, header.position, header.end,
                    header.base_offset, header.last_offset, err)

    def _emit(self, task: ScanTask, entries, lo: int, hi: int) -> Iterator[pa.RecordBatch]:
        """Decode `entries` into Arrow batches, a bounded number of decoded bytes at a time;
        on a corrupt batch, raise or (failOnDataLoss=false) skip that batch alone."""
        if not entries:
            return
        f = self.settings.row_filter
        ranges = dict(offsets=(lo, hi), timestamps=(f.timestamp_lo_ms, f.timestamp_hi_ms))
        done = 0
        while done < len(entries):
            emitted = done
            try:
                for part in self.decoder.decode_parts(entries[done:], **ranges):
                    emitted = done + part.entries_done
                    columns, part = part.columns, None
                    yield from self._to_batches(task, columns)
                    del columns    # a part's memory goes before the next is decoded
                return
            except CorruptDataError as err:
                if self.settings.fail_on_data_loss:
                    raise err.located(task.path) from None
            # Salvage: from the first batch not yet emitted, decode one at a time up to the bad
            # one, which alone is skipped; then go on in bulk.
            done = emitted
            while done < len(entries):
                header = entries[done][0]
                try:
                    parts = list(self.decoder.decode_parts(entries[done:done + 1], **ranges))
                except CorruptDataError as err:
                    self._log_skip(task, header, err.located(task.path))
                    done += 1
                    break
                for part in parts:
                    yield from self._to_batches(task, part.columns)
                done += 1

    def _to_batches(self, task: ScanTask, columns) -> Iterator[pa.RecordBatch]:
        f = self.settings.row_filter
        n = columns.num_rows
        if n == 0:
            return
        _check_timestamps(task, columns)
        arrays = to_arrow(columns)
        arrays["topic"] = _topic_array(task.topic, n)
        arrays["partition"] = pa.Array.from_buffers(
            pa.int32(), n, [None, pa.py_buffer(np.full(n, task.partition, np.int32))])
        batch = pa.RecordBatch.from_arrays([arrays[name] for name in self.base_names],
                                           names=self.base_names)
        if f.offsets_in is not None:
            keep = np.isin(columns.offsets, np.asarray(f.offsets_in, np.int64))
            if not keep.all():
                batch = batch.filter(pa.array(keep))
        if batch.num_rows and self.settings.decoding is not None:
            batch, dropped = self.settings.decoding.apply(batch, task.topic, task.partition)
            self.dropped += dropped
        if batch.num_rows:
            yield pa.RecordBatch.from_arrays(batch.columns, schema=self.schema)
