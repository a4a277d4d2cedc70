"""Run by test_write_retries.py on its own `local[2,3]` session (tasks get 3 attempts, which the
shared local[2] session cannot give). Writes to argv[1], then exits.

1. A job whose task for partition 1 fails on its first attempt, late: its UDF waits until the
   writer of that attempt has staged a file (so the attempt leaves an orphan), then raises.
   The retry succeeds; the job commits once.
2. A job whose task for partition 1 fails on every attempt: the job is aborted.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from pyspark import TaskContext
from pyspark.sql import functions as F
from pyspark.sql.types import StringType

from tests.spark.driver import driver_session

ROWS, PARTITIONS = 2000, 4
FAIL_AT = ROWS // PARTITIONS + 400  # a row of partition 1 (spark.range splits ids evenly)


def main(out: str) -> None:
    spark = driver_session("local[2,3]", **{"spark.sql.execution.arrow.maxRecordsPerBatch": "50"})
    staging = Path(out) / "_segmentlog" / "staging"
    orphan_seen = Path(out).parent / "orphan-seen"

    def flaky(value: str, always: bool) -> str:
        ctx = TaskContext.get()
        if ctx.partitionId() == 1 and (always or ctx.attemptNumber() == 0) \
                and value.endswith(f"-{FAIL_AT}"):
            # Wait for this attempt's writer to stage the rows before this one (it flushes
            # every MiB), so that the failing attempt leaves an orphan file behind.
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                staged = list(staging.glob(f"*/t00001-a{ctx.attemptNumber()}-*"))
                if staged:
                    orphan_seen.write_text(str(staged[0]))
                    break
                time.sleep(0.05)
            raise RuntimeError(f"injected failure, attempt {ctx.attemptNumber()}")
        return value

    values = (spark.range(ROWS, numPartitions=PARTITIONS)
              .select(F.concat(F.lit("x" * 4000 + "-"), F.col("id").cast("string"))
                      .alias("value")))
    for always, topic in ((False, "retried"), (True, "aborted")):
        udf = F.udf(lambda v, a=always: flaky(v, a), StringType())
        try:
            (values.select(udf("value").alias("value")).write.format("segmentlog")
             .mode("append").option("topic", topic).save(out))
            print(topic, "committed", flush=True)
        except Exception as exc:  # noqa: BLE001 - the test reads the outcome from stdout
            print(topic, "failed", type(exc).__name__, flush=True)
    spark.stop()


if __name__ == "__main__":
    main(sys.argv[1])
