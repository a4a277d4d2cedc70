"""`make cluster-demo`: segmentlog on a real Spark standalone cluster on this machine.

Starts a master and two workers (LocalCluster), then this process becomes the driver: tasks run
in two executor JVMs with Python workers of their own, as on a real cluster. Reads a small
generated log with WHERE clauses pushed down to the reader, writes a slice of it back with
df.write, and shows where the tasks ran. Everything it writes is under demo-data/cluster.
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

BASE = Path(os.environ.get("SEGMENTLOG_DEMO_DIR", "demo-data")) / "cluster"
DATA, OUT, LOGS = BASE / "logs", BASE / "written", BASE / "cluster-logs"
START_MS = 1_700_000_000_000           # 2023-11-14T22:13:20Z
RECORDS_PER_TOPIC = 200_000
STEP_MS = 5                             # ~17 minutes of data per topic


def ensure_log() -> None:
    from ..cli.generate import generate_log

    if (DATA / "orders-0").exists():
        return
    print(f"generating a demo log in {DATA} ...", flush=True)
    for seed, (topic, codec) in enumerate((("orders", "lz4"), ("clicks", "zstd"))):
        generate_log(str(DATA), topics=[topic], partitions=3, records=RECORDS_PER_TOPIC,
                     codec=codec, value_size=100, key_size=12, records_per_batch=100,
                     segment_bytes=4 * 1024 * 1024, start_timestamp=START_MS,
                     timestamp_step_ms=STEP_MS, timestamp_jitter_ms=50, seed=seed)


def where_this_task_runs(_) -> tuple:
    from .local_cluster import executor_of_this_process

    time.sleep(0.5)   # long enough that both executors get a task
    where = executor_of_this_process()
    return where["executor_id"], where["jvm_pid"], where["python_pid"]


def main() -> None:
    ensure_log()
    shutil.rmtree(OUT, ignore_errors=True)   # writes append: start from an empty log each time
    shutil.rmtree(LOGS, ignore_errors=True)
    from pyspark.sql import functions as F

    import segmentlog_source

    from .local_cluster import LocalCluster, session_builder

    print(f"starting a Spark master and two workers (their logs: {LOGS}) ...", flush=True)
    with LocalCluster(LOGS) as cluster:
        status = cluster.status()
        print(f"  {cluster.master_url}: {status['aliveworkers']} workers, "
              f"{status['cores']} cores\n", flush=True)
        spark = (session_builder(cluster.master_url).appName("segmentlog-cluster-demo")
                 .config("spark.sql.python.filterPushdown.enabled", "true")
                 .config("spark.sql.shuffle.partitions", "2")
                 .config("spark.sql.session.timeZone", "UTC")
                 .config("spark.ui.enabled", "false")
                 .config("spark.ui.showConsoleProgress", "false").getOrCreate())
        spark.sparkContext.setLogLevel("ERROR")
        segmentlog_source.register(spark)

        def load():
            # a fresh load() per query: the README's pushdown rule
            return spark.read.format("segmentlog").option("pushdown", "true").load(str(DATA))

        print("== 1. where tasks run")
        tasks = spark.sparkContext.parallelize(range(4), 4).map(where_this_task_runs).collect()
        driver_jvm = spark.sparkContext._jvm.ProcessHandle.current().pid()
        print(f"   driver:          JVM pid {driver_jvm}, Python pid {os.getpid()}")
        for executor_id, jvm_pid, python_pid in sorted(set(tasks)):
            print(f"   task, executor {executor_id}: JVM pid {jvm_pid}, Python worker pid "
                  f"{python_pid}")
        print()

        t0 = time.time()
        print("== 2. pushed-down WHERE: orders-1, offsets 1000 to 1004")
        (load().where("topic = 'orders' AND partition = 1 AND offset BETWEEN 1000 AND 1004")
         .select("partition", "offset", "timestamp", F.col("key").cast("string").alias("key"),
                 F.substring(F.col("value").cast("string"), 1, 40).alias("value"))
         .orderBy("offset").show(truncate=False))
        print(f"   {time.time() - t0:.1f} s\n")

        t0 = time.time()
        window = (f"timestamp >= timestamp_millis({START_MS + 300_000}) "
                  f"AND timestamp < timestamp_millis({START_MS + 310_000})")
        print("== 3. pushed-down WHERE: ten seconds of both topics, counted per partition")
        (load().where(window).groupBy("topic", "partition")
         .agg(F.count("*").alias("records"), F.min("timestamp").alias("from"),
              F.max("timestamp").alias("to"))
         .orderBy("topic", "partition").show(truncate=False))
        print(f"   {time.time() - t0:.1f} s\n")

        t0 = time.time()
        print(f"== 4. df.write of those ten seconds to {OUT} (topic 'window', 2 partitions), "
              "read back")
        (load().where(window).select("key", "value", "timestamp")
         .write.format("segmentlog").mode("append")
         .option("topic", "window").option("numPartitions", "2").option("compression", "lz4")
         .save(str(OUT)))
        (spark.read.format("segmentlog").load(str(OUT)).groupBy("topic", "partition")
         .agg(F.count("*").alias("records"), F.min("offset").alias("first"),
              F.max("offset").alias("last"))
         .orderBy("partition").show(truncate=False))
        print(f"   {time.time() - t0:.1f} s")
        spark.stop()


if __name__ == "__main__":
    main()
