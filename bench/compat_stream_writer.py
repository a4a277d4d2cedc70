"""The row-based stream writer PySpark 4.0 gets (compat.stream_write_batches gathers its Rows into
Arrow batches) against the Arrow stream writer of 4.1 on, both on the installed PySpark (4.1+):

    python -m bench.compat_stream_writer [rows]     # default 1,000,000 rows of ~100 bytes

One AvailableNow micro-batch of `rows` rows (key, value, timestamp) from Parquet into a new
segmentlog log directory, five times per writer (alternating); prints the median and best
seconds and rows/s.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from pyspark.sql.datasource import DataSourceStreamWriter

from segmentlog_source import compat
from segmentlog_source.spark.source import SegmentLogDataSource
from segmentlog_source.spark.stream_writer import SegmentLogStreamWriter, stream_writer

RUNS = 5


class RowStreamWriter(DataSourceStreamWriter):
    """The same writer on PySpark's row-based API, as PySpark 4.0 runs it."""

    __init__ = SegmentLogStreamWriter.__init__
    write = SegmentLogStreamWriter.write
    commit = SegmentLogStreamWriter.commit
    abort = SegmentLogStreamWriter.abort


class RowSink(SegmentLogDataSource):
    @classmethod
    def name(cls) -> str:
        return "segmentlog_rows"

    def streamWriter(self, schema, overwrite):
        arrow = stream_writer(dict(self.options), schema, overwrite)
        return RowStreamWriter(arrow.plan, arrow.input_schema)


def main() -> None:
    rows = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
    os.environ["PYSPARK_PYTHON"] = os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession, functions as F

    spark = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
             .config("spark.sql.session.timeZone", "UTC").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    spark.dataSource.register(RowSink)
    base = Path(tempfile.mkdtemp(prefix="compat-stream-writer-"))
    (spark.range(rows, numPartitions=2)
     .select(F.col("id").cast("string").alias("key"),
             F.format_string("%0100d", F.col("id")).alias("value"),
             F.timestamp_millis(F.lit(1_700_000_000_000) + F.col("id")).alias("timestamp"))
     .write.parquet(str(base / "in")))
    schema = spark.read.parquet(str(base / "in")).schema
    times: dict[str, list[float]] = {"segmentlog": [], "segmentlog_rows": []}
    for run in range(RUNS):
        for sink in times:
            out = base / f"{sink}-{run}"
            start = time.perf_counter()
            query = (spark.readStream.schema(schema).parquet(str(base / "in"))
                     .writeStream.format(sink).option("topic", "b")
                     .option("checkpointLocation", str(out / "checkpoint"))
                     .trigger(availableNow=True).start(str(out / "log")))
            query.awaitTermination()
            times[sink].append(time.perf_counter() - start)
            assert spark.read.format("segmentlog").load(str(out / "log")).count() == rows
    print(f"PySpark {compat.VERSION}, {rows:,} rows, {RUNS} runs each:")
    for sink, seconds in times.items():
        median, best = statistics.median(seconds), min(seconds)
        print(f"  {sink:16s} median {median:6.2f} s ({rows / median:9,.0f} rows/s), best "
              f"{best:6.2f} s ({rows / best:9,.0f} rows/s); runs: "
              f"{', '.join(f'{s:.2f}' for s in seconds)}")
    spark.stop()


if __name__ == "__main__":
    main()
