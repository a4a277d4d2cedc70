"""What segmentlog writes, the broker serves: segmentlog writes a topic, its files replace an
empty topic's files in the broker's log directory, and the broker, started on them, must serve
exactly what was written.

The procedure (the one docs/real-kafka-in-tests.md §2 calls safe): the topics were created
through Admin (KafkaClient) while the broker ran, so the broker knows their topic ids; with the
broker stopped by SIGTERM, each partition directory is emptied except its partition.metadata
(the broker's topic id: segmentlog's own file carries the id segmentlog chose, and a directory
whose id the broker does not know is moved aside as `-stray` and replaced by an empty log), and
segmentlog's files are copied in. Round 1 starts the broker with its clean-shutdown marker, so
it trusts segmentlog's indexes and producer snapshots as they are; round 2 starts it without
the marker, so it recovers every segment: checks each batch's CRC, rebuilds every index.

`acceptance_problems` is the check a served topic must pass, and the deliberately broken copies
(a byte flipped inside a batch: its CRC is wrong; the last batch's base offset moved: offsets
are skipped) show that it catches both, in both rounds.
"""

from __future__ import annotations

import shutil
import struct
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from segmentlog_source.devtools.kafka.java_client import KafkaClient
from segmentlog_source.storage.log.partition_log import PartitionLog
from tests.kafka.broker_topics import ADOPTED_PARTITIONS, CODECS
from tests.kafka.reads import Read, kafka_read, segmentlog_read

WRITTEN_TOPIC = "adopt"
ROWS_PER_CODEC = 120
SCHEMA = ("key binary, value binary, headers array<struct<key:string,value:binary>>, "
          "partition int, timestamp timestamp")
WRITE_OPTIONS = {"topic": WRITTEN_TOPIC, "numPartitions": str(ADOPTED_PARTITIONS),
                 "segment.bytes": "2000", "index.interval.bytes": "256", "batch.size": "800"}
# Broker log lines that mean it did not take a partition's files as they are.
REFUSALS = ("truncat", "corruption found", "found invalid messages", "stray")


def input_rows(base: int, chunk: int) -> list[tuple]:
    rows = []
    for j in range(ROWS_PER_CODEC):
        i = chunk * ROWS_PER_CODEC + j
        key = None if i % 6 == 5 else f"key-{i % 23}".encode()
        value = None if i % 19 == 7 else f"value-{i}-".encode() * (1 + i % 5)
        headers = [("h", str(i).encode()), ("nil", None)] if i % 2 else []
        ts_ms = base + i * 500 - (5000 if i % 9 == 8 else 0)   # every 9th is 5 s late
        rows.append((key, value, headers, i % ADOPTED_PARTITIONS,
                     datetime.fromtimestamp(ts_ms / 1000, timezone.utc)))
    return rows


@dataclass
class Written:
    """What segmentlog wrote, and what its own reader and lookups say about it."""

    data_dir: Path
    rows: list[tuple]                       # comparable(...) rows of segmentlog's read
    end_offsets: dict[int, int]
    timestamps: list[int]                   # the lookups asked of both
    lookups: dict[int, dict[int, int]]      # partition -> timestamp -> offset (-1: none)
    max_timestamp: dict[int, tuple[int, int]]   # partition -> (offset, timestamp)
    input_rows: list[tuple] = field(default_factory=list)


def comparable(rows) -> list[tuple]:
    """Rows without the topic (the written and the served topic differ in name); a record with
    no headers is () whether a reader says null or [] (test_broker_writes.py checks that)."""
    return [(r.partition, r.offset, r.key, r.value,
             tuple((h.key, h.value) for h in (r.headers or ())),
             r.timestamp, r.timestampType) for r in rows]


def write_topic(spark, out: Path, base: int) -> Written:
    all_rows = []
    for chunk, codec in enumerate(CODECS):
        rows = input_rows(base, chunk)
        all_rows += rows
        writer = spark.createDataFrame(rows, SCHEMA).write.format("segmentlog").mode("append")
        for name, value in {**WRITE_OPTIONS, "compression": codec}.items():
            writer = writer.option(name, value)
        writer.save(str(out))
    read = segmentlog_read(spark, out, {"subscribe": WRITTEN_TOPIC, "includeHeaders": "true"})
    assert read.error is None, read.error
    rows = comparable(read.rows)
    stamps = sorted({_ms(r[5]) for r in rows})
    timestamps = sorted({stamps[0] - 1, stamps[0], stamps[len(stamps) // 3],
                         stamps[len(stamps) // 2] + 1, stamps[-7], stamps[-1], stamps[-1] + 1,
                         *(_ms(r[5]) for r in rows[8:200:45])})
    written = Written(out, rows, {}, timestamps, {}, {}, all_rows)
    for p in range(ADOPTED_PARTITIONS):
        log = PartitionLog.open(str(out / f"{WRITTEN_TOPIC}-{p}"))
        written.end_offsets[p] = log.log_end_offset
        written.lookups[p] = {t: _or_minus_one(log.offset_for_timestamp(t)) for t in timestamps}
        offset = log.offset_for_timestamp(-3)
        stamp = next(_ms(r[5]) for r in rows if r[0] == p and r[1] == offset)
        written.max_timestamp[p] = (offset, stamp)
    return written


def _ms(ts: datetime) -> int:
    """Epoch ms of a collected timestamp (PySpark gives naive local times; timestamp() agrees)."""
    return round(ts.timestamp() * 1000)


def _or_minus_one(offset: int | None) -> int:
    return -1 if offset is None else offset


def place(source: Path, target: Path) -> None:
    """Replace the broker's partition files with segmentlog's, keeping the broker's
    partition.metadata (its topic id). The broker must be stopped."""
    for f in target.iterdir():
        if f.name != "partition.metadata":
            f.unlink()
    for f in source.iterdir():
        if f.name not in ("partition.metadata", ".segmentlog.lock"):
            shutil.copyfile(f, target / f.name)


def batch_positions(log: Path) -> list[int]:
    data, pos, found = log.read_bytes(), 0, []
    while pos + 12 <= len(data):
        found.append(pos)
        pos += 12 + struct.unpack_from(">i", data, pos + 8)[0]
    return found


def break_crc(partition_dir: Path) -> str:
    """Flip a byte inside the second batch of the first segment (records, covered by the CRC)."""
    log = sorted(partition_dir.glob("*.log"))[0]
    data = bytearray(log.read_bytes())
    at = batch_positions(log)[1] + 61 + 3
    data[at] ^= 0xFF
    log.write_bytes(bytes(data))
    return f"{log.name}: byte {at} flipped (second batch)"


def skip_offsets(partition_dir: Path, by: int = 3) -> str:
    """Move the last batch's base offset up by `by` (outside every CRC): offsets are skipped."""
    log = sorted(partition_dir.glob("*.log"))[-1]
    data = bytearray(log.read_bytes())
    at = batch_positions(log)[-1]
    (old,) = struct.unpack_from(">q", data, at)
    struct.pack_into(">q", data, at, old + by)
    log.write_bytes(bytes(data))
    return f"{log.name}: last batch's base offset {old} -> {old + by}"


@dataclass
class Served:
    """What the running broker says about one topic."""

    offsets: dict[int, dict] = field(default_factory=dict)   # partition -> list-offsets answer
    read: Read | None = None                                  # format("kafka")
    log: list[str] = field(default_factory=list)              # its server.log lines
    stray: list[str] = field(default_factory=list)
    error: str | None = None                                  # ListOffsets failed


def observe(spark, broker, topics: list[str], timestamps: list[int]) -> dict[str, Served]:
    served = {t: Served() for t in topics}
    flags = [w for t in timestamps for w in ("--timestamp", t)]
    answers = KafkaClient(broker.bootstrap).run(
        [["list-offsets", t, "--partitions", ADOPTED_PARTITIONS, *flags] for t in topics],
        keep_going=True)   # a topic the broker cannot answer for is that topic's problem
    for a in answers:
        if a["op"] == "failed":
            served[topics[a["line"] - 1]].error = a["error"][:2000]
        else:
            served[a["topic"]].offsets[a["partition"]] = a
    lines = broker.log_since_start()
    stray = [p.name for p in broker.stray_dirs()]
    for topic, s in served.items():
        s.read = kafka_read(spark, broker, {"subscribe": topic, "includeHeaders": "true"})
        names = [f"{topic}-{p}" for p in range(ADOPTED_PARTITIONS)]
        s.log = [line for line in lines if any(f"{n} " in line or f"{n}/" in line
                                               or f"{n}." in line or f"{n}," in line
                                               or line.endswith(n) for n in names)]
        s.stray = [name for name in stray if any(name.startswith(n + ".") for n in names)]
    return served


def acceptance_problems(written: Written, topic: str, served: Served) -> list[str]:
    """Everything in which the broker's view of `topic` differs from what segmentlog wrote:
    [] when it serves exactly the written records, offsets and timestamp lookups."""
    problems = [f"the broker moved {name} aside as stray (topic id not recognised)"
                for name in served.stray]
    problems += [f"broker log: {line.strip()}" for line in served.log
                 if any(word in line.lower() for word in REFUSALS)]
    if served.error:
        problems.append(f"ListOffsets failed: {served.error}")
    for p, end in written.end_offsets.items():
        answer = served.offsets.get(p)
        if answer is None:
            if not served.error:
                problems.append(f"partition {p}: no ListOffsets answer")
            continue
        if answer["latest"]["offset"] != end:
            problems.append(f"partition {p}: ListOffsets latest is {answer['latest']['offset']}, "
                            f"segmentlog wrote offsets up to {end} (exclusive)")
        if answer["earliest"]["offset"] != 0:
            problems.append(f"partition {p}: ListOffsets earliest is "
                            f"{answer['earliest']['offset']}, not 0")
        got_max = (answer["maxTimestamp"]["offset"], answer["maxTimestamp"]["timestamp"])
        if got_max != written.max_timestamp[p]:
            problems.append(f"partition {p}: ListOffsets max timestamp (offset, ts) is {got_max}, "
                            f"segmentlog says {written.max_timestamp[p]}")
        for t, offset in written.lookups[p].items():
            got = answer["timestamps"][str(t)]["offset"]
            if got != offset:
                problems.append(f"partition {p}: ListOffsets for timestamp {t} is offset {got}, "
                                f"segmentlog's offset_for_timestamp says {offset}")
    if served.read is None or served.read.error:
        problems.append(f"format('kafka') failed: {served.read.error if served.read else None}")
    else:
        got = comparable(served.read.rows)
        if got != written.rows:
            first = next((i for i, (a, b) in enumerate(zip(got, written.rows)) if a != b),
                         min(len(got), len(written.rows)))
            problems.append(
                f"format('kafka') returned {len(got)} rows, segmentlog wrote "
                f"{len(written.rows)}; first difference at row {first}: served "
                f"{got[first] if first < len(got) else None}, written "
                f"{written.rows[first] if first < len(written.rows) else None}")
    return problems


@dataclass
class Adoption:
    written: Written
    served: dict[str, Served]
    problems: dict[str, list[str]]
    damage: dict[str, str]            # topic -> what was broken in its copy
    kept_topic_ids: dict[str, bool]   # topic -> its partition.metadata still holds its id


def run_adoption(spark, broker, produced, tmp_path_factory) -> Adoption:
    written = write_topic(spark, tmp_path_factory.mktemp("segmentlog-written") / "data",
                          produced.base)
    served, damage = {}, {}
    if broker.running:
        broker.stop()
    for marker, suffix in ((True, "m"), (False, "n")):
        topics = [f"adopt-{suffix}", f"crc-{suffix}", f"gap-{suffix}"]
        for topic in topics:
            for p in range(ADOPTED_PARTITIONS):
                place(written.data_dir / f"{WRITTEN_TOPIC}-{p}", broker.partition_dir(topic, p))
        damage[f"crc-{suffix}"] = break_crc(broker.partition_dir(f"crc-{suffix}", 0))
        damage[f"gap-{suffix}"] = skip_offsets(broker.partition_dir(f"gap-{suffix}", 0))
        if not marker:
            broker.clean_shutdown_marker.unlink()
        assert broker.clean_shutdown_marker.exists() == marker
        broker.start()
        served.update(observe(spark, broker, topics, written.timestamps))
        broker.stop()
    kept = {}
    for topic in served:
        text = broker.partition_dir(topic, 0).joinpath("partition.metadata").read_text()
        kept[topic] = text.endswith(f"topic_id: {produced.topic_ids[topic]}")
    problems = {t: acceptance_problems(written, t, s) for t, s in served.items()}
    return Adoption(written, served, problems, damage, kept)
