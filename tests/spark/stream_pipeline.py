"""The segmentlog -> segmentlog pipeline the streaming-read tests run, and what its output must be.

Input: partition `c-0` of `<base>/in`, appended by a separate process (tests/storage/
append_child.py: every value starts with the record's offset, `n|...`). The query tails it
with readStream and writes topic `out` (3 partitions, key = n % 5) to `<base>/out` with
writeStream, checkpointing in `<base>/checkpoint`. Run as a module it is a driver a test kills:
it prints `started` once the query runs.
"""

from __future__ import annotations

from pathlib import Path
import sys

from segmentlog_source.format.partitioner import partition_for_key
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
    """The n of each output record, per partition, read by kafka-python (offsets contiguous)."""
    found = {}
    for p in range(PARTITIONS):
        part = base / "out" / f"{TOPIC}-{p}"
        rows = kafka_python_rows(part) if part.exists() else []
        assert [r[0] for r in rows] == list(range(len(rows)))
        found[p] = [int(r[4].split(b"|")[0]) for r in rows]
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


def main(base: str) -> None:
    spark = driver_session(**{"spark.sql.shuffle.partitions": "2"})
    query = start(spark, Path(base), maxOffsetsPerTrigger="20000")
    print("started", flush=True)
    query.awaitTermination()


if __name__ == "__main__":
    main(sys.argv[1])
