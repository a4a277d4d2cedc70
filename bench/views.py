"""The log's shape from its batch headers: `view=batches` against Parquet, the same answers.

Data (generated once into bench/data): topic `events` x 4 partitions, keyless (the generator's
sticky partitioner fills each batch with 100 consecutive records), 100-byte values,
uncompressed, record i at 1.7e12 + 10 i ms, 5,000,000 records (~560 MB of `.log`), and
20,000,000 (~2.2 GB) for the two queries. A batch
spans 1000 ms and starts on a whole second, so none straddles an hour: counting a batch in
the hour of its max timestamp gives every record's own hour. The Parquet copy is written once
from the segmentlog records DataFrame (bench/spark_scan.py's, Spark's defaults: snappy).

Queries, each answered on both sides and checked equal:
* records per partition: the view's `where("not isControl").groupBy("partition")
  .agg(sum("recordCount"))` against Parquet's `groupBy("partition").count()`;
* records per hour: the same by `date_trunc("hour", maxTimestamp)` against Parquet's by
  `date_trunc("hour", timestamp)`.
Parquet reads its one smallest column (`partition`, `timestamp`): Spark prunes the rest. PySpark
4.3 prunes no column of a Python source, so the view's query names the three columns it reads
with `.schema(...)` (spark/schema.py's view_projection), and the view builds and sends only
those; beside it the same view with every column (no schema given). The view reads batch
headers (verifyChecksums=false) or every batch whole for its CRC (true, the default; beside
it). Target: view(verifyChecksums=false) / parquet <= 1 on both queries; beside the
per-partition query, the floor: a Python source yielding the answer precomputed. The
per-partition query runs again with the files dropped from the page cache before every run
(posix_fadvise DONTNEED on this benchmark's own files), the sides in turn: a read from disk.

Bytes: segmentlog's from its own IOStats (the plan and BatchesScan in this process), Parquet's
from its footers (the column chunks of the one column read, plus the footers). Requests and
bytes served from a loopback S3 server (moto) for the view in both modes and for a records
read (`count()`, includePayload=false) of the same log. Parquet is not read from S3: that
needs Spark's s3a connector (hadoop-aws), which this setup does not have.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from pyspark.sql import functions as F
from pyspark.sql.datasource import DataSource, DataSourceReader

from .common import (case, dataset, describe, log_bytes, ratio, spark_session, take_turns,
                     timed, upload)
from .spark_scan import parquet_copy

PARAMS = dict(topics=["events"], partitions=4, records=5_000_000, codec="none", key_size=0,
              value_size=100, records_per_batch=100, timestamp_step_ms=10, seed=3)
REPETITIONS = 7
# A view's query costs a fixed ~0.3-0.6 s (PySpark's Python data source: planner round trips,
# Python workers) plus ~2 us per batch; Parquet's ~0.1 us per record: the bigger log shows
# where the per-record cost takes over.
SIZES = (5_000_000, 20_000_000)
COLD_REPETITIONS = 3
TARGET = 1.0
VIEW, CHECKED, PARQUET = "view", "view (crc)", "parquet"
WHOLE = "view, all columns"
FLOOR = "python source floor"


# -- the floor -------------------------------------------------------------------------------
# What any PySpark 4.3 Python data source's query costs before it reads a byte: one task that
# yields the per-partition answer, precomputed on the driver, as a single Arrow batch. The
# per-partition query runs it beside the others: when the floor alone takes Parquet's time, no
# Python source can answer below it.

class FloorReader(DataSourceReader):
    def __init__(self, rows: list[tuple[int, int]]):
        self.rows = rows

    def read(self, partition):
        import pyarrow as pa

        yield pa.RecordBatch.from_pydict(
            {"partition": [p for p, _ in self.rows], "recordCount": [n for _, n in self.rows]},
            schema=pa.schema([("partition", pa.int32()), ("recordCount", pa.int64())]))


class FloorDataSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return "segmentlog_floor"

    def schema(self) -> str:
        return "partition int, recordCount bigint"

    def reader(self, schema) -> FloorReader:
        return FloorReader(json.loads(self.options["rows"]))


def _view_per_partition(df):
    return df.where("not isControl").groupBy("partition").agg(F.sum("recordCount"))


def _view_per_floor(df):
    return df.groupBy("partition").agg(F.sum("recordCount"))


def _view_per_hour(df):
    return (df.where("not isControl").groupBy(F.date_trunc("hour", "maxTimestamp"))
            .agg(F.sum("recordCount")))


# query -> (the view's aggregate, the view's columns it reads, Parquet's aggregate, the one
# column Parquet reads)
QUERIES = {
    "groupBy(partition).count()": (
        _view_per_partition, "partition int, recordCount int, isControl boolean",
        lambda df: df.groupBy("partition").count(), "partition"),
    "records per hour": (
        _view_per_hour, "maxTimestamp timestamp, recordCount int, isControl boolean",
        lambda df: df.groupBy(F.date_trunc("hour", "timestamp")).count(), "timestamp"),
}


def _answer(df) -> list[tuple]:
    return sorted((key, int(n)) for key, n in df.collect())


def _difference(a: list[tuple], b: list[tuple]) -> str:
    """How far two {key: count} answers are apart, in words."""
    x, y = dict(a), dict(b)
    keys = set(x) | set(y)
    off = sum(abs(x.get(k, 0) - y.get(k, 0)) for k in keys)
    differ = sum(x.get(k, 0) != y.get(k, 0) for k in keys)
    return f"{differ} of {len(keys)} groups differ, by {off:,} records in all"


def _equal_note(answers: dict[str, list[tuple]]) -> str:
    parquet = answers[PARQUET]
    if all(a == parquet for a in answers.values()):
        return (f"answers equal: {len(parquet)} groups, {sum(n for _, n in parquet):,} "
                f"records")
    return "; ".join(f"{side} != parquet: {_difference(a, parquet)}"
                     for side, a in answers.items() if side != PARQUET and a != parquet)


# -- bytes -----------------------------------------------------------------------------------

def segmentlog_bytes(path: Path, options: dict) -> dict:
    """Bytes and requests of the plan and of every task's scan, run here (no Spark)."""
    from segmentlog_source.plan.options import parse_read_options
    from segmentlog_source.plan.predicates import RowFilter
    from segmentlog_source.plan.read_plan import plan_read
    from segmentlog_source.spark.metadata_views import BatchesScan
    from segmentlog_source.spark.reader import GroupScan, ScanSettings

    opts = parse_read_options({"path": str(path), **options})
    plan = plan_read(opts)
    settings = ScanSettings(RowFilter(), opts.read_committed, opts.verify_checksums,
                            opts.include_payload, opts.include_headers, opts.fail_on_data_loss,
                            opts.store)
    scan_type = BatchesScan if opts.view == "batches" else GroupScan
    scanned, requests, rows = 0, 0, 0
    for group in plan.groups:
        scan = scan_type(group, settings)
        rows += sum(b.num_rows for b in scan)
        scanned += scan.stats.bytes_read
        requests += scan.stats.read_requests
    return {"scan_bytes": scanned, "scan_requests": requests, "rows": rows,
            "plan_bytes": plan.planner_io.bytes_read,
            "plan_requests": plan.planner_io.read_requests}


def parquet_bytes(copy: Path, column: str) -> int:
    """What a reader of one column needs from the copy: that column's chunks in every row
    group (dictionary and data pages, as stored) and every file's footer."""
    import pyarrow.parquet as pq

    total = 0
    for file in sorted(copy.glob("*.parquet")):
        meta = pq.ParquetFile(file).metadata
        total += meta.serialized_size + 8      # the footer, its length and the magic
        for g in range(meta.num_row_groups):
            group = meta.row_group(g)
            total += sum(group.column(c).total_compressed_size
                         for c in range(group.num_columns)
                         if group.column(c).path_in_schema == column)
    return total


def _bytes_row(path: Path, copy: Path, data: str) -> dict:
    total = log_bytes(path)
    sides = {VIEW: {"view": "batches", "verifyChecksums": "false"},
             CHECKED: {"view": "batches", "verifyChecksums": "true"},
             "records (includePayload=false)": {"includePayload": "false"}}
    measured = {side: segmentlog_bytes(path, options) for side, options in sides.items()}
    raw = {side: [m["scan_bytes"]] for side, m in measured.items()}
    for column in ("partition", "timestamp"):
        raw[f"parquet {column}"] = [parquet_bytes(copy, column)]
    raw["log"] = [total]
    view = measured[VIEW]
    notes = (f"the header-only read (verifyChecksums=false) reads "
             f"{view['scan_bytes'] / total:.2%} of the log's bytes in "
             f"{view['scan_requests']:,} requests for {view['rows']:,} batches; with CRCs "
             f"{measured[CHECKED]['scan_bytes'] / total:.1%} in "
             f"{measured[CHECKED]['scan_requests']:,}; the plan adds "
             f"{view['plan_bytes']:,} B in {view['plan_requests']} requests (indexes); "
             f"Parquet: column chunks + footers")
    return case("views: bytes read", data=data, repetitions=1, raw=raw, unit="B",
                ratios={f"{side} / log": r[0] / total for side, r in raw.items()
                        if side != "log"},
                notes=notes, measured=measured)


# -- cold page cache -------------------------------------------------------------------------

def evict(directory: Path, suffix: str) -> None:
    """Drop the files' pages from the page cache (no root needed; clean pages only)."""
    for file in directory.rglob(f"*{suffix}"):
        fd = os.open(file, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def _cold_row(runs: dict, path: Path, copy: Path, data: str, repetitions: int) -> dict:
    files = {VIEW: (path, ".log"), CHECKED: (path, ".log"), PARQUET: (copy, ".parquet")}
    raw = {side: [] for side in files}
    for _ in range(repetitions):
        for side in files:
            evict(*files[side])
            raw[side].append(timed(runs[side]))
    ratios = {f"{VIEW} / {PARQUET}": ratio(raw, VIEW, PARQUET),
              f"{CHECKED} / {PARQUET}": ratio(raw, CHECKED, PARQUET),
              f"{CHECKED} / {VIEW}": ratio(raw, CHECKED, VIEW)}
    return case("views: groupBy(partition).count(), cold page cache", data=data,
                repetitions=repetitions, raw=raw, ratios=ratios,
                notes="each run's files dropped from the page cache first (posix_fadvise "
                      "DONTNEED): the header-only read's cost on a disk")


# -- object store ----------------------------------------------------------------------------

def _s3_row(spark, path: Path, data: str) -> dict:
    from segmentlog_source.devtools.s3_server import S3Server

    total = log_bytes(path)
    sides = {VIEW: ({"view": "batches", "verifyChecksums": "false"}, _view_per_partition),
             CHECKED: ({"view": "batches", "verifyChecksums": "true"}, _view_per_partition),
             "records (includePayload=false)": ({"includePayload": "false"}, None)}
    raw, seconds, counts, notes = {}, {}, {}, []
    with S3Server() as s3:
        uri, upload_s = upload(s3, path, "views")
        for side, (options, query) in sides.items():
            reader = spark.read.format("segmentlog")
            for key, value in {**options, **s3.storage_options}.items():
                reader = reader.option(key, value)
            s3.reset_counts()
            started = time.perf_counter()
            df = reader.load(uri)
            answer = _answer(query(df)) if query else df.count()
            seconds[side] = time.perf_counter() - started
            served = s3.requests()
            body = sum(r.body_bytes for r in served if r.method != "GET" or r.query == "")
            raw[side] = [body]
            counts[side] = {"requests": len(served), "object_bytes": body,
                            "listing_bytes": sum(r.body_bytes for r in served) - body,
                            "gets": sum(r.method == "GET" and r.query == "" for r in served),
                            "seconds": round(seconds[side], 2), "answer": repr(answer)}
            notes.append(f"{side}: {len(served):,} requests ({counts[side]['gets']:,} object "
                         f"GETs), {body / 1e6:,.1f} MB, {seconds[side]:.1f} s")
    raw["log"] = [total]
    notes.append(f"upload took {upload_s:.0f} s; Parquet not measured on S3: Spark's s3a "
                 f"connector (hadoop-aws) is not in this setup")
    return case("views on S3: bytes served", data=data + ", on moto S3 (loopback)",
                repetitions=1, raw=raw, unit="B",
                ratios={f"{side} / log": r[0] / total for side, r in raw.items()
                        if side != "log"},
                notes="; ".join(notes), served=counts)


# -- the benchmark ---------------------------------------------------------------------------

def _query_rows(spark, records: int, repetitions: int):
    """Both queries on the log of `records` records and its Parquet copy, sides in turn."""
    params = {**PARAMS, "records": records}
    path = dataset("views", **params)
    copy = parquet_copy(spark, path)
    data = describe(path, params)

    def view(verify: str, columns: str | None = None):
        def load():
            reader = spark.read.format("segmentlog")
            if columns is not None:
                reader = reader.schema(columns)
            return (reader.option("view", "batches").option("verifyChecksums", verify)
                    .load(str(path)))
        return load

    rows, first_runs = [], None
    for query, (on_view, columns, on_parquet, column) in QUERIES.items():
        loads = {VIEW: view("false", columns), WHOLE: view("false"),
                 CHECKED: view("true", columns), PARQUET: lambda: spark.read.parquet(str(copy))}
        queries = {VIEW: on_view, WHOLE: on_view, CHECKED: on_view, PARQUET: on_parquet}
        runs = {side: (lambda load=loads[side], q=queries[side]: _answer(q(load())))
                for side in loads}
        answers = {side: fn() for side, fn in runs.items()}       # also the warm-up
        floor = query == "groupBy(partition).count()"
        if floor:
            spark.dataSource.register(FloorDataSource)
            known = json.dumps(answers[PARQUET])
            runs[FLOOR] = lambda: _answer(_view_per_floor(
                spark.read.format("segmentlog_floor").option("rows", known).load()))
            runs[FLOOR]()
        raw = take_turns(runs, repetitions, warmups=0)
        ratios = {f"{VIEW} / {PARQUET}": ratio(raw, VIEW, PARQUET),
                  f"{WHOLE} / {PARQUET}": ratio(raw, WHOLE, PARQUET),
                  f"{CHECKED} / {PARQUET}": ratio(raw, CHECKED, PARQUET),
                  f"{CHECKED} / {VIEW}": ratio(raw, CHECKED, VIEW)}
        if floor:
            ratios[f"{FLOOR} / {PARQUET}"] = ratio(raw, FLOOR, PARQUET)
            ratios[f"{VIEW} / {FLOOR}"] = ratio(raw, VIEW, FLOOR)
        rows.append(case(f"views: {query}, {records / 1e6:g}M records", data=data,
                         repetitions=repetitions, raw=raw,
                         ratios=ratios, targets=[(f"{VIEW} / {PARQUET}", TARGET)],
                         notes=f"{_equal_note(answers)}; Parquet reads only `{column}`; "
                               f"the view's query names its columns: {columns}"
                               + (f"; {FLOOR}: one task yielding the answer, precomputed "
                                  f"(what any Python source's query costs)" if floor else ""),
                         answers={side: repr(a) for side, a in answers.items()},
                         answers_equal=len(set(map(repr, answers.values()))) == 1))
        first_runs = first_runs or runs
    return rows, first_runs, path, copy, data


def run(repetitions: int = REPETITIONS, sizes: tuple[int, ...] = SIZES) -> list[dict]:
    spark = spark_session()
    rows = []
    for records in sizes[1:]:       # the bigger log: where a fixed cost stops mattering
        rows += _query_rows(spark, records, repetitions)[0]
    more, runs, path, copy, data = _query_rows(spark, sizes[0], repetitions)
    rows = more + rows
    rows.append(_cold_row(runs, path, copy, data, COLD_REPETITIONS))
    rows.append(_bytes_row(path, copy, data))
    rows.append(_s3_row(spark, path, data))
    return rows


if __name__ == "__main__":
    print(json.dumps(run(), indent=1, default=str))
