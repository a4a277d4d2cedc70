"""Discovery shim: Spark imports every top-level `pyspark_*` module and registers its
`DefaultSource` (a DataSource subclass) under `DefaultSource.name()`, i.e. "segmentlog".

Keep this import cheap and unable to fail: one `pyspark_*` module that raises disables the
discovery of every Python data source. If segmentlog cannot be imported, this module offers no
DefaultSource (Spark then reports the format as not found, and still finds the other sources)
and logs a warning naming the exception, so the reason is not lost;
`segmentlog_source.register(spark)` raises the import error itself.
"""

try:
    from segmentlog_source.spark.source import SegmentLogDataSource as DefaultSource  # noqa: F401
except Exception as _error:  # noqa: BLE001 - never break Spark's lookup of other sources
    import logging

    logging.getLogger("segmentlog").warning(
        "segmentlog: the segmentlog data source could not be offered to Spark: %s: %s",
        type(_error).__name__, _error)
    del _error
