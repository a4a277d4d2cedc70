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
