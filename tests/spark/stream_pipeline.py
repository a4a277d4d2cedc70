"""The segmentlog -> segmentlog pipeline the streaming-read tests run, and what its output must be.

Input: `<base>/in`, appended by a separate process: partition `c-0` by tests/storage/
append_child.py (every value starts with the record's offset, `n|...`), or topic `w` by the
batch writer (`write_rounds`, values `n|`). The query tails it
with readStream and writes topic `out` (3 partitions, key = n % 5) to `<base>/out` with
writeStream, checkpointing in `<base>/checkpoint`. Run as a module it is a driver a test kills:
it prints `started` once the query runs.
"""

from __future__ import annotations

from pathlib import Path
import sys
import time

from segmentlog_source.format.partitioner import partition_for_key
from segmentlog_source.storage.commit.commit_log import pending_commit_offsets
from tests.spark.driver import driver_session
from tests.storage.written_logs import kafka_python_rows

TOPIC, PARTITIONS = "out", 3


def start(spark, base: Path, *, available_now: bool = False, **options):
    from pyspark.sql import functions as F

    reader = spark.readStream.format("segmentlog").option("startingOffsets", "earliest")
    for name, value in options.items():
        reader = reader.option(name, value)
    n = F.split(F.col("value").cast("string"), r"\|").getItem(0).cast("long")
    writer = (reader.load(str(base / "in"))
              .select((n % 5).cast("string").alias("key"), "value")
              .writeStream.format("segmentlog").option("topic", TOPIC)
              .option("numPartitions", str(PARTITIONS))
              .option("checkpointLocation", str(base / "checkpoint")))
    if available_now:
        writer = writer.trigger(availableNow=True)
    else:
        writer = writer.trigger(processingTime="200 milliseconds")
    return writer.start(str(base / "out"))


def written(base: Path) -> dict[int, list[int]]:
    """The n of each output record, per partition, read by kafka-python (offsets contiguous),
    up to what a reader sees: a driver killed while publishing a micro-batch leaves its
    manifest, and readers stop a partition it names at its start until the next commit
    settles it (storage/commit/committer.py), so the raw files may hold part of a batch."""
    found = {}
    rows_by_partition = {}
    for p in range(PARTITIONS):      # the files first, then the manifests (commit_log's order)
        part = base / "out" / f"{TOPIC}-{p}"
        rows_by_partition[p] = kafka_python_rows(part) if part.exists() else []
    pending = pending_commit_offsets(str(base / "out")) if (base / "out").exists() else {}
    for p, rows in rows_by_partition.items():
        assert [r[0] for r in rows] == list(range(len(rows)))
        cap = pending.get((TOPIC, p), len(rows))
        found[p] = [int(r[4].split(b"|")[0]) for r in rows[:cap]]
    return found


def check_prefix(found: dict[int, list[int]], end: int | None = None) -> int:
    """Each output partition holds, in order and once, the input records of its keys from 0 on:
    a prefix of them (all, below `end`, when given). Returns how many records that is."""
    upto = max((ns[-1] for ns in found.values() if ns), default=-1) + 1 if end is None else end
    for p, ns in found.items():
        wanted = [n for n in range(upto) if partition_for_key(str(n % 5).encode(), PARTITIONS)
                  == p]
        if end is None:
            assert ns == wanted[:len(ns)], f"partition {p}: {ns[:20]}..."
        else:
            assert ns == wanted, f"partition {p}: {len(ns)} records, {len(wanted)} wanted"
    total = sum(len(ns) for ns in found.values())
    # micro-batches are committed whole: together the partitions hold exactly 0..total-1
    assert sorted(n for ns in found.values() for n in ns) == list(range(total))
    return total


def write_rounds(base: str, rounds: int) -> None:
    """The batch writer as the appender: `rounds` df.write appends of 400 records each to topic
    `w` (2 partitions, key n % 5, value `n|`), in small segments, so they roll."""
    spark = driver_session()
    print("ready", flush=True)
    for r in range(rounds):
        (spark.range(r * 400, (r + 1) * 400)
         .selectExpr("cast(id % 5 as string) as key", "concat(cast(id as string), '|') as value")
         .write.format("segmentlog").mode("append").option("topic", "w")
         .option("numPartitions", "2").option("segment.bytes", "16384")
         .save(str(Path(base) / "in")))
        print("wrote", (r + 1) * 400, flush=True)
        time.sleep(1.0)      # (a stream tailing it sees the input grow, commit by commit)
    spark.stop()


def by_key(found: dict[int, list[int]]) -> dict[int, list[int]]:
    """Output n's per key (n % 5), in output order (a key lives in one output partition)."""
    out: dict[int, list[int]] = {}
    for ns in found.values():
        for n in ns:
            out.setdefault(n % 5, []).append(n)
    return out


def input_by_key(base: Path) -> dict[int, list[int]]:
    """Input n's per key, in the input log's order (read once the appender has finished)."""
    out: dict[int, list[int]] = {}
    for part in sorted((base / "in").glob("*-*")):
        for r in kafka_python_rows(part):
            n = int(r[4].split(b"|")[0])
            out.setdefault(n % 5, []).append(n)
    return out


def check_by_key(found: dict[int, list[int]], inputs: dict[int, list[int]],
                 complete: bool = False) -> int:
    """Per key, the output holds the input's records in the input's order, once: a prefix of
    them (all, when `complete`). Returns how many records the output holds."""
    keys = by_key(found)
    for k, ns in keys.items():
        want = inputs.get(k, [])
        assert ns == (want if complete else want[:len(ns)]), f"key {k}: {ns[:20]}..."
    if complete:
        assert set(keys) == set(inputs)
    return sum(len(ns) for ns in keys.values())


def main(base: str) -> None:
    spark = driver_session(**{"spark.sql.shuffle.partitions": "2"})
    query = start(spark, Path(base), maxOffsetsPerTrigger="20000")
    print("started", flush=True)
    query.awaitTermination()


if __name__ == "__main__":
    if sys.argv[1] == "write":
        write_rounds(sys.argv[2], int(sys.argv[3]))
    else:
        main(sys.argv[1])
