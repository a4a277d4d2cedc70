"""Discovery shim: Spark imports every top-level `pyspark_*` module and registers its
`DefaultSource` (a DataSource subclass) under `DefaultSource.name()`, i.e. "segmentlog".

Keep this import cheap and unable to fail: one `pyspark_*` module that raises disables the
discovery of every Python data source. If segmentlog cannot be imported, this module simply
offers no DefaultSource (Spark then reports the format as not found) and
`segmentlog_source.register(spark)` shows the real import error.
"""

try:
    from segmentlog_source.spark.source import SegmentLogDataSource as DefaultSource  # noqa: F401
except Exception:  # noqa: BLE001 - never break Spark's lookup of other sources
    pass
