"""The DataFrame schema of Spark's own Kafka source, as a Spark DDL and as the exact Arrow schema.

Spark checks the first yielded RecordBatch against the Arrow form of the declared schema, to the
letter: `binary` not `large_binary`, `int32` for int, `timestamp[us, tz=UTC]`, same order.
"""

from __future__ import annotations

import pyarrow as pa

HEADER_TYPE = pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))

_PAYLOAD = [("key", "binary", pa.binary()), ("value", "binary", pa.binary())]
_METADATA = [
    ("topic", "string", pa.string()),
    ("partition", "int", pa.int32()),
    ("offset", "bigint", pa.int64()),
    ("timestamp", "timestamp", pa.timestamp("us", tz="UTC")),
    ("timestampType", "int", pa.int32()),
]
_HEADERS = [("headers", "array<struct<key:string,value:binary>>", HEADER_TYPE)]


def _columns(include_payload: bool, include_headers: bool):
    cols = (_PAYLOAD if include_payload else []) + _METADATA
    if include_headers and include_payload:
        cols = cols + _HEADERS
    return cols


def spark_ddl(include_payload: bool = True, include_headers: bool = False) -> str:
    return ", ".join(f"{name} {ddl}" for name, ddl, _ in _columns(include_payload,
                                                                   include_headers))


def arrow_schema(include_payload: bool = True, include_headers: bool = False) -> pa.Schema:
    return pa.schema([pa.field(name, typ) for name, _, typ in _columns(include_payload,
                                                                        include_headers)])


def simple_string(include_payload: bool = True, include_headers: bool = False) -> str:
    """The schema as Spark's StructType.simpleString() prints it (to compare a user's schema
    with, in a planner process, where no JVM can parse DDL)."""
    return "struct<" + ",".join(f"{name}:{ddl}" for name, ddl, _ in _columns(
        include_payload, include_headers)) + ">"
