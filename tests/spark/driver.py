"""The SparkSession of a test's child driver process (one a test stops or kills)."""

from __future__ import annotations

import os
import sys


def driver_session(master: str = "local[2]", **conf):
    """local Spark for this interpreter's workers, no UI, quiet, segmentlog registered."""
    os.environ["PYSPARK_PYTHON"] = os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    import segmentlog_source

    builder = SparkSession.builder.master(master).config("spark.ui.enabled", "false")
    for name, value in conf.items():
        builder = builder.config(name, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("OFF")
    segmentlog_source.register(spark)
    return spark
