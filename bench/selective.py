"""Selective reads: latency and bytes read stay with the range, not with the size of the log.

Data (generated once into bench/data): topic `events`, 1 partition, 16-byte keys, 100-byte
values, 100 records per batch, uncompressed, record i at 1.7e12 + i ms, segments of 1 GiB
(Kafka's default):
* large: 17,000,000 records, 2.15 GB of `.log` in 3 segments (1.07 GB, 1.07 GB, 0.15 MB);
* small: 800,000 records, ~101 MB in 1 segment.

Queries, each on both logs, in Spark (`count()`, a fresh `load()` per query):
* offset range: startingOffsets/endingOffsets over 0.1% of the records, from 45% of the log;
* time range: startingTimestamp/endingTimestamp over 0.1% of the time span, from 30%;
* lookup: `WHERE offset = x` at 70% of the log, with pushdown on (option pushdown=true).
Full-scan reference: `count()` with includePayload=false (the cheapest full scan).

Bytes: the same read is planned in-process (`plan_read`, which counts what the planner reads:
indexes aside, header probes and ListOffsets lookups) and its groups run by
`spark.reader.GroupScan` without Spark, which counts what the executor reads; the range's bytes
are those of the batches holding its offsets (found by a scan of the log from the range).
Targets: executor bytes <= range + one index interval (4096) + one batch per touched segment;
latency on the 2 GB log <= 1.2x latency on the 100 MB log.
"""

from __future__ import annotations

import json
from pathlib import Path

from pyspark.sql import functions as F

from .common import case, dataset, describe, medians, ratio, spark_session, take_turns

START = 1_700_000_000_000
BASE = dict(topics=["events"], partitions=1, codec="none", key_size=16, value_size=100,
            records_per_batch=100, timestamp_step_ms=1, start_timestamp=START, seed=2)
LOGS = {"2 GB": dict(BASE, records=17_000_000), "100 MB": dict(BASE, records=800_000)}
INDEX_INTERVAL = 4096       # index.interval.bytes of the generated logs (Kafka's default)
REPETITIONS = 9
FULL_SCAN_REPETITIONS = 3
LATENCY_TARGET = 1.2


def queries(n: int) -> dict:
    """name -> (Spark options, WHERE offset or None, [lo, hi) offsets of the rows) for n records."""
    lo, span = n * 45 // 100, n // 1000
    t_lo = n * 30 // 100
    x = n * 70 // 100 + 17
    def part(offset: int) -> str:
        return json.dumps({"events": {"0": offset}})

    return {
        "offset range 0.1%": ({"startingOffsets": part(lo), "endingOffsets": part(lo + span)},
                              None, (lo, lo + span)),
        "time range 0.1%": ({"startingTimestamp": str(START + t_lo),
                             "endingTimestamp": str(START + t_lo + span)},
                            None, (t_lo, t_lo + span)),
        "lookup offset = x": ({"pushdown": "true"}, x, (x, x + 1)),
    }


def spark_count(spark, path: Path, options: dict, offset: int | None) -> int:
    reader = spark.read.format("segmentlog")
    for key, value in options.items():
        reader = reader.option(key, value)
    df = reader.load(str(path))
    return (df if offset is None else df.where(F.col("offset") == offset)).count()


def executor_bytes(path: Path, options: dict, offset: int | None) -> dict:
    """What the plan covers and what GroupScan reads to answer the query (no Spark)."""
    from segmentlog_source.plan.options import parse_read_options
    from segmentlog_source.plan.predicates import Predicate, fold
    from segmentlog_source.plan.read_plan import plan_read
    from segmentlog_source.spark.reader import GroupScan, ScanSettings

    row_filter = fold([] if offset is None else [Predicate("offset", "=", offset)])
    plan = plan_read(parse_read_options({"path": str(path), **options}), row_filter)
    settings = ScanSettings(row_filter, False, True, True, False, True)
    read, rows = 0, 0
    for group in plan.groups:
        scan = GroupScan(group, settings)
        rows += sum(batch.num_rows for batch in scan)
        read += scan.stats.bytes_read
    return {"rows": rows, "planned": plan.nbytes, "planner_read": plan.planner_io.bytes_read,
            "executor_read": read}


def range_bytes(path: Path, lo: int, hi: int) -> dict:
    """Bytes of the batches holding offsets [lo, hi), the segments they are in, the biggest."""
    from segmentlog_source.storage.log.partition_log import PartitionLog

    log = PartitionLog.open(str(path / "events-0"))
    total, segments, biggest = 0, set(), 0
    for segment, header, _ in log.iter_entries(lo):
        if header.base_offset >= hi:
            break
        total += header.size
        segments.add(segment.base_offset)
        biggest = max(biggest, header.size)
    bound = total + len(segments) * (INDEX_INTERVAL + biggest)
    return {"range": total, "touched_segments": len(segments), "bound": bound}


def run(repetitions: int = REPETITIONS) -> list[dict]:
    spark = spark_session()
    spark.conf.set("spark.sql.python.filterPushdown.enabled", "true")
    logs = {size: dataset("selective", **params) for size, params in LOGS.items()}
    data = "; ".join(f"{size}: {describe(path, LOGS[size])}" for size, path in logs.items())
    payloadless = {"includePayload": "false"}

    full = take_turns({size: (lambda p=path: spark_count(spark, p, payloadless, None))
                       for size, path in logs.items()}, FULL_SCAN_REPETITIONS)
    full_med = medians(full)
    rows = [case("selective: full scan reference (count(), includePayload=false)", data=data,
                 repetitions=FULL_SCAN_REPETITIONS, raw=full,
                 ratios={"2 GB / 100 MB": ratio(full, "2 GB", "100 MB")})]

    specs = {size: queries(LOGS[size]["records"]) for size in logs}
    for name in specs["2 GB"]:
        sides, bytes_ = {}, {}
        for size, path in logs.items():
            options, offset, (lo, hi) = specs[size][name]
            got = spark_count(spark, path, options, offset)
            counted = executor_bytes(path, options, offset)
            if not got == counted["rows"] == hi - lo:
                raise AssertionError(f"{name} on {size}: Spark {got}, GroupScan "
                                     f"{counted['rows']} rows, expected {hi - lo}")
            bytes_[size] = {**counted, **range_bytes(path, lo, hi)}
            sides[size] = lambda p=path, o=options, x=offset: spark_count(spark, p, o, x)
        raw = take_turns(sides, repetitions, warmups=0)   # the checks above were the warm-up
        ratios = {"2 GB / 100 MB latency": ratio(raw, "2 GB", "100 MB"),
                  "2 GB / full scan": medians(raw)["2 GB"] / full_med["2 GB"]}
        for size, b in bytes_.items():
            ratios[f"bytes read / range ({size})"] = b["executor_read"] / b["range"]
            ratios[f"bytes read / bound ({size})"] = b["executor_read"] / b["bound"]
        notes = "planner read " + ", ".join(f"{b['planner_read'] / 1000:,.1f} KB ({size})"
                                            for size, b in bytes_.items())
        rows.append(case(f"selective: {name}", data=data, repetitions=repetitions, raw=raw,
                         ratios=ratios, bytes=bytes_, notes=notes,
                         targets=[("2 GB / 100 MB latency", LATENCY_TARGET),
                                  ("bytes read / bound (2 GB)", 1.0),
                                  ("bytes read / bound (100 MB)", 1.0)]))
    return rows


if __name__ == "__main__":
    print(json.dumps(run(), indent=1))
