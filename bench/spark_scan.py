"""Full scans in Spark: segmentlog against its ceiling and against Parquet, on the same rows.

Data: 5,000,000 records, topic `events` x 4 partitions, 16-byte keys, 100-byte values, 100
records per batch, uncompressed (634 MB of `.log`), generated once into bench/data. The
Parquet copy is written once from the segmentlog DataFrame (Spark's defaults: snappy).

Sides (one SparkSession, local[2], workers on this interpreter):
* segmentlog: `spark.read.format("segmentlog").load(path)`.
* ceiling: a Python data source (below) yielding the very RecordBatches segmentlog yields, in
  the same Spark partitions, decoded once per worker process and kept in a module global, so
  a scan costs only the Python -> JVM transfer: the most any Python data source can do.
* parquet: `spark.read.parquet(copy)` (a JVM reader with column pruning; `count()` reads
  only footers).

Queries: count(), sum(length(value)), groupBy(partition).count(), and groupBy(partition).count()
with includePayload=false (the ceiling then yields the same metadata-only batches).
Target: segmentlog <= 1.15x the ceiling, every query. Parquet is a reference, not a target: it
reads one column where PySpark 4.3 gives a Python source no column pruning (the ceiling itself
is ~4x Parquet on the includePayload=false groupBy).
One warm-up of every side and query, then REPETITIONS runs with the sides taking turns; ratios are
medians of the per-run ratios, plus the ratio of the best runs (what the code does when a shared
machine leaves it alone).
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from pyspark.sql import functions as F
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

from .common import DATA, case, dataset, describe, ratio, spark_session, take_turns

PARAMS = dict(topics=["events"], partitions=4, records=5_000_000, codec="none", key_size=16,
              value_size=100, records_per_batch=100, seed=1)
REPETITIONS = 7
CEILING_TARGET = 1.15

# -- the ceiling -----------------------------------------------------------------------------

_PREBUILT: dict = {}    # key -> [RecordBatches of group i], per worker process


def _plan(path: str, include_payload: bool):
    from segmentlog_source.plan.options import parse_read_options
    from segmentlog_source.plan.read_plan import plan_read

    return plan_read(parse_read_options({"path": path,
                                         "includePayload": str(include_payload).lower()}))


def prebuilt(key, groups, include_payload: bool, build_log: str | None = None) -> list:
    """segmentlog's batches for every ReadGroup that `groups()` returns, decoded on first use of
    `key` in this process (a ceiling source's worker); bench/stream.py's ceiling uses it too."""
    if key not in _PREBUILT:
        from segmentlog_source.plan.predicates import RowFilter
        from segmentlog_source.spark.reader import GroupScan, ScanSettings

        settings = ScanSettings(RowFilter(), False, True, include_payload, False, True)
        _PREBUILT[key] = [list(GroupScan(g, settings)) for g in groups()]
        if build_log:  # lets the harness check that no build happened inside a timed run
            with Path(build_log).open("a") as f:
                f.write(f"{os.getpid()} {time.time()}\n")
    return _PREBUILT[key]


def build_count(build_log: Path) -> int:
    """How many times a ceiling's worker decoded its batches (lines of its build log)."""
    return len(build_log.read_text().splitlines()) if build_log.exists() else 0


class CeilingPartition(InputPartition):
    def __init__(self, index: int):
        self.index = index


class CeilingReader(DataSourceReader):
    def __init__(self, options):
        self.path = options["path"]
        self.include_payload = options.get("includePayload", "true") == "true"
        self.build_log = options.get("buildLog")

    def partitions(self):
        return [CeilingPartition(i)
                for i in range(len(_plan(self.path, self.include_payload).groups))]

    def read(self, partition):
        batches = prebuilt((self.path, self.include_payload),
                           lambda: _plan(self.path, self.include_payload).groups,
                           self.include_payload, self.build_log)
        return iter(batches[partition.index])


class CeilingDataSource(DataSource):
    """Yields prebuilt RecordBatches of segmentlog's rows in the Kafka source's schema."""

    @classmethod
    def name(cls) -> str:
        return "segmentlog_ceiling"

    def schema(self):
        from segmentlog_source.spark.schema import spark_ddl

        return spark_ddl(self.options.get("includePayload", "true") == "true")

    def reader(self, schema):
        return CeilingReader(self.options)


# -- the benchmark ---------------------------------------------------------------------------

QUERIES = {
    "count()": lambda df: df.count(),
    "sum(length(value))": lambda df: df.agg(F.sum(F.length("value"))).collect()[0][0],
    "groupBy(partition).count()":
        lambda df: sorted(tuple(r) for r in df.groupBy("partition").count().collect()),
}


def parquet_copy(spark, path: Path) -> Path:
    copy = DATA / f"{path.name}.parquet"
    if not (copy / "_SUCCESS").exists():
        spark.read.format("segmentlog").load(str(path)).write.mode("overwrite").parquet(str(copy))
    return copy


def run(repetitions: int = REPETITIONS) -> list[dict]:
    spark = spark_session()
    spark.dataSource.register(CeilingDataSource)
    path = dataset("scan", **PARAMS)
    copy = parquet_copy(spark, path)
    data = describe(path, PARAMS)
    build_log = DATA / "ceiling-builds.log"
    build_log.unlink(missing_ok=True)

    def reader(fmt: str, payload: bool = True):
        def load():
            if fmt == "parquet":
                return spark.read.parquet(str(copy))
            reader = spark.read.format(fmt).option("includePayload", str(payload).lower())
            if fmt == "segmentlog_ceiling":   # segmentlog refuses an option it does not know
                reader = reader.option("buildLog", str(build_log))
            return reader.load(str(path))
        return load

    plans = [(q, fn, True) for q, fn in QUERIES.items()]
    plans.append(("groupBy(partition).count()", QUERIES["groupBy(partition).count()"], False))
    rows = []
    for query, fn, payload in plans:
        sides = {side: reader(fmt, payload) for side, fmt in (
            ("segmentlog", "segmentlog"), ("ceiling", "segmentlog_ceiling"),
            ("parquet", "parquet"))}
        answers = {side: fn(load()) for side, load in sides.items()}  # also the warm-up
        if len(set(map(repr, answers.values()))) != 1:
            raise AssertionError(f"{query}: the sides disagree: {answers}")
        builds_before = build_count(build_log)
        runs = {side: (lambda load=load, fn=fn: fn(load())) for side, load in sides.items()}
        raw = take_turns(runs, repetitions, warmups=0)
        rebuilt = build_count(build_log) - builds_before
        ratios = {"segmentlog / ceiling": ratio(raw, "segmentlog", "ceiling"),
                  "segmentlog / ceiling (best runs)": min(raw["segmentlog"]) / min(raw["ceiling"]),
                  "segmentlog / parquet": ratio(raw, "segmentlog", "parquet")}
        targets = [("segmentlog / ceiling", CEILING_TARGET)]
        name = f"scan: {query}" + ("" if payload else " includePayload=false")
        notes = f"ceiling rebuilt its batches {rebuilt}x during timed runs" if rebuilt else ""
        rows.append(case(name, data=data, repetitions=repetitions, raw=raw, ratios=ratios,
                         targets=targets, notes=notes, answer=repr(answers["segmentlog"])))
    return rows


if __name__ == "__main__":
    import json

    print(json.dumps(run(), indent=1))
