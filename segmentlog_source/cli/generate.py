"""`segmentlog generate`: write a synthetic multi-topic Kafka data directory, deterministically.

Batches are appended as a leader broker appends them, so segments, rolls, indexes, producer
snapshots and checkpoints are what a broker writes. Equal arguments (seed included) give equal
bytes.

Per topic, `records` records are spread over its partitions as a producer would: by the murmur2
hash of the key (Kafka's default partitioner), or, for null keys (--key-size 0), a batch at a
time round-robin. Record i of a topic has timestamp start + i * step, moved by up to +-jitter
(out-of-order CreateTime), values are slices of a word corpus (so codecs have work to do), keys
are `k` + a zero-padded random number. With --transactions, two transactional producers per
partition interleave transactions of 1-3 batches each, committed or (one in three) aborted with
end-transaction markers, between plain batches.

The directory must be local (or a mounted file system): an object-store URI is refused before
anything is written (generate locally, then upload).
"""

from __future__ import annotations

from dataclasses import dataclass, field
import hashlib
import uuid

import numpy as np

from ..errors import BadOptionError
from ..format.arrow import binary_array
from ..format.batch import CODEC_IDS
from ..format.control import ABORT, COMMIT, end_txn_marker
from ..format.partitioner import partitions_for_keys
from ..plan.write_options import MAX_PARTITIONS, check_topic_name
from ..format.record_encoder import encode_batch, encode_batches
from ..format.records import BinaryColumn, HeaderColumns, Record, RecordColumns
from ..storage.io.filesystem import filesystem_for
from ..storage.log.data_dir import check_writable, partition_dir, topic_id_of
from ..storage.log.log_config import LogConfig
from ..storage.log.partition_log import PartitionLog
from .progress import Progress, show_bar

HELP = "write a synthetic Kafka log directory (deterministic for a seed)"
DEFAULT_START_TIMESTAMP = 1_700_000_000_000  # 2023-11-14T22:13:20Z, as the fixtures use
BLOCK_BYTES = 16 * 1024 * 1024               # record bytes generated per step (memory bound)
CORPUS_BYTES = 1024 * 1024
LEADER_EPOCH = 0
TXN_PRODUCER_IDS = (1000, 1001)
_WORDS = ("kafka log segment offset index batch record broker topic partition leader replica "
          "consumer producer stream event order payment user session click value key time "
          "alpha beta gamma delta epsilon zeta theta lambda sigma omega").split()


# Sane bounds: every partition is a directory, every record is generated in memory first.
_MAX_TIMESTAMP_MS = (2**63 - 1) // 1000   # Spark's timestamp is microseconds in a long
_BOUNDS = (("partitions", 1, MAX_PARTITIONS), ("records", 0, 10**10),
           ("key_size", 0, 2**24), ("value_size", 0, 2**24), ("headers", 0, 1000),
           ("start_timestamp", 0, _MAX_TIMESTAMP_MS // 2), ("timestamp_step_ms", 0, 10**9),
           ("timestamp_jitter_ms", 0, 10**9), ("segment_bytes", 14, 2**31 - 1),
           ("records_per_batch", 1, 10**6), ("seed", 0, 2**32 - 1))


@dataclass(frozen=True)
class GenerateOptions:
    topics: tuple[str, ...] = ("events",)
    partitions: int = 1
    records: int = 1000
    codec: str = "none"
    key_size: int = 16
    value_size: int = 100
    headers: int = 0
    start_timestamp: int = DEFAULT_START_TIMESTAMP
    timestamp_step_ms: int = 1
    timestamp_jitter_ms: int = 0
    segment_bytes: int = 1024 * 1024 * 1024
    records_per_batch: int = 100
    transactions: bool = False
    seed: int = 0

    def check(self) -> None:
        for topic in self.topics:
            check_topic_name(topic, "topics")
        if len(set(self.topics)) != len(self.topics) or not self.topics:
            raise BadOptionError("topics", ",".join(self.topics), "give distinct topic names")
        if self.codec not in CODEC_IDS:
            raise BadOptionError("codec", self.codec, f"one of {', '.join(CODEC_IDS)}")
        for name, low, high in _BOUNDS:
            if not low <= getattr(self, name) <= high:
                raise BadOptionError(name, getattr(self, name), f"must be between {low} and "
                                     f"{high}")


@dataclass
class GeneratedLog:
    path: str
    records: dict[str, int] = field(default_factory=dict)  # partition dir name -> data records
    log_end_offsets: dict[str, int] = field(default_factory=dict)

    @property
    def total_records(self) -> int:
        return sum(self.records.values())


def generate_log(path: str, progress: bool = False, quiet: bool = False,
                 **options) -> GeneratedLog:
    """Write a data directory at `path` (created if needed); options as GenerateOptions.
    A progress bar is drawn on a terminal unless `quiet`, and anywhere with `progress`.

    Partitions that already exist are appended to (a topic keeps its topic id); a path that is
    neither missing, empty nor a Kafka data directory is refused, and so is a URI of a store
    segmentlog only reads (ReadOnlyStoreError, before anything is written).
    """
    if "topics" in options:
        options["topics"] = tuple(options["topics"])
    opts = GenerateOptions(**options)
    opts.check()
    fs, path = filesystem_for(path)
    fs.ensure_writable(path)
    check_writable(path, fs)
    config = LogConfig(segment_bytes=opts.segment_bytes, fsync="none")
    fs.makedirs(path)
    result = GeneratedLog(path)
    bar = Progress(opts.records * len(opts.topics), "generate", unit="rec",
                   shown=show_bar(quiet, force=progress))
    try:
        for t, topic in enumerate(opts.topics):
            # A new topic's id is derived from the seed, so that equal runs write equal bytes.
            topic_id = topic_id_of(path, topic, fs) or uuid.UUID(
                bytes=hashlib.sha256(f"{opts.seed}/{topic}".encode()).digest()[:16])
            writers = [_PartitionWriter(fs, partition_dir(path, topic, p, fs), t, p, topic_id,
                                        opts, config) for p in range(opts.partitions)]
            try:
                _write_topic(t, opts, writers, bar)
            finally:
                for writer in writers:
                    writer.close()
            for writer in writers:
                result.records[writer.log.name] = writer.records
                result.log_end_offsets[writer.log.name] = writer.log_end_offset
    finally:
        bar.close()
    return result


class _Rows:
    """Records not yet written, as the recipe they are built from (no bytes yet)."""

    def __init__(self, key_ids=None, value_starts=None, timestamps=None):
        empty = np.empty(0, np.int64)
        self.key_ids = empty if key_ids is None else key_ids
        self.value_starts = empty if value_starts is None else value_starts
        self.timestamps = empty if timestamps is None else timestamps

    def __len__(self) -> int:
        return len(self.timestamps)

    def take(self, selector) -> "_Rows":
        return _Rows(self.key_ids[selector], self.value_starts[selector], self.timestamps[selector])

    def __add__(self, other: "_Rows") -> "_Rows":
        return _Rows(*(np.concatenate([a, b]) for a, b in zip(
            (self.key_ids, self.value_starts, self.timestamps),
            (other.key_ids, other.value_starts, other.timestamps))))


def _write_topic(t: int, opts: GenerateOptions, writers: list, bar) -> None:
    rng = np.random.default_rng([opts.seed, t])
    corpus = _corpus(rng, opts.value_size)
    per_record = max(1, opts.key_size + opts.value_size + 8 * opts.headers)
    block = max(opts.records_per_batch, BLOCK_BYTES // per_record)
    sticky = 0
    for start in range(0, opts.records, block):
        n = min(block, opts.records - start)
        index = np.arange(start, start + n, dtype=np.int64)
        timestamps = opts.start_timestamp + index * opts.timestamp_step_ms
        if opts.timestamp_jitter_ms:
            jitter = rng.integers(-opts.timestamp_jitter_ms, opts.timestamp_jitter_ms + 1, n)
            timestamps = np.maximum(timestamps + jitter, 0)
        rows = _Rows(rng.integers(0, max(1, 10 * opts.records), n),
                     rng.integers(0, len(corpus) - opts.value_size + 1, n), timestamps)
        if opts.key_size:
            keys = _key_column(rows.key_ids, opts.key_size)
            targets = partitions_for_keys(binary_array(keys), opts.partitions)
        else:  # keyless: the sticky partitioner fills a batch for one partition, then moves on
            runs = (np.arange(n) + sticky) // opts.records_per_batch
            targets = runs % opts.partitions
            sticky = (sticky + n) % (opts.records_per_batch * opts.partitions)
        for p, writer in enumerate(writers):
            writer.add(rows.take(targets == p), corpus)
        bar.update(n)
    for writer in writers:
        writer.flush(corpus)


def _corpus(rng: np.random.Generator, value_size: int) -> np.ndarray:
    """Text-like bytes that values are sliced from: compressible, but not trivially."""
    words = rng.choice(_WORDS, size=(CORPUS_BYTES + value_size) // 5)
    return np.frombuffer(" ".join(words).encode("ascii"), np.uint8)


def _key_column(key_ids: np.ndarray, key_size: int):
    """Keys of exactly key_size bytes: `k` + the id's zero-padded digits (truncated to fit)."""
    n = len(key_ids)
    matrix = np.full((n, key_size), ord("0"), np.uint8)
    matrix[:, 0] = ord("k")
    digits = min(key_size - 1, 18)
    for i in range(digits):
        matrix[:, key_size - 1 - i] += ((key_ids // 10**i) % 10).astype(np.uint8)
    return BinaryColumn(None, np.arange(n + 1, dtype=np.int64) * key_size, matrix.ravel())


def _value_column(starts: np.ndarray, corpus: np.ndarray, value_size: int):
    n = len(starts)
    offsets = np.arange(n + 1, dtype=np.int64) * value_size
    if value_size == 0:
        return BinaryColumn(None, offsets, np.empty(0, np.uint8))
    windows = np.lib.stride_tricks.sliding_window_view(corpus, value_size)
    return BinaryColumn(None, offsets, windows[starts].ravel())


def _header_columns(n: int, count: int, key_ids: np.ndarray):
    names = [f"h{i}".encode() for i in range(count)]
    keys = BinaryColumn.from_pylist(names * n)
    # Header values: 8 bytes per header, the record's key id and the header number.
    values = (key_ids[:, None] * count + np.arange(count)).astype(">i8").view(np.uint8)
    values = BinaryColumn(None, np.arange(n * count + 1, dtype=np.int64) * 8, values.ravel())
    return HeaderColumns(np.arange(n + 1, dtype=np.int64) * count, keys, values)


@dataclass
class _Producer:
    producer_id: int
    next_sequence: int = 0
    open_batches_left: int = 0  # batches still to write in the open transaction (0: none open)


class _PartitionWriter:
    def __init__(self, fs, path: str, topic_index: int, partition: int, topic_id,
                 opts: GenerateOptions, config: LogConfig):
        self.log = PartitionLog.open_for_append(path, fs, config=config, topic_id=topic_id)
        self.opts = opts
        self.pending = _Rows()
        self.records = 0
        self.rng = np.random.default_rng([opts.seed, topic_index, partition])
        self.producers = [_Producer(pid) for pid in TXN_PRODUCER_IDS]
        self.last_timestamp = opts.start_timestamp

    @property
    def log_end_offset(self) -> int:
        return self.log.log_end_offset

    def add(self, rows: _Rows, corpus: np.ndarray) -> None:
        self.pending = self.pending + rows
        full = len(self.pending) - len(self.pending) % self.opts.records_per_batch
        if full:
            self._write(self.pending.take(slice(0, full)), corpus)
            self.pending = self.pending.take(slice(full, None))

    def flush(self, corpus: np.ndarray) -> None:
        if len(self.pending):
            self._write(self.pending, corpus)
            self.pending = _Rows()
        for producer in self.producers:
            if producer.open_batches_left:
                self._end_transaction(producer, commit=True)

    def close(self) -> None:
        self.log.close()

    def _columns(self, rows: _Rows, corpus: np.ndarray):
        opts = self.opts
        keys = _key_column(rows.key_ids, opts.key_size) if opts.key_size else None
        headers = _header_columns(len(rows), opts.headers, rows.key_ids) if opts.headers else None
        return RecordColumns(timestamps=rows.timestamps, keys=keys, headers=headers,
                             values=_value_column(rows.value_starts, corpus, opts.value_size))

    def _write(self, rows: _Rows, corpus: np.ndarray) -> None:
        self.records += len(rows)
        self.last_timestamp = max(self.last_timestamp, int(rows.timestamps.max()))
        per_batch = self.opts.records_per_batch
        if not self.opts.transactions:
            batches = encode_batches(self._columns(rows, corpus), max_records=per_batch,
                                     codec=self.opts.codec)
            self.log.append(batches.data, leader_epoch=LEADER_EPOCH)
            return
        for start in range(0, len(rows), per_batch):
            chunk = rows.take(slice(start, start + per_batch))
            producer = self._pick_producer()
            fields = {}
            if producer is not None:
                fields = dict(producer_id=producer.producer_id, producer_epoch=0,
                              base_sequence=producer.next_sequence, is_transactional=True)
                producer.next_sequence += len(chunk)
            batch = encode_batches(self._columns(chunk, corpus), codec=self.opts.codec, **fields)
            self.log.append(batch.data, leader_epoch=LEADER_EPOCH)
            if producer is not None:
                producer.open_batches_left -= 1
                if producer.open_batches_left == 0:
                    self._end_transaction(producer, commit=self.rng.integers(3) > 0)

    def _pick_producer(self) -> _Producer | None:
        """A plain batch (None) or the transactional producer whose transaction it joins."""
        choice = int(self.rng.integers(len(self.producers) + 1))
        if choice == len(self.producers):
            return None
        producer = self.producers[choice]
        if not producer.open_batches_left:
            producer.open_batches_left = int(self.rng.integers(1, 4))
        return producer

    def _end_transaction(self, producer: _Producer, commit: bool) -> None:
        key, value = end_txn_marker(COMMIT if commit else ABORT, coordinator_epoch=0)
        marker = encode_batch([Record(0, self.last_timestamp, key, value)], is_control=True,
                              is_transactional=True, producer_id=producer.producer_id,
                              producer_epoch=0)
        self.log.append(marker, leader_epoch=LEADER_EPOCH)
        producer.open_batches_left = 0


def add_arguments(parser) -> None:
    d = GenerateOptions()
    parser.add_argument("path", metavar="DIR", help="the data directory to write (local)")
    parser.add_argument("--topics", default=",".join(d.topics), help="comma-separated topic names")
    parser.add_argument("--partitions", type=int, default=d.partitions, metavar="N",
                        help="partitions per topic")
    parser.add_argument("--records", type=int, default=d.records, metavar="N",
                        help="records per topic, spread over its partitions by key")
    parser.add_argument("--codec", default=d.codec, choices=list(CODEC_IDS),
                        help="compression of every batch")
    parser.add_argument("--key-size", type=int, default=d.key_size, metavar="N",
                        help="bytes per key; 0 for null keys")
    parser.add_argument("--value-size", type=int, default=d.value_size, metavar="N",
                        help="bytes per value")
    parser.add_argument("--headers", type=int, default=d.headers, metavar="N",
                        help="headers per record")
    parser.add_argument("--start-timestamp", type=int, default=d.start_timestamp, metavar="MS",
                        help="timestamp of each topic's first record")
    parser.add_argument("--timestamp-step-ms", type=int, default=d.timestamp_step_ms, metavar="N",
                        help="time between consecutive records")
    parser.add_argument("--timestamp-jitter-ms", type=int, default=d.timestamp_jitter_ms,
                        metavar="N", help="move each timestamp by up to +-N ms (out-of-order "
                        "CreateTime)")
    parser.add_argument("--segment-bytes", type=int, default=d.segment_bytes, metavar="N",
                        help="the topic's segment.bytes: roll to a new segment beyond it")
    parser.add_argument("--records-per-batch", type=int, default=d.records_per_batch,
                        metavar="N", help="records per producer batch")
    parser.add_argument("--transactions", action="store_true",
                        help="mix in committed and aborted transactions, with their markers")
    parser.add_argument("--seed", type=int, default=d.seed, metavar="N",
                        help="equal seeds (and options) write equal bytes")
    parser.add_argument("--progress", action="store_true",
                        help="show a progress bar even when stdout or stderr is not a terminal")


def run(args) -> int:
    try:
        generated = _generate(args)
    except BadOptionError as err:
        if err.name not in GenerateOptions.__dataclass_fields__:
            raise
        # the same fact, under the name the user typed
        raise BadOptionError("--" + err.name.replace("_", "-"), err.value, err.reason) from None
    fs, path = filesystem_for(args.path)   # local: generate_log wrote there
    for name, count in generated.records.items():
        print(f"{fs.join(path, name)}: {count} records, log end offset "
              f"{generated.log_end_offsets[name]}")
    return 0


def _generate(args) -> GeneratedLog:
    return generate_log(   # refuses a store URI before writing anything
        args.path, progress=args.progress, quiet=getattr(args, "quiet", False),
        topics=[t for t in args.topics.split(",") if t], partitions=args.partitions,
        records=args.records, codec=args.codec, key_size=args.key_size,
        value_size=args.value_size, headers=args.headers,
        start_timestamp=args.start_timestamp, timestamp_step_ms=args.timestamp_step_ms,
        timestamp_jitter_ms=args.timestamp_jitter_ms, segment_bytes=args.segment_bytes,
        records_per_batch=args.records_per_batch, transactions=args.transactions, seed=args.seed)
