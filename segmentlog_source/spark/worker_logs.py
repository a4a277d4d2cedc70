"""segmentlog's log lines in PySpark's worker logs (`spark.tvf.python_worker_logs()`).

With spark.sql.pyspark.worker.logging.enabled=true (PySpark 4.1+), PySpark's workers, the
planner's and the tasks', send what Python logs to the session (pyspark/logger/worker_io.py:
a handler on the root logger, while a worker runs source code), and
`spark.tvf.python_worker_logs()` returns it as a DataFrame. The "segmentlog" logger's lines
that say what a read planned and read are INFO, below the root logger's WARNING: in such a
worker (PYSPARK_SPARK_SESSION_UUID is set) its level is INFO, so they are among those logs,
a notebook's query away. Elsewhere nothing changes (a level a user set is kept).
"""

from __future__ import annotations

import logging
import os

LOGGER = "segmentlog"
LOGGING_CONF = "spark.sql.pyspark.worker.logging.enabled"


def info_to_worker_logs() -> None:
    logger = logging.getLogger(LOGGER)
    if "PYSPARK_SPARK_SESSION_UUID" in os.environ and logger.level == logging.NOTSET:
        logger.setLevel(logging.INFO)


def segmentlog_logs(spark):
    """The session's worker log lines of segmentlog (PySpark 4.1+, with spark.sql.pyspark.
    worker.logging.enabled=true before the read): the plan of each read ("planned N partitions,
    B bytes ... (planner read ...)") and each task's ("task read B bytes in R requests (P
    planned) ..."), as a DataFrame of python_worker_logs' columns."""
    return spark.tvf.python_worker_logs().where(f"logger = '{LOGGER}'")
