"""Avro schemas as Spark types, the way Spark's own `from_avro` maps them (spark-avro's
SchemaConverters), and the form of each schema fastavro decodes fastest into Arrow.

    Avro                                   Spark
    null / boolean / int / long            void / boolean / int / bigint
    float / double / string / bytes        float / double / string / binary
    enum / fixed                           string / binary
    record / array / map                   struct / array / map<string, _>
    union [null, X]                        X (nullable)
    union [int, long] / [float, double]    bigint / double
    any other union                        struct<member0, member1, ...> (one set per row)
    date (int)                             date
    time-millis (int) / time-micros (long) int / time(6) (PySpark 4.1 on: compat.TimeType)
    timestamp-millis/-micros (long)        timestamp
    local-timestamp-millis/-micros (long)  timestamp_ntz
    decimal (bytes, fixed)                 decimal(precision, scale)
    uuid (string)                          string
    timestamp-nanos (long)                 bigint, the nanoseconds (Spark 4.3's timestamp(9)
                                           needs a flag, and PySpark cannot read its schema)

Every Spark field is declared nullable: a malformed row leaves the whole struct null, and Spark
must not trust a NOT NULL it cannot check. Recursive schemas have no Spark type and are refused.

How fastavro's values become these types is avro_reading.py's part.
"""

from __future__ import annotations

import json

import pyarrow as pa
from pyspark.sql.types import (ArrayType, BinaryType, BooleanType, DataType, DateType,
                               DecimalType, DoubleType, FloatType, IntegerType, LongType,
                               MapType, NullType, StringType, StructField, StructType,
                               TimestampNTZType, TimestampType)

from .. import compat
from ..compat import TimeType
from ..errors import MalformedValueError

PRIMITIVES: dict[str, DataType] = {
    "null": NullType(), "boolean": BooleanType(), "int": IntegerType(), "long": LongType(),
    "float": FloatType(), "double": DoubleType(), "string": StringType(), "bytes": BinaryType(),
}
TIMESTAMPS = {"timestamp-millis": ("ms", True), "timestamp-micros": ("us", True),
              "local-timestamp-millis": ("ms", False), "local-timestamp-micros": ("us", False)}
NAMED = ("record", "enum", "fixed")
MAX_DECIMAL_PRECISION = 38


class AvroSchemaError(MalformedValueError):
    """An Avro schema Spark cannot represent (recursion, decimal precision above 38)."""


def _full_name(schema: dict, namespace: str | None) -> str:
    name = schema["name"]
    if "." in name:
        return name
    ns = schema.get("namespace", namespace)
    return f"{ns}.{name}" if ns else name


class _Walk:
    """One pass over a schema, resolving named-type references (by full or short name)."""

    def __init__(self):
        self.named: dict[str, dict] = {}
        self.stack: list[str] = []
        self.millis = False     # build types: millisecond timestamps marked

    def lookup(self, name: str, namespace: str | None) -> dict:
        for key in (name, f"{namespace}.{name}" if namespace else name):
            if key in self.named:
                return self.named[key]
        short = {k.rsplit(".", 1)[-1]: v for k, v in self.named.items()}
        if name in short:
            return short[name]
        raise AvroSchemaError(f"the Avro schema names type {name!r}, which it does not define")


class _MillisTimestamp(TimestampType):
    """A timestamp whose Avro longs count milliseconds (only in build types)."""


class _MillisTimestampNTZ(TimestampNTZType):
    """A local timestamp whose Avro longs count milliseconds (only in build types)."""


class _MicrosTime(TimeType):
    """A time of day whose Avro longs count microseconds (only in build types)."""

    def __init__(self):
        super().__init__(6)


def named_types(schema, namespace: str | None = None, out: dict | None = None) -> dict:
    """Every named type (record, enum, fixed) `schema` defines: full name -> its definition
    (the first, where a name is defined twice)."""
    out = {} if out is None else out
    if isinstance(schema, list):
        for s in schema:
            named_types(s, namespace, out)
    elif isinstance(schema, dict):
        kind = schema.get("type")
        if kind in NAMED:
            full = _full_name(schema, namespace)
            out.setdefault(full, schema)
            namespace = full.rsplit(".", 1)[0] if "." in full else None
        for f in schema.get("fields", []):
            named_types(f["type"], namespace, out)
        for key in ("items", "values"):
            if key in schema:
                named_types(schema[key], namespace, out)
        if isinstance(kind, (dict, list)):
            named_types(kind, namespace, out)
    return out


def spark_type(schema) -> DataType:
    """The Spark type of values of Avro `schema` (parsed JSON, or its text)."""
    return _spark(_parsed(schema), None, _Walk())


def arrow_types(schema) -> tuple[pa.DataType, pa.DataType]:
    """(build, final): the Arrow type fastavro's values of the prepared schema go into, and the
    Arrow type of Spark's `spark_type(schema)` it is cast to (they differ in millisecond
    timestamps only)."""
    walk = _Walk()
    walk.millis = True
    build = _arrow(_spark(_parsed(schema), None, walk))
    final = compat.to_arrow_type(spark_type(schema))
    return build, final


def _parsed(schema):
    if isinstance(schema, str) and schema.lstrip().startswith(("{", "[", '"')):
        return json.loads(schema)
    return schema


def _arrow(dt: DataType) -> pa.DataType:
    """to_arrow_type, with the millisecond timestamps of build types kept in milliseconds."""
    if isinstance(dt, _MillisTimestamp):
        return pa.timestamp("ms", tz="UTC")
    if isinstance(dt, _MillisTimestampNTZ):
        return pa.timestamp("ms")
    if isinstance(dt, _MicrosTime):
        return pa.time64("us")
    if isinstance(dt, StructType):
        return pa.struct([pa.field(f.name, _arrow(f.dataType), f.nullable) for f in dt])
    if isinstance(dt, ArrayType):
        return pa.list_(pa.field("element", _arrow(dt.elementType), dt.containsNull))
    if isinstance(dt, MapType):
        return pa.map_(pa.field("key", _arrow(dt.keyType), False),
                       pa.field("value", _arrow(dt.valueType), dt.valueContainsNull))
    return compat.to_arrow_type(dt)


def _spark(schema, namespace: str | None, walk: _Walk) -> DataType:
    if isinstance(schema, str):
        if schema in PRIMITIVES:
            return PRIMITIVES[schema]
        full = schema if "." in schema else (f"{namespace}.{schema}" if namespace else schema)
        if full in walk.stack or schema in walk.stack:
            raise AvroSchemaError(f"the Avro schema is recursive (type {full!r} contains "
                                  f"itself), which a Spark type cannot hold")
        return _spark(walk.lookup(schema, namespace), namespace, walk)
    if isinstance(schema, list):
        return _union(schema, namespace, walk)
    kind = schema["type"]
    logical = schema.get("logicalType")
    if kind in NAMED:
        full = _full_name(schema, namespace)
        walk.named[full] = schema
        namespace = full.rsplit(".", 1)[0] if "." in full else None
    if kind == "record":
        full = _full_name(schema, namespace if "." not in schema["name"] else None)
        walk.stack.append(full)
        fields = [StructField(f["name"], _spark(f["type"], namespace, walk), True)
                  for f in schema["fields"]]
        walk.stack.pop()
        return StructType(fields)
    if kind == "enum":
        return StringType()
    if kind == "array":
        return ArrayType(_spark(schema["items"], namespace, walk), True)
    if kind == "map":
        return MapType(StringType(), _spark(schema["values"], namespace, walk), True)
    if logical == "decimal" and kind in ("bytes", "fixed"):
        precision, scale = int(schema["precision"]), int(schema.get("scale", 0))
        if not 0 < precision <= MAX_DECIMAL_PRECISION or not 0 <= scale <= precision:
            raise AvroSchemaError(f"decimal({precision}, {scale}) has no Spark type (precision "
                                  f"1..{MAX_DECIMAL_PRECISION}, scale 0..precision)")
        return DecimalType(precision, scale)
    if kind == "fixed":
        return BinaryType()
    if logical in TIMESTAMPS and kind == "long":
        unit, utc = TIMESTAMPS[logical]
        if walk.millis and unit == "ms":
            return _MillisTimestamp() if utc else _MillisTimestampNTZ()
        return TimestampType() if utc else TimestampNTZType()
    if logical == "date" and kind == "int":
        return DateType()
    if logical == "time-micros" and kind == "long":
        return _MicrosTime() if walk.millis else TimeType(6)
    if isinstance(kind, (dict, list)):      # {"type": {"type": "string"}}: a wrapped type
        return _spark(kind, namespace, walk)
    return _spark(kind, namespace, walk)


def union_members(schema: list) -> list:
    return [s for s in schema if s != "null" and not (isinstance(s, dict) and
                                                       s.get("type") == "null")]


def _union(schema: list, namespace, walk: _Walk) -> DataType:
    members = union_members(schema)
    if not members:
        return NullType()
    if len(members) == 1:
        return _spark(members[0], namespace, walk)
    kinds = {_physical_kind(m) for m in members}
    if kinds <= {"int", "long"}:
        return LongType()
    if kinds <= {"float", "double"}:
        return DoubleType()
    return StructType([StructField(f"member{i}", _spark(m, namespace, walk), True)
                       for i, m in enumerate(members)])


def _physical_kind(member) -> str | None:
    """The primitive type of a union member, its logical type ignored (Spark's union rule
    compares Avro's Schema.Type: [int, timestamp-millis] is bigint there), else None."""
    if isinstance(member, str):
        return member if member in PRIMITIVES else None
    if isinstance(member, dict) and isinstance(member.get("type"), str):
        return _physical_kind(member["type"])
    return None


def _member_struct(members: list) -> bool:
    """Whether a union's non-null members become Spark's member0.. struct."""
    kinds = {_physical_kind(m) for m in members}
    return len(members) > 1 and not (kinds <= {"int", "long"} or kinds <= {"float", "double"})
