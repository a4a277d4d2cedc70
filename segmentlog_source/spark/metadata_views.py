"""The metadata views: `view=batches` (a row per record batch) and `view=segments` (a row per
segment file), answered from batch headers and indexes, with no record decoded.

`batches` reads each task's byte ranges with the same checked scan as a records read, so every
batch's offsets are checked against its neighbours' either way; with verifyChecksums=true each
batch is read whole for its CRC, with false its body is skipped (except a legacy compressed
wrapper's, whose first offset and records are inside its payload, and a compacted batch's whose
base timestamp is the cleaner's delete horizon). Unless salvaging, a range that looks healthy
is first walked in compiled code (storage/log/header_table.py; with true, in chunks, each batch's
CRC checked), 5-20x faster than parsing header objects; the checked scan reads whatever that
walk does not accept, a CRC mismatch included, and says what is wrong. A batch is in the read
when one of its offsets is in the read's range. Control batches (transaction markers) are rows
too.

`segments` reads, per segment the plan touches, its first batch's header and what
`LogSegment` reads to find its log end offset and largest timestamp: the indexes' last
entries and the batches after the last offset-index entry (storage/log/log_segment.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import islice
import logging
from typing import Iterator

import numpy as np
import pyarrow as pa

from ..errors import CorruptDataError, SegmentLogError, UnrepresentableValueError
from ..format import header_walk as H
from ..format.batch import (ATTR_CODEC_MASK, ATTR_CONTROL, ATTR_TIMESTAMP_TYPE,
                            ATTR_TRANSACTIONAL, CODEC_NAMES, V2_HEADER_SIZE, BatchHeader)
from ..plan.read_plan import ReadGroup
from ..plan.scan_plan import ScanTask
from ..plan.view_plan import SegmentRef
from ..storage.io.in_order import each_in_order
from ..storage.io.stats import IOStats
from ..storage.log.batch_facts import first_record, needs_body, record_count
from ..storage.log.header_table import header_table
from ..storage.log.log_segment import LogSegment
from .reader import (_MAX_TIMESTAMP_MS, _MIN_TIMESTAMP_MS, GroupScan, ScanSettings, _topic_array,
                     task_files)
from .schema import projected_schema

log = logging.getLogger("segmentlog")

ROWS_PER_BATCH = 64 * 1024
WALKS_AT_ONCE = 2   # header walks of a task's segments under way at once (storage/io/in_order)


class _Rows:
    """Rows of one view, column by column, out as Arrow batches of `schema`: the view's columns
    `names` (all of them, or those a user's schema names, under its names)."""

    def __init__(self, schema: pa.Schema, names: list[str]):
        self.schema = schema
        self.names = names
        self.columns: dict[str, list] = {name: [] for name in names}
        self.count = 0

    def add(self, **values) -> None:
        for name, column in self.columns.items():
            column.append(values[name])
        self.count += 1

    def __len__(self) -> int:
        return self.count

    def flush(self) -> Iterator[pa.RecordBatch]:
        if not self.count:
            return
        arrays = [pa.array(self.columns[name], f.type) for name, f in zip(self.names,
                                                                           self.schema)]
        self.columns = {name: [] for name in self.names}
        self.count = 0
        yield pa.RecordBatch.from_arrays(arrays, schema=self.schema)


def _view_schema(view: str, settings: ScanSettings) -> tuple[pa.Schema, list[str]]:
    """The Arrow schema a view's scan yields, and the view's column behind each field."""
    schema = projected_schema(view, settings.projection)
    names = schema.names if settings.projection is None else \
        [name for name, _ in settings.projection]
    return schema, names


_CODECS = np.array([CODEC_NAMES[c] if c < len(CODEC_NAMES) else f"unknown({c})"
                    for c in range(ATTR_CODEC_MASK + 1)])


def _check_timestamps(first_ms: np.ndarray, max_ms: np.ndarray, positions: np.ndarray,
                      path: str) -> None:
    """Refuse Kafka milliseconds a Spark timestamp cannot hold, whether or not their columns are
    read, as the batch-by-batch path does: the first such batch, its first timestamp before its
    max, as that path finds it."""
    def bad(ms):
        return (ms != -1) & ((ms > _MAX_TIMESTAMP_MS) | (ms < _MIN_TIMESTAMP_MS))
    first_bad, max_bad = bad(first_ms), bad(max_ms)
    rows = np.flatnonzero(first_bad | max_bad)
    if len(rows):
        i = rows[0]
        ms = first_ms[i] if first_bad[i] else max_ms[i]
        raise UnrepresentableValueError(
            f"{path}: the batch at byte {int(positions[i])} has timestamp {int(ms)} ms, beyond "
            f"what a Spark timestamp holds (microseconds in a long)")


def _timestamps(ms: np.ndarray) -> pa.Array:
    """Checked milliseconds as Spark's timestamps; -1 (none) as null."""
    none = ms == -1
    return pa.array(np.where(none, 0, ms) * 1000, pa.timestamp("us", tz="UTC"), mask=none)


def _micros(timestamp_ms: int, path: str, what: str) -> int | None:
    """A timestamp for Spark (microseconds), None when there is none (-1, magic 0)."""
    if timestamp_ms == -1:
        return None
    if not _MIN_TIMESTAMP_MS <= timestamp_ms <= _MAX_TIMESTAMP_MS:
        raise UnrepresentableValueError(
            f"{path}: {what} has timestamp {timestamp_ms} ms, beyond what a Spark timestamp "
            f"holds (microseconds in a long)")
    return timestamp_ms * 1000


class BatchesScan(GroupScan):
    """One ReadGroup's batches, one row each."""

    def __init__(self, group: ReadGroup, settings: ScanSettings):
        super().__init__(group, settings)
        self.schema, self.names = _view_schema("batches", settings)
        # Per partition, the last offset read and the highest leader epoch up to it: a task
        # that goes on where the one before it stopped (the next segment, or the next range of
        # one) checks its first batch's epoch against them too.
        self._epochs: dict[tuple[str, int], tuple[int, int]] = {}

    def _epoch_before(self, task: ScanTask, first_offset: int) -> int:
        last = self._epochs.get((task.topic, task.partition))
        return last[1] if last is not None and last[0] + 1 == first_offset else -1

    def _scan_tasks(self, tasks: tuple[ScanTask, ...]) -> Iterator[pa.RecordBatch]:
        if not self.settings.fail_on_data_loss:    # (salvaging: the checked scan's to do)
            yield from super()._scan_tasks(tasks)
            return
        # The fast path: the next task's headers are walked while this one's are (a core each).
        tables = each_in_order(self._header_table, tasks, WALKS_AT_ONCE)
        try:
            for task, table in zip(tasks, tables):
                if table is None or not self._epochs_go_on(task, table):
                    yield from self._scan_task(task)    # (which says what is wrong)
                else:
                    yield from self._table_batches(task, table)
        finally:
            tables.close()

    def _epochs_go_on(self, task: ScanTask, table: np.ndarray) -> bool:
        """Whether the table's leader epochs (checked along it by header_table) do not go below
        those before the task; if so, they are noted for the next task."""
        if not len(table):
            return True
        epochs = table[:, H.LEADER_EPOCH]
        epochs = epochs[epochs >= 0]
        before = self._epoch_before(task, int(table[0, H.BASE_OFFSET]))
        if len(epochs) and epochs[0] < before:
            return False
        self._epochs[(task.topic, task.partition)] = (
            int(table[-1, H.BASE_OFFSET] + table[-1, H.LAST_OFFSET_DELTA]),
            max(before, int(epochs.max()) if len(epochs) else -1))
        return True

    def _scan_task(self, task: ScanTask) -> Iterator[pa.RecordBatch]:
        verify = self.settings.verify_checksums
        rows = _Rows(self.schema, self.names)
        epoch, last = None, None
        for header, entry in self._opened(self._checked_scan(task, headers_only=not verify),
                                          task):
            if verify and not header.crc_is_valid(entry):
                yield from self._skip_or_raise(task, header, entry)
                continue
            if epoch is None:
                epoch = self._epoch_before(task, header.base_offset)
            if 0 <= header.partition_leader_epoch < epoch:
                # (no CRC covers it; a leader's epoch only grows along a partition's log)
                yield from self._skip_or_raise(task, header, entry, CorruptDataError(
                    f"partition leader epoch {header.partition_leader_epoch} is below the "
                    f"previous batch's {epoch}", task.path, header.position))
                continue
            epoch, last = max(epoch, header.partition_leader_epoch), header.last_offset
            try:
                if entry is None and needs_body(header):
                    entry = self._entry(task, header)
                first, first_ts = first_record(header, entry, task.path)
                count = record_count(header, entry, task.path)
            except CorruptDataError as err:
                yield from self._skip_or_raise(task, header, entry, err)
                continue
            base = header.base_offset if header.first_offset_known else first
            if header.last_offset < task.offset_lo or base >= task.offset_hi:
                continue
            where = f"the batch at byte {header.position}"
            rows.add(topic=task.topic, partition=task.partition, segment=task.segment_base,
                     position=header.position, size=header.size, baseOffset=base,
                     lastOffset=header.last_offset, recordCount=count,
                     firstTimestamp=_micros(first_ts, task.path, where),
                     maxTimestamp=_micros(header.max_timestamp, task.path, where),
                     timestampType=header.timestamp_type, codec=header.codec_name,
                     magic=header.magic, producerId=header.producer_id,
                     producerEpoch=header.producer_epoch, baseSequence=header.base_sequence,
                     partitionLeaderEpoch=header.partition_leader_epoch,
                     isTransactional=header.is_transactional, isControl=header.is_control)
            if len(rows) >= ROWS_PER_BATCH:
                yield from rows.flush()
        if last is not None:
            self._epochs[(task.topic, task.partition)] = (last, epoch)
        yield from rows.flush()

    def _header_table(self, task: ScanTask):
        """The fast path's table of the task's headers, or None: then CheckedScan reads it."""
        fs, path = task_files(task.path, task.opener, self.settings.store)
        try:
            return header_table(fs, path, task.start, task.end, segment_base=task.segment_base,
                                after_offset=task.after_offset,
                                start_checked=task.start_checked,
                                ends_segment=task.ends_segment,
                                next_segment_base=task.next_segment_base,
                                indexed_last_offset=task.indexed_last_offset,
                                offset_limit=task.offset_hi, chunk_bytes=fs.read_ahead_bytes,
                                stats=self.stats,
                                expected_size=task.file_size if fs.immutable_objects else None,
                                verify_crc=self.settings.verify_checksums)
        except SegmentLogError:     # (the slow path meets it again, and says what it is)
            return None

    def _table_batches(self, task: ScanTask, table: np.ndarray) -> Iterator[pa.RecordBatch]:
        """The rows of a header table, built column by column."""
        base = table[:, H.BASE_OFFSET]
        last = base + table[:, H.LAST_OFFSET_DELTA]
        table = table[(last >= task.offset_lo) & (base < task.offset_hi)]
        n = len(table)
        if not n:
            return
        attributes = table[:, H.ATTRIBUTES]
        appended = (attributes & ATTR_TIMESTAMP_TYPE) != 0
        max_ts = table[:, H.MAX_TIMESTAMP]
        first_ts = np.where(appended, max_ts, table[:, H.BASE_TIMESTAMP])
        _check_timestamps(first_ts, max_ts, table[:, H.POSITION], task.path)
        # made only when asked for: a user's schema may name a few of them (schema.py)
        columns = {
            "topic": lambda: _topic_array(task.topic, n),
            "partition": lambda: np.full(n, task.partition, np.int32),
            "segment": lambda: np.full(n, task.segment_base, np.int64),
            "position": lambda: table[:, H.POSITION],
            "size": lambda: table[:, H.SIZE].astype(np.int32),
            "baseOffset": lambda: table[:, H.BASE_OFFSET],
            "lastOffset": lambda: table[:, H.BASE_OFFSET] + table[:, H.LAST_OFFSET_DELTA],
            "recordCount": lambda: table[:, H.RECORDS_COUNT].astype(np.int32),
            "firstTimestamp": lambda: _timestamps(first_ts),
            "maxTimestamp": lambda: _timestamps(max_ts),
            "timestampType": lambda: appended.astype(np.int32),
            "codec": lambda: pa.array(_CODECS[attributes & ATTR_CODEC_MASK]),
            "magic": lambda: np.full(n, 2, np.int32),
            "producerId": lambda: table[:, H.PRODUCER_ID],
            "producerEpoch": lambda: table[:, H.PRODUCER_EPOCH].astype(np.int32),
            "baseSequence": lambda: table[:, H.BASE_SEQUENCE].astype(np.int32),
            "partitionLeaderEpoch": lambda: table[:, H.LEADER_EPOCH].astype(np.int32),
            "isTransactional": lambda: (attributes & ATTR_TRANSACTIONAL) != 0,
            "isControl": lambda: (attributes & ATTR_CONTROL) != 0,
        }
        arrays = []
        for name, field in zip(self.names, self.schema):
            column = columns[name]()
            arrays.append(column if isinstance(column, pa.Array) else pa.array(column,
                                                                               field.type))
        yield pa.RecordBatch.from_arrays(arrays, schema=self.schema)

    def _entry(self, task: ScanTask, header: BatchHeader) -> memoryview:
        """The bytes of one batch a header-only read needs after all."""
        fs, path = task_files(task.path, task.opener, self.settings.store)
        with fs.open_read(path, self.stats) as f:
            data = f.read_at(header.position, header.size)
        if len(data) < header.size:
            raise CorruptDataError(f"file shrank while being read (expected {header.size} "
                                   f"bytes)", task.path, header.position)
        return memoryview(data)


@dataclass
class SegmentsScan:
    """One group of segments, one row each."""

    segments: tuple[SegmentRef, ...]
    settings: ScanSettings

    def __post_init__(self):
        self.schema, self.names = _view_schema("segments", self.settings)
        self.stats = IOStats()

    def __iter__(self) -> Iterator[pa.RecordBatch]:
        rows = _Rows(self.schema, self.names)
        for ref in self.segments:
            try:
                rows.add(**self._row(ref))
            except CorruptDataError as err:
                if self.settings.fail_on_data_loss:
                    raise err.located(ref.path) from None
                log.warning("segmentlog: skipped the row of segment %s (failOnDataLoss=false): "
                            "%s", ref.path, err)
        yield from rows.flush()
        log.info("segmentlog: task read %d bytes in %d requests for %d segment row(s)",
                 self.stats.bytes_read, self.stats.read_requests, len(self.segments))

    def _first_batch(self, segment: LogSegment, ref: SegmentRef, size: int):
        """(header, bytes or None, first offset) of the segment's first batch, its offsets (no
        CRC covers them) checked against the file name and the batch after it, its CRC checked
        with verifyChecksums=true (its timestamps come from it)."""
        verify = self.settings.verify_checksums
        scan = (segment.iter_entries(0, size, chunk_bytes=64 * 1024) if verify
                else segment.iter_headers(0, size, chunk_bytes=V2_HEADER_SIZE))
        heads = list(islice(iter(scan), 2))
        header, entry = heads[0]
        if verify and not header.crc_is_valid(entry):
            raise CorruptDataError(f"CRC mismatch: stored {header.crc}, computed "
                                   f"{header.compute_crc(entry)}", segment.log_path, 0)
        if entry is None and needs_body(header):
            entry = next(iter(segment.iter_entries(header.position, header.end)))[1]
        first = header.base_offset if header.first_offset_known else \
            first_record(header, entry, segment.log_path)[0]
        after = heads[1][0] if len(heads) > 1 else None
        follows = None if after is None else (
            after.base_offset if after.first_offset_known else after.last_offset)
        # the cleaner may leave gaps, before the first batch and after it; nothing else does
        gaps = ref.compacted
        if (first != ref.base_offset and not (gaps and first > ref.base_offset)) or (
                follows is not None and (follows <= header.last_offset or (
                    not gaps and after.first_offset_known
                    and follows != header.last_offset + 1))):
            raise CorruptDataError(
                f"the first batch's offsets {first}..{header.last_offset} do not fit between "
                f"the segment's base offset {ref.base_offset} (its file name) and the batch "
                f"after it" + ("" if follows is None else f", at offset {follows}"),
                segment.log_path, 0)
        return header, entry, first

    def _row(self, ref: SegmentRef) -> dict:
        fs, path = task_files(ref.path, ref.opener, self.settings.store)
        active = ref.next_segment_base is None
        segment = LogSegment(fs.dirname(path), ref.base_offset, fs, log_path=path,
                             active=active, stats=self.stats, files_prefix=ref.files_prefix,
                             rebuild_bad_indexes=not self.settings.fail_on_data_loss)
        size = segment.valid_size() if active else segment.size
        row = dict(topic=ref.topic, partition=ref.partition, segment=ref.base_offset,
                   path=ref.path, size=size, firstOffset=None, lastOffset=None,
                   firstTimestamp=None, maxTimestamp=None, offsetIndexEntries=None,
                   timeIndexEntries=None)
        if segment.has_index_files:
            row.update(offsetIndexEntries=len(segment.offset_index),
                       timeIndexEntries=len(segment.time_index))
        if size == 0:
            return row
        header, entry, first = self._first_batch(segment, ref, size)
        first, first_ts = first_record(header, entry, path)
        last = segment.read_next_offset() - 1
        if last < first:
            raise CorruptDataError(f"its first batch holds offset {first} and its batches end at "
                                   f"{last}", path, 0)
        if ref.next_segment_base is not None and last >= ref.next_segment_base:
            raise CorruptDataError(f"its batches run to offset {last}, past the next segment's "
                                   f"base offset {ref.next_segment_base}", path, None)
        where = "the segment"
        row.update(firstOffset=first, lastOffset=last,
                   firstTimestamp=_micros(first_ts, path, where),
                   maxTimestamp=_micros(segment.max_timestamp_and_offset[0], path, where))
        return row
