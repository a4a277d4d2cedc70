"""The driver test_cluster.py runs against a standalone cluster (devtools.local_cluster): reads
with and without pushdown, a batch write and a streaming write, all executed by executors that
are separate JVMs with their own Python workers.

    python -m tests.cluster.cluster_job --master spark://127.0.0.1:7077 --work DIR \\
        --read-path DIR_OR_URI [--read-path ...] [--storage-options '{"fs.s3.endpoint": ...}']

`--storage-options` become reader options of every read of an object-store URI (`s3://...`).
The first read path is also copied with df.write into DIR/copy. The last line of stdout is one
JSON object with what the test checks (see main()); `read_results` is also what the test runs on
its local[2] session for the reference.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import sys
import time
from pathlib import Path

START = 1_700_000_000_000
# WHERE clauses pushed down to the reader; each must also be right when Spark filters a full read
WHERES = {
    "offsets": "topic = 'clicks' and partition = 1 and offset >= 200 and offset < 700",
    "time window": f"timestamp >= timestamp_millis({START + 1000}) "
                   f"and timestamp < timestamp_millis({START + 2500})",
}
STREAM_FILES, STREAM_ROWS_PER_FILE, STREAM_FIRST_RUN = 5, 50, 3


def read(spark, path: str, storage_options: dict, **options):
    """A fresh load() (the README's pushdown rule), with the storage options if `path` is a URI.
    In four Spark partitions at least, so that a read runs on both executors."""
    reader = (spark.read.format("segmentlog").option("includeHeaders", "true")
              .option("minPartitions", "4"))
    if "://" in path:
        options = {**storage_options, **options}
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader.load(path)


def summary(df) -> dict:
    """Per topic-partition: count, offset range, value bytes and a digest of every row in offset
    order. One Spark query (its shuffle moves each partition's rows to one task); hashed here."""
    from pyspark.sql import functions as F

    rows = F.struct("offset", F.unix_micros("timestamp"), "timestampType", "key", "value",
                    "headers")
    groups = sorted(df.groupBy("topic", "partition")
                    .agg(F.count("*"), F.min("offset"), F.max("offset"),
                         F.sum(F.length("value")), F.sort_array(F.collect_list(rows)).alias("rows"))
                    .collect())
    digest = hashlib.sha256()
    for group in groups:
        for row in group.rows:
            digest.update(repr((group.topic, group.partition, *row)).encode())
    return {"rows": sum(g[2] for g in groups), "partitions": [list(g[:6]) for g in groups],
            "digest": digest.hexdigest()}


def read_results(spark, path: str, storage_options: dict, *, pushdown: bool) -> dict:
    """summary() of a full read and of each WHERE clause: pushed down into a fresh load() each,
    or (pushdown=False, the reference) applied by Spark to a full read."""
    out = {"full": summary(read(spark, path, storage_options))}
    for name, where in WHERES.items():
        df = read(spark, path, storage_options, pushdown=str(pushdown).lower())
        out[name] = summary(df.where(where))
    return out


def where_tasks_run(spark) -> list[dict]:
    """executor_of_this_process() of four tasks that each take long enough (0.5 s) for every
    free core to get one."""
    from segmentlog_source.devtools.local_cluster import executor_of_this_process

    def task(_):
        time.sleep(0.5)
        return executor_of_this_process()

    tasks = spark.sparkContext.parallelize(range(4), 4).map(task).collect()
    # fail here, not only in the test, when the master is not a cluster (local[n] has no executors)
    assert len({t["executor_id"] for t in tasks} - {None}) >= 2, f"not on two executors: {tasks}"
    return tasks


def batch_copy(spark, source: str, storage_options: dict, out: Path) -> dict:
    """df.write the rows of `source` (topics, partitions, timestamps, keys, values, headers) to
    `out`, then read the copy back."""
    (read(spark, source, storage_options)
     .select("topic", "partition", "timestamp", "key", "value", "headers")
     .write.format("segmentlog").mode("append").option("numPartitions", "3").save(str(out)))
    return summary(read(spark, str(out), {}))


def stream_runs(spark, base: Path) -> list[dict]:
    """tests/spark/stream_query.py's query (one input file per micro-batch, murmur2-partitioned
    by key) run three times from one checkpoint: on the first STREAM_FIRST_RUN input files,
    after the others arrive, and with nothing new. After each run, the values per partition in
    offset order, read back."""
    from tests.spark import stream_query as sq

    staged = base / "staged"
    sq.write_inputs(staged, STREAM_FILES, STREAM_ROWS_PER_FILE)
    (base / "in").mkdir()
    runs = []
    for upto in (STREAM_FIRST_RUN, STREAM_FILES, STREAM_FILES):
        for f in sorted(staged.iterdir())[:upto - len(list((base / "in").iterdir()))]:
            shutil.move(f, base / "in" / f.name)   # keeps the mtime the file source orders by
        sq.start(spark, base, available_now=True).awaitTermination()
        rows = sorted(read(spark, str(base / "out"), {}).select("partition", "offset", "value")
                      .collect())
        ids: dict[str, list[int]] = {}
        offsets: dict[str, list[int]] = {}
        for r in rows:
            ids.setdefault(str(r.partition), []).append(int(r.value))
            offsets.setdefault(str(r.partition), []).append(r.offset)
        runs.append({"input_files": upto, "ids": ids, "offsets": offsets})
    return runs


def session(master: str):
    from segmentlog_source.devtools.local_cluster import session_builder

    spark = (session_builder(master, executors=2).appName("segmentlog-cluster-job")
             .config("spark.sql.shuffle.partitions", "2")
             .config("spark.sql.python.filterPushdown.enabled", "true")
             .config("spark.sql.session.timeZone", "UTC")
             .config("spark.ui.enabled", "false")
             .config("spark.ui.showConsoleProgress", "false")
             .getOrCreate())
    spark.sparkContext.setLogLevel("WARN")
    import segmentlog_source

    segmentlog_source.register(spark)
    return spark


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--master", required=True)
    parser.add_argument("--work", required=True, help="an empty directory for written logs")
    parser.add_argument("--read-path", action="append", required=True,
                        help="a local log directory or an object-store URI (repeatable)")
    parser.add_argument("--storage-options", default="{}",
                        help="JSON object of reader options for object-store URIs")
    args = parser.parse_args(argv)
    storage_options = json.loads(args.storage_options)
    work = Path(args.work)

    seconds = {}
    t0 = time.monotonic()
    spark = session(args.master)
    seconds["session"] = round(time.monotonic() - t0, 1)

    def timed(name, fn, *a, **kw):
        t = time.monotonic()
        result = fn(*a, **kw)
        seconds[name] = round(time.monotonic() - t, 1)
        print(f"cluster_job: {name} took {seconds[name]} s", file=sys.stderr, flush=True)
        return result

    result = {
        "driver": {"python_pid": os.getpid(),
                   "jvm_pid": spark.sparkContext._jvm.ProcessHandle.current().pid()},
        "tasks": timed("tasks", where_tasks_run, spark),
        "reads": {path: timed(f"read {path}", read_results, spark, path, storage_options,
                              pushdown=True) for path in args.read_path},
        "copy": timed("batch write", batch_copy, spark, args.read_path[0], storage_options,
                      work / "copy"),
        "stream": timed("streaming write", stream_runs, spark, work / "stream"),
        "seconds": seconds,
    }
    spark.stop()
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
