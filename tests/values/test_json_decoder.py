"""The JSON decoder without Spark, where Spark's from_json has a rule: compact text for JSON in
string fields, base64 binary, strict dates, no zone in a timestamp_ntz, every field nullable,
and deep nesting as a malformed row."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa

from segmentlog_source.values.column_decoders import JsonColumn
from segmentlog_source.values.ddl import parse_schema


def decode(ddl: str, payloads):
    column = JsonColumn(parse_schema(ddl))
    decoded, _ = column.decode(pa.array(payloads, pa.binary()))
    return decoded.array.to_pylist(), decoded.errors, column


def test_spark_rules():
    values, errors, column = decode(
        "s STRING, b BINARY, d DATE, n TIMESTAMP_NTZ, k INT NOT NULL",
        [b'{"s": {"a": 1, "b": "\\u00e9"}, "b": "aGk=", "d": "2024-01-02T03:00:00", '
         b'"n": "2024-01-01T10:00:00"}',
         b'{"d": "2024-01-01garbage"}',
         b'{"n": "2024-01-01T00:00:00+05:00"}',
         b'{"b": "not base64!"}',
         b"[" * 5000])
    assert values[0] == {"s": '{"a":1,"b":"\u00e9"}', "b": b"hi", "d": dt.date(2024, 1, 2),
                         "n": dt.datetime(2024, 1, 1, 10), "k": None}
    assert errors[0] is None
    assert values[1:] == [None] * 4
    assert "a date" in errors[1] and "time zone" in errors[2]
    assert errors[3].startswith("not JSON") and "nested too deeply" in errors[4]
    assert column.spark_type["k"].nullable     # NOT NULL dropped, as from_json drops it
