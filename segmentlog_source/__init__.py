"""segmentlog: Kafka log directories as a Spark data source, with no broker.

Layers, lowest first: `format` (bytes <-> batches and records), `storage` (segments, indexes,
partition logs), `plan` (options and predicates -> byte ranges), `spark` (the data source),
`cli` (the `segmentlog` command). A lower layer never imports a higher one.
"""

from __future__ import annotations

__version__ = "0.1.0"


def register(spark, pushdown: bool = False):
    """Register the `segmentlog` data source with `spark` (see spark.register)."""
    from .spark.register import register as _register

    return _register(spark, pushdown=pushdown)


def compact(spark, path, **kwargs):
    """Compact the logs under `path` as a Spark job, one task per partition (spark.log_upkeep)."""
    from .spark.log_upkeep import compact as _compact

    return _compact(spark, path, **kwargs)


def retain(spark, path, **kwargs):
    """Apply retention to the logs under `path` as a Spark job (spark.log_upkeep)."""
    from .spark.log_upkeep import retain as _retain

    return _retain(spark, path, **kwargs)


def cluster(spark, path, **kwargs):
    """The cluster as it stood, from a data directory's KRaft metadata log: DataFrames `topics`,
    `configs`, `brokers` and `directories` (spark.cluster_frames)."""
    from .spark.cluster_frames import cluster as _cluster

    return _cluster(spark, path, **kwargs)


def explain(path, where: str | None = None, **options):
    """What a read of `path` (a path or a list, as given to load()) with these reader options
    would read, planned as spark.read.format("segmentlog") plans it, before reading a record:
    the byte ranges of each segment, their total, and what planning read (`segmentlog explain`
    from Python). Pass the same options as the DataFrame's:

        opts = {"subscribe": "orders", "startingTimestamp": "2024-04-27T09:00:00Z"}
        df = spark.read.format("segmentlog").options(**opts).load(path)
        print(segmentlog_source.explain(path, **opts))

    `where`: a WHERE condition on offset, timestamp, partition and topic, which cuts bytes only
    with pushdown=true. Returns an Explanation: print it for the table, `.bytes` for the bytes
    planned, `.planner_bytes_read`, `.ranges` for one dict per byte range."""
    from .cli.explain import explain_read

    return explain_read(path, options, where)


def logs(spark):
    """segmentlog's lines in the session's Python worker logs: what each read planned and each
    task read (PySpark 4.1+; set spark.sql.pyspark.worker.logging.enabled=true first)."""
    from .spark.worker_logs import segmentlog_logs

    return segmentlog_logs(spark)
