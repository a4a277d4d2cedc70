"""compat.py's bridges on this PySpark, without Spark: the Arrow types Spark exchanges, and the
Rows of PySpark 4.0's stream writer gathered into the Arrow batches the staging takes."""

from __future__ import annotations

import datetime as dt
import os
import time

import pyarrow as pa
import pytest
from pyspark.sql import Row
from pyspark.sql.types import (ArrayType, BinaryType, IntegerType, StringType, StructField,
                               StructType, TimestampType)

from segmentlog_source import compat
from segmentlog_source.errors import NeedsNewerPySparkError
from segmentlog_source.spark.schema import arrow_schema, spark_schema

INPUT = StructType([
    StructField("key", BinaryType()), StructField("value", BinaryType()),
    StructField("headers", ArrayType(StructType([StructField("key", StringType()),
                                                 StructField("value", BinaryType())]))),
    StructField("timestamp", TimestampType()), StructField("partition", IntegerType())])


def test_arrow_schema_is_the_one_spark_checks_batches_against():
    assert compat.to_arrow_schema(spark_schema(True, True)) == arrow_schema(True, True)
    assert compat.to_arrow_type(spark_schema()["timestamp"].dataType) == \
        pa.timestamp("us", tz="UTC")


@pytest.fixture
def local_zone():
    """The process's local time zone set to one with daylight saving time, then put back."""
    before = os.environ.get("TZ")
    os.environ["TZ"] = "Europe/Berlin"
    time.tzset()
    yield
    if before is None:
        del os.environ["TZ"]
    else:
        os.environ["TZ"] = before
    time.tzset()


def _rows(n: int):
    # as PySpark 4.0's worker makes them: binary as bytearray, timestamps as local wall time
    return [Row(key=bytearray(b"k%d" % i), value=None if i == 3 else bytearray(b"v%d" % i),
                headers=[Row(key="h", value=bytearray(b"%d" % i))] if i % 2 else [],
                timestamp=dt.datetime.fromtimestamp(1_700_000_000 + i * 3600) if i != 5
                else None,
                partition=i % 2) for i in range(n)]


def test_rows_become_arrow_batches_of_the_input_schema(local_zone, monkeypatch):
    monkeypatch.setattr(compat, "ROWS_PER_BATCH", 4)
    schema = compat.to_arrow_schema(INPUT)
    batches = list(compat.stream_write_batches(iter(_rows(10)), schema))
    assert [b.num_rows for b in batches] == [4, 4, 2]
    assert all(b.schema == schema for b in batches)
    table = pa.Table.from_batches(batches).to_pylist()
    epoch = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
    assert [r["timestamp"] for r in table] == [
        None if i == 5 else epoch + dt.timedelta(seconds=1_700_000_000 + i * 3600)
        for i in range(10)]
    assert table[1]["headers"] == [{"key": "h", "value": b"1"}] and table[0]["headers"] == []
    assert table[3]["value"] is None and table[2]["key"] == b"k2"


def test_arrow_batches_pass_as_they_are():
    schema = compat.to_arrow_schema(INPUT)
    batch = pa.RecordBatch.from_pylist([], schema=schema)
    assert list(compat.stream_write_batches(iter([batch, batch]), schema)) == [batch, batch]
    assert list(compat.stream_write_batches(iter([]), schema)) == []


def test_an_ambiguous_local_time_is_refused_not_guessed(local_zone):
    schema = compat.to_arrow_schema(INPUT)
    row = _rows(1)[0]
    # 02:30 on 27 October 2024 happened twice in Berlin (the clocks went back at 03:00)
    ambiguous = Row(**{**row.asDict(), "timestamp": dt.datetime(2024, 10, 27, 2, 30)})
    with pytest.raises(NeedsNewerPySparkError, match="column timestamp: the local time "
                       "2024-10-27 02:30:00 is ambiguous"):
        list(compat.stream_write_batches(iter([ambiguous]), schema))
