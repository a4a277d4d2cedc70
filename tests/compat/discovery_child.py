"""Run as a module with a broken `segmentlog_source` first on PYTHONPATH, beside a working
`pyspark_compatprobe` source: prints what Spark's discovery found (test_discovery.py)."""

from __future__ import annotations

import os
import sys

from pyspark.sql import SparkSession


def main() -> None:
    os.environ["PYSPARK_PYTHON"] = os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    spark = (SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    print("probe rows:", spark.read.format("compatprobe").load().collect(), flush=True)
    try:
        spark.read.format("segmentlog").load("/nonexistent").collect()
    except Exception as err:  # noqa: BLE001 - the test reads what it says
        print("segmentlog:", " ".join(str(err).split())[:600], flush=True)
    spark.stop()


if __name__ == "__main__":
    main()
