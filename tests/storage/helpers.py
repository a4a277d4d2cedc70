"""Shared test helpers: v2 batches from kafka-python's builder (independent of our encoder),
the real fixture partitions, and brute-force answers to the lookups."""

from __future__ import annotations

import bisect
from pathlib import Path
import shutil

from kafka.record.default_records import DefaultRecordBatchBuilder
import numpy as np

from segmentlog_source.storage.log.partition_log import PartitionLog
from tests.conftest import shared_fixture


def make_batch(timestamps, *, value_size: int = 20, base_offset: int = 0, codec: int = 0,
               producer_id: int = -1, producer_epoch: int = -1, base_sequence: int = -1,
               transactional: bool = False) -> bytes:
    """One v2 batch with a record per timestamp, built by kafka-python."""
    builder = DefaultRecordBatchBuilder(magic=2, compression_type=codec,
                                        is_transactional=transactional, producer_id=producer_id,
                                        producer_epoch=producer_epoch, base_sequence=base_sequence,
                                        batch_size=1 << 30)
    for i, ts in enumerate(timestamps):
        builder.append(i, timestamp=ts, key=b"key-%d" % i,
                       value=(b"v%d-" % ts) * (value_size // 4 + 1), headers=[])
    data = bytearray(builder.build())
    data[0:8] = base_offset.to_bytes(8, "big")  # baseOffset is not covered by the CRC
    return bytes(data)


def real_partition_dirs() -> list[Path]:
    root = shared_fixture("kafka-real")
    return sorted(p.parent for p in root.glob("*/*/inspect.txt"))


def real_id(path: Path) -> str:
    return f"{path.parent.name}/{path.name}"


def copy_partition(src: Path, dst_root: Path) -> Path:
    """A writable copy of a partition directory (and its data dir's checkpoint files)."""
    data_dir = dst_root / src.parent.name
    data_dir.mkdir(parents=True, exist_ok=True)
    for f in src.parent.iterdir():
        if f.is_file():
            shutil.copy(f, data_dir / f.name)
    dst = data_dir / src.name
    shutil.copytree(src, dst)
    for f in dst.rglob("*"):
        f.chmod(0o644)
    dst.chmod(0o755)
    data_dir.chmod(0o755)
    return dst


def all_batches(log: PartitionLog, records: bool = True):
    """[(segment, header, records)] for every batch of the log (records decoded on request)."""
    from segmentlog_source.format.record_decoder import decode_batch  # the kernels load slowly

    out = []
    for segment in log.segments:
        for header, entry in segment.iter_entries(allow_torn_tail=segment is log.segments[-1]):
            out.append((segment, header, decode_batch(entry, header).records if records else None))
    return out


class BruteForce:
    """The answers to offset and timestamp lookups, from a full scan of every record."""

    def __init__(self, log: PartitionLog, records: bool = True):
        self.log = log
        self.batches = all_batches(log, records)
        self.lasts = [h.last_offset for _, h, _ in self.batches]
        self.per_segment = []
        for segment in log.segments if records else []:
            rows = [(r.timestamp, r.offset, h.max_timestamp)
                    for s, h, records in self.batches if s is segment for r in records]
            max_ts = max((h.max_timestamp for s, h, _ in self.batches if s is segment), default=-1)
            largest = max_ts if max_ts >= 0 else segment.fs.mtime_ms(segment.log_path)
            self.per_segment.append((largest, np.array(rows, np.int64).reshape(-1, 3)))

    def position(self, offset: int):
        """(segment base, position) of the first batch with last offset >= offset."""
        i = bisect.bisect_left(self.lasts, offset)
        if i == len(self.batches):
            return self.log.segments[-1].base_offset, self.log.segments[-1].size
        segment, header, _ = self.batches[i]
        return segment.base_offset, header.position

    def offset_for_timestamp(self, target: int):
        """ListOffsets: the first segment whose max timestamp (or mtime) reaches the target, then
        its first record at or above it (in a batch whose max timestamp does) at or after the
        log start offset."""
        for largest, rows in self.per_segment:
            if largest < target:
                continue
            hits = np.flatnonzero((rows[:, 0] >= target) & (rows[:, 2] >= target)
                                  & (rows[:, 1] >= self.log.log_start_offset))
            if not hits.size:
                return None
            offset = int(rows[hits[0], 1])
            return offset if offset < self.log.log_end_offset else None
        return None

    def record_timestamps(self) -> list[int]:
        return sorted({int(t) for _, rows in self.per_segment for t in rows[:, 0]} - {-1})
