"""`make demo`: a Kafka log directory, queried with Spark, no broker.

Generates `demo-data/logs` once (two topics, three partitions each, a few hundred MB of
segments with their indexes, exactly as a broker lays them out), then runs a full read, an
offset-range read and a time-range read, and shows how many bytes of segment files each needed.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

DATA = Path(os.environ.get("SEGMENTLOG_DEMO_DIR", "demo-data")) / "logs"
START_MS = 1_700_000_000_000           # 2023-11-14T22:13:20Z
RECORDS_PER_TOPIC = 1_500_000
STEP_MS = 2                             # one record every 2 ms per topic: ~50 minutes of data


def ensure_log() -> None:
    from .cli.generate import generate_log

    if (DATA / "orders-0").exists():
        return
    print(f"generating a demo log in {DATA} ...", flush=True)
    t0 = time.time()
    for seed, (topic, codec) in enumerate((("orders", "lz4"), ("clicks", "none"))):
        generate_log(str(DATA), topics=[topic], partitions=3, records=RECORDS_PER_TOPIC,
                     codec=codec, value_size=100, key_size=12, headers=1,
                     records_per_batch=100, segment_bytes=32 * 1024 * 1024,
                     start_timestamp=START_MS, timestamp_step_ms=STEP_MS,
                     timestamp_jitter_ms=50, seed=seed, progress=sys.stderr.isatty())
    print(f"  done in {time.time() - t0:.1f} s", flush=True)


def planned_bytes(options: dict) -> tuple[int, int]:
    """(bytes of segment files the executors will read, total bytes of the selected logs)."""
    from .plan.options import parse_read_options
    from .plan.read_plan import plan_read

    opts = parse_read_options({"path": str(DATA), **options})
    selected = parse_read_options({"path": str(DATA),
                                   **{k: v for k, v in options.items()
                                      if k in ("subscribe", "assign", "subscribePattern")}})
    return plan_read(opts).nbytes, plan_read(selected).nbytes


def _size(n: int) -> str:
    for unit in ("bytes", "KB", "MB", "GB"):
        if n < 1000 or unit == "GB":
            return f"{n:,.0f} {unit}" if unit == "bytes" else f"{n:,.1f} {unit}"
        n /= 1000
    return str(n)


def main() -> None:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    ensure_log()
    from pyspark.sql import SparkSession, functions as F

    import segmentlog_source

    spark = (SparkSession.builder.master("local[2]").appName("segmentlog-demo")
             .config("spark.ui.enabled", "false")
             .config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.session.timeZone", "UTC").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    segmentlog_source.register(spark)

    def run(title: str, options: dict, show) -> None:
        reader = spark.read.format("segmentlog")
        for k, v in options.items():
            reader = reader.option(k, v)
        t0 = time.time()
        df = reader.load(str(DATA))
        show(df)
        read, total = planned_bytes(options)
        print(f"   {title}: {time.time() - t0:.1f} s; read {_size(read)} of the {_size(total)} "
              f"of segments selected ({100 * read / max(total, 1):.3f}%)\n", flush=True)

    print("\n== 1. full read: records per topic and partition, with their offset range")
    run("full read", {}, lambda df: df.groupBy("topic", "partition").agg(
        F.count("*").alias("records"), F.min("offset").alias("first"),
        F.max("offset").alias("last"), F.min("timestamp").alias("from"),
        F.max("timestamp").alias("to")).orderBy("topic", "partition").show(truncate=False))

    print("== 2. offset range: orders-1, offsets [200000, 200010)")
    offsets = {"subscribe": "orders",
               "startingOffsets": json.dumps({"orders": {"1": 200_000}}),
               "endingOffsets": json.dumps({"orders": {"0": 0, "1": 200_010, "2": 0}})}
    run("offset range", offsets, lambda df: df.select(
        "partition", "offset", "timestamp", F.col("key").cast("string").alias("key"),
        F.substring(F.col("value").cast("string"), 1, 40).alias("value")).show(truncate=False))

    t = START_MS + 30 * 60 * 1000
    print("== 3. time range: clicks, one second starting 30 minutes in")
    times = {"subscribe": "clicks", "startingTimestamp": str(t),
             "endingTimestamp": str(t + 1000)}
    run("time range", times, lambda df: df.groupBy("partition").agg(
        F.count("*").alias("records"), F.min("timestamp").alias("from"),
        F.max("timestamp").alias("to")).orderBy("partition").show(truncate=False))
    spark.stop()


if __name__ == "__main__":
    main()
