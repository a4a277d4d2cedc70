"""Run by test_memory.py in a fresh process, as a Spark Python worker runs a read task: the
data source's reader (spark.source) yields each group's Arrow batches into PySpark's own
records_to_arrow_batches (the worker's validation loop, which keeps the first batch alive for
the whole task), and each batch is written as an Arrow IPC stream to /dev/null, as the worker's
serializer writes it to the JVM. Prints the rows read and this process's peak resident set
(VmHWM, bytes) as JSON."""

from __future__ import annotations

import json
from pathlib import Path
import sys

import pyarrow as pa
from pyspark.sql.pandas.types import from_arrow_schema
from pyspark.sql.worker.plan_data_source_read import records_to_arrow_batches

from segmentlog_source.spark.schema import arrow_schema
from segmentlog_source.spark.source import SegmentLogDataSource


def peak_rss() -> int:
    """VmHWM: not ru_maxrss, which on Linux carries the RSS of the parent this was forked from."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError("no VmHWM in /proc/self/status (Linux only)")


def main(path: str) -> None:
    source = SegmentLogDataSource({"path": path})
    reader = source.reader(from_arrow_schema(arrow_schema(True, False)))
    return_type = from_arrow_schema(arrow_schema(True, False))
    rows = 0
    with open("/dev/null", "wb") as sink:
        for partition in reader.partitions():
            batches = records_to_arrow_batches(reader.read(partition), 10_000, return_type,
                                               source)
            writer = None
            for batch in batches:
                writer = writer or pa.ipc.new_stream(sink, batch.schema)
                writer.write_batch(batch)
                rows += batch.num_rows
            if writer is not None:
                writer.close()
    print(json.dumps({"rows": rows, "peak_rss": peak_rss()}))


if __name__ == "__main__":
    main(sys.argv[1])
