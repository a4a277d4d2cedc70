"""Logs that grow while a stream reads them, written through the storage layer in this process:
plain batches whose values say their offset, transactional batches and their markers, and a
driver for the stream reader that calls it as PySpark's streaming runner does (offsets through
JSON, each InputPartition pickled to its "executor")."""

from __future__ import annotations

import json
import pickle
from pathlib import Path

from segmentlog_source.format.control import ABORT, COMMIT, end_txn_marker
from segmentlog_source.format.record_encoder import encode_batch
from segmentlog_source.format.records import Record
from segmentlog_source.plan.stream_options import parse_stream_options
from segmentlog_source.spark.stream_reader import SegmentLogStreamReader
from segmentlog_source.storage.log.log_config import LogConfig
from segmentlog_source.storage.log.partition_log import PartitionLog

TIMESTAMP = 1_700_000_000_000


class GrowingLog:
    """One partition directory appended to batch by batch (small segments: they roll)."""

    def __init__(self, root: Path, topic: str = "t", partition: int = 0,
                 segment_bytes: int = 4096):
        self.path = root / f"{topic}-{partition}"
        self.log = PartitionLog.open_for_append(
            str(self.path), topic=topic, partition=partition,
            config=LogConfig(segment_bytes=segment_bytes, index_interval_bytes=512, fsync="none"))

    def append(self, count: int, **fields) -> tuple[int, int]:
        first = self.log.log_end_offset
        records = [Record(k, TIMESTAMP + first + k, None, b"%d" % (first + k))
                   for k in range(count)]
        return self.log.append(encode_batch(records, **fields))

    def begin(self, producer_id: int, count: int) -> tuple[int, int]:
        """A batch of a transaction of `producer_id` (no marker yet)."""
        return self.append(count, is_transactional=True, producer_id=producer_id,
                           producer_epoch=0)

    def end(self, producer_id: int, commit: bool) -> int:
        key, value = end_txn_marker(COMMIT if commit else ABORT, coordinator_epoch=0)
        marker = encode_batch([Record(0, TIMESTAMP, key, value)], is_control=True,
                              is_transactional=True, producer_id=producer_id, producer_epoch=0)
        return self.log.append(marker)[0]

    def size(self) -> int:
        return sum(p.stat().st_size for p in self.path.glob("*.log"))

    def close(self) -> None:
        self.log.close()


class Stream:
    """A stream reader over `path`, driven as Spark drives one micro-batch after another."""

    def __init__(self, path: Path, **options):
        opts = {"path": str(path), **{k: str(v) for k, v in options.items()}}
        self.reader = SegmentLogStreamReader(parse_stream_options(opts))
        self.offset = json.loads(json.dumps(self.reader.initialOffset()))
        self.planned_bytes: list[int] = []

    def trigger(self, limit=None) -> list[tuple[str, int, int, bytes]] | None:
        """One micro-batch: its rows (topic, partition, offset, value), None when none ran."""
        limit = limit or self.reader.getDefaultReadLimit()
        end = json.loads(json.dumps(self.reader.latestOffset(self.offset, limit)))
        if end == self.offset:
            return None
        rows = []
        partitions = self.reader.partitions(self.offset, end)
        self.planned_bytes.append(sum(t.nbytes for p in partitions for t in p.group.tasks))
        for partition in partitions:
            for batch in self.reader.read(pickle.loads(pickle.dumps(partition))):
                rows += zip(batch.column("topic").to_pylist(),
                            batch.column("partition").to_pylist(),
                            batch.column("offset").to_pylist(),
                            batch.column("value").to_pylist())
        self.reader.commit(end)
        self.offset = end
        return sorted(rows)


def transaction_child(path: str, go_file: str) -> None:
    """A separate process's appends, for a read_committed stream: 20 plain records, a
    transaction of producer 7 (3 batches of 5) left open until `go_file` exists, 10 plain
    records meanwhile, then its ABORT marker and 10 more plain records. Prints `open <first
    offset of the transaction>` once it is open and `done <log end>` at the end."""
    import os
    import time

    log = GrowingLog(Path(path).parent, topic=Path(path).name.rsplit("-", 1)[0])
    log.append(20)
    first, _ = log.begin(producer_id=7, count=5)
    log.begin(producer_id=7, count=5)
    log.append(10)
    log.begin(producer_id=7, count=5)
    print("open", first, flush=True)
    while not os.path.exists(go_file):
        time.sleep(0.05)
    log.end(producer_id=7, commit=False)
    log.append(10)
    print("done", log.log.log_end_offset, flush=True)
    log.close()


if __name__ == "__main__":
    import sys

    transaction_child(sys.argv[1], sys.argv[2])
