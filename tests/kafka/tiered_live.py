"""A Kafka 4.4 broker with tiered storage on (KIP-405), for issue #23: its remote tier and its
local log directory are what segmentlog then reads, and Spark's Kafka source reading the broker
is what segmentlog must match (test_tiered_live.py).

The broker is a second KafkaBroker, beside the session's main one, with Kafka's reference
RemoteStorageManager, LocalTieredStorage, from kafka-storage's test-fixtures jar (the jar set
"kafka-tiered"), loaded through remote.log.storage.manager.class.path, and the topic-based
RemoteLogMetadataManager (the `__remote_log_metadata` topic, in the broker's data directory).
The remote tier is `<remote root>/kafka-tiered-storage/<topic>-<partition>-<topicId>/`.

The procedure:
1. create three topics with remote storage on, 64 KiB segments, a local retention of 1 s and no
   remote retention: tiered-plain (2 partitions, keys, headers, CreateTime out of order every
   7th record), tiered-zstd (producer compression), tiered-txn (committed and aborted
   transactions, a plain producer, two transactional producers interleaved); produce half;
2. restart the broker (SIGTERM, start): each partition's leader epoch goes from 0 to 2, so the
   lineage has two epochs and the segments copied later say so;
3. produce the other half, then wait until every partition has >= MIN_REMOTE_SEGMENTS segments
   in the remote tier and its first local segment starts above 0 (copied, then deleted locally);
4. keep local data: local.retention.ms goes back to -2 (retention.ms, unlimited), then a tail is
   produced that stays in the local log. Without that, the local retention task rolls the idle
   active segment (its CreateTimes are hours old), copies it and deletes it, and nothing is
   local at the end. Then wait until every closed local segment is in the remote tier, so the
   stop interrupts no copy;
5. read every topic with Spark's Kafka source from the running broker (remote offsets are
   fetched by the broker from the remote tier), ListOffsets earliest and latest;
6. SIGTERM, and record what the files say: each partition's log start (log-start-offset-
   checkpoint), local log start (its first local segment), log end (recovery-point-offset-
   checkpoint, written at the clean stop), the remote segments and the remote tier's end, the
   leader epochs.

Record i of a produce has CreateTime base + i s (KafkaClient.java's record(...)); each produce
continues the timestamps of the one before, so the times spread over the whole log.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path

from segmentlog_source.devtools.kafka import jars
from segmentlog_source.devtools.kafka.broker import KafkaBroker
from segmentlog_source.devtools.kafka.java_client import KafkaClient
from tests.kafka.broker_topics import STEP_MS, base_timestamp
from tests.kafka.reads import Read, kafka_read

RSM_CLASS = "org.apache.kafka.server.log.remote.storage.LocalTieredStorage"
# LocalTieredStorage puts its files under this folder of its `dir`
TIER_FOLDER = "kafka-tiered-storage"
METADATA_PARTITIONS = 3
MIN_REMOTE_SEGMENTS = 4
WAIT_S = 60.0

PLAIN, ZSTD, TXN = "tiered-plain", "tiered-zstd", "tiered-txn"
PARTITIONS = {PLAIN: 2, ZSTD: 1, TXN: 1}
TOPIC_CONFIGS = {
    "remote.storage.enable": "true",
    "local.retention.ms": "1000",
    # segment.bytes below 1 MiB is refused since Kafka 4.0; internal.segment.bytes is its
    # test-only override, which CreateTopics takes
    "internal.segment.bytes": "65536",
    "retention.ms": "-1",
}
# CreateTime range of the time-range reads: records 100..399 of tiered-plain's first produce,
# offsets about 50..200 of each partition, deep inside the remote tier
TIME_RANGE = (100 * STEP_MS, 400 * STEP_MS)


def broker_props(remote_root: Path) -> dict[str, str]:
    rsm_jar, = jars.jar_paths("kafka-tiered")
    return {
        "remote.log.storage.system.enable": "true",
        "remote.log.storage.manager.class.name": RSM_CLASS,
        # its own classloader: the broker's -cp stays the kafka jar set
        "remote.log.storage.manager.class.path": str(rsm_jar),
        # the broker passes rsm.config.* to LocalTieredStorage without the prefix
        "rsm.config.dir": str(remote_root),
        "rsm.config.delete.on.close": "false",
        "remote.log.metadata.manager.listener.name": "PLAINTEXT",
        "rlmm.config.remote.log.metadata.topic.replication.factor": "1",
        "rlmm.config.remote.log.metadata.topic.min.isr": "1",
        "rlmm.config.remote.log.metadata.topic.num.partitions": str(METADATA_PARTITIONS),
        # the copy and expiration tasks every second, not every 30 s
        "remote.log.manager.task.interval.ms": "1000",
        # the local deletion is the ordinary retention task: every second, not every 5 minutes,
        # and its first run at once instead of 30 s after the start
        "log.retention.check.interval.ms": "1000",
        "log.initial.task.delay.ms": "0",
        "log.segment.delete.delay.ms": "1000",
    }


def _configs(configs: dict[str, str]) -> list[str]:
    return [word for k, v in configs.items() for word in ("--config", f"{k}={v}")]


@dataclass
class Producing:
    """The produce commands of one phase, each continuing the CreateTimes of the one before."""

    base: int
    next_ts: dict[str, int] = field(default_factory=dict)

    def produce(self, topic: str, count: int, *args) -> list:
        ts = self.next_ts.get(topic, self.base)
        self.next_ts[topic] = ts + count * STEP_MS
        return ["produce", topic, "--partitions", PARTITIONS[topic], "--count", count,
                "--base-ts", ts, *args]

    def interleave(self, topic: str, count: int, *args) -> list:
        ts = self.next_ts.get(topic, self.base)
        self.next_ts[topic] = ts + count * STEP_MS
        return ["interleave", topic, "--partitions", PARTITIONS[topic], "--count", count,
                "--base-ts", ts, *args]


def half(p: Producing, n: int) -> list[list]:
    """Half of what the topics get before the tail: n = 1 before the restart, 2 after."""
    plain = ("--batch", 20, "--value-bytes", 600, "--late-every", 7)
    txn = ("--batch", 10, "--value-bytes", 600)
    return [
        p.produce(PLAIN, 500, "--prefix", f"p{n}", *plain),
        p.produce(ZSTD, 2200, "--prefix", f"z{n}", "--codec", "zstd", "--batch", 5,
                  "--value-bytes", 600),
        p.produce(TXN, 100, "--prefix", f"t{n}", *txn),
        p.produce(TXN, 120, "--prefix", f"c{n}", "--txn", "commit", *txn),
        p.produce(TXN, 80, "--prefix", f"a{n}", "--txn", "abort", "--codec", "lz4", *txn),
    ]


def first_half(p: Producing) -> list[list]:
    return [*(["create-topic", t, "--partitions", n, *_configs(TOPIC_CONFIGS)]
              for t, n in PARTITIONS.items()),
            *half(p, 1)]


def second_half(p: Producing) -> list[list]:
    txn = ("--batch", 10, "--value-bytes", 600)
    return [*half(p, 2),
            p.interleave(TXN, 20, "--prefix", "i2"),
            p.produce(TXN, 60, "--prefix", "c3", "--txn", "commit", *txn)]


def tail(p: Producing) -> list[list]:
    """Records that stay local: local retention is unlimited from here on."""
    return [
        *(["alter-configs", f"topic:{t}", "--set", "local.retention.ms=-2"] for t in PARTITIONS),
        p.produce(PLAIN, 60, "--prefix", "tail", "--batch", 10, "--value-bytes", 100),
        p.produce(ZSTD, 50, "--prefix", "tail", "--codec", "zstd", "--batch", 10),
        p.produce(TXN, 20, "--prefix", "tail-c", "--txn", "commit", "--batch", 5),
        p.produce(TXN, 10, "--prefix", "tail-a", "--txn", "abort", "--batch", 5),
        *(["list-offsets", t, "--partitions", n] for t, n in PARTITIONS.items()),
    ]


@dataclass(frozen=True)
class TieredRead:
    """One read of the broker's topics, with the options both sides are given."""

    name: str
    topic: str
    options: dict


def tiered_reads(base: int) -> list[TieredRead]:
    headers = {"includeHeaders": "true"}
    start, end = (base + t for t in TIME_RANGE)
    return [
        TieredRead("plain", PLAIN, {"subscribe": PLAIN, **headers}),
        TieredRead("zstd", ZSTD, {"subscribe": ZSTD, **headers}),
        TieredRead("txn", TXN, {"subscribe": TXN, **headers}),
        TieredRead("txn-committed", TXN, {"subscribe": TXN, **headers,
                                          "kafka.isolation.level": "read_committed"}),
        TieredRead("time-range", PLAIN, {"subscribe": PLAIN, **headers,
                                         "startingTimestamp": str(start),
                                         "endingTimestamp": str(end)}),
    ]


@dataclass
class TieredPartition:
    topic: str
    partition: int
    log_start: int        # log-start-offset-checkpoint: the remote tier's start
    local_start: int      # base offset of the first local segment
    log_end: int          # recovery-point-offset-checkpoint, written at the clean stop
    remote_bases: list[int]   # base offsets of the remote segments (one per copy)
    remote_end: int       # one past the remote tier's last offset
    epochs: list[tuple[int, int]]   # leader-epoch-checkpoint: (epoch, start offset)
    remote_dir: Path
    local_bases: list[int] = field(default_factory=list)
    listed: dict = field(default_factory=dict)   # ListOffsets earliest and latest, running

    @property
    def name(self) -> str:
        return f"{self.topic}-{self.partition}"


@dataclass
class TieredLive:
    base: int
    data_dir: Path
    remote_root: Path             # LocalTieredStorage's `dir` (rsm.config.dir)
    topic_ids: dict[str, str]
    reads: list[TieredRead]
    kafka: dict[str, Read]
    partitions: dict[tuple[str, int], TieredPartition]
    broker_log: Path
    timings: dict[str, float] = field(default_factory=dict)
    restart_clean: bool = False

    def partitions_of(self, topic: str) -> list[TieredPartition]:
        return [p for (t, _), p in sorted(self.partitions.items()) if t == topic]


def run_tiered_live(spark, workdir: Path, timed) -> TieredLive:
    """The procedure above; `timed(name, started)` records each phase's time."""
    remote_root = workdir / "remote"
    remote_root.mkdir(parents=True)
    broker = KafkaBroker(workdir / "broker", heap="512m", props=broker_props(remote_root))
    timings: dict[str, float] = {}

    def phase(name: str, started: float) -> None:
        timings[name] = round(time.monotonic() - started, 1)
        timed(f"tiered: {name}", started)

    started = time.monotonic()
    broker.start()
    phase("broker: format and start", started)
    try:
        return _run(spark, broker, remote_root, timings, phase)
    finally:
        broker.kill()   # only when something above failed: _run stops it with SIGTERM


def _run(spark, broker: KafkaBroker, remote_root: Path, timings, phase) -> TieredLive:
    client = KafkaClient(broker.bootstrap)
    producing = Producing(base_timestamp())
    started = time.monotonic()
    answers = client.run(first_half(producing))
    topic_ids = {a["topic"]: a["topicId"] for a in answers if a["op"] == "create-topic"}
    phase("create topics, produce the first half (leader epoch 0)", started)

    started = time.monotonic()
    restart_clean = broker.stop()
    broker.start()
    phase("restart (SIGTERM, start)", started)

    started = time.monotonic()
    client.run(second_half(producing))
    phase("produce the second half (leader epoch 2)", started)

    parts = [(t, p) for t, n in PARTITIONS.items() for p in range(n)]
    started = time.monotonic()
    _wait(broker, f">= {MIN_REMOTE_SEGMENTS} remote segments and a local log start above 0 in "
                  "every partition", lambda: all(
                      len(remote_bases(remote_root, t, p)) >= MIN_REMOTE_SEGMENTS
                      and local_bases(broker.data_dir, t, p)[:1] > [0] for t, p in parts))
    phase("copied to the remote tier and deleted locally", started)

    started = time.monotonic()
    answers = client.run(tail(producing))
    listed = {(a["topic"], a["partition"]): a for a in answers if a["op"] == "list-offsets"}
    _wait(broker, "every closed local segment copied to the remote tier",
          lambda: all(_closed_segments_copied(broker.data_dir, remote_root, t, p)
                      for t, p in parts))
    time.sleep(0.5)   # the copy's COPY_SEGMENT_FINISHED record follows its last file
    phase("local tail produced, closed segments copied", started)

    reads = tiered_reads(producing.base)
    started = time.monotonic()
    kafka = {r.name: kafka_read(spark, broker, r.options) for r in reads}
    phase("format('kafka'): every read", started)

    started = time.monotonic()
    if not broker.stop():
        raise AssertionError(f"the tiered broker did not stop by itself:\n{broker.log_tail()}")
    phase("broker: stop (SIGTERM)", started)

    found = {(t, p): observe(broker.data_dir, remote_root, t, p, topic_ids[t])
             for t, p in parts}
    for key, part in found.items():
        part.listed = {k: listed[key][k]["offset"] for k in ("earliest", "latest")}
    return TieredLive(producing.base, broker.data_dir, remote_root, topic_ids, reads, kafka,
                      found, broker.log_file, timings, restart_clean)


def _wait(broker: KafkaBroker, what: str, cond, timeout: float = WAIT_S) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"tiered broker: not within {timeout:.0f} s: {what}\n"
                                 f"{broker.log_tail(30)}")
        time.sleep(0.2)


# -- what the files say ----------------------------------------------------------------------

def remote_dirs(remote_root: Path, topic: str, partition: int) -> list[Path]:
    """The partition's folders in the remote tier: `<topic>-<partition>-<22-character id>`."""
    root = remote_root / TIER_FOLDER
    if not root.is_dir():
        return []
    return sorted(d for d in root.glob(f"{topic}-{partition}-*")
                  if len(d.name) == len(topic) + len(str(partition)) + 24)


def remote_bases(remote_root: Path, topic: str, partition: int) -> list[int]:
    """Base offsets of the remote segments whose copy got to the producer snapshot, the last
    file LocalTieredStorage writes (`<base20>-<segment id>.<suffix>`)."""
    return sorted(int(f.name[:20]) for d in remote_dirs(remote_root, topic, partition)
                  for f in d.glob("*.snapshot"))


def local_bases(data_dir: Path, topic: str, partition: int) -> list[int]:
    """Base offsets of the local segments (not those renamed `.deleted` for deletion)."""
    return sorted(int(f.name[:20]) for f in (data_dir / f"{topic}-{partition}").glob("*.log"))


def _closed_segments_copied(data_dir: Path, remote_root: Path, topic: str,
                            partition: int) -> bool:
    local = local_bases(data_dir, topic, partition)
    return set(local[:-1]) <= set(remote_bases(remote_root, topic, partition))


def checkpoint(data_dir: Path, name: str) -> dict[tuple[str, int], int]:
    """A broker offset checkpoint file: version, count, then `topic partition offset` lines."""
    lines = (data_dir / name).read_text().split("\n")
    out = {}
    for line in lines[2:2 + int(lines[1])]:
        topic, partition, offset = line.split(" ")
        out[(topic, int(partition))] = int(offset)
    return out


def leader_epochs(partition_dir: Path) -> list[tuple[int, int]]:
    lines = (partition_dir / "leader-epoch-checkpoint").read_text().split("\n")
    return [tuple(int(x) for x in line.split(" ")) for line in lines[2:2 + int(lines[1])]]


def observe(data_dir: Path, remote_root: Path, topic: str, partition: int,
            topic_id: str) -> TieredPartition:
    dirs = remote_dirs(remote_root, topic, partition)
    if [d.name for d in dirs] != [f"{topic}-{partition}-{topic_id}"]:
        raise AssertionError(f"{topic}-{partition}: remote folders {[d.name for d in dirs]}, "
                             f"expected one for topic id {topic_id}")
    remote = remote_bases(remote_root, topic, partition)
    local = local_bases(data_dir, topic, partition)
    log_end = checkpoint(data_dir, "recovery-point-offset-checkpoint")[(topic, partition)]
    # a remote segment ends where the next segment, remote or local, begins
    after = sorted(b for b in set(remote) | set(local) if b > remote[-1])
    return TieredPartition(
        topic, partition,
        log_start=checkpoint(data_dir, "log-start-offset-checkpoint").get((topic, partition), 0),
        local_start=local[0], log_end=log_end, remote_bases=remote,
        remote_end=after[0] if after else log_end,
        epochs=leader_epochs(data_dir / f"{topic}-{partition}"), remote_dir=dirs[0],
        local_bases=local)


def describe(live: TieredLive) -> str:
    """One line per partition, for the report and for failures."""
    return "\n".join(
        f"{p.name}: log start {p.log_start}, local log start {p.local_start}, log end "
        f"{p.log_end}, remote segments {len(p.remote_bases)} (up to {p.remote_end}), local "
        f"segments {p.local_bases}, epochs {p.epochs}, ListOffsets {json.dumps(p.listed)}"
        for p in live.partitions.values())
