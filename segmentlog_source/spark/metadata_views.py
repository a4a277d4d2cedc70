"""The metadata views: `view=batches` (a row per record batch) and `view=segments` (a row per
segment file), answered from batch headers and indexes, with no record decoded.

`batches` reads each task's byte ranges with the same checked scan as a records read, so every
batch's offsets are checked against its neighbours' either way; with verifyChecksums=true each
batch is read whole for its CRC, with false only its header is (and a legacy compressed
wrapper, whose first offset and records are inside its payload; and a compacted batch's first
record, when its base timestamp is the cleaner's delete horizon). A batch is in the read when
one of its offsets is in the read's range. Control batches (transaction markers) are rows too.

`segments` reads, per segment the plan touches, its first batch's header and what
`LogSegment` reads to find its log end offset and largest timestamp: the indexes' last
entries and the batches after the last offset-index entry (storage/log/log_segment.py).
"""

from __future__ import annotations

from dataclasses import dataclass
import logging
from typing import Iterator

import pyarrow as pa

from ..errors import CorruptDataError, UnrepresentableValueError
from ..format.batch import V2_HEADER_SIZE, BatchHeader
from ..plan.read_plan import ReadGroup
from ..plan.scan_plan import ScanTask
from ..plan.view_plan import SegmentRef
from ..storage.io.filesystem import filesystem_for
from ..storage.io.stats import IOStats
from ..storage.log.batch_facts import first_record, needs_body, record_count
from ..storage.log.log_segment import LogSegment
from .reader import _MAX_TIMESTAMP_MS, _MIN_TIMESTAMP_MS, GroupScan, ScanSettings
from .schema import arrow_schema

log = logging.getLogger("segmentlog")

ROWS_PER_BATCH = 64 * 1024


class _Rows:
    """Rows of one view, column by column, out as Arrow batches of its schema."""

    def __init__(self, schema: pa.Schema):
        self.schema = schema
        self.columns: dict[str, list] = {name: [] for name in schema.names}

    def add(self, **values) -> None:
        for name, column in self.columns.items():
            column.append(values[name])

    def __len__(self) -> int:
        return len(self.columns["topic"])

    def flush(self) -> Iterator[pa.RecordBatch]:
        if not len(self):
            return
        arrays = [pa.array(self.columns[f.name], f.type) for f in self.schema]
        self.columns = {name: [] for name in self.schema.names}
        yield pa.RecordBatch.from_arrays(arrays, schema=self.schema)


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
        self.schema = arrow_schema(view="batches")

    def _scan_task(self, task: ScanTask) -> Iterator[pa.RecordBatch]:
        verify = self.settings.verify_checksums
        rows = _Rows(self.schema)
        for header, entry in self._opened(self._checked_scan(task, headers_only=not verify),
                                          task):
            if verify and not header.crc_is_valid(entry):
                yield from self._skip_or_raise(task, header, entry)
                continue
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
        yield from rows.flush()

    def _entry(self, task: ScanTask, header: BatchHeader) -> memoryview:
        """The bytes of one batch a header-only read needs after all."""
        fs, path = filesystem_for(task.path, self.settings.store)
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
        self.schema = arrow_schema(view="segments")
        self.stats = IOStats()

    def __iter__(self) -> Iterator[pa.RecordBatch]:
        rows = _Rows(self.schema)
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

    def _row(self, ref: SegmentRef) -> dict:
        fs, path = filesystem_for(ref.path, self.settings.store)
        active = ref.next_segment_base is None
        segment = LogSegment(fs.dirname(path), ref.base_offset, fs, log_path=path,
                             active=active, stats=self.stats,
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
        header, entry = next(iter(segment.iter_headers(0, size, chunk_bytes=V2_HEADER_SIZE)))
        if needs_body(header):
            entry = next(iter(segment.iter_entries(header.position, header.end)))[1]
        first, first_ts = first_record(header, entry, path)
        last = segment.read_next_offset() - 1
        if first < ref.base_offset or last < first:
            raise CorruptDataError(f"its first batch holds offset {first} and its batches end at "
                                   f"{last}, outside its base offset {ref.base_offset} (its "
                                   f"file name) and what follows", path, 0)
        if ref.next_segment_base is not None and last >= ref.next_segment_base:
            raise CorruptDataError(f"its batches run to offset {last}, past the next segment's "
                                   f"base offset {ref.next_segment_base}", path, None)
        where = "the segment"
        row.update(firstOffset=first, lastOffset=last,
                   firstTimestamp=_micros(first_ts, path, where),
                   maxTimestamp=_micros(segment.max_timestamp_and_offset[0], path, where))
        return row
