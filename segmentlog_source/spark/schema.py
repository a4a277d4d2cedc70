"""The DataFrame schema of Spark's own Kafka source, as a Spark DDL and as the exact Arrow schema.

Spark checks the first yielded RecordBatch against the Arrow form of the declared schema, to the
letter: `binary` not `large_binary`, `int32` for int, `timestamp[us, tz=UTC]`, same order.
"""

from __future__ import annotations

import pyarrow as pa
from pyspark.sql.types import (ArrayType, BinaryType, BooleanType, IntegerType, LongType,
                               StringType, StructField, StructType, TimestampType)

from .. import compat

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
    "timestamp": TimestampType(), "boolean": BooleanType(),
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


def spark_schema(include_payload: bool = True, include_headers: bool = False,
                 view: str = "records") -> StructType:
    """The schema as Spark's types, what `DataSource.schema()` returns: not the DDL, in which
    `timestamp` means timestamp_ntz when a session sets spark.sql.timestampType=TIMESTAMP_NTZ
    (Spark's Kafka source's timestamp is a TimestampType whatever the session says)."""
    return StructType([StructField(name, _SPARK_TYPES[ddl], True)
                       for name, ddl, _ in _columns(include_payload, include_headers, view)])


def with_decoded(include_payload: bool, include_headers: bool, decoded: list[StructField]
                 ) -> StructType:
    """The source's schema followed by the decoded key/value columns of values/ (a StructType:
    their types come from Avro and JSON schemas, and have no DDL of ours)."""
    return StructType(spark_schema(include_payload, include_headers).fields + list(decoded))


def arrow_schema_of(schema: StructType) -> pa.Schema:
    """The Arrow schema Spark expects batches of `schema` in (to the letter)."""
    return compat.to_arrow_schema(schema)


def view_projection(view: str, given: StructType) -> tuple[tuple[str, str], ...] | None:
    """The columns of a metadata view a user's `.schema(...)` asks for, as (view column, given
    name) pairs in the given order: PySpark 4.3 prunes no column of a Python source, so a view
    builds and sends only these. None when `given` is the whole view, as it is. Names match as
    Spark resolves them (ignoring case); a ValueError says what does not fit."""
    columns = {name.lower(): (name, ddl) for name, ddl, _ in _VIEWS[view]}
    pairs, seen = [], set()
    for field in given.fields:
        name, ddl = columns.get(field.name.lower(), (None, None))
        if name is None:
            raise ValueError(f"the {view} view has no column {field.name}")
        if name in seen:
            raise ValueError(f"column {field.name} is named twice")
        given_type = field.dataType.simpleString()
        if given_type != ddl:
            # (with spark.sql.timestampType=TIMESTAMP_NTZ a DDL's `timestamp` is that)
            ntz = " (write timestamp_ltz)" if given_type == "timestamp_ntz" else ""
            raise ValueError(f"column {field.name} is {ddl} in the {view} view, not "
                             f"{given_type}{ntz}")
        if not field.nullable:
            raise ValueError(f"column {field.name} may be null: declare it without NOT NULL")
        seen.add(name)
        pairs.append((name, field.name))
    if not pairs:
        raise ValueError("the schema names no column")
    whole = [name for name, _, _ in _VIEWS[view]]
    return None if pairs == [(n, n) for n in whole] else tuple(pairs)


def projected_schema(view: str, projection: tuple[tuple[str, str], ...] | None) -> pa.Schema:
    """The Arrow schema of a view's batches: the whole view, or the projection's columns under
    their given names."""
    full = arrow_schema(view=view)
    if projection is None:
        return full
    return pa.schema([pa.field(given, full.field(name).type) for name, given in projection])
