"""The streaming query the streaming tests run, and what its output must be.

Input: JSON files of consecutive ids, read one file per micro-batch in id order. Output: topic
`s` with 3 partitions, key = id % 5 (so each partition gets an increasing run of ids). Run as a
module it is the driver test_stream_write.py kills: it prints `started` once the query runs.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from segmentlog_source.format.partitioner import partition_for_key
from tests.spark.driver import driver_session
from tests.storage.written_logs import kafka_python_rows

TOPIC, PARTITIONS = "s", 3


def write_inputs(directory: Path, files: int, rows_per_file: int) -> int:
    directory.mkdir(parents=True)
    for f in range(files):
        path = directory / f"part-{f:04d}.json"
        path.write_text("".join(json.dumps({"id": f * rows_per_file + i}) + "\n"
                                for i in range(rows_per_file)))
        os.utime(path, (1_000_000 + f, 1_000_000 + f))  # the source takes files oldest first
    return files * rows_per_file


def start(spark, base: Path, *, available_now: bool = False, **options):
    from pyspark.sql import functions as F

    # Spark refuses to start a query whose checkpoint has no batch in its offset log but some
    # other file in `offsets/` (STATE_STORE_CHECKPOINT_LOCATION_NOT_EMPTY, its own check of its
    # own directory): seen once, under a load of 11, after a stop in the query's first trigger.
    # These tests stop queries at random moments and check the sink, so they let Spark start
    # over instead.
    spark.conf.set("spark.sql.streaming.verifyCheckpointDirectoryEmptyOnStart", "false")
    ids = (spark.readStream.schema("id long").option("maxFilesPerTrigger", 1)
           .json(str(base / "in")))
    writer = (ids.select((F.col("id") % 5).cast("string").alias("key"),
                         F.col("id").cast("string").alias("value"))
              .writeStream.format("segmentlog").option("topic", TOPIC)
              .option("numPartitions", str(PARTITIONS))
              .option("checkpointLocation", str(base / "checkpoint")))
    for name, value in options.items():
        writer = writer.option(name, value)
    if available_now:
        writer = writer.trigger(availableNow=True)
    return writer.start(str(base / "out"))


def expected_ids(total: int) -> dict[int, list[int]]:
    out: dict[int, list[int]] = {p: [] for p in range(PARTITIONS)}
    for i in range(total):
        out[partition_for_key(str(i % 5).encode(), PARTITIONS)].append(i)
    return out


def check_prefix(ids_by_partition: dict[int, list[int]], total: int) -> int:
    """Each partition holds a prefix of its expected ids, in order, once. Returns the rows."""
    expected = expected_ids(total)
    for p, ids in ids_by_partition.items():
        assert ids == expected[p][:len(ids)], f"partition {p}: {ids[:20]}..."
    return sum(len(ids) for ids in ids_by_partition.values())


def logged_ids(out: Path) -> dict[int, list[int]]:
    """The ids in the log, per partition, read by kafka-python (offsets checked contiguous)."""
    found = {}
    for p in range(PARTITIONS):
        rows = kafka_python_rows(out / f"{TOPIC}-{p}") if (out / f"{TOPIC}-{p}").exists() else []
        assert [r[0] for r in rows] == list(range(len(rows)))
        found[p] = [int(r[4]) for r in rows]
    return found


def main(base: str) -> None:
    spark = driver_session(**{"spark.sql.shuffle.partitions": "2"})
    query = start(spark, Path(base), available_now=True)
    print("started", flush=True)
    query.awaitTermination()
    print("finished", flush=True)
    spark.stop()


if __name__ == "__main__":
    main(sys.argv[1])
