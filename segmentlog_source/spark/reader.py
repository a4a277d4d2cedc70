"""The executor side of a read: a ReadGroup's byte ranges -> Arrow RecordBatches in Spark's schema.

Each task's range is read sequentially in bounded chunks (storage), decoded a few MB at a time
straight into Arrow buffers (format), and filtered exactly: Spark does not re-check the
filters a source accepts, so every row that leaves here satisfies the options and predicates.
Control batches are never returned; with read_committed, batches of aborted transactions are
dropped the way Kafka's consumer drops them.
"""

from __future__ import annotations

from dataclasses import dataclass
import logging
from typing import Iterator

import numpy as np
import pyarrow as pa

from ..errors import CorruptDataError
from ..format.arrow import to_arrow
from ..format.record_decoder import ColumnarDecoder
from ..plan.predicates import RowFilter
from ..plan.read_plan import AbortedRange, ReadGroup
from ..plan.scan_plan import ScanTask
from ..storage.io.filesystem import filesystem_for
from ..storage.io.stats import IOStats
from ..storage.io.store_config import DEFAULT_CONFIG, StoreConfig
from ..storage.log.log_segment import EntryScan
from ..storage.txn.producer_state_manager import read_end_txn_marker
from .schema import arrow_schema

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


def _topic_array(topic: str, n: int) -> pa.Array:
    raw = topic.encode("utf-8")
    offsets = np.arange(0, (n + 1) * len(raw), len(raw) or 1, dtype=np.int32)[:n + 1] \
        if raw else np.zeros(n + 1, np.int32)
    return pa.Array.from_buffers(pa.string(), n, [None, pa.py_buffer(offsets),
                                                  pa.py_buffer(raw * n)])


class _AbortTracker:
    """Kafka consumer's read_committed rule over one task's batches, in offset order.

    Like a fetch from the task's first batch: only aborted transactions whose ABORT marker is at
    or after that batch matter (an earlier marker already closed its transaction).
    """

    def __init__(self, aborted: list[AbortedRange]):
        self.aborted = aborted
        self.pending: list[AbortedRange] | None = None
        self.ongoing: set[int] = set()

    def skip(self, header, entry) -> bool:
        """Whether the batch is dropped: control batches always, aborted data batches too."""
        if self.pending is None:
            first = header.base_offset if header.first_offset_known else header.last_offset
            self.pending = sorted((a for a in self.aborted if a.last_offset >= first),
                                  key=lambda a: a.first_offset)
        while self.pending and self.pending[0].first_offset <= header.last_offset:
            self.ongoing.add(self.pending.pop(0).producer_id)
        if header.is_control:
            if header.producer_id in self.ongoing:
                marker = read_end_txn_marker(header, entry)
                if marker is not None and marker[0]:   # an ABORT marker ends the abort
                    self.ongoing.discard(header.producer_id)
            return True
        return header.is_transactional and header.producer_id in self.ongoing


class GroupScan:
    """Scans one ReadGroup; `stats` counts the bytes and requests it cost."""

    def __init__(self, group: ReadGroup, settings: ScanSettings):
        self.group = group
        self.settings = settings
        self.stats = IOStats()
        fields = set()
        if settings.include_payload:
            fields = {"key", "value"} | ({"headers"} if settings.include_headers else set())
        self.decoder = ColumnarDecoder(verify_crc=settings.verify_checksums, fields=fields)
        self.schema = arrow_schema(settings.include_payload, settings.include_headers)

    def __iter__(self) -> Iterator[pa.RecordBatch]:
        for task in self.group.tasks:
            yield from self._scan_task(task)
        log.info("segmentlog: task read %d bytes in %d requests (%d planned) from %d segment "
                 "range(s) of %s", self.stats.bytes_read, self.stats.read_requests,
                 self.group.nbytes, len(self.group.tasks),
                 self.group.tasks[0].path if self.group.tasks else "-")

    def _scan_task(self, task: ScanTask) -> Iterator[pa.RecordBatch]:
        f = self.settings.row_filter
        lo, hi = max(task.offset_lo, f.offset_lo), min(task.offset_hi, f.offset_hi)
        aborted = [a for a in self.group.aborted
                   if (a.topic, a.partition) == (task.topic, task.partition)]
        tracker = _AbortTracker(aborted) if self.settings.read_committed else None
        fs, path = filesystem_for(task.path, self.settings.store)
        scan = EntryScan(fs, path, task.start, task.end, chunk_bytes=fs.read_ahead_bytes,
                         stats=self.stats,
                         expected_size=task.file_size if fs.immutable_objects else None)
        pending, pending_bytes = [], 0
        try:
            for header, entry in scan:
                if header.first_offset_known and header.base_offset >= hi:
                    break
                if header.last_offset < lo:
                    continue
                if tracker is not None:
                    if tracker.skip(header, entry):
                        continue
                elif header.is_control:
                    continue
                # One decode per read chunk: the decoder reads views of one buffer in place,
                # but copies batches from two chunks into a new buffer first (~10% of a scan).
                if pending and (entry.obj is not pending[0][1].obj
                                or pending_bytes + header.size > DECODE_BYTES):
                    if not (yield from self._emit_salvaging(task, pending, lo, hi)):
                        return    # a corrupt batch ended the task (failOnDataLoss=false)
                    pending, pending_bytes = [], 0
                pending.append((header, entry))
                pending_bytes += header.size
        except CorruptDataError as err:   # the framing broke: what was read before still counts
            if self.settings.fail_on_data_loss:
                raise
            yield from self._emit_salvaging(task, pending, lo, hi)
            self._log_gap(task, err)
            return
        yield from self._emit_salvaging(task, pending, lo, hi)

    def _emit_salvaging(self, task: ScanTask, entries, lo: int, hi: int):
        """Emit `entries`; on a corrupt batch, raise, or (failOnDataLoss=false) log the gap and
        return False after emitting the batches before it."""
        try:
            yield from self._emit(task, entries, lo, hi)
        except CorruptDataError as err:
            if self.settings.fail_on_data_loss:
                raise
            self._log_gap(task, err)
            return False
        return True

    @staticmethod
    def _log_gap(task: ScanTask, err: CorruptDataError) -> None:
        log.warning("segmentlog: skipping the rest of %s from byte %s to %d after a corrupt "
                    "batch (failOnDataLoss=false): %s", task.path, err.position, task.end, err)

    def _emit(self, task: ScanTask, entries, lo: int, hi: int) -> Iterator[pa.RecordBatch]:
        if not entries:
            return
        f = self.settings.row_filter
        ranges = dict(offsets=(lo, hi), timestamps=(f.timestamp_lo_ms, f.timestamp_hi_ms))
        try:
            columns = self.decoder.decode(entries, **ranges)
        except CorruptDataError as err:
            err = err.located(task.path)
            if self.settings.fail_on_data_loss:
                raise err from None
            # Salvage the whole batches before the bad one, then let the task stop there.
            for i in range(len(entries)):
                try:
                    self.decoder.decode(entries[i:i + 1], **ranges)
                except CorruptDataError:
                    yield from self._emit(task, entries[:i], lo, hi)
                    raise err from None
            raise err from None
        yield from self._to_batches(task, columns)

    def _to_batches(self, task: ScanTask, columns) -> Iterator[pa.RecordBatch]:
        f = self.settings.row_filter
        n = columns.num_rows
        if n == 0:
            return
        arrays = to_arrow(columns)
        arrays["topic"] = _topic_array(task.topic, n)
        arrays["partition"] = pa.Array.from_buffers(
            pa.int32(), n, [None, pa.py_buffer(np.full(n, task.partition, np.int32))])
        batch = pa.RecordBatch.from_arrays([arrays[name] for name in self.schema.names],
                                           schema=self.schema)
        if f.offsets_in is not None:
            keep = np.isin(columns.offsets, np.asarray(f.offsets_in, np.int64))
            if not keep.all():
                batch = batch.filter(pa.array(keep))
        if batch.num_rows:
            yield batch
