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
    time-millis (int) / time-micros (long) int / time(6)
    timestamp-millis/-micros (long)        timestamp
    local-timestamp-millis/-micros (long)  timestamp_ntz
    decimal (bytes, fixed)                 decimal(precision, scale)
    uuid (string)                          string
    timestamp-nanos (long)                 bigint, the nanoseconds (Spark 4.3's timestamp(9)
                                           needs a flag, and PySpark cannot read its schema)

Every Spark field is declared nullable: a malformed row leaves the whole struct null, and Spark
must not trust a NOT NULL it cannot check. Recursive schemas have no Spark type and are refused.

fastavro decodes a *prepared* schema: the same schema with the logical types removed, so
time values go into Arrow timestamp, date and time arrays as their ints instead of through
Python datetimes, uuid stays a plain string, and decimals are made here from their unscaled
bytes: fastavro rounds a decimal with more digits than its precision to fit (12345 at
decimal(4,2) reads 123.4), where Spark calls the value malformed, and so does segmentlog.
"""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Callable

import pyarrow as pa
from pyspark.sql.pandas.types import to_arrow_type
from pyspark.sql.types import (ArrayType, BinaryType, BooleanType, DataType, DateType,
                               DecimalType, DoubleType, FloatType, IntegerType, LongType,
                               MapType, NullType, StringType, StructField, StructType,
                               TimeType, TimestampNTZType, TimestampType)

from ..errors import MalformedValueError

PRIMITIVES: dict[str, DataType] = {
    "null": NullType(), "boolean": BooleanType(), "int": IntegerType(), "long": LongType(),
    "float": FloatType(), "double": DoubleType(), "string": StringType(), "bytes": BinaryType(),
}
TIMESTAMPS = {"timestamp-millis": ("ms", True), "timestamp-micros": ("us", True),
              "local-timestamp-millis": ("ms", False), "local-timestamp-micros": ("us", False)}
# Logical types left to Arrow (or to nothing): removed from the schema fastavro reads.
STRIPPED_LOGICAL = frozenset(TIMESTAMPS) | {"date", "uuid", "time-millis", "time-micros",
                                            "decimal"}
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
    final = to_arrow_type(spark_type(schema), timezone="UTC")
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
    return to_arrow_type(dt, timezone="UTC")


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
    kinds = {_plain_kind(m) for m in members}
    if kinds <= {"int", "long"}:
        return LongType()
    if kinds <= {"float", "double"}:
        return DoubleType()
    return StructType([StructField(f"member{i}", _spark(m, namespace, walk), True)
                       for i, m in enumerate(members)])


def _plain_kind(member) -> str | None:
    """The primitive type name of a union member without a logical type, else None."""
    if isinstance(member, str):
        return member if member in PRIMITIVES else None
    if isinstance(member, dict) and "logicalType" not in member and isinstance(
            member.get("type"), str):
        return _plain_kind(member["type"])
    return None


def _member_struct(members: list) -> bool:
    """Whether a union's non-null members become Spark's member0.. struct."""
    kinds = {_plain_kind(m) for m in members}
    return len(members) > 1 and not (kinds <= {"int", "long"} or kinds <= {"float", "double"})


def prepared(schema) -> object:
    """`schema` with the logical types Arrow converts better removed (see the module doc)."""
    if isinstance(schema, list):
        return [prepared(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: v for k, v in schema.items()}
    if out.get("logicalType") in STRIPPED_LOGICAL:
        del out["logicalType"]
    if out.get("type") == "record":
        out["fields"] = [dict(f, type=prepared(f["type"])) for f in out["fields"]]
    elif out.get("type") == "array":
        out["items"] = prepared(out["items"])
    elif out.get("type") == "map":
        out["values"] = prepared(out["values"])
    elif isinstance(out.get("type"), (dict, list)):
        out["type"] = prepared(out["type"])
    return out


def needs_conversion(schema, walk: _Walk | None = None, namespace=None) -> bool:
    """Whether fastavro's values of the prepared schema need converter(): a union that maps to
    Spark's member struct (values must be told which branch they took), or a decimal."""
    walk = walk or _Walk()
    walk = walk or _Walk()
    if isinstance(schema, list):
        members = union_members(schema)
        if _member_struct(members):
            return True
        return any(needs_conversion(m, walk, namespace) for m in members)
    if isinstance(schema, str) or not isinstance(schema, dict):
        return False
    kind = schema.get("type")
    if schema.get("logicalType") == "decimal" and kind in ("bytes", "fixed"):
        return True
    if kind == "record":
        full = _full_name(schema, namespace)
        if full in walk.named:
            return False
        walk.named[full] = schema
        return any(needs_conversion(f["type"], walk, namespace) for f in schema["fields"])
    if kind == "array":
        return needs_conversion(schema["items"], walk, namespace)
    if kind == "map":
        return needs_conversion(schema["values"], walk, namespace)
    return isinstance(kind, (dict, list)) and needs_conversion(kind, walk, namespace)


Convert = Callable[[object], object]


def converter(schema) -> Convert:
    """A function from fastavro's value of the prepared schema (decoded with
    return_named_type=True, which tags the named branches of unions as (name, value)) to
    Spark's form: member structs for unions, Decimals made from their unscaled bytes."""
    return _converter(schema, None, _Walk(), {})


def _identity(value):
    return value


def _converter(schema, namespace, walk: _Walk, done: dict) -> Convert:
    if isinstance(schema, str):
        if schema in PRIMITIVES:
            return _identity
        full = schema if "." in schema else (f"{namespace}.{schema}" if namespace else schema)
        if full in done:
            return lambda v: done[full](v)
        return _converter(walk.lookup(schema, namespace), namespace, walk, done)
    if isinstance(schema, list):
        return _union_converter(schema, namespace, walk, done)
    kind = schema["type"]
    if schema.get("logicalType") == "decimal" and kind in ("bytes", "fixed"):
        if kind == "fixed":
            walk.named[_full_name(schema, namespace)] = schema
        return _decimal(int(schema["precision"]), int(schema.get("scale", 0)))
    if kind in NAMED:
        full = _full_name(schema, namespace)
        walk.named[full] = schema
        namespace = full.rsplit(".", 1)[0] if "." in full else None
        if kind == "record":
            done[full] = _identity
            fields = [(f["name"], _converter(f["type"], namespace, walk, done))
                      for f in schema["fields"]]
            convert = _record(fields)
            done[full] = convert
            return convert
        return _identity
    if kind == "array":
        item = _converter(schema["items"], namespace, walk, done)
        return _identity if item is _identity else (
            lambda v: None if v is None else [item(x) for x in v])
    if kind == "map":
        value = _converter(schema["values"], namespace, walk, done)
        return _identity if value is _identity else (
            lambda v: None if v is None else {k: value(x) for k, x in v.items()})
    if isinstance(kind, (dict, list)):
        return _converter(kind, namespace, walk, done)
    return _identity


def _decimal(precision: int, scale: int) -> Convert:
    limit = 10 ** precision

    def convert(v):
        if v is None:
            return None
        unscaled = int.from_bytes(v, "big", signed=True)
        if not -limit < unscaled < limit:
            raise MalformedValueError(f"the decimal {unscaled}e-{scale} has more than "
                                      f"{precision} digits (decimal({precision}, {scale}))")
        return Decimal(unscaled).scaleb(-scale)
    return convert


def _record(fields) -> Convert:
    active = [(name, fn) for name, fn in fields if fn is not _identity]
    if not active:
        return _identity

    def convert(v):     # in place: fastavro's dicts are fresh, and copying costs ~10%
        if v is None:
            return None
        for name, fn in active:
            v[name] = fn(v.get(name))
        return v
    return convert


def _union_converter(schema: list, namespace, walk: _Walk, done: dict) -> Convert:
    members = union_members(schema)
    branches = [(_branch_key(m, namespace), _converter(m, namespace, walk, done))
                for m in members]
    as_struct = _member_struct(members)

    def convert(v):
        if v is None:
            return None
        name = None
        if isinstance(v, tuple) and len(v) == 2 and isinstance(v[0], str):
            name, v = v
        i = _pick(branches, name, v)
        value = branches[i][1](v)
        if not as_struct:
            return value
        return {f"member{j}": (value if j == i else None) for j in range(len(members))}
    return convert


def _branch_key(member, namespace) -> str:
    """What identifies a union branch in fastavro's output: a named type's full name, else the
    Avro type name of the value."""
    if isinstance(member, dict):
        kind = member.get("type")
        if kind in NAMED:
            return _full_name(member, namespace)
        if isinstance(kind, str):
            return kind
        return _branch_key(kind, namespace)
    if member in PRIMITIVES:
        return member
    return member if "." in member else (f"{namespace}.{member}" if namespace else member)


_PYTHON_KINDS = {bool: ("boolean",), int: ("int", "long"), float: ("float", "double"),
                 str: ("string",), bytes: ("bytes",), list: ("array",), dict: ("map",)}


def _pick(branches, name: str | None, value) -> int:
    keys = [k for k, _ in branches]
    if name is not None:
        for i, key in enumerate(keys):
            if key == name or key.rsplit(".", 1)[-1] == name.rsplit(".", 1)[-1]:
                return i
    kinds = _PYTHON_KINDS.get(type(value), ())
    for i, key in enumerate(keys):
        if key in kinds:
            return i
    if isinstance(value, str):          # a string with a logical type (uuid)
        return keys.index("string") if "string" in keys else 0
    raise MalformedValueError(f"a union value of Python type {type(value).__name__} matches "
                              f"none of the branches {keys}")
