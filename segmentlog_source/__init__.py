"""segmentlog: Kafka log directories as a Spark data source, with no broker.

Layers, lowest first: `format` (bytes <-> batches and records), `storage` (segments, indexes,
partition logs), `plan` (options and predicates -> byte ranges), `spark` (the data source),
`cli` (the `segmentlog` command). A lower layer never imports a higher one.
"""

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
