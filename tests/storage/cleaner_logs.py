"""Partitions for the compaction tests, written as a leader appends them: plain, idempotent and
transactional producers (commits and aborts, one producer bumping its epoch at every marker as
transaction version 2 does), tombstones, keyless records, keys of 0..200 bytes, headers, every
codec, some LogAppendTime batches; small segments so a partition has several.

And read back for the model (cleaner_model.py) with kafka-python, not segmentlog's reader:
each `.log` split into batches by its 12-byte offset/length prefix, the `.txnindex` and the
data directory's checkpoints parsed by hand."""

from __future__ import annotations

from dataclasses import dataclass
import os
import random
import re
import struct

from kafka.record.default_records import DefaultRecordBatch
from kafka.record.legacy_records import LegacyRecordBatch

from segmentlog_source.format.control import ABORT, COMMIT, end_txn_marker
from segmentlog_source.format.record_encoder import encode_batch
from segmentlog_source.format.records import Record
from segmentlog_source.storage.log.log_config import LogConfig
from segmentlog_source.storage.log.partition_log import PartitionLog
from tests.storage.cleaner_model import AbortedTxn, Batch, PartitionState, Rec, Segment

CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
T0 = 1_700_000_000_000
HOUR_MS = 3_600_000
IDEMPOTENT_PID = 500
TXN_PIDS = (1000, 1001, 1002)
DELETE_HORIZON_FLAG = 0x40
LOG_APPEND_TIME_FLAG = 0x08
TRANSACTIONAL_FLAG = 0x10
CONTROL_FLAG = 0x20
SEGMENT_NAME = re.compile(r"^(\d{20})\.log$")
TXN_ENTRY = struct.Struct(">hqqqq")         # version, pid, first, last, lastStableOffset
_PREFIX = struct.Struct(">qi")
_WORDS = b"alpha beta gamma delta order payment user click session value ".split()


@dataclass(frozen=True)
class LogPlan:
    """How one partition is written; the details come from `seed`."""
    seed: int
    batches: int = 40
    key_space: int = 30
    max_key_size: int = 200
    tombstone_pct: int = 15
    keyless_pct: int = 5
    txn_producers: int = 2
    abort_pct: int = 35
    epoch_bump: bool = True       # TXN_PIDS[1] writes its markers with epoch + 1
    leave_open: bool = False      # a transaction is still open at the end
    retire_bumper: bool = False   # the epoch-bumping producer stops halfway through the first
                                  # write (its last marker stays its last batch)
    span_hours: int = 30          # the batches' timestamps spread over this many hours
    segment_bytes: int = 4096


class _Producer:
    def __init__(self, pid: int, bump: bool):
        self.pid, self.bump = pid, bump
        self.epoch, self.sequence, self.open_left = 0, 0, 0


class PartitionWriter:
    """Appends to one partition directory; can be called again later to let the log grow."""

    def __init__(self, path: str, topic: str, partition: int, plan: LogPlan):
        self.path, self.topic, self.partition, self.plan = path, topic, partition, plan
        self.rng = random.Random(plan.seed)
        rng = self.rng
        self.keys = [bytes(rng.getrandbits(8) for _ in range(rng.choice(
            (0, 1, 2, 8, 15, 16, 17, 40, plan.max_key_size, rng.randint(0, plan.max_key_size)))))
            for _ in range(plan.key_space)]
        self.keys = list(dict.fromkeys(self.keys))    # random short keys may repeat
        self.idempotent = _Producer(IDEMPOTENT_PID, False)
        self.txn = [_Producer(pid, plan.epoch_bump and i == 1)
                    for i, pid in enumerate(TXN_PIDS[:plan.txn_producers])]
        self.clock = T0
        self.writes = 0

    def _config(self) -> LogConfig:
        return LogConfig(segment_bytes=self.plan.segment_bytes, fsync="none")

    def write(self, batches: int, span_ms: int, *, finish: bool, roll: bool = False) -> None:
        """Append `batches` data batches over `span_ms` of timestamps; `finish`: end every open
        transaction at the end (else, with plan.leave_open, the first producer's stays open);
        `roll`: go on until a new segment was rolled (so there is something to clean)."""
        log = PartitionLog.open_for_append(self.path, topic=self.topic,
                                           partition=self.partition, config=self._config())
        retire_at = batches // 2 if self.plan.retire_bumper and not self.writes else None
        self.writes += 1
        try:
            active = log.segments[-1].base_offset if log.segments else None
            step = max(1, span_ms // max(1, batches))
            written = 0
            while written < batches or (roll and log.segments[-1].base_offset == active):
                if written == retire_at:
                    self._retire_bumper(log)
                self.clock += self.rng.randint(step // 2, step)
                self._data_batch(log)
                written += 1
            for producer in self.txn:
                keep_open = (not finish and self.plan.leave_open and producer is self.txn[0]
                             and producer.open_left)
                if producer.open_left and not keep_open:
                    self._marker(log, producer)
        finally:
            log.close()

    def _retire_bumper(self, log: PartitionLog) -> None:
        """The epoch-bumping producer's last transaction: one batch, aborted."""
        for producer in self.txn:
            if producer.bump:
                if not producer.open_left:
                    producer.open_left = 1
                    self._append(log, self._records(2), "none", producer, end=False)
                self._marker(log, producer, ABORT)
        self.txn = [p for p in self.txn if not p.bump]

    def _records(self, n: int) -> list[Record]:
        rng, plan = self.rng, self.plan
        out = []
        for i in range(n):
            key = None if rng.randrange(100) < plan.keyless_pct else rng.choice(self.keys)
            if rng.randrange(100) < plan.tombstone_pct:
                value = None
            else:
                value = b" ".join(rng.choice(_WORDS) for _ in range(rng.randint(0, 12)))
            headers = ()
            if rng.randrange(5) == 0:
                headers = tuple((f"h{j}", None if rng.randrange(3) == 0 else b"hv%d" % j)
                                for j in range(rng.randint(1, 2)))
            ts = self.clock + rng.randint(-500, 500)   # CreateTime may run backwards
            out.append(Record(i, ts, key, value, headers))
        return out

    def _data_batch(self, log: PartitionLog) -> None:
        rng = self.rng
        records = self._records(rng.randint(1, 6))
        codec = rng.choice(CODECS)
        kind = rng.randrange(10)
        fields: dict = {}
        producer = None
        if kind < 5 and self.txn:
            producer = rng.choice(self.txn)
            if not producer.open_left:
                producer.open_left = rng.randint(1, 3)
        elif kind < 7:
            producer = self.idempotent
        elif rng.randrange(4) == 0:
            fields = dict(log_append_time=self.clock)
        self._append(log, records, codec, producer, end=True, **fields)

    def _append(self, log: PartitionLog, records, codec, producer, end: bool, **fields):
        if producer is not None:
            fields.update(producer_id=producer.pid, producer_epoch=producer.epoch,
                          base_sequence=producer.sequence)
            if producer.open_left:
                fields["is_transactional"] = True
            producer.sequence += len(records)
        log.append(encode_batch(records, codec=codec, **fields), leader_epoch=0)
        if producer is not None and producer.open_left and end:
            producer.open_left -= 1
            if producer.open_left == 0:
                self._marker(log, producer)

    def _marker(self, log: PartitionLog, producer: _Producer, kind: int | None = None) -> None:
        if kind is None:
            kind = ABORT if self.rng.randrange(100) < self.plan.abort_pct else COMMIT
        epoch = producer.epoch + 1 if producer.bump else producer.epoch
        key, value = end_txn_marker(kind, coordinator_epoch=3)
        log.append(encode_batch([Record(0, self.clock, key, value)], is_control=True,
                                is_transactional=True, producer_id=producer.pid,
                                producer_epoch=epoch), leader_epoch=0)
        if producer.bump:             # the next transaction uses the bumped epoch
            producer.epoch, producer.sequence = epoch, 0
        producer.open_left = 0


def write_checkpoint(path: str, entries: dict[tuple[str, int], int]) -> None:
    """An offset checkpoint file (version 0) as a broker writes it."""
    lines = ["0", str(len(entries))] + [f"{t} {p} {o}" for (t, p), o in entries.items()]
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


# -- reading a partition directory --------------------------------------------------------------
def decode_batch(raw: bytes) -> Batch:
    if raw[16] < 2:
        return _decode_legacy(raw)
    b = DefaultRecordBatch(raw)
    if not b.validate_crc():
        raise ValueError(f"CRC mismatch in the batch at offset {b.base_offset}")
    attrs = b.attributes
    records = tuple(Rec(r.offset, r.timestamp, r.key, r.value,
                        tuple((k, v) for k, v in r.headers)) for r in b)
    assert len(records) == b.records_count
    horizon = b.first_timestamp if attrs & DELETE_HORIZON_FLAG else None
    return Batch(b.base_offset, b.last_offset, records, attrs & 0x07,
                 bool(attrs & LOG_APPEND_TIME_FLAG), bool(attrs & TRANSACTIONAL_FLAG),
                 bool(attrs & CONTROL_FLAG), horizon, b.first_timestamp, b.max_timestamp,
                 b.producer_id, b.producer_epoch, b.base_sequence, b.leader_epoch, 2, raw)


def _decode_legacy(raw: bytes) -> Batch:
    b = LegacyRecordBatch(raw, raw[16])
    if not b.validate_crc():
        raise ValueError(f"CRC mismatch in the message at offset {b.base_offset}")
    records = tuple(Rec(r.offset, r.timestamp if r.timestamp is not None else -1, r.key,
                        r.value, ()) for r in b)
    max_ts = max((r.timestamp for r in records), default=-1)
    return Batch(records[0].offset, b.base_offset, records, b.compression_type,
                 b.timestamp_type == 1, False, False, None, -1, max_ts, -1, -1, -1, -1,
                 raw[16], raw)


def split_batches(data: bytes) -> list[bytes]:
    out, pos = [], 0
    while pos < len(data):
        if len(data) - pos < 12:
            raise ValueError(f"{len(data) - pos} stray bytes at position {pos}")
        _, length = _PREFIX.unpack_from(data, pos)
        end = pos + 12 + length
        if end > len(data):
            raise ValueError(f"a batch at position {pos} runs past the end of the file")
        out.append(data[pos:end])
        pos = end
    return out


def read_checkpoint(path: str) -> dict[tuple[str, int], int]:
    if not os.path.exists(path):
        return {}
    with open(path) as f:
        lines = f.read().splitlines()
    if not lines:
        return {}
    assert lines[0] == "0", lines
    entries = {}
    for line in lines[2:2 + int(lines[1])]:
        topic, part, offset = line.split()
        entries[(topic, int(part))] = int(offset)
    return entries


def read_txn_index(path: str) -> list[AbortedTxn]:
    if not os.path.exists(path):
        return []
    with open(path, "rb") as f:
        data = f.read()
    return [AbortedTxn(*TXN_ENTRY.unpack_from(data, pos)[1:])
            for pos in range(0, len(data) - len(data) % TXN_ENTRY.size, TXN_ENTRY.size)]


def _file_size(path: str) -> int:
    return os.path.getsize(path) if os.path.exists(path) else 0


def read_partition(path: str) -> PartitionState:
    name = os.path.basename(path.rstrip("/"))
    topic, part = name.rsplit("-", 1)
    data_dir = os.path.dirname(path.rstrip("/"))
    segments = []
    for base in sorted(int(m.group(1)) for m in map(SEGMENT_NAME.match, os.listdir(path)) if m):
        stem = os.path.join(path, f"{base:020d}")
        with open(stem + ".log", "rb") as f:
            data = f.read()
        batches = [decode_batch(raw) for raw in split_batches(data)]
        segments.append(Segment(base, batches, len(data), _file_size(stem + ".index"),
                                _file_size(stem + ".timeindex"),
                                int(os.path.getmtime(stem + ".log") * 1000),
                                read_txn_index(stem + ".txnindex")))
    key = (topic, int(part))
    start = read_checkpoint(os.path.join(data_dir, "log-start-offset-checkpoint")).get(key)
    first_base = segments[0].base
    return PartitionState(
        topic, int(part), segments, first_base if start is None else max(start, first_base),
        read_checkpoint(os.path.join(data_dir, "cleaner-offset-checkpoint")).get(key),
        read_checkpoint(os.path.join(data_dir, "replication-offset-checkpoint")).get(key))
