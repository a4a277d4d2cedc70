"""The option table (option_cases.py) through Spark: each read set returns exactly the expected
rows (or fails at load() or the first action with a first line that names the option, under
200 characters), with one warning naming the ignored options; each write set writes what it
says (codec, batch size) or is refused before anything is written.

Warnings are logged in Spark's Python planner processes; PySpark 4.1+ collects them when
spark.sql.pyspark.worker.logging.enabled is on (spark.tvf.python_worker_logs()).
"""

from __future__ import annotations

import math
from collections import Counter
from pathlib import Path

import pytest
from pyspark.sql import functions as F

from tests.conftest import read_segmentlog as read
from tests.spark.option_cases import (CODEC_IDS, FIRST_LINE_LIMIT, READ_CASES, WRITE_CASES,
                                      Error, Rows, batches_of, committed_offsets,
                                      segmentlog_message, write_input, write_log)

pytestmark = pytest.mark.spark

LOGGING_CONF = "spark.sql.pyspark.worker.logging.enabled"
IGNORED_MARK = "are ignored: "
COLUMNS = ("key", "value", "topic", "partition", "offset", "timestamp", "timestampType")


@pytest.fixture(scope="module")
def log(tmp_path_factory) -> tuple[Path, dict[str, int]]:
    path = tmp_path_factory.mktemp("option-cases") / "logs"
    return path, write_log(path)


@pytest.fixture(scope="module")
def everything(spark, log):
    """Every row of the log, headers included (the oracle's base: filtered by each case)."""
    return read(spark, log[0], includeHeaders="true").cache()


@pytest.fixture(scope="module")
def committed(log) -> set[tuple[str, int, int]]:
    out = set()
    for pdir in log[0].iterdir():
        if pdir.is_dir() and "-" in pdir.name:
            topic, partition = pdir.name.rsplit("-", 1)
            out |= {(topic, int(partition), o) for o in committed_offsets(pdir)}
    return out


@pytest.fixture(scope="module")
def warnings(spark):
    """The warnings the planner processes logged so far, as a Counter of messages."""
    spark.conf.set(LOGGING_CONF, "true")

    def logged() -> Counter:
        rows = (spark.tvf.python_worker_logs()
                .where("logger = 'segmentlog' and level = 'WARNING'").select("msg").collect())
        return Counter(r.msg for r in rows)

    yield logged
    spark.conf.unset(LOGGING_CONF)


def _ignored_names(messages: Counter) -> list[set[str]]:
    return [set(m.split(IGNORED_MARK, 1)[1].split(", ")) for m in messages.elements()
            if IGNORED_MARK in m]


def _key(row) -> tuple:
    return tuple(row[c] for c in row.__fields__)


def _expected(everything, committed, rows: Rows) -> list[tuple]:
    columns = list(COLUMNS) + (["headers"] if rows.headers else [])
    keep = everything.where(rows.where).select(*columns).collect()
    if rows.committed:
        keep = [r for r in keep if (r.topic, r.partition, r.offset) in committed]
    return sorted(_key(r) for r in keep)


def _check_spark_partitions(df, rows: Rows) -> None:
    if rows.min_partitions is not None:
        assert df.rdd.getNumPartitions() >= rows.min_partitions
    if rows.max_records is not None:
        spans = (df.groupBy(F.spark_partition_id().alias("sp"))
                 .agg(F.countDistinct("topic", "partition").alias("n"),
                      (F.max("offset") - F.min("offset") + 1).alias("span")).collect())
        assert all(s.n == 1 and s.span <= rows.max_records for s in spans), spans
        # at least ceil(offsets / max) Spark partitions per topic-partition, as Spark cuts them
        # (KafkaOffsetRangeCalculator.scala:63-72), counting the offsets between the first and
        # the last row (the range read may be longer); minPartitions may add more
        selected = (df.groupBy("topic", "partition")
                    .agg((F.max("offset") - F.min("offset") + 1).alias("offsets")).collect())
        least = sum(math.ceil(r.offsets / rows.max_records) for r in selected)
        assert df.rdd.getNumPartitions() >= least > len(selected)


def _check_first_line(error: BaseException, option: str) -> None:
    """segmentlog's first line names the option (Spark hands option names over in lower case,
    so an unknown one is named that way) and stays short."""
    first = segmentlog_message(error)
    assert first.lower().startswith(f"option {option.lower()}"), first
    assert len(first) < FIRST_LINE_LIMIT, first


@pytest.mark.parametrize("case", READ_CASES, ids=lambda c: c.id)
def test_read_case(spark, log, everything, committed, warnings, case):
    path, _ = log
    if isinstance(case.outcome, Error):
        with pytest.raises(Exception) as err:
            read(spark, path, **case.options).collect()
        _check_first_line(err.value, case.outcome.option)
        return
    # (which names each case's warning gives is checked without Spark, for every case:
    # tests/plan/test_option_names.py; here, that Spark's planner gives it, once)
    before = warnings() if case.warned else None
    df = read(spark, path, **case.options)
    got = sorted(_key(r) for r in df.collect())
    expected = _expected(everything, committed, case.outcome)
    assert expected, "the case must select some rows to mean anything"
    assert got == expected
    _check_spark_partitions(df, case.outcome)
    if case.warned:
        # one warning per load(), naming exactly the ignored options (KafkaSourceProvider.scala:
        # 400-411 warns of each ignored trigger option once, at load)
        assert _ignored_names(warnings() - before) == [set(case.warned)]


@pytest.mark.parametrize("case", WRITE_CASES, ids=lambda c: c.id)
def test_write_case(spark, tmp_path, warnings, case):
    out = tmp_path / "out"
    writer = write_input(spark).write.format("segmentlog").mode("append")
    for name, value in case.options.items():
        writer = writer.option(name, value)
    if isinstance(case.outcome, Error):
        with pytest.raises(Exception) as err:
            writer.save(str(out))
        _check_first_line(err.value, case.outcome.option)
        assert not out.exists() or not any(out.glob("*/*.log")), "refused after writing"
        return
    before = warnings() if case.warned else None
    writer.save(str(out))
    back = read(spark, out).selectExpr("cast(key as string) k", "cast(value as string) v")
    assert sorted(back.collect()) == sorted(write_input(spark).toDF("k", "v").collect())
    batches = [b for f in sorted(out.glob("out-*/*.log")) for b in batches_of(f)]
    assert batches and {b[0] for b in batches} == {CODEC_IDS[case.outcome.codec]}
    if case.outcome.batch_bytes is not None:
        # batch.size bounds the records of a batch (uncompressed), as in Kafka's producer
        assert all(size + 61 <= case.outcome.batch_bytes or n == 1 for _, size, n in batches)
        assert len(batches) > 1
    if case.warned:
        assert _ignored_names(warnings() - before) == [set(case.warned)]


def test_compression_level_is_the_producers(spark, tmp_path):
    """kafka.compression.<codec>.level (KIP-390) reaches the codec: the same rows, fewer bytes
    at a higher level; a level given for another codec is checked but not used."""
    sizes = {}
    for level in ("1", "19"):
        out = tmp_path / level
        (write_input(spark).coalesce(1).write.format("segmentlog").mode("append")
         .option("topic", "t").option("kafka.compression.type", "zstd")
         .option("kafka.compression.zstd.level", level)
         .option("kafka.compression.gzip.level", "9").save(str(out)))
        sizes[level] = sum(f.stat().st_size for f in out.glob("t-*/*.log"))
        assert read(spark, out).count() == 600
    assert sizes["19"] < sizes["1"]


def test_a_stream_takes_the_sinks_options_too(spark, tmp_path):
    """writeStream shares the write's option parsing (plan_write: unknown names are refused as
    test_write_case[typo] shows): a producer setting is honoured. (Its warning: the next test.
    PySpark 4.3 collects no worker logs from a streaming sink's planner processes.)"""
    from tests.spark import stream_query as sq

    total = sq.write_inputs(tmp_path / "in", files=2, rows_per_file=30)
    query = sq.start(spark, tmp_path, available_now=True, **{
        "kafka.bootstrap.servers": "localhost:9092", "kafka.compression.type": "lz4"})
    query.awaitTermination()
    assert sq.check_prefix(sq.logged_ids(tmp_path / "out"), total) == total
    batches = [b for f in sorted((tmp_path / "out").glob("*-*/*.log")) for b in batches_of(f)]
    assert batches and {b[0] for b in batches} == {CODEC_IDS["lz4"]}


def test_a_stream_warns_once_per_query(tmp_path, caplog):
    """streamWriter() runs again for every micro-batch's commit, in a reused planner process:
    the warning naming the ignored options is given once per query, not once per batch."""
    from pyspark.sql.types import StringType, StructField, StructType

    from segmentlog_source.spark.stream_writer import stream_writer

    schema = StructType([StructField("value", StringType())])
    options = {"path": str(tmp_path / "out"), "topic": "t", "kafka.acks": "all",
               "kafka.bootstrap.servers": "localhost:9092"}
    with caplog.at_level("WARNING", logger="segmentlog"):
        for _ in range(3):
            stream_writer(options, schema, overwrite=False)
    warned = [r.getMessage() for r in caplog.records if IGNORED_MARK in r.getMessage()]
    assert _ignored_names(Counter(warned)) == [{"kafka.acks", "kafka.bootstrap.servers"}]
