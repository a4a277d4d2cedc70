"""segmentlog reads Kafka's tiered storage (KIP-405) as a real broker left it (issue #23).

A Kafka 4.4 broker with remote storage on (Kafka's reference LocalTieredStorage, the topic-based
remote log metadata manager) copied each partition's closed segments to the remote tier and
deleted them locally, across a restart that raised the leader epoch (tiered_live.py has the
procedure). Spark's Kafka source read every topic through the broker, which serves the remote
offsets from the remote tier. segmentlog then reads the stopped broker's files three ways:
the remote tier plus the local log directory, the remote tier alone with the broker's metadata
topic, and the remote tier alone by listing it. Each must give the rows the broker served,
headers, timestamps and timestampType included.
"""

from __future__ import annotations

import re
from collections import Counter

import pytest

from tests.kafka.reads import Read, short_error
from tests.kafka.tiered_live import (MIN_REMOTE_SEGMENTS, PARTITIONS, PLAIN, TIME_RANGE, TXN,
                                     describe)

pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("kafka")]

LOGGING_CONF = "spark.sql.pyspark.worker.logging.enabled"
WHOLE_TOPICS = ("plain", "zstd", "txn")


def _read(tiered_live, name: str):
    (read,) = [r for r in tiered_live.reads if r.name == name]
    return read


def _load(reader, options: dict, path, where: str | None = None) -> Read:
    """Like reads.collect, but a failure keeps the Python exception raised in the data
    source's worker (the last lines of its traceback), which says what went wrong."""
    for name, value in options.items():
        reader = reader.option(name, value)
    try:
        df = reader.load(str(path))
        df = df.where(where) if where else df
        return Read(df.orderBy("topic", "partition", "offset").collect(), df.schema)
    except Exception as err:  # noqa: BLE001 - any failure is the read's result
        raised = [line.strip() for line in str(err).split("\n")
                  if re.match(r"\s*[\w.]+(Error|Exception): ", line)]
        return Read(error="\n".join([short_error(err), *raised[-3:]])[:4000])


def _both_tiers(spark, tiered_live, options: dict) -> Read:
    """What a user writes to read a tiered topic: the broker's log directory, and the remote
    tier beside it."""
    reader = spark.read.format("segmentlog").option("remoteTier", str(tiered_live.remote_root))
    return _load(reader, options, tiered_live.data_dir)


def _remote_alone(spark, tiered_live, options: dict, *, metadata: bool = True) -> Read:
    """The remote tier alone; with the broker's log directory named as where its
    __remote_log_metadata topic is, or (metadata=False) by listing the remote tier."""
    reader = spark.read.format("segmentlog")
    if metadata:
        reader = reader.option("remoteLogMetadata", str(tiered_live.data_dir))
    return _load(reader, options, tiered_live.remote_root)


def _remote_rows(tiered_live, rows: list) -> list:
    """The rows whose offsets the remote tier holds: from the log start up to the remote
    tier's end (its last segment may also still be local)."""
    bounds = {(p.topic, p.partition): (p.log_start, p.remote_end)
              for p in tiered_live.partitions.values()}
    return [r for r in rows
            if bounds[(r.topic, r.partition)][0] <= r.offset < bounds[(r.topic, r.partition)][1]]


def _assert_same(kafka: Read, ours: Read, where: str, expected: list | None = None) -> None:
    assert kafka.error is None, f"format('kafka') failed: {kafka.error}"
    assert ours.error is None, f"format('segmentlog') failed ({where}): {ours.error}"
    assert ours.schema == kafka.schema, f"{where}: {ours.schema} against {kafka.schema}"
    theirs = kafka.rows if expected is None else expected
    assert ours.rows == theirs, f"{where}: {_summary(ours.rows, theirs)}"


def _summary(ours: list, theirs: list) -> str:
    if len(ours) != len(theirs):
        key = Counter((r.topic, r.partition) for r in ours)
        return (f"{len(ours)} rows against {len(theirs)}; per partition "
                f"{dict(key)} against {dict(Counter((r.topic, r.partition) for r in theirs))}")
    differing = [(a, b) for a, b in zip(ours, theirs) if a != b]
    a, b = differing[0]
    columns = [name for name in a.asDict() if a[name] != b[name]]
    return (f"{len(differing)} of {len(ours)} rows differ; first at {b.topic}-{b.partition} "
            f"offset {b.offset}: (segmentlog, kafka) = "
            f"{ {name: (a[name], b[name]) for name in columns} }")


def test_the_broker_tiered_the_log_as_the_comparisons_need(tiered_live):
    """What the comparisons stand on: in every partition at least MIN_REMOTE_SEGMENTS segments
    are in the remote tier, the local log starts above the log start (offsets below it are only
    remote), records follow it locally, the lineage has leader epochs 0 and 2 (the restart),
    the broker's ListOffsets agrees with its files, and Spark's Kafka source read every offset
    from the log start, each once, remote offsets included."""
    table = describe(tiered_live)
    assert set(tiered_live.partitions) == {(t, p) for t, n in PARTITIONS.items() for p in range(n)}
    for part in tiered_live.partitions.values():
        assert len(part.remote_bases) >= MIN_REMOTE_SEGMENTS, table
        assert part.log_start == 0 == part.remote_bases[0], table
        assert part.log_start < part.local_start <= part.remote_end < part.log_end, table
        assert part.listed == {"earliest": part.log_start, "latest": part.log_end}, table
        assert [e for e, _ in part.epochs] == [0, 2] and part.epochs[0] == (0, 0), table
        assert part.epochs[1][1] < part.remote_end, f"no remote offsets of epoch 2\n{table}"
        assert part.remote_dir.name.endswith(tiered_live.topic_ids[part.topic])
    for name in WHOLE_TOPICS:
        read = tiered_live.kafka[name]
        assert read.error is None, f"format('kafka') {name}: {read.error}"
        for part in tiered_live.partitions_of(_read(tiered_live, name).topic):
            offsets = [r.offset for r in read.rows if r.partition == part.partition]
            assert offsets[0] == part.log_start and offsets == sorted(set(offsets))
            assert offsets[-1] >= part.log_end - 2   # the txn topic ends with a marker
    stamps = [r.timestamp for r in tiered_live.kafka["plain"].rows if r.partition == 0]
    assert stamps != sorted(stamps)        # CreateTime out of order: every 7th is late
    assert any(r.headers for r in tiered_live.kafka["plain"].rows)
    assert any(r.key is None for r in tiered_live.kafka["plain"].rows)


def test_the_remote_tier_holds_transactions_and_the_second_epoch(tiered_live):
    """The remote segments of the transactional topic carry aborted-transaction indexes
    (.txnindex), a read_committed read drops records there, and the remote segments copied
    after the restart name epoch 2 in their leader-epoch checkpoints."""
    (txn,) = tiered_live.partitions_of(TXN)
    assert list(txn.remote_dir.glob("*.txnindex"))
    committed = {r.offset for r in tiered_live.kafka["txn-committed"].rows}
    every = {r.offset for r in tiered_live.kafka["txn"].rows}
    assert committed < every and min(every - committed) < txn.remote_end
    for part in tiered_live.partitions.values():
        epochs = [f.read_text().split("\n")[2:] for f in
                  sorted(part.remote_dir.glob("*.leader_epoch_checkpoint"))]
        assert any(line.startswith("2 ") for lines in epochs for line in lines), part.name


def test_the_time_range_lies_in_the_remote_tier(tiered_live):
    """The time-range reads below read remote offsets only, and not few of them."""
    rows = tiered_live.kafka["time-range"].rows
    assert tiered_live.kafka["time-range"].error is None
    for part in tiered_live.partitions_of(PLAIN):
        offsets = [r.offset for r in rows if r.partition == part.partition]
        assert len(offsets) > 100 and max(offsets) < part.local_start, describe(tiered_live)


@pytest.mark.parametrize("name", WHOLE_TOPICS)
def test_both_tiers_read_as_the_broker_serves(kafka_spark, tiered_live, name):
    """The remote tier plus the local log directory: every offset from the log start, each
    once (a segment both in the remote tier and still local is read once), as Spark's Kafka
    source read them through the broker."""
    read = _read(tiered_live, name)
    _assert_same(tiered_live.kafka[name], _both_tiers(kafka_spark, tiered_live, read.options),
                 f"remoteTier + log directory, {name}")


@pytest.mark.parametrize("name", WHOLE_TOPICS)
def test_the_remote_tier_alone_with_the_brokers_metadata(kafka_spark, tiered_live, name):
    """The remote tier alone, its segments chosen by the broker's __remote_log_metadata topic:
    the broker's rows from the log start to the remote tier's end."""
    read = _read(tiered_live, name)
    kafka = tiered_live.kafka[name]
    _assert_same(kafka, _remote_alone(kafka_spark, tiered_live, read.options),
                 f"remote tier + remoteLogMetadata, {name}",
                 _remote_rows(tiered_live, kafka.rows or []))


@pytest.fixture
def worker_warnings(kafka_spark):
    """The WARNINGs of logger segmentlog that Spark's Python workers (where a Python data
    source plans and reads) logged so far, as a Counter of messages."""
    kafka_spark.conf.set(LOGGING_CONF, "true")

    def logged() -> Counter:
        rows = (kafka_spark.tvf.python_worker_logs()
                .where("logger = 'segmentlog' and level = 'WARNING'").select("msg").collect())
        return Counter(r.msg for r in rows)

    yield logged
    kafka_spark.conf.unset(LOGGING_CONF)


def test_the_remote_tier_alone_by_listing_warns(kafka_spark, tiered_live, worker_warnings):
    """The remote tier alone without the metadata topic: its listing is all there is, so the
    rows are the same here (every copy finished, none deleted, none replaced), and segmentlog
    warns, for each partition, that the listing is not authoritative (it cannot tell a finished
    copy from one in progress or one a later copy replaced), naming the option that would be:
    remoteLogMetadata."""
    read = _read(tiered_live, "plain")
    kafka = tiered_live.kafka["plain"]
    before = worker_warnings()
    ours = _remote_alone(kafka_spark, tiered_live, read.options, metadata=False)
    _assert_same(kafka, ours, "remote tier listed", _remote_rows(tiered_live, kafka.rows or []))
    new = list((worker_warnings() - before).elements())
    for part in tiered_live.partitions_of(PLAIN):
        assert [m for m in new if f"{part.name}:" in m and "remoteLogMetadata" in m], new


def test_read_committed_over_both_tiers(kafka_spark, tiered_live):
    """kafka.isolation.level=read_committed on both sides: aborted transactions in remote
    segments (their .txnindex) and in local ones are dropped alike."""
    read = _read(tiered_live, "txn-committed")
    ours = _both_tiers(kafka_spark, tiered_live, read.options)
    _assert_same(tiered_live.kafka["txn-committed"], ours,
                 "remoteTier + log directory, read_committed")


def test_a_time_range_over_remote_offsets(kafka_spark, tiered_live):
    """startingTimestamp and endingTimestamp: the broker looks the times up in the remote tier's
    time indexes (ListOffsets by timestamp); segmentlog must find the same offsets."""
    read = _read(tiered_live, "time-range")
    ours = _both_tiers(kafka_spark, tiered_live, read.options)
    _assert_same(tiered_live.kafka["time-range"], ours,
                 "remoteTier + log directory, startingTimestamp/endingTimestamp")


def test_a_where_on_timestamp_over_the_remote_tier_alone(kafka_spark, tiered_live):
    """A WHERE on timestamp over the remote tier alone (pushed down to segmentlog) gives the
    broker's rows filtered the same way: late records (CreateTime out of order) included."""
    start, end = (tiered_live.base + t for t in TIME_RANGE)
    where = (f"timestamp >= timestamp_millis({start}) "
             f"and timestamp < timestamp_millis({end + 30_000})")
    kafka = tiered_live.kafka["plain"]
    assert kafka.error is None, kafka.error
    expected = (kafka_spark.createDataFrame(kafka.rows, kafka.schema).where(where)
                .orderBy("topic", "partition", "offset").collect())
    reader = (kafka_spark.read.format("segmentlog")
              .option("remoteLogMetadata", str(tiered_live.data_dir)))
    ours = _load(reader, _read(tiered_live, "plain").options, tiered_live.remote_root, where)
    _assert_same(kafka, ours, "remote tier + remoteLogMetadata, WHERE on timestamp", expected)
    assert expected and len(expected) < len(kafka.rows)
