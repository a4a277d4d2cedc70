"""Write throughput: `df.write.format("segmentlog")` against Spark's Parquet writer and against
the ceiling, on one cached DataFrame; and the record encoder against kafka-python's.

* segmentlog: mode("append") into a fresh data directory, defaults (no compression, 16 KiB
  batches, fsync at commit), one topic of 2 partitions, keyed rows: routing, encoding, staging
  and the driver's commit (appends, indexes, snapshots) all counted.
* parquet: Spark's own writer with its defaults (snappy), the usual yardstick.
* ceiling: a Python DataSourceArrowWriter that only counts the Arrow batches it is given: what
  Spark costs to hand a Python writer its rows, before the writer does anything.
* encoder: bench/decoder.py's encode contenders (pyarrow arrays -> v2 batches of <= 16 KiB vs
  kafka-python's DefaultRecordBatchBuilder), uncompressed and lz4, one core.

Ratios compare sides measured alternately in the same run (medians of `repetitions` after a
warm-up), so a busy neighbour slows all of them alike.
Target: segmentlog <= 1.5x the ceiling, its commit fsyncing (fsync=commit, the default).
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass

from pyspark.sql.datasource import DataSource, DataSourceArrowWriter, WriterCommitMessage

from .common import DATA, case, medians, ratio, spark_session, take_turns

ROWS = 2_000_000
VALUE_BYTES = 100
CEILING_TARGET = 1.5


@dataclass
class Counted(WriterCommitMessage):
    rows: int


class DiscardWriter(DataSourceArrowWriter):
    def write(self, iterator):
        return Counted(sum(batch.num_rows for batch in iterator))

    def commit(self, messages):
        pass

    def abort(self, messages):
        pass


class DiscardDataSource(DataSource):
    """The ceiling: a Python Arrow writer that throws its batches away."""

    @classmethod
    def name(cls) -> str:
        return "segmentlog_discard"

    def writer(self, schema, overwrite):
        return DiscardWriter()


def dataframe(spark, rows: int):
    from pyspark.sql import functions as F

    value = F.substring(F.concat(*[F.sha2(F.concat(F.col("id").cast("string"), F.lit(str(i))),
                                          256) for i in range(2)]), 1, VALUE_BYTES)
    df = spark.range(rows, numPartitions=2).select(
        F.concat(F.lit("user-"), (F.col("id") % 100_000).cast("string")).cast("binary")
        .alias("key"),
        value.cast("binary").alias("value"),
        F.timestamp_millis(F.lit(1_700_000_000_000) + F.col("id")).alias("timestamp")).cache()
    df.count()
    return df


def encoder_rows(repetitions: int, records: int = 200_000) -> dict:
    from segmentlog_source.format.batch import CODEC_IDS

    from .decoder import (arrow_rows, encode_kafka_python, encode_segmentlog, make_rows,
                          one_core, paired, rates)

    keys, values, stamps = make_rows(records, VALUE_BYTES)
    key, value, timestamp = arrow_rows(keys, values, stamps)
    out = {}
    with one_core():
        for name in ("none", "lz4"):
            codec = CODEC_IDS[name]
            out[name] = rates(paired(lambda: encode_segmentlog(key, value, timestamp, codec),
                                     lambda: encode_kafka_python(keys, values, stamps, codec),
                                     repetitions), records)
    return out


def run(repetitions: int = 3, rows: int = ROWS) -> dict:
    spark = spark_session()
    spark.dataSource.register(DiscardDataSource)
    df = dataframe(spark, rows)
    target = DATA / "writer-out"
    counter = iter(range(10**6))

    def fresh() -> str:
        return str(target / f"run-{next(counter)}")

    sides = {
        "segmentlog": lambda: df.write.format("segmentlog").mode("append")
        .option("topic", "bench").option("numPartitions", "2").option("fsync", "commit")
        .save(fresh()),
        "parquet": lambda: df.write.mode("overwrite").parquet(fresh()),
        "ceiling": lambda: df.write.format("segmentlog_discard").mode("append").save(fresh()),
    }
    try:
        # (the previous side's output is removed untimed: deleting 260 MB is no side's cost)
        raw = take_turns(sides, repetitions, before=lambda: shutil.rmtree(target,
                                                                          ignore_errors=True))
    finally:
        shutil.rmtree(target, ignore_errors=True)
        df.unpersist()
    med = medians(raw)
    data = f"{rows:,} rows of key ~10 B, value {VALUE_BYTES} B, timestamp; 2 Spark partitions"
    cases = [case("write: df.write segmentlog vs Parquet and the ceiling", data=data,
                  repetitions=repetitions, raw=raw,
                  ratios={"segmentlog / ceiling": ratio(raw, "segmentlog", "ceiling"),
                          "segmentlog / parquet": ratio(raw, "segmentlog", "parquet")},
                  targets=[("segmentlog / ceiling", CEILING_TARGET)],
                  rows_per_s={side: rows / s for side, s in med.items()},
                  notes="seconds per write; Parquet with Spark's default snappy, segmentlog "
                        "uncompressed with fsync at commit")]
    encoder = encoder_rows(max(repetitions, 3))
    for name, r in encoder.items():
        cases.append(case(f"write: encoder vs kafka-python DefaultRecordBatchBuilder ({name})",
                          data="200,000 records, 100 B values, batches <= 16 KiB, one core",
                          repetitions=max(repetitions, 3),
                          raw={"segmentlog": [r["segmentlog_s"]],
                               "kafka-python": [r["kafka_python_s"]]},
                          ratios={"segmentlog / kafka-python": 1 / r["ratio"]},
                          records_per_s={"segmentlog": r["segmentlog_rps"],
                                         "kafka-python": r["kafka_python_rps"]}))
    return {"cases": cases, "rows": rows, "repetitions": repetitions, "seconds": med,
            "encoder": encoder}


if __name__ == "__main__":
    import json

    print(json.dumps(run(), indent=1, default=str))
