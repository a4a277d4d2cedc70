"""The DataFrame schema of Spark's own Kafka source, as a Spark DDL and as the exact Arrow schema.

Spark checks the first yielded RecordBatch against the Arrow form of the declared schema, to the
letter: `binary` not `large_binary`, `int32` for int, `timestamp[us, tz=UTC]`, same order.
"""

from __future__ import annotations

import pyarrow as pa
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import (ArrayType, BinaryType, IntegerType, LongType, StringType,
                               StructField, StructType, TimestampType)

HEADER_TYPE = pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))

_PAYLOAD = [("key", "binary", pa.binary()), ("value", "binary", pa.binary())]
_METADATA = [
    ("topic", "string", pa.string()),
    ("partition", "int", pa.int32()),
    ("offset", "bigint", pa.int64()),
    ("timestamp", "timestamp", pa.timestamp("us", tz="UTC")),
    ("timestampType", "int", pa.int32()),
]
_SPARK_TYPES = {
    "binary": BinaryType(), "string": StringType(), "int": IntegerType(), "bigint": LongType(),
    "timestamp": TimestampType(),
    "array<struct<key:string,value:binary>>": ArrayType(StructType([
        StructField("key", StringType(), True), StructField("value", BinaryType(), True)]), True),
}
_HEADERS = [("headers", "array<struct<key:string,value:binary>>", HEADER_TYPE)]

_TIMESTAMP = pa.timestamp("us", tz="UTC")
# The metadata views' rows (spark/metadata_views.py): names as kafka-dump-log.sh prints them.
_WHERE = [("topic", "string", pa.string()), ("partition", "int", pa.int32()),
          ("segment", "bigint", pa.int64())]
_VIEWS = {
    "batches": _WHERE + [
        ("position", "bigint", pa.int64()), ("size", "int", pa.int32()),
        ("baseOffset", "bigint", pa.int64()), ("lastOffset", "bigint", pa.int64()),
        ("recordCount", "int", pa.int32()),
        ("firstTimestamp", "timestamp", _TIMESTAMP), ("maxTimestamp", "timestamp", _TIMESTAMP),
        ("timestampType", "int", pa.int32()), ("codec", "string", pa.string()),
        ("magic", "int", pa.int32()), ("producerId", "bigint", pa.int64()),
        ("producerEpoch", "int", pa.int32()), ("baseSequence", "int", pa.int32()),
        ("partitionLeaderEpoch", "int", pa.int32()),
        ("isTransactional", "boolean", pa.bool_()), ("isControl", "boolean", pa.bool_())],
    "segments": _WHERE + [
        ("path", "string", pa.string()), ("size", "bigint", pa.int64()),
        ("firstOffset", "bigint", pa.int64()), ("lastOffset", "bigint", pa.int64()),
        ("firstTimestamp", "timestamp", _TIMESTAMP), ("maxTimestamp", "timestamp", _TIMESTAMP),
        ("offsetIndexEntries", "int", pa.int32()), ("timeIndexEntries", "int", pa.int32())],
}


def _columns(include_payload: bool, include_headers: bool, view: str = "records"):
    if view != "records":
        return _VIEWS[view]
    cols = (_PAYLOAD if include_payload else []) + _METADATA
    if include_headers and include_payload:
        cols = cols + _HEADERS
    return cols


def spark_ddl(include_payload: bool = True, include_headers: bool = False,
              view: str = "records") -> str:
    return ", ".join(f"{name} {ddl}" for name, ddl, _ in _columns(include_payload,
                                                                   include_headers, view))


def arrow_schema(include_payload: bool = True, include_headers: bool = False,
                 view: str = "records") -> pa.Schema:
    return pa.schema([pa.field(name, typ) for name, _, typ in _columns(include_payload,
                                                                        include_headers, view)])


def simple_string(include_payload: bool = True, include_headers: bool = False,
                  view: str = "records") -> str:
    """The schema as Spark's StructType.simpleString() prints it (to compare a user's schema
    with, in a planner process, where no JVM can parse DDL)."""
    return "struct<" + ",".join(f"{name}:{ddl}" for name, ddl, _ in _columns(
        include_payload, include_headers, view)) + ">"


def with_decoded(include_payload: bool, include_headers: bool, decoded: list[StructField]
                 ) -> StructType:
    """The source's schema followed by the decoded key/value columns of values/ (a StructType:
    their types come from Avro and JSON schemas, and have no DDL of ours)."""
    base = [StructField(name, _SPARK_TYPES[ddl], True)
            for name, ddl, _ in _columns(include_payload, include_headers)]
    return StructType(base + list(decoded))


def arrow_schema_of(schema: StructType) -> pa.Schema:
    """The Arrow schema Spark expects batches of `schema` in (to the letter)."""
    return to_arrow_schema(schema, timezone="UTC")

