"""A child driver for test_first_hour: `df.show(5)` and `df.limit(5).collect()` of a read, as a
new user's first commands, in a process whose whole output (driver and Python workers) the
test captures."""

from __future__ import annotations

import sys

from tests.spark.driver import driver_session

if __name__ == "__main__":
    spark = driver_session("local[2]", **{"spark.ui.showConsoleProgress": "false"})
    df = spark.read.format("segmentlog").load(sys.argv[1])
    df.select("topic", "partition", "offset").show(5)
    rows = df.limit(5).collect()
    print("collected offsets", [r.offset for r in rows], flush=True)
    spark.stop()
