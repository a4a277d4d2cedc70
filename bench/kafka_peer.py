"""segmentlog against Spark's own Kafka source and sink, with a real Kafka broker between them.

Data: RECORDS records produced once into topic `events` x 4 partitions of a single-node Kafka
4.4 broker on loopback (segmentlog_source/devtools/kafka: KafkaBroker, and KafkaClient's `fill`
with kafka-clients 4.4: 16 B keys, 100 B pseudo-random values, no headers, uncompressed 16 KiB
batches, record i in partition i % 4 with CreateTime base + i ms).

Sides, in one SparkSession (local[2], bench/common.py's settings, Spark's Kafka connector 4.2.0
on spark.jars):
* kafka: `spark.read.format("kafka")` from the running broker (`subscribe=events`), and
  Spark's Kafka sink (`df.write.format("kafka")`, kafka-clients 3.9.2 with Spark's defaults)
  into topic `sink` on the same broker.
* segmentlog: `spark.read.format("segmentlog")` of the broker's own log directory while it
  runs (`subscribe=events`), and `df.write.format("segmentlog")` into a new directory.

Queries: a full scan (`sum(length(value))`), `groupBy(partition).count()`, and a 0.1% time
range (`startingTimestamp`/`endingTimestamp` around RECORDS / 1000 records, `count()`). Writes:
the same cached DataFrame of RECORDS rows (key, value, partition) both ways.
Target (issue 17): segmentlog is not slower than the broker path, segmentlog / kafka <= 1.

    python -m bench.kafka_peer     # this benchmark alone: bench/results/kafka_peer.{json,md}
"""

from __future__ import annotations

import shutil
import sys
import time

from pyspark import StorageLevel
from pyspark.sql import functions as F

from .common import DATA, case, ratio, spark_session, take_turns, timed

RECORDS = 5_000_000
PARTITIONS = 4
KEY_BYTES, VALUE_BYTES = 16, 100
REPETITIONS = 3
TARGET = 1.0
TOPIC, SINK = "events", "sink"


def run(repetitions: int = REPETITIONS, records: int = RECORDS) -> list[dict]:
    from segmentlog_source.devtools.kafka.broker import KafkaBroker
    from segmentlog_source.devtools.kafka.java_client import KafkaClient

    spark = spark_session()
    if not spark.conf.get("spark.jars", ""):
        raise RuntimeError("the bench SparkSession has no Spark Kafka connector on spark.jars "
                           "(`make kafka-jars` fetches it)")
    workdir = DATA / "kafka-peer"
    shutil.rmtree(workdir, ignore_errors=True)
    broker = KafkaBroker(workdir, heap="1g")
    broker.start()
    try:
        # three hours ago: every CreateTime is in the past, and retention is off in the broker
        base = (int(time.time()) - 3 * 3600) * 1000
        started = time.perf_counter()
        answers = KafkaClient(broker.bootstrap, timeout=3600).run([
            ["create-topic", TOPIC, "--partitions", PARTITIONS],
            ["create-topic", SINK, "--partitions", PARTITIONS],
            ["fill", TOPIC, "--count", records, "--partitions", PARTITIONS, "--key-bytes",
             KEY_BYTES, "--value-bytes", VALUE_BYTES, "--base-ts", base, "--ts-step", 1]])
        produced_s = time.perf_counter() - started
        fill = next(a for a in answers if a["op"] == "fill")
        log_mb = sum(p.stat().st_size for p in broker.data_dir.glob(f"{TOPIC}-*/*.log")) / 1e6
        data = (f"{records:,} records, {PARTITIONS} partitions, {KEY_BYTES} B keys, "
                f"{VALUE_BYTES} B values, uncompressed, {log_mb:,.0f} MB of .log, produced "
                f"through the broker in {fill['seconds']:.0f} s")
        rows = read_cases(spark, broker, base, records, repetitions, data)
        rows.append(write_case(spark, broker, records, repetitions))
        for row in rows:
            row["produce_seconds"] = round(produced_s, 1)
    except BaseException:
        broker.stop()
        print(f"the broker's files and logs are kept in {workdir}", file=sys.stderr)
        raise
    broker.stop()
    shutil.rmtree(workdir, ignore_errors=True)
    return rows


def read_cases(spark, broker, base: int, records: int, repetitions: int,
               data: str) -> list[dict]:
    middle = base + records // 2
    window = {"startingTimestamp": str(middle), "endingTimestamp": str(middle + records // 1000)}
    queries = {
        "full scan, sum(length(value))": (
            {}, lambda df: df.select(F.sum(F.length("value"))).collect()[0][0]),
        "groupBy(partition).count()": (
            {}, lambda df: sorted(map(tuple, df.groupBy("partition").count().collect()))),
        "0.1% time range, count()": (window, lambda df: df.count()),
    }
    rows = []
    for name, (options, query) in queries.items():
        def kafka(options=options, query=query):
            reader = (spark.read.format("kafka")
                      .option("kafka.bootstrap.servers", broker.bootstrap)
                      .option("subscribe", TOPIC))
            return query(_options(reader, options).load())

        def segmentlog(options=options, query=query):
            reader = spark.read.format("segmentlog").option("subscribe", TOPIC)
            return query(_options(reader, options).load(str(broker.data_dir)))

        theirs, ours = kafka(), segmentlog()   # also the warm-up
        if theirs != ours:
            raise AssertionError(f"{name}: format('kafka') says {theirs!r:.300}, "
                                 f"segmentlog {ours!r:.300}")
        raw = take_turns({"kafka": kafka, "segmentlog": segmentlog}, repetitions, warmups=0)
        rows.append(case(
            f"Kafka peer: {name}", data=data, repetitions=repetitions, raw=raw,
            ratios={"segmentlog / kafka": ratio(raw, "segmentlog", "kafka")},
            targets=[("segmentlog / kafka", TARGET)],
            notes=("format('kafka') from the live broker vs format('segmentlog') on its log "
                   "directory")))
    return rows


def _options(reader, options: dict):
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader


def write_case(spark, broker, records: int, repetitions: int) -> dict:
    df = (spark.range(records)
          .select(F.lpad(F.col("id").cast("string"), KEY_BYTES, "0").cast("binary").alias("key"),
                  F.substring(F.concat(F.unhex(F.sha2(F.col("id").cast("string"), 512)),
                                       F.unhex(F.sha2(F.col("id").cast("string"), 384))),
                              1, VALUE_BYTES).alias("value"),
                  (F.col("id") % PARTITIONS).cast("int").alias("partition"))
          .persist(StorageLevel.MEMORY_AND_DISK))
    df.count()   # the rows are made once, outside the timings
    out = DATA / "kafka-peer" / "segmentlog-writes"

    def kafka():
        (df.write.format("kafka").option("kafka.bootstrap.servers", broker.bootstrap)
         .option("topic", SINK).save())

    def segmentlog():
        (df.write.format("segmentlog").mode("append").option("topic", SINK)
         .option("numPartitions", str(PARTITIONS)).save(str(out)))

    raw: dict[str, list[float]] = {"kafka": [], "segmentlog": []}
    for rep in range(repetitions + 1):   # the first round is the warm-up
        shutil.rmtree(out, ignore_errors=True)
        seconds = {"kafka": timed(kafka), "segmentlog": timed(segmentlog)}
        if rep:
            for side, value in seconds.items():
                raw[side].append(value)
    written = sum(1 for _ in out.glob(f"{SINK}-*"))
    if written != PARTITIONS:
        raise AssertionError(f"segmentlog wrote {written} partitions of {SINK}, not {PARTITIONS}")
    df.unpersist()
    return case("Kafka peer: df.write",
                data=f"{records:,} rows of {KEY_BYTES} B keys, {VALUE_BYTES} B values, a "
                     f"partition column; cached, 2 Spark partitions",
                repetitions=repetitions, raw=raw,
                ratios={"segmentlog / kafka": ratio(raw, "segmentlog", "kafka")},
                targets=[("segmentlog / kafka", TARGET)],
                notes=("Spark's Kafka sink into the broker (acks=all, one replica) vs "
                       "df.write.format('segmentlog') (fsync at commit)"))


def main() -> None:
    from .run import write_alone

    started = time.perf_counter()
    rows = run()
    write_alone("kafka_peer", rows, time.perf_counter() - started)


if __name__ == "__main__":
    main()
