"""Option sets -> expected outcome: ONE table for segmentlog (tests/spark/test_option_cases.py)
and for Spark's own Kafka source against a live broker holding the same records (a later test
in tests/kafka runs these sets through `format("kafka")` and compares both outcomes).

Each case names the line of Spark's Kafka connector it mirrors (`spark`, in the 4.2.0 sources:
org/apache/spark/sql/kafka010/..., the connector the live tests run on PySpark 4.3.0), and, in
`kafka`, what Spark's Kafka source does with the same set where segmentlog deliberately differs
(SAME everywhere else). A live comparison replaces `kafka.bootstrap.servers` by its broker's
address and leaves every other option as it is.

The log: LOG below, written by segmentlog's generator (write_log). Offsets start at 0 in every
partition and grow by one per record, and the transactions of `orders` (some aborted, each
closed by a marker that takes an offset) are what read_committed changes.
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass
from pathlib import Path

from kafka import codec as kafka_codec
from kafka.record import MemoryRecords

SAME = "same"
SAME_ROWS = "same rows"   # a `kafka` note that starts so: the rows are equal, what it says is not
BOOTSTRAP = "localhost:9092"
START_MS = 1_700_000_000_000

LOG = (
    dict(topics=["orders"], partitions=2, records=400, transactions=True, seed=11),
    dict(topics=["orders-eu"], partitions=1, records=60, seed=12),
    dict(topics=["clicks"], partitions=1, records=90, seed=13),
)
_COMMON = dict(value_size=40, key_size=8, headers=1, records_per_batch=10, segment_bytes=4096,
               timestamp_step_ms=1000, start_timestamp=START_MS)

# What a job written for format("kafka") against a secured cluster passes besides its reads.
CONNECTION = {
    "kafka.bootstrap.servers": BOOTSTRAP,
    "kafka.security.protocol": "SASL_SSL",
    "kafka.sasl.mechanism": "PLAIN",
    "kafka.sasl.jaas.config": 'org.apache.kafka.common.security.plain.PlainLoginModule '
                              'required username="etl" password="not-a-secret";',
    "kafka.ssl.truststore.location": "/etc/kafka/truststore.jks",
    "kafka.ssl.endpoint.identification.algorithm": "https",
    "kafka.client.id": "orders-etl",
}


@dataclass(frozen=True)
class Rows:
    """The rows of a full read of the log (every topic, every offset, aborted records too)
    that `where` keeps (Spark SQL over topic, partition, offset); with `committed`, only the
    records of committed transactions (and non-transactional ones) of those."""

    where: str = "true"
    committed: bool = False
    headers: bool = False
    max_records: int | None = None       # each Spark partition spans at most this many offsets
    min_partitions: int | None = None    # at least this many Spark partitions


@dataclass(frozen=True)
class Error:
    """Refused, with a first line naming `option`."""

    option: str


@dataclass(frozen=True)
class Case:
    id: str
    options: dict
    outcome: Rows | Error
    spark: str                            # the Spark source line the rule mirrors
    warned: tuple[str, ...] = ()          # named by the one warning about ignored options
    kafka: str = SAME                     # Spark's Kafka source on the same set, where it differs


ORDERS = "topic = 'orders'"

READ_CASES = (
    # A ported job's full option set, read unchanged: connection and security settings and the
    # broker-only tuning are ignored with one warning; the rest is honoured.
    Case("ported-job", {
        **CONNECTION, "subscribe": "orders",
        "startingOffsets": '{"orders":{"0":10,"1":-2}}',
        "endingOffsets": '{"orders":{"0":200,"1":-1}}',
        "failOnDataLoss": "true", "kafka.isolation.level": "read_committed",
        "includeHeaders": "true", "maxOffsetsPerTrigger": "1000", "kafka.group.id": "etl",
        "kafkaConsumer.pollTimeoutMs": "120000", "fetchOffset.numRetries": "5",
        "fetchOffset.retryIntervalMs": "50", "kafka.max.poll.records": "500"},
        Rows(f"{ORDERS} and (partition = 1 or offset >= 10 and offset < 200)", committed=True,
             headers=True),
        "KafkaSourceProvider.scala:126-158 (createRelation), :793-799 (kafka.* to the consumer)",
        warned=tuple(sorted([*CONNECTION, "maxOffsetsPerTrigger", "kafka.group.id",
                             "kafkaConsumer.pollTimeoutMs", "fetchOffset.numRetries",
                             "fetchOffset.retryIntervalMs", "kafka.max.poll.records"]))),
    Case("connection-only", {**CONNECTION, "subscribe": "clicks"}, Rows("topic = 'clicks'"),
         "KafkaSourceProvider.scala:793-799 (kafka.* options go to the consumer only)",
         warned=tuple(sorted(CONNECTION))),
    # kafka.isolation.level: the consumer's, honoured as isolationLevel
    Case("kafka-isolation-committed", {"subscribe": "orders",
                                       "kafka.isolation.level": "read_committed"},
         Rows(ORDERS, committed=True), "KafkaSourceProvider.scala:793-799"),
    Case("isolation-default", {"subscribe": "orders"}, Rows(ORDERS),
         "KafkaSourceProvider.scala:710-749 (no isolation.level set: Kafka's read_uncommitted)"),
    Case("isolation-both-agree", {"subscribe": "orders", "isolationLevel": "READ_COMMITTED",
                                  "kafka.isolation.level": "read_committed"},
         Rows(ORDERS, committed=True), "KafkaSourceProvider.scala:793-799"),
    # (Spark ignores isolationLevel, segmentlog's own: both read committed by the kafka. one)
    Case("isolation-upper-case", {"subscribe": "orders", "kafka.isolation.level": "READ_COMMITTED"},
         Error("kafka.isolation.level"), "KafkaSourceProvider.scala:793-799, and Kafka's "
         "ConsumerConfig: isolation.level is a ValidString, compared exactly",
         kafka="error at the first action (Kafka's ConfigException), not at load()"),
    Case("isolation-conflict", {"subscribe": "orders", "isolationLevel": "read_committed",
                                "kafka.isolation.level": "read_uncommitted"},
         Error("isolationLevel"), "KafkaSourceProvider.scala:793-799",
         kafka="rows: Spark ignores isolationLevel and reads uncommitted"),
    Case("isolation-bogus", {"subscribe": "orders", "kafka.isolation.level": "snapshot"},
         Error("kafka.isolation.level"), "KafkaSourceProvider.scala:793-799",
         kafka="error at the first action (Kafka's ConfigException), not at load()"),
    Case("check-crcs", {"subscribe": "clicks", "kafka.check.crcs": "false"},
         Rows("topic = 'clicks'"), "KafkaSourceProvider.scala:793-799"),
    # kafka.* settings Spark's Kafka source refuses itself
    Case("auto-offset-reset", {"subscribe": "orders", "kafka.auto.offset.reset": "earliest"},
         Error("kafka.auto.offset.reset"), "KafkaSourceProvider.scala:295-307"),
    Case("key-deserializer", {"subscribe": "orders", "kafka.key.deserializer": "x.Y"},
         Error("kafka.key.deserializer"), "KafkaSourceProvider.scala:309-314"),
    Case("value-deserializer", {"subscribe": "orders", "kafka.value.deserializer": "x.Y"},
         Error("kafka.value.deserializer"), "KafkaSourceProvider.scala:316-322"),
    Case("enable-auto-commit", {"subscribe": "orders", "kafka.enable.auto.commit": "true"},
         Error("kafka.enable.auto.commit"), "KafkaSourceProvider.scala:324-332"),
    Case("interceptors", {"subscribe": "orders", "kafka.interceptor.classes": "x.Y"},
         Error("kafka.interceptor.classes"), "KafkaSourceProvider.scala:324-332"),
    # a kafka.* name segmentlog does not know: refused, never silently ignored
    Case("kafka-typo", {"subscribe": "orders", "kafka.isolation.levl": "read_committed"},
         Error("kafka.isolation.levl"), "KafkaSourceProvider.scala:793-799",
         kafka="rows: the consumer warns of an unknown config and returns aborted records"),
    # selectors: assign / subscribe / subscribePattern
    Case("two-selectors", {"subscribe": "orders", "assign": '{"orders":[0]}'},
         Error("subscribe"), "KafkaSourceProvider.scala:237-241"),
    Case("empty-subscribe", {"subscribe": " , "}, Error("subscribe"),
         "KafkaSourceProvider.scala:251-257"),
    Case("empty-pattern", {"subscribePattern": "  "}, Error("subscribePattern"),
         "KafkaSourceProvider.scala:258-264"),
    Case("assign-not-json", {"assign": "orders-0"}, Error("assign"),
         "KafkaSourceProvider.scala:244-249"),
    Case("assign-bad-json", {"assign": '{"orders":'}, Error("assign"),
         "JsonUtils.scala (partitions: Expected e.g. {\"topicA\":[0,1]...})"),
    Case("assign", {"assign": '{"orders":[1]}'}, Rows(f"{ORDERS} and partition = 1"),
         "KafkaSourceProvider.scala:211-212, ConsumerStrategy.scala:90-94"),
    Case("subscribe-two", {"subscribe": " orders , clicks "},
         Rows("topic in ('orders', 'clicks')"), "KafkaSourceProvider.scala:213-214"),
    Case("pattern-finds", {"subscribePattern": "orders"},
         Rows("topic in ('orders', 'orders-eu')"), "ConsumerStrategy.scala:138-140 (findFirstIn)"),
    Case("pattern-anchored", {"subscribePattern": "^orders$"}, Rows(ORDERS),
         "ConsumerStrategy.scala:138-140"),
    Case("no-selector", {}, Rows(), "KafkaSourceProvider.scala:233-236",
         kafka="error: one of assign, subscribe, subscribePattern must be specified"),
    # Spark's Kafka options with no meaning without a broker: one warning
    Case("broker-only", {"subscribe": "clicks", "maxOffsetsPerTrigger": "10",
                         "minOffsetsPerTrigger": "5", "maxTriggerDelay": "1m",
                         "groupIdPrefix": "etl", "kafka.group.id": "etl"},
         Rows("topic = 'clicks'"), "KafkaSourceProvider.scala:287-293, :400-411",
         warned=("groupIdPrefix", "kafka.group.id", "maxOffsetsPerTrigger", "maxTriggerDelay",
                 "minOffsetsPerTrigger")),
    Case("trigger-min-above-max", {"subscribe": "clicks", "minOffsetsPerTrigger": "20",
                                   "maxOffsetsPerTrigger": "10"},
         Error("minOffsetsPerTrigger"), "KafkaSourceProvider.scala:340-347"),
    # unknown names: refused with the closest known ones
    Case("typo-subscribe", {"subscrbe": "orders"}, Error("subscrbe"),
         "KafkaSourceProvider.scala:233-236",
         kafka="error too, but only because no selector is left"),
    Case("typo-starting-offsets", {"subscribe": "orders",
                                   "startingOffset": '{"orders":{"0":5,"1":5}}'},
         Error("startingOffset"), "KafkaSourceProvider.scala:698-706",
         kafka="rows: the misspelt option is ignored and the read starts at earliest"),
    Case("write-option-on-read", {"topic": "orders"}, Error("topic"),
         "KafkaSourceProvider.scala:592 (topic is the sink's option)",
         kafka="error: no selector given"),
    # minPartitions and maxRecordsPerPartition
    Case("min-partitions-zero", {"subscribe": "orders", "minPartitions": "0"},
         Error("minPartitions"), "KafkaSourceProvider.scala:271-275"),
    Case("min-partitions-text", {"subscribe": "orders", "minPartitions": "many"},
         Error("minPartitions"), "KafkaSourceProvider.scala:273 (toInt)"),
    Case("min-partitions", {"subscribe": "orders", "minPartitions": "5"},
         Rows(ORDERS, min_partitions=5), "KafkaOffsetRangeCalculator.scala:77-106"),
    Case("max-records-zero", {"subscribe": "orders", "maxRecordsPerPartition": "0"},
         Error("maxRecordsPerPartition"), "KafkaSourceProvider.scala:277-283"),
    Case("max-records-text", {"subscribe": "orders", "maxRecordsPerPartition": "1e3"},
         Error("maxRecordsPerPartition"), "KafkaSourceProvider.scala:278 (toLong)"),
    Case("max-records", {"subscribe": "orders", "maxRecordsPerPartition": "60"},
         Rows(ORDERS, max_records=60), "KafkaOffsetRangeCalculator.scala:63-72",
         kafka="same rows, in one Spark partition per topic-partition: with earliest and latest "
               "the ranges Spark sizes are its sentinels -2..-1, one offset long, so it cuts "
               "none (KafkaOffsetReaderAdmin.scala:109-110); segmentlog cuts them"),
    Case("max-records-json", {"assign": '{"orders":[0,1]}',
                              "startingOffsets": '{"orders":{"0":20,"1":20}}',
                              "endingOffsets": '{"orders":{"0":140,"1":140}}',
                              "maxRecordsPerPartition": "50"},
         Rows(f"{ORDERS} and offset >= 20 and offset < 140", max_records=50),
         "KafkaOffsetReaderAdmin.scala:109-110 (offsets given: ranges bigger than the maximum "
         "are cut), KafkaOffsetRangeCalculator.scala:63-72"),
    Case("max-records-and-min-partitions", {"subscribe": "orders,clicks",
                                            "maxRecordsPerPartition": "150",
                                            "minPartitions": "12"},
         Rows("topic in ('orders', 'clicks')", max_records=150, min_partitions=12),
         "KafkaOffsetRangeCalculator.scala:63-106"),
    # offsets and timestamps
    Case("starting-latest", {"subscribe": "orders", "startingOffsets": "latest"},
         Error("startingOffsets"), "KafkaSourceProvider.scala:366-368"),
    Case("starting-json-latest", {"subscribe": "orders",
                                  "startingOffsets": '{"orders":{"0":-1,"1":-2}}'},
         Error("startingOffsets"), "KafkaSourceProvider.scala:369-375"),
    Case("ending-earliest", {"subscribe": "orders", "endingOffsets": "earliest"},
         Error("endingOffsets"), "KafkaSourceProvider.scala:383-385"),
    Case("starting-timestamp-text", {"subscribe": "orders", "startingTimestamp": "today"},
         Error("startingTimestamp"), "KafkaSourceProvider.scala:682-691"),
    Case("timestamp-strategy-bogus", {"subscribe": "orders",
                                      "startingOffsetsByTimestampStrategy": "closest"},
         Error("startingOffsetsByTimestampStrategy"), "KafkaSourceProvider.scala:678-680"),
    Case("timestamps", {"subscribe": "clicks", "startingTimestamp": str(START_MS + 20_000),
                        "endingTimestamp": str(START_MS + 50_000)},
         Rows("topic = 'clicks' and timestamp >= timestamp_millis("
              f"{START_MS + 20_000}) and timestamp < timestamp_millis({START_MS + 50_000})"),
         "KafkaSourceProvider.scala:682-687 (a global timestamp wins)"),
    Case("fail-on-data-loss-text", {"subscribe": "orders", "failOnDataLoss": "maybe"},
         Error("failOnDataLoss"), "KafkaSourceProvider.scala:224-225 (toBoolean)"),
    Case("include-headers-text", {"subscribe": "orders", "includeHeaders": "maybe"},
         Error("includeHeaders"), "KafkaSourceProvider.scala:147 (toBoolean)"),
)


@dataclass(frozen=True)
class Written:
    """The write succeeds: every batch compressed with `codec`, at most `batch_bytes` bytes of
    records each (uncompressed) unless one record is bigger."""

    codec: str = "none"
    batch_bytes: int | None = None


@dataclass(frozen=True)
class WriteCase:
    id: str
    options: dict
    outcome: Written | Error
    spark: str
    warned: tuple[str, ...] = ()
    kafka: str = SAME


WRITE_CASES = (
    WriteCase("ported-sink", {"kafka.bootstrap.servers": BOOTSTRAP, "topic": "out",
                              "kafka.compression.type": "lz4", "kafka.acks": "all",
                              "kafka.linger.ms": "20", "kafka.batch.size": "4096",
                              "kafka.security.protocol": "SASL_SSL",
                              "kafka.sasl.mechanism": "PLAIN"},
              Written("lz4", 4096),
              "KafkaSourceProvider.scala:771-791 (kafka.* to the producer)",
              warned=("kafka.acks", "kafka.bootstrap.servers", "kafka.linger.ms",
                      "kafka.sasl.mechanism", "kafka.security.protocol")),
    WriteCase("compression-zstd-level", {"topic": "out", "kafka.compression.type": "zstd",
                                         "kafka.compression.zstd.level": "19"},
              Written("zstd"), "KafkaSourceProvider.scala:771-791"),
    # (compression is segmentlog's own, which Spark ignores: both write gzip)
    WriteCase("compression-agree", {"topic": "out", "compression": "GZIP",
                                    "kafka.compression.type": "gzip"},
              Written("gzip"), "KafkaSourceProvider.scala:771-791"),
    WriteCase("compression-conflict", {"topic": "out", "compression.type": "gzip",
                                       "kafka.compression.type": "lz4"},
              Error("compression.type"), "KafkaSourceProvider.scala:771-791",
              kafka="written, lz4: Spark ignores compression.type"),
    WriteCase("compression-bogus", {"topic": "out", "kafka.compression.type": "brotli"},
              Error("kafka.compression.type"), "KafkaSourceProvider.scala:771-791",
              kafka="error when the producer is created (a task fails)"),
    WriteCase("gzip-level-out-of-range", {"topic": "out", "kafka.compression.type": "gzip",
                                          "kafka.compression.gzip.level": "12"},
              Error("kafka.compression.gzip.level"), "KafkaSourceProvider.scala:771-791",
              kafka="error when the producer is created (a task fails)"),
    WriteCase("key-serializer", {"topic": "out", "kafka.key.serializer": "x.Y"},
              Error("kafka.key.serializer"), "KafkaSourceProvider.scala:773-777"),
    WriteCase("value-serializer", {"topic": "out", "kafka.value.serializer": "x.Y"},
              Error("kafka.value.serializer"), "KafkaSourceProvider.scala:779-783"),
    WriteCase("transactional-id", {"topic": "out", "kafka.transactional.id": "t1"},
              Error("kafka.transactional.id"), "KafkaSourceProvider.scala:771-791",
              kafka="error: the producer never begins a transaction, so it may not send"),
    WriteCase("partitioner", {"topic": "out", "kafka.partitioner.class": "x.Y"},
              Error("kafka.partitioner.class"), "KafkaSourceProvider.scala:771-791",
              kafka="error: x.Y is no class (a real partitioner would route rows its own way)"),
    WriteCase("typo", {"topic": "out", "numPartition": "3"}, Error("numPartition"),
              "KafkaSourceProvider.scala:771-799 (any other option is ignored)",
              kafka="written; the misspelt option is ignored"),
    WriteCase("read-option-on-write", {"topic": "out", "failOnDataLoss": "false"},
              Error("failOnDataLoss"), "KafkaSourceProvider.scala:771-799",
              kafka="written; the option is ignored"),
)


CODEC_IDS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}


def write_input(spark):
    """What every write case writes: 600 rows, 13 keys, compressible values."""
    return spark.range(600).selectExpr("cast(id % 13 as string) as key",
                                       "repeat(concat('value ', cast(id as string)), 8) as value")


def batches_of(log_file: Path):
    """(codec id, uncompressed records bytes, record count) of each batch of a .log file,
    by kafka-python's codecs (the independent reader)."""
    data = log_file.read_bytes()
    decode = {1: kafka_codec.gzip_decode, 2: kafka_codec.snappy_decode,
              3: kafka_codec.lz4_decode, 4: kafka_codec.zstd_decode}
    pos = 0
    while pos + 61 <= len(data):
        size = 12 + struct.unpack_from(">i", data, pos + 8)[0]
        codec = struct.unpack_from(">h", data, pos + 21)[0] & 0x7
        count = struct.unpack_from(">i", data, pos + 57)[0]
        payload = data[pos + 61:pos + size]
        raw = decode[codec](bytes(payload)) if codec else payload
        yield codec, len(raw), count
        pos += size


def write_log(path: Path) -> dict[str, int]:
    """LOG under `path`; returns each partition directory's log end offset."""
    from segmentlog_source.cli.generate import generate_log

    ends: dict[str, int] = {}
    for spec in LOG:
        ends.update(generate_log(str(path), **{**_COMMON, **spec}).log_end_offsets)
    return ends


def committed_offsets(partition_dir: Path) -> set[int]:
    """read_committed by an independent decoder: kafka-python, and the rule that a
    transactional batch is dropped when its producer's next marker is an ABORT."""
    batches = []
    for log in sorted(partition_dir.glob("*.log")):
        records = MemoryRecords(log.read_bytes())
        while (batch := records.next_batch()) is not None:
            batches.append((batch, list(batch)))   # a kafka-python batch iterates only once
    keep, pending = set(), {}
    for batch, records in batches:
        offsets = [r.offset for r in records]
        if batch.is_control_batch:
            done = pending.pop(batch.producer_id, [])
            if not records[0].abort:
                keep.update(done)
        elif batch.is_transactional:
            pending.setdefault(batch.producer_id, []).extend(offsets)
        else:
            keep.update(offsets)
    return keep


# (a line of its own after a traceback, or, without one, right after Spark's prefix)
_OWN_LINE = re.compile(r"(?:^|: )segmentlog_source\.errors\.\w+: (.*)$", re.M)


def segmentlog_message(error: BaseException) -> str:
    """The first line of segmentlog's own message inside what Spark raised (after the
    PYTHON_DATA_SOURCE_ERROR prefix and the Python traceback): the last exception printed."""
    found = _OWN_LINE.findall(str(error))
    assert found, f"no segmentlog error in: {str(error)[:2000]}"
    return found[-1]


FIRST_LINE_LIMIT = 200
