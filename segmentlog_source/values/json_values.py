"""JSON values -> Arrow arrays of a Spark type, the type itself inferred from a sample or taken
from a JSON Schema.

Values follow Spark's JSON reader where a type asks for it: a string field takes any JSON value
(objects and arrays as their JSON text), timestamps and dates are ISO-8601 strings (or epoch
numbers: seconds for a timestamp, days for a date), decimals take numbers or numeric strings.
A value that is not JSON, or does not fit the type, makes its row malformed.

Inference merges the sample's values as Spark's does: objects become structs with their fields
sorted by name, integers bigint, other numbers double, integers and doubles together double,
anything else in conflict string.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
from decimal import Decimal, InvalidOperation
from typing import Callable, Sequence

import pyarrow as pa
from pyspark.sql.types import (ArrayType, BinaryType, BooleanType, DataType, DateType, DecimalType,
                               DoubleType, FloatType, LongType, MapType, NullType, StringType,
                               StructField, StructType, TimestampNTZType, TimestampType)

from .. import compat
from . import iso_time
from .avro_values import Decoded

_UTC = dt.timezone.utc


class JsonDecoder:
    def __init__(self, spark_type: DataType):
        spark_type = as_nullable(spark_type)    # as Spark's from_json: a missing field is null
        self.spark_type = spark_type
        self.arrow_type = compat.to_arrow_type(spark_type)
        self.coerce = _coercer(spark_type)

    def decode(self, payloads: Sequence[bytes | None]) -> Decoded:
        n = len(payloads)
        values: list = [None] * n
        errors: list[str | None] = [None] * n
        for i, payload in enumerate(payloads):
            if payload is None:
                continue
            try:
                values[i] = self.coerce(json.loads(payload))
            except (ValueError, TypeError, InvalidOperation, OverflowError) as err:
                errors[i] = f"not JSON of type {self.spark_type.simpleString()}: {err}"
            except RecursionError:
                errors[i] = "JSON nested too deeply to decode"
        try:
            return Decoded(pa.array(values, type=self.arrow_type), errors)
        except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError) as bulk:
            for i, value in enumerate(values):
                if value is None:
                    continue
                try:
                    pa.array([value], type=self.arrow_type)
                except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError) as err:
                    errors[i], values[i] = f"a value of type {self.spark_type.simpleString()} " \
                        f"cannot hold: {err}", None
            del bulk
            return Decoded(pa.array(values, type=self.arrow_type), errors)


class _Mismatch(ValueError):
    pass


def _coercer(t: DataType) -> Callable:
    if isinstance(t, StructType):
        fields = [(f.name, _coercer(f.dataType)) for f in t.fields]

        def struct(v):
            if v is None:
                return None
            if not isinstance(v, dict):
                raise _Mismatch(f"expected an object, found {type(v).__name__}")
            return {name: fn(v.get(name)) for name, fn in fields}
        return struct
    if isinstance(t, ArrayType):
        item = _coercer(t.elementType)
        return lambda v: None if v is None else [item(x) for x in _expect(v, list)]
    if isinstance(t, MapType):
        value = _coercer(t.valueType)
        return lambda v: None if v is None else {k: value(x) for k, x in _expect(v, dict).items()}
    if isinstance(t, StringType):    # any JSON value, as Spark's compact text of it
        return lambda v: v if v is None or isinstance(v, str) else json.dumps(
            v, separators=(",", ":"), ensure_ascii=False)
    if isinstance(t, BinaryType):    # base64, as Spark's from_json reads binary
        return lambda v: None if v is None else base64.b64decode(
            v if isinstance(v, str) else _refuse(v, "base64 text"), validate=True)
    if isinstance(t, (TimestampType, TimestampNTZType)):
        return lambda v: _timestamp(v, isinstance(t, TimestampType))
    if isinstance(t, DateType):
        return _date
    if isinstance(t, DecimalType):
        return lambda v: None if v is None else Decimal(str(v))
    if isinstance(t, BooleanType):
        return lambda v: v if v is None or isinstance(v, bool) else _refuse(v, "boolean")
    if isinstance(t, (DoubleType, FloatType)):
        return lambda v: v if v is None or (isinstance(v, (int, float)) and not isinstance(
            v, bool)) else _refuse(v, "number")
    return lambda v: v if v is None or (isinstance(v, int) and not isinstance(v, bool)) \
        else _refuse(v, "integer")


def _expect(v, kind):
    if not isinstance(v, kind):
        raise _Mismatch(f"expected {'an array' if kind is list else 'an object'}, "
                        f"found {type(v).__name__}")
    return v


def _refuse(v, what: str):
    raise _Mismatch(f"expected {what}, found {json.dumps(v)[:40]}")


def _timestamp(v, utc: bool):
    if v is None:
        return None
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        value = dt.datetime.fromtimestamp(v, _UTC)
        return value if utc else value.replace(tzinfo=None)
    if not isinstance(v, str):
        _refuse(v, "a timestamp")
    try:
        value = iso_time.parse(v)
    except ValueError as err:
        raise _Mismatch(f"expected a timestamp, found {v!r}: {err}") from None
    if not utc and value.tzinfo is not None:
        raise _Mismatch(f"a timestamp_ntz has no time zone, found {v!r}")
    if utc and value.tzinfo is None:
        value = value.replace(tzinfo=_UTC)
    return value


def _date(v):
    if v is None:
        return None
    if isinstance(v, int) and not isinstance(v, bool):
        return dt.date(1970, 1, 1) + dt.timedelta(days=v)
    if not isinstance(v, str):
        _refuse(v, "a date")
    if len(v) > 10 and v[10] not in "T ":
        _refuse(v, "a date")
    m = iso_time.match(v[:10])
    if m is None:
        _refuse(v, "a date")
    try:
        return iso_time.to_datetime(m).date()
    except ValueError as err:
        raise _Mismatch(f"expected a date, found {v!r}: {err}") from None


def infer_type(samples: Sequence[bytes]) -> DataType:
    """The Spark type of a sample of JSON values (those that are not JSON are left out)."""
    merged: DataType = NullType()
    for payload in samples:
        try:
            merged = _merge(merged, _type_of(json.loads(payload)))
        except (ValueError, RecursionError):
            continue
    return StringType() if isinstance(merged, NullType) else _no_nulls(merged)


def _type_of(v) -> DataType:
    if v is None:
        return NullType()
    if isinstance(v, bool):
        return BooleanType()
    if isinstance(v, int):
        return LongType()
    if isinstance(v, float):
        return DoubleType()
    if isinstance(v, str):
        return StringType()
    if isinstance(v, list):
        element: DataType = NullType()
        for x in v:
            element = _merge(element, _type_of(x))
        return ArrayType(element, True)
    return StructType([StructField(k, _type_of(v[k]), True) for k in sorted(v)])


def _merge(a: DataType, b: DataType) -> DataType:
    if isinstance(a, NullType):
        return b
    if isinstance(b, NullType) or a == b:
        return a
    if {type(a), type(b)} == {LongType, DoubleType}:
        return DoubleType()
    if isinstance(a, StructType) and isinstance(b, StructType):
        fields = {f.name: f.dataType for f in a.fields}
        for f in b.fields:
            fields[f.name] = _merge(fields.get(f.name, NullType()), f.dataType)
        return StructType([StructField(k, fields[k], True) for k in sorted(fields)])
    if isinstance(a, ArrayType) and isinstance(b, ArrayType):
        return ArrayType(_merge(a.elementType, b.elementType), True)
    return StringType()


def _no_nulls(t: DataType) -> DataType:
    """Fields only ever null in the sample become strings (Spark infers them so too)."""
    if isinstance(t, NullType):
        return StringType()
    if isinstance(t, StructType):
        return StructType([StructField(f.name, _no_nulls(f.dataType), True) for f in t.fields])
    if isinstance(t, ArrayType):
        return ArrayType(_no_nulls(t.elementType), True)
    return t


_JSON_SCHEMA_PRIMITIVES = {"string": StringType, "integer": LongType, "number": DoubleType,
                           "boolean": BooleanType}


def json_schema_type(schema) -> DataType:
    """The Spark type of values valid under a JSON Schema: objects with properties become
    structs (fields in the schema's order), arrays arrays; a schema this mapping cannot pin
    to one type (oneOf, no type) keeps its values as JSON text."""
    if isinstance(schema, str):
        schema = json.loads(schema)
    if not isinstance(schema, dict):
        return StringType()
    kind = schema.get("type")
    if isinstance(kind, list):
        kinds = [k for k in kind if k != "null"]
        kind = kinds[0] if len(kinds) == 1 else None
    if kind == "object" and "properties" in schema:
        return StructType([StructField(name, json_schema_type(sub), True)
                           for name, sub in schema["properties"].items()])
    if kind == "array" and isinstance(schema.get("items"), dict):
        return ArrayType(json_schema_type(schema["items"]), True)
    if kind in _JSON_SCHEMA_PRIMITIVES:
        return _JSON_SCHEMA_PRIMITIVES[kind]()
    return StringType()


def as_nullable(t: DataType) -> DataType:
    if isinstance(t, StructType):
        return StructType([StructField(f.name, as_nullable(f.dataType), True) for f in t.fields])
    if isinstance(t, ArrayType):
        return ArrayType(as_nullable(t.elementType), True)
    if isinstance(t, MapType):
        return MapType(t.keyType, as_nullable(t.valueType), True)
    return t
