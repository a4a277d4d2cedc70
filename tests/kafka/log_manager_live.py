"""segmentlog's log manager against the test broker (issue #20): the files it retains and
compacts are loaded by a real broker, and its compaction keeps what the broker's cleaner keeps.

Part 1, a broker loads what segmentlog's LogManager left. segmentlog writes a topic (two
partitions, small segments, repeating keys, tombstones, keyless records, idempotent and
transactional producers, every codec, CreateTime 6 h old for the first 40 % of each partition
and 1 h old for the rest). With the broker stopped, its files replace the files of topics
created through Admin (adoption.place: the broker keeps its topic ids), then LogManager runs on
the broker's own data directory, so the checkpoints it brings up to date are the broker's:
`retain()` on lm-delete-* (retention.ms 3 h: the 6 h old segments go), `compact()` and
`retain()` on lm-compact-*. Round "marker" starts the broker with its clean-shutdown marker,
round "no-marker" without it (each round has its own pair of topics, placed just before it).

Placing files does not move the broker's high watermark: its replication-offset-checkpoint
still holds 0 from the empty topic, and segmentlog, as a broker does, neither deletes nor
cleans above the high watermark. Round "marker" runs LogManager once on that (`stale_hw`: it
must change nothing), then records the placed log end offsets as the high watermark, as a
replica that had all these records would have it, and runs it for real.

The broker's own upkeep must not change these topics while they are observed, and the round
checks that it did not (every `.log` file hashes the same before the start and after the stop,
and the broker logged no cleaning of them): lm-compact-* asks the broker's cleaner for
min.cleanable.dirty.ratio=0.01, and it still finds nothing dirty, because segmentlog's
cleaner-offset-checkpoint puts the first dirty offset at the active segment; lm-delete-* has
the same retention.ms as segmentlog used, and no remaining segment's newest record is within
hours of that limit (and the broker's first retention check comes 30 s after its start).

Part 2, the broker's cleaner and segmentlog's clean the same log. lm-keyed was produced by real
producers (broker_topics.log_manager_commands) into a compacted topic whose cleaning was held
off by min.cleanable.dirty.ratio=1. Its partition directory is copied while the broker is
stopped; in round "marker" the ratio is lowered to 0.01 and the broker's cleaner cleans it
(polled through cleaner-offset-checkpoint); segmentlog's LogManager compacts the copy with the
same configs.

At the end of round "marker", with the broker still running, LogManager is pointed at the
broker's data directory once more, for lm-live (try_on_running_broker): the broker holds the
directory's `.lock`, so LogManager must refuse.
"""

from __future__ import annotations

import hashlib
import re
import shutil
import struct
import time
from dataclasses import dataclass, field
from pathlib import Path

from segmentlog_source.devtools.kafka.java_client import KafkaClient
from segmentlog_source.errors import LogLockedError
from segmentlog_source.format.control import ABORT, COMMIT, end_txn_marker
from segmentlog_source.format.record_decoder import decode_batch
from segmentlog_source.format.record_encoder import encode_batch
from segmentlog_source.format.records import Record
from segmentlog_source.storage.log.checkpoints import (read_offset_checkpoint,
                                                      update_offset_checkpoint)
from segmentlog_source.storage.log.log_config import LogConfig
from segmentlog_source.storage.log.log_manager import LogManager
from segmentlog_source.storage.log.partition_log import PartitionLog
from tests.kafka.adoption import Served, comparable, observe, place
from tests.kafka.broker_topics import (ADOPTED_PARTITIONS, LM_KEYED, LM_KEYED_CONFIGS, LM_LIVE,
                                       LM_RETENTION_MS)
from tests.kafka.reads import Read, segmentlog_read

PARTITIONS = ADOPTED_PARTITIONS
SOURCE_TOPIC = "lm"
RECORDS = 320                       # per partition, before the transactions of partition 0
OLD_SHARE = 0.4                     # the first 40 % of each partition is 6 h old
HOUR_MS = 3600 * 1000
CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
WRITE = {"segment.bytes": "2048", "index.interval.bytes": "256"}
COMPACT_OVERRIDES = {"cleanup.policy": "compact", **WRITE}
DELETE_OVERRIDES = {"cleanup.policy": "delete", "retention.ms": str(LM_RETENTION_MS), **WRITE}
# lm-keyed's broker configs in segmentlog's names (internal.segment.bytes is segment.bytes)
KEYED_OVERRIDES = {"cleanup.policy": "compact", "delete.retention.ms": str(24 * HOUR_MS),
                   "segment.bytes": LM_KEYED_CONFIGS["internal.segment.bytes"],
                   "index.interval.bytes": LM_KEYED_CONFIGS["index.interval.bytes"]}
CHECKPOINTS = ("recovery-point-offset-checkpoint", "log-start-offset-checkpoint",
               "cleaner-offset-checkpoint", "replication-offset-checkpoint")
HW_CHECKPOINT = "replication-offset-checkpoint"
CLEANER_CHECKPOINT = "cleaner-offset-checkpoint"
CLEANING_TIMEOUT_S = 60.0
DELETE_HORIZON_FLAG = 0x40
ROUNDS = {"marker": "m", "no-marker": "n"}
KEYED_DIR = f"{LM_KEYED}-0"


# -- what segmentlog writes ---------------------------------------------------------------------
def _record(p: int, i: int, now_ms: int, k: int) -> Record:
    """Record i of partition p, the k-th of its batch."""
    key = None if p == 1 and i % 23 == 22 else f"key-{i % 29}".encode()
    value = None if i % 11 == 10 else f"p{p}-value-{i}-".encode() * (1 + i % 3)
    old = i < RECORDS * OLD_SHARE
    ts = now_ms - (6 if old else 1) * HOUR_MS + i * 1000 - (5000 if i % 9 == 8 else 0)
    headers = (("i", str(i).encode()),) if i % 2 else ()
    return Record(k, ts, key, value, headers)


def write_source(out: Path, now_ms: int) -> Path:
    """The topic segmentlog writes with its PartitionLog writers: per partition an idempotent
    producer, batches of 6 cycling through the codecs; in partition 0 a committed and an
    aborted transaction over the same keys, a third of the way in."""
    for p in range(PARTITIONS):
        config = LogConfig(segment_bytes=int(WRITE["segment.bytes"]),
                           index_interval_bytes=int(WRITE["index.interval.bytes"]))
        log = PartitionLog.open_for_append(str(out / f"{SOURCE_TOPIC}-{p}"), topic=SOURCE_TOPIC,
                                           partition=p, config=config)
        sequence = 0
        for n, first in enumerate(range(0, RECORDS, 6)):
            records = [_record(p, i, now_ms, i - first)
                       for i in range(first, min(first + 6, RECORDS))]
            log.append(encode_batch(records, producer_id=7000 + p, producer_epoch=0,
                                    base_sequence=sequence, codec=CODECS[n % len(CODECS)]),
                       leader_epoch=0)
            sequence += len(records)
            if p == 0 and first == 204:
                _transactions(log, now_ms - HOUR_MS + first * 1000)
        log.close()
    return out


def _transactions(log: PartitionLog, ts: int) -> None:
    """Producer 7100 commits two batches, 7101 aborts one; the aborted values would be the
    newest of their keys if they counted."""
    def batch(pid: int, seq: int, keys: range, tag: str) -> bytes:
        records = [Record(n, ts + k, f"key-{k}".encode(), f"{tag}-{k}".encode())
                   for n, k in enumerate(keys)]
        return encode_batch(records, producer_id=pid, producer_epoch=0, base_sequence=seq,
                            is_transactional=True, codec="lz4")

    def marker(pid: int, control: int) -> bytes:
        key, value = end_txn_marker(control, coordinator_epoch=0)
        return encode_batch([Record(0, ts + 100, key, value)], is_control=True,
                            is_transactional=True, producer_id=pid, producer_epoch=0)

    log.append(batch(7100, 0, range(0, 4), "committed"), leader_epoch=0)
    log.append(batch(7101, 0, range(2, 8), "aborted"), leader_epoch=0)
    log.append(batch(7100, 4, range(8, 12), "committed"), leader_epoch=0)
    log.append(marker(7101, ABORT), leader_epoch=0)
    log.append(marker(7100, COMMIT), leader_epoch=0)


# -- one round of part 1 ------------------------------------------------------------------------
@dataclass
class Round:
    name: str
    compact_topic: str
    delete_topic: str
    stale_hw: dict[str, object] = field(default_factory=dict)   # what LogManager did at HW 0
    retained: dict[str, list] = field(default_factory=dict)     # topic -> RetentionResults
    compacted: dict[int, object] = field(default_factory=dict)  # partition -> compaction
    offsets: dict[str, dict[int, tuple[int, int]]] = field(default_factory=dict)
    segmentlog: dict[str, Read] = field(default_factory=dict)
    served: dict[str, Served] = field(default_factory=dict)
    foreign: list[str] = field(default_factory=list)      # what LogManager left beside the logs
    logs_before: dict[str, str] = field(default_factory=dict)
    logs_after: dict[str, str] = field(default_factory=dict)
    checkpoints_before: dict[str, dict] = field(default_factory=dict)
    cleaner_after: dict = field(default_factory=dict)
    cleaner_lines: dict[str, list[str]] = field(default_factory=dict)   # partition -> lines
    recovered: dict[str, list[str]] = field(default_factory=dict)
    on_running_broker: tuple[str, list[str]] | None = None    # try_on_running_broker

    @property
    def topics(self) -> list[str]:
        return [self.compact_topic, self.delete_topic]


def _log_hashes(data_dir: Path, topics: list[str]) -> dict[str, str]:
    return {f"{t}-{p}/{f.name}": hashlib.sha256(f.read_bytes()).hexdigest()
            for t in topics for p in range(PARTITIONS)
            for f in sorted((data_dir / f"{t}-{p}").glob("*.log"))}


def _ours(data_dir: Path, topics: list[str]) -> dict[tuple[str, int], int]:
    return {key: v for key, v in read_offset_checkpoint(str(data_dir / CLEANER_CHECKPOINT)).items()
            if key[0] in topics}


def _foreign(data_dir: Path, topics: list[str], before: set[str]) -> list[str]:
    """Names LogManager added to the data directory or the partition directories that a broker
    does not write itself: a `_segmentlog` folder, our partition locks, temporary files."""
    found = sorted(set(p.name for p in data_dir.iterdir()) - before)
    for t in topics:
        for p in range(PARTITIONS):
            for f in (data_dir / f"{t}-{p}").iterdir():
                if f.name.startswith(".") or f.name.endswith((".tmp", ".cleaned", ".swap")):
                    found.append(f"{t}-{p}/{f.name}")
    return found


def run_round(spark, broker, source: Path, round_: Round, now_ms: int,
              while_running=None) -> Round:
    """Place, run LogManager, read with segmentlog, start the broker, observe, stop."""
    data = broker.data_dir
    for topic in round_.topics:
        for p in range(PARTITIONS):
            place(source / f"{SOURCE_TOPIC}-{p}", broker.partition_dir(topic, p))
    before = {p.name for p in data.iterdir()}
    managers = {round_.compact_topic: LogManager(str(data), topics=[round_.compact_topic],
                                                 overrides=COMPACT_OVERRIDES,
                                                 clock_ms=lambda: now_ms),
                round_.delete_topic: LogManager(str(data), topics=[round_.delete_topic],
                                                overrides=DELETE_OVERRIDES,
                                                clock_ms=lambda: now_ms)}
    if round_.name == "marker":
        round_.stale_hw = {"retained": managers[round_.delete_topic].retain(),
                           "compacted": managers[round_.compact_topic].compact(),
                           "hw": {k: v for k, v in read_offset_checkpoint(
                               str(data / HW_CHECKPOINT)).items() if k[0] in round_.topics}}
    ends = {(t, p): PartitionLog.open(str(broker.partition_dir(t, p))).log_end_offset
            for t in round_.topics for p in range(PARTITIONS)}
    update_offset_checkpoint(str(data / HW_CHECKPOINT), ends)
    round_.retained[round_.delete_topic] = managers[round_.delete_topic].retain()
    round_.compacted = {c.partition: c for c in managers[round_.compact_topic].compact()}
    round_.retained[round_.compact_topic] = managers[round_.compact_topic].retain()
    round_.foreign = _foreign(data, round_.topics, before)
    for topic in round_.topics:
        round_.offsets[topic] = {}
        for p in range(PARTITIONS):
            log = PartitionLog.open(str(broker.partition_dir(topic, p)))
            round_.offsets[topic][p] = (log.log_start_offset, log.log_end_offset)
        round_.segmentlog[topic] = segmentlog_read(spark, data, {"subscribe": topic,
                                                                 "includeHeaders": "true"})
    round_.logs_before = _log_hashes(data, round_.topics)
    round_.checkpoints_before = {name: {k: v for k, v in read_offset_checkpoint(
        str(data / name)).items() if k[0] in round_.topics} for name in CHECKPOINTS}
    if round_.name == "no-marker":
        broker.clean_shutdown_marker.unlink(missing_ok=True)
    assert broker.clean_shutdown_marker.exists() == (round_.name == "marker")
    broker.start()
    try:
        if while_running is not None:
            while_running()
        round_.served = observe(spark, broker, round_.topics, [])
        if while_running is not None:
            while_running.wait()
        if round_.name == "marker":
            round_.on_running_broker = try_on_running_broker(broker)
    finally:
        broker.stop()
    lines = broker.log_since_start()
    for name in [f"{t}-{p}" for t in round_.topics for p in range(PARTITIONS)] + [KEYED_DIR]:
        round_.cleaner_lines[name] = cleaner_lines(lines, name)
    for topic in round_.topics:
        round_.recovered[topic] = [line for line in round_.served[topic].log
                                   if "Recovering unflushed segment" in line]
    round_.logs_after = _log_hashes(data, round_.topics)
    round_.cleaner_after = _ours(data, round_.topics)
    return round_


def try_on_running_broker(broker) -> tuple[str, list[str]]:
    """LogManager.retain() on the running broker's data directory, for lm-live (30 records, its
    active segment's indexes preallocated and memory-mapped by the broker): what it raised, or
    "ran", and which of lm-live-0's files it changed."""
    part = broker.partition_dir(LM_LIVE)

    def files() -> dict[str, tuple[int, str]]:
        return {f.name: (f.stat().st_size, hashlib.sha256(f.read_bytes()).hexdigest())
                for f in part.iterdir()}

    before = files()
    try:
        LogManager(str(broker.data_dir), topics=[LM_LIVE], overrides={"cleanup.policy": "delete"},
                   lock_timeout_ms=500).retain()
        outcome = "ran"
    except LogLockedError as err:
        outcome = f"LogLockedError: {err}"
    after = files()
    changed = sorted(f"{name}: {before.get(name, (None,))[0]} -> {after.get(name, (None,))[0]} "
                     "bytes" for name in before.keys() | after.keys()
                     if before.get(name) != after.get(name))
    return outcome, changed


def cleaner_lines(lines: list[str], partition: str) -> list[str]:
    """The broker's log cleaner's lines about one partition ("Cleaner 0: Cleaning LogSegment(..)
    in log lm-keyed-0 into ..", "Log cleaner thread 0 cleaned log lm-keyed-0 (dirty section ..")."""
    named = re.compile(rf"(?<![\w-]){re.escape(partition)}(?!\d)")
    return [line for line in lines
            if ("Cleaner " in line or "cleaner thread" in line) and named.search(line)]


def offset_problems(round_: Round) -> list[str]:
    """Where the broker's ListOffsets and consumer differ from segmentlog's view of the same
    directory: [] when they agree."""
    problems = []
    for topic in round_.topics:
        served, ours = round_.served[topic], round_.offsets[topic]
        if served.error:
            problems.append(f"{topic}: ListOffsets failed: {served.error}")
            continue
        for p, (start, end) in ours.items():
            got = (served.offsets[p]["earliest"]["offset"], served.offsets[p]["latest"]["offset"])
            if got != (start, end):
                problems.append(f"{topic}-{p}: ListOffsets (earliest, latest) = {got}, "
                                f"segmentlog's PartitionLog (log start, log end) = {(start, end)}")
        read, mine = served.read, round_.segmentlog[topic]
        if read.error or mine.error:
            problems.append(f"{topic}: format('kafka') error {read.error}, "
                            f"format('segmentlog') error {mine.error}")
        elif comparable(read.rows) != comparable(mine.rows):
            theirs, ours_rows = comparable(read.rows), comparable(mine.rows)
            first = next((i for i, (a, b) in enumerate(zip(theirs, ours_rows)) if a != b),
                         min(len(theirs), len(ours_rows)))
            problems.append(f"{topic}: format('kafka') {len(theirs)} rows, format('segmentlog') "
                            f"{len(ours_rows)}; first difference at row {first}: "
                            f"{theirs[first:first + 1]} != {ours_rows[first:first + 1]}")
    return problems


# -- part 2: the broker's cleaner and segmentlog's ------------------------------------------------
@dataclass
class Batch:
    """A batch as a cleaner wrote it. `header` leaves out the delete horizon (the cleaning time
    + delete.retention.ms) and the CRC that covers it; `exact` keeps them."""

    segment: int
    header: object
    records: list
    horizon: int | None
    exact: object


def batches(partition_dir: Path) -> list[Batch]:
    found = []
    for segment, header, entry in PartitionLog.open(str(partition_dir)).iter_entries(
            verify_crc=True):
        horizon = header.base_timestamp if header.attributes & DELETE_HORIZON_FLAG else None
        shown = header._replace(crc=0, base_timestamp=0) if horizon is not None else header
        found.append(Batch(segment.base_offset, shown, decode_batch(entry, header).records,
                           horizon, header))
    return found


def _aborted_batches(found: list[Batch]) -> list[Batch]:
    """The data batches of aborted transactions, worked out here from the markers (not from
    segmentlog's transaction index): a transaction's batches precede its producer's marker."""
    pending: dict[int, list[Batch]] = {}
    aborted = []
    for b in found:
        h = b.header
        if h.is_control:
            control = struct.unpack_from(">hh", b.records[0].key)[1] if b.records else None
            done = pending.pop(h.producer_id, [])
            if control == ABORT:
                aborted += done
        elif h.is_transactional:
            pending.setdefault(h.producer_id, []).append(b)
    assert not pending, f"open transactions: {sorted(pending)}"
    return aborted


def aborted_producers(found: list[Batch]) -> set[int]:
    return {b.header.producer_id for b in _aborted_batches(found)}


def newest_values(found: list[Batch]) -> dict[bytes, tuple]:
    """key -> (offset, timestamp, value, headers) of its newest record, read_committed: records
    of aborted transactions do not count. A tombstone's value is None."""
    aborted = {id(b) for b in _aborted_batches(found)}
    view = {}
    for b in found:
        if b.header.is_control or id(b) in aborted:
            continue
        for r in b.records:
            if r.key is not None:
                view[r.key] = (r.offset, r.timestamp, r.value, r.headers)
    return view


def view_problems(theirs: dict, ours: dict) -> list[str]:
    """What the newest-value views must agree on: every key whose newest record has a value
    has it, at the same offset, on both sides. A key whose newest record is a tombstone may be
    missing on a side whose cleaner already removed the tombstone (its horizon passed)."""
    problems = []
    for key in sorted(set(theirs) | set(ours)):
        a, b = theirs.get(key), ours.get(key)
        if a == b:
            continue
        gone = (a is None or a[2] is None) and (b is None or b[2] is None)
        if not gone:
            problems.append(f"key {key!r}: broker {a}, segmentlog {b}")
    return problems


@dataclass
class Cleaning:
    before: list[Batch] = field(default_factory=list)           # the copy, uncleaned
    broker: list[Batch] = field(default_factory=list)
    segmentlog: list[Batch] = field(default_factory=list)
    broker_checkpoint: int | None = None
    segmentlog_result: object = None
    segmentlog_error: str | None = None   # LogManager.compact() raised this on the copy
    index_differences: list[str] = field(default_factory=list)
    lowered_ms: int = 0            # wall clock before the ratio was lowered
    seen_ms: int = 0               # wall clock when the broker's checkpoint showed the cleaning
    clock_ms: int = 0              # segmentlog's "now"
    seconds: float = 0.0           # from lowering the ratio to the checkpoint


class BrokerCleaner:
    """Lowers lm-keyed's min.cleanable.dirty.ratio on the running broker, then (wait) polls
    its cleaner-offset-checkpoint until the partition is listed."""

    def __init__(self, broker, cleaning: Cleaning):
        self.broker, self.cleaning = broker, cleaning

    def __call__(self) -> None:
        self.cleaning.lowered_ms = int(time.time() * 1000)
        self.started = time.monotonic()
        KafkaClient(self.broker.bootstrap).one("alter-configs", f"topic:{LM_KEYED}", "--set",
                                               "min.cleanable.dirty.ratio=0.01")

    def wait(self) -> None:
        path = self.broker.data_dir / CLEANER_CHECKPOINT
        deadline = self.started + CLEANING_TIMEOUT_S
        while time.monotonic() < deadline:
            found = read_offset_checkpoint(str(path)).get((LM_KEYED, 0))
            if found is not None:
                self.cleaning.broker_checkpoint = found
                self.cleaning.seen_ms = int(time.time() * 1000)
                self.cleaning.seconds = time.monotonic() - self.started
                return
            time.sleep(0.1)


def copy_uncleaned(broker, into: Path) -> Path:
    """lm-keyed-0 as the broker left it (stopped; never cleaned: its ratio was 1)."""
    listed = read_offset_checkpoint(str(broker.data_dir / CLEANER_CHECKPOINT))
    assert (LM_KEYED, 0) not in listed, "the broker cleaned lm-keyed before it was copied"
    shutil.copytree(broker.partition_dir(LM_KEYED), into / f"{LM_KEYED}-0")
    return into


def finish_cleaning(broker, copy_root: Path, cleaning: Cleaning) -> Cleaning:
    """The broker has cleaned lm-keyed-0 and stopped: read both cleaned logs, segmentlog's
    after its LogManager compacted the copy."""
    cleaning.before = batches(copy_root / f"{LM_KEYED}-0")
    ours, theirs = copy_root / f"{LM_KEYED}-0", broker.partition_dir(LM_KEYED)
    cleaning.broker = batches(theirs)
    # segmentlog cleans at the broker's cleaning time, so both write the same horizon: record
    # timestamps are deltas from it, so another horizon can change a compressed batch's size
    # and every position after it (a fresh-clone CI run saw lz4 give 296 bytes against 297).
    horizons = {b.horizon for b in cleaning.broker if b.horizon is not None}
    retention = int(KEYED_OVERRIDES["delete.retention.ms"])
    cleaning.clock_ms = (min(horizons) - retention if len(horizons) == 1
                         else int(time.time() * 1000))
    manager = LogManager(str(copy_root), overrides=KEYED_OVERRIDES,
                         clock_ms=lambda: cleaning.clock_ms)
    try:
        (cleaning.segmentlog_result,) = manager.compact()
    except Exception as err:  # noqa: BLE001 - the tests report it; part 1 goes on
        cleaning.segmentlog_error = f"{type(err).__name__}: {err}"
        return cleaning
    cleaning.segmentlog = batches(ours)
    names = {f.name for d in (ours, theirs) for f in d.iterdir()
             if f.suffix in (".index", ".timeindex", ".txnindex")}
    for name in sorted(names):
        a, b = theirs / name, ours / name
        if not (a.exists() and b.exists() and a.read_bytes() == b.read_bytes()):
            cleaning.index_differences.append(
                f"{name}: broker {a.stat().st_size if a.exists() else 'absent'} bytes, "
                f"segmentlog {b.stat().st_size if b.exists() else 'absent'} bytes")
    return cleaning


# -- the phase ----------------------------------------------------------------------------------
@dataclass
class LogManagerLive:
    now_ms: int
    source: Path
    source_offsets: dict[int, int]             # partition -> log end offset as written
    rounds: dict[str, Round]
    cleaning: Cleaning
    seconds: dict[str, float] = field(default_factory=dict)


def run_log_manager_live(spark, broker, tmp_path_factory) -> LogManagerLive:
    started = time.monotonic()
    if broker.running:
        broker.stop()
    seconds = {}
    copy_root = copy_uncleaned(broker, tmp_path_factory.mktemp("lm-keyed-copy"))
    now_ms = int(time.time() * 1000)
    source = write_source(tmp_path_factory.mktemp("lm-written"), now_ms)
    ends = {p: PartitionLog.open(str(source / f"{SOURCE_TOPIC}-{p}")).log_end_offset
            for p in range(PARTITIONS)}
    seconds["write"] = time.monotonic() - started
    cleaning = Cleaning()
    rounds = {}
    for name, suffix in ROUNDS.items():
        t0 = time.monotonic()
        hook = BrokerCleaner(broker, cleaning) if name == "marker" else None
        rounds[name] = run_round(spark, broker, source,
                                 Round(name, f"lm-compact-{suffix}", f"lm-delete-{suffix}"),
                                 now_ms, hook)
        seconds[f"round {name}"] = time.monotonic() - t0
        if name == "marker":
            t0 = time.monotonic()
            finish_cleaning(broker, copy_root, cleaning)
            seconds["cleaning comparison"] = time.monotonic() - t0
    return LogManagerLive(now_ms, source, ends, rounds, cleaning, seconds)
