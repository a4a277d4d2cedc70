"""Registering the `segmentlog` data source with a SparkSession."""

from __future__ import annotations

PUSHDOWN_CONF = "spark.sql.python.filterPushdown.enabled"


def register(spark, pushdown: bool = False):
    """Register `segmentlog` with `spark`; safe to call when discovery already registered it.

    pushdown=True registers the variant whose reads push WHERE clauses down by default and sets
    the (internal) Spark conf that PySpark requires for it. Read the README's pushdown rule
    first: PySpark 4.3 reuses one DataFrame's pushed-down plan for later queries on it.
    """
    from .. import compat
    from .source import SegmentLogDataSource, SegmentLogPushdownDataSource

    if pushdown:
        compat.require("pushdown")
        spark.conf.set(PUSHDOWN_CONF, "true")
        spark.dataSource.register(SegmentLogPushdownDataSource)
        return SegmentLogPushdownDataSource
    compat.register_data_source(spark, SegmentLogDataSource)
    return SegmentLogDataSource
