"""Cost as the work grows: a scan's time per GB and a selective read's time, 0.5 GB to 8 GB.

Data: three logs of topic `events` x 4 partitions, 16-byte keys, 100-byte values, 100 records
per batch, uncompressed, segments of 1 GiB as a broker rolls them, timestamps spread evenly over
one year (record i at 1.7e12 + i * step ms): 4M, 16M and 64M records (about 0.5, 2 and 8 GB of
`.log`). Too big for bench/data: generated once into ~/.cache/segmentlog/bench/ (or
$SEGMENTLOG_BENCH_CACHE), a `<dir>.json` beside each written last, as bench/common.py does.

Queries, in Spark (`count()` or an aggregate, a fresh `load()` per run), each on all three logs,
the logs taking turns:
* full scan: `count()` with includePayload=false, and `sum(length(value))` (every value decoded
  and handed to the JVM);
* the batches view: `.option("view", "batches")` then `count()`, with and without
  verifyChecksums=false (a row per batch instead of per record: framing and checks only), also
  as a fraction of the record count()'s s/GB at 8 GB;
* time range: startingTimestamp/endingTimestamp (ms) over 0.1% of the year, from 30% of it.
Targets: a full scan's seconds per GB at 8 GB <= 1.15x that at 0.5 GB; the time range's seconds
at 8 GB <= 1.2x those at 0.5 GB (its rows grow with the log: 0.1% of it, 4k to 64k records).
"""

from __future__ import annotations

import json
from pathlib import Path
import sys

from pyspark.sql import functions as F

from .common import CACHE, case, dataset, log_bytes, medians, ratio, spark_session, take_turns

START = 1_700_000_000_000
YEAR_MS = 365 * 86_400_000
BASE = dict(topics=["events"], partitions=4, codec="none", key_size=16, value_size=100,
            records_per_batch=100, segment_bytes=1024**3, start_timestamp=START, seed=3)
RECORDS = {"0.5 GB": 4_000_000, "2 GB": 16_000_000, "8 GB": 64_000_000}
REPETITIONS = 3            # per query, after the warm-up that checks the answers
RANGE_REPETITIONS = 15     # the time range costs ~0.4 s a run: more runs, a steadier median
FLAT_SCAN = 1.15
FLAT_RANGE = 1.2


def params(records: int) -> dict:
    return dict(BASE, records=records, timestamp_step_ms=YEAR_MS // records)


def time_range(records: int) -> tuple[dict, int]:
    """The 0.1%-of-the-year range's options and how many records it holds (record i has
    timestamp START + i * step; the ending timestamp is exclusive, as Kafka's ListOffsets)."""
    step = YEAR_MS // records
    span = step * records
    lo, hi = span * 30 // 100, span * 30 // 100 + span // 1000
    first, end = -(-lo // step), -(-hi // step)    # the first i with i * step >= lo, >= hi
    return ({"startingTimestamp": str(START + lo), "endingTimestamp": str(START + hi)},
            end - first)


def load(spark, path: Path, options: dict):
    reader = spark.read.format("segmentlog")
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader.load(str(path))


FULL_SCAN = "full scan: count() includePayload=false"
SUM_VALUES = lambda df: df.agg(F.sum(F.length("value"))).collect()[0][0]  # noqa: E731
SCANS = {   # name -> (options, query, targeted)
    FULL_SCAN: ({"includePayload": "false"}, lambda df: df.count(), True),
    "full scan: sum(length(value))": ({}, SUM_VALUES, True),
    "batches view: count()": ({"view": "batches"}, lambda df: df.count(), False),
    "batches view: count() verifyChecksums=false":
        ({"view": "batches", "verifyChecksums": "false"}, lambda df: df.count(), False),
}


def run(repetitions: int = REPETITIONS, records: dict | None = None) -> list[dict]:
    records = records or RECORDS
    spark = spark_session()
    logs = {size: dataset("scale", root=CACHE, **params(n)) for size, n in records.items()}
    gb = {size: log_bytes(path) / 1e9 for size, path in logs.items()}
    data = ("1 topic x 4 partitions, 16 B keys, 100 B values, 100/batch, none, 1 GiB segments, "
            "timestamps over a year; " + "; ".join(
                f"{size}: {records[size]:,} records, {gb[size] * 1e3:,.0f} MB of .log"
                for size in logs))
    small, big = next(iter(logs)), list(logs)[-1]
    rows, per_gb = [], {}
    for name, (options, query, targeted) in SCANS.items():
        sides = {size: (lambda p=path: query(load(spark, p, options))) for size, path in
                 logs.items()}
        try:
            answers = {size: fn() for size, fn in sides.items()}     # also the warm-up
        except Exception as err:  # noqa: BLE001 - e.g. an option this version does not take
            rows.append(case(f"scale: {name}", data=data, repetitions=0, raw={}, ratios={},
                             notes=f"not available: {_first_line(err)}"))
            continue
        _check(name, options, answers, records)
        seconds = take_turns(sides, repetitions, warmups=0)
        raw = {size: [s / gb[size] for s in runs] for size, runs in seconds.items()}
        ratios = {f"s/GB {size} / {small}": ratio(raw, size, small) for size in list(logs)[1:]}
        per_gb[name] = medians(raw)
        if "view" in options:   # what a batch's row costs against a record's, on the same bytes
            reference = per_gb.get(FULL_SCAN, {}).get(big)
            if reference:
                ratios[f"s/GB / full scan count() ({big})"] = per_gb[name][big] / reference
        per_s = ", ".join(f"{size} {1 / v:.2f} GB/s" for size, v in medians(raw).items())
        rows.append(case(f"scale: {name}", data=data, repetitions=repetitions, raw=raw,
                         unit="s/GB", ratios=ratios, notes=per_s, seconds=seconds,
                         answers=answers,
                         targets=[(f"s/GB {big} / {small}", FLAT_SCAN)] if targeted else []))

    ranges = {size: time_range(n) for size, n in records.items()}
    sides = {size: (lambda p=path, o=ranges[size][0]: load(spark, p, o).count())
             for size, path in logs.items()}
    for size, fn in sides.items():    # the warm-up, and the check
        if fn() != ranges[size][1]:
            raise AssertionError(f"time range on {size}: expected {ranges[size][1]} rows")
    raw = take_turns(sides, RANGE_REPETITIONS, warmups=0)
    ratios = {f"{size} / {small}": ratio(raw, size, small) for size in list(logs)[1:]}
    rows.append(case("scale: time range 0.1% (startingTimestamp/endingTimestamp, count())",
                     data=data, repetitions=RANGE_REPETITIONS, raw=raw, ratios=ratios,
                     targets=[(f"{big} / {small}", FLAT_RANGE)],
                     notes="rows: " + ", ".join(f"{size} {r[1]:,}" for size, r in ranges.items())))
    return rows


def _check(name: str, options: dict, answers: dict, records: dict) -> None:
    """A record scan counts every record; the batches view one row per batch of 100."""
    for size, got in answers.items():
        n = records[size]
        if "view" in options:
            ok = n // 100 <= got <= n // 100 + 4      # a partition's last batch may be short
        elif "sum" in name:
            ok = got == n * 100
        else:
            ok = got == n
        if not ok:
            raise AssertionError(f"scale: {name} on {size}: got {got} ({n:,} records)")


def _first_line(err: Exception) -> str:
    lines = [line.strip() for line in str(err).splitlines() if line.strip()]
    hits = [line for line in lines if "Error" in line and "view" in line]
    return (hits or lines or [type(err).__name__])[-1][:300]


if __name__ == "__main__":
    print(json.dumps(run(int(sys.argv[1]) if len(sys.argv) > 1 else REPETITIONS), indent=1,
                     default=str))
