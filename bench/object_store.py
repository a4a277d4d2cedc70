"""Selective reads from an object store: a narrow query on a 1 GB log reads a sliver of it.

Data (generated once into bench/data): topic `events`, 1 partition, 16-byte keys, 100-byte
values, 100 records per batch, uncompressed, record i at 1.7e12 + i ms, 8,000,000 records in
segments of 256 MiB (~1.0 GB of `.log` in 4 segments), uploaded to a real S3-compatible server
on loopback (moto, segmentlog_source/devtools/s3_server.py).

Queries (bench/selective.py's, in Spark, `count()`, a fresh `load()` per query): an offset range
and a time range over 0.1% of the records, and `WHERE offset = x` with pushdown. For each, the
server counts every request and response byte of one run (planner and executors together), and
the same query runs on the local copy, turn about, for the latency ratio.
Target: bytes served <= 1% of the log's bytes.
"""

from __future__ import annotations

import json

from .common import (case, dataset, describe, log_bytes, ratio, spark_session, take_turns,
                     upload)
from .selective import START, queries, spark_count

PARAMS = dict(topics=["events"], partitions=1, codec="none", key_size=16, value_size=100,
              records_per_batch=100, timestamp_step_ms=1, start_timestamp=START, seed=2,
              records=8_000_000, segment_bytes=256 * 1024 * 1024)
REPETITIONS = 5
BYTES_TARGET = 0.01


def run(repetitions: int = REPETITIONS) -> list[dict]:
    from segmentlog_source.devtools.s3_server import S3Server

    spark = spark_session()
    spark.conf.set("spark.sql.python.filterPushdown.enabled", "true")
    path = dataset("objectstore", **PARAMS)
    total = log_bytes(path)
    data = describe(path, PARAMS) + ", on moto S3 (loopback)"
    rows = []
    with S3Server() as s3:
        uri, upload_s = upload(s3, path, "log")
        for name, (options, offset, (lo, hi)) in queries(PARAMS["records"]).items():
            remote = {**options, **s3.storage_options}
            s3.reset_counts()
            got = spark_count(spark, uri, remote, offset)
            served = s3.requests()
            if got != hi - lo or spark_count(spark, path, options, offset) != got:
                raise AssertionError(f"{name}: {got} rows from S3, expected {hi - lo}")
            body = sum(r.body_bytes for r in served if r.method != "GET" or r.query == "")
            listing = sum(r.body_bytes for r in served) - body
            raw = take_turns({"s3": lambda: spark_count(spark, uri, remote, offset),
                              "local": lambda: spark_count(spark, path, options, offset)},
                             repetitions, warmups=0)
            rows.append(case(
                f"object store: {name}", data=data, repetitions=repetitions, raw=raw,
                ratios={"bytes served / log bytes": body / total,
                        "s3 / local latency": ratio(raw, "s3", "local")},
                targets=[("bytes served / log bytes", BYTES_TARGET)],
                notes=(f"{len(served)} requests, {body / 1000:,.1f} KB of objects + "
                       f"{listing / 1000:,.1f} KB of listings, of {total / 1e9:.2f} GB; "
                       f"upload took {upload_s:.0f} s"),
                requests=len(served), object_bytes=body, listing_bytes=listing,
                log_bytes=total))
    return rows


if __name__ == "__main__":
    print(json.dumps(run(), indent=1, default=str))
