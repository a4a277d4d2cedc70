"""The `orders` streaming table: every record of topic `orders` in the log directory named by
the spec's `segmentlog.example.logDir`, its JSON value decoded into columns, each record once.

`spark-pipelines run` (Spark >= 4.1) starts a Spark Connect server in its own JVM, unless it is
given `--remote sc://host:port`, and runs this file with `spark`, a Connect client session, in
scope. The server finds `format("segmentlog")` by itself when segmentlog is installed in the
Python that PYSPARK_PYTHON (or PYSPARK_DRIVER_PYTHON) names, as it must be anyway for the
server's Python workers to read the log; there is nothing to register here. The stream's
checkpoint (under the spec's `storage`) holds the offsets read so far: a second run reads only
the records written since.
"""

from pathlib import Path

from pyspark import pipelines as dp
from pyspark.sql import DataFrame

LOG_DIR = Path(spark.conf.get("segmentlog.example.logDir")).resolve()  # noqa: F821

ORDER = "id BIGINT, customer STRING, amount DECIMAL(10,2)"


@dp.table(comment="orders from the log, decoded; one row per record")
def orders() -> DataFrame:
    records = (spark.readStream.format("segmentlog")  # noqa: F821
               .option("subscribe", "orders")
               .option("startingOffsets", "earliest")
               .option("valueFormat", "json")
               .option("valueSchema", ORDER)
               .load(str(LOG_DIR)))
    return records.select("partition", "offset", "timestamp", "value_decoded.*",
                          "value_error")
