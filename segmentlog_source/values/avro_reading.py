"""The schema fastavro reads, and how its values become Spark's (avro_types.py's types).

fastavro reads a *prepared* form of each schema, encoded the same way as the original:

- Logical types are removed, so time values go into Arrow timestamp, date and time arrays as
  their ints instead of through Python datetimes, uuid stays a plain string, and decimals are
  made here from their unscaled bytes, exactly (fastavro rounds a decimal with more digits than
  its precision to fit, 12345 at decimal(4,2) reading 123.4, where Spark calls the value
  malformed, and so does segmentlog).
- In a union that becomes Spark's member struct and holds both int and long (or float and
  double), those branches are wrapped in one-field records: a record of one long is encoded as
  the long, and fastavro then says which branch a value took (a Python int does not).
- Index traps: fastavro 1.13 takes a union branch or enum symbol by a Python list index, so a
  negative index (a damaged payload's byte 0x01 is -1) silently picks a branch from the end.
  Each union gets INDEX_TRAPS copies of an enum without symbols appended (reading one always
  fails), and each enum as many symbols no writer uses (the converter refuses them): an index
  from -1 to -INDEX_TRAPS, or past the end, makes the row malformed. An index below that reaches
  a real branch again; no payload a serializer wrote has one.

Arrays whose items take no bytes (null, empty records) are refused: a 12-byte payload could
claim 2**62 of them, and fastavro would build them all.
"""

from __future__ import annotations

import decimal
from decimal import Decimal
from typing import Callable

import fastavro

from ..errors import MalformedValueError
from .avro_types import (MAX_DECIMAL_PRECISION, NAMED, PRIMITIVES, TIMESTAMPS, AvroSchemaError,
                         _full_name, _member_struct, _parsed, _physical_kind, _Walk,
                         union_members)

STRIPPED_LOGICAL = frozenset(TIMESTAMPS) | {"date", "uuid", "time-millis", "time-micros",
                                            "decimal"}
INDEX_TRAPS = 256
TRAP_TYPE = "segmentlog_traps.bad_index"    # a full name: the same in any namespace
TRAP_SYMBOL = "__segmentlog_bad_symbol_"
WRAPPED = "__segmentlog_"
_EXACT = decimal.Context(prec=MAX_DECIMAL_PRECISION + 2)


def fastavro_schema(schema, traps: bool = True) -> dict:
    """fastavro's parsed form of the prepared schema (with the index traps unless told)."""
    ready = prepared(_parsed(schema))
    _refuse_unbounded(ready, {})
    return fastavro.parse_schema(with_index_traps(ready) if traps else ready)


def prepared(schema, path: str = "r") -> object:
    """`schema` as fastavro reads it here (the module doc), before the index traps."""
    if isinstance(schema, list):
        members = union_members(schema)
        kinds = {_physical_kind(m) for m in members}
        wrap = _member_struct(members) and ({"int", "long"} <= kinds
                                            or {"float", "double"} <= kinds)
        out = []
        for i, member in enumerate(schema):
            kind = _physical_kind(member)
            if wrap and kind in ("int", "long", "float", "double"):
                out.append({"type": "record", "name": f"{WRAPPED}{kind}_{path}",
                            "fields": [{"name": "v", "type": kind}]})
            else:
                out.append(prepared(member, f"{path}_m{i}"))
        return out
    if not isinstance(schema, dict):
        return schema
    out = dict(schema)
    if out.get("logicalType") in STRIPPED_LOGICAL:
        del out["logicalType"]
    if out.get("type") == "record":
        out["fields"] = [dict(f, type=prepared(f["type"], f"{path}_{f['name']}"))
                         for f in out["fields"]]
    elif out.get("type") == "array":
        out["items"] = prepared(out["items"], f"{path}_items")
    elif out.get("type") == "map":
        out["values"] = prepared(out["values"], f"{path}_values")
    elif isinstance(out.get("type"), (dict, list)):
        out["type"] = prepared(out["type"], path)
    return out


def with_index_traps(schema, defined: list | None = None):
    defined = [False] if defined is None else defined
    if isinstance(schema, list):
        out = [with_index_traps(s, defined) for s in schema]
        if not defined[0]:
            defined[0] = True
            out.append({"type": "enum", "name": TRAP_TYPE, "symbols": []})
        return out + [TRAP_TYPE] * (INDEX_TRAPS - (len(out) - len(schema)))
    if not isinstance(schema, dict):
        return schema
    out = dict(schema)
    kind = out.get("type")
    if kind == "enum":
        out["symbols"] = list(out["symbols"]) + [f"{TRAP_SYMBOL}{i}" for i in
                                                 range(INDEX_TRAPS)]
    elif kind == "record":
        out["fields"] = [dict(f, type=with_index_traps(f["type"], defined))
                         for f in out["fields"]]
    elif kind == "array":
        out["items"] = with_index_traps(out["items"], defined)
    elif kind == "map":
        out["values"] = with_index_traps(out["values"], defined)
    elif isinstance(kind, (dict, list)):
        out["type"] = with_index_traps(kind, defined)
    return out


def _refuse_unbounded(schema, named: dict) -> None:
    if isinstance(schema, list):
        for s in schema:
            _refuse_unbounded(s, named)
    elif isinstance(schema, dict):
        kind = schema.get("type")
        if kind in NAMED:
            named[schema["name"]] = schema
        if kind == "array" and _zero_bytes(schema["items"], named, set()):
            raise AvroSchemaError("an array whose items take no bytes (null, an empty record): "
                                  "a payload may claim any number of them, unbounded in memory")
        for key in ("items", "values"):
            if key in schema:
                _refuse_unbounded(schema[key], named)
        for f in schema.get("fields", []):
            _refuse_unbounded(f["type"], named)
        if isinstance(kind, (dict, list)):
            _refuse_unbounded(kind, named)


def _zero_bytes(schema, named: dict, seen: set) -> bool:
    if isinstance(schema, str):
        if schema == "null":
            return True
        target = named.get(schema) or named.get(schema.rsplit(".", 1)[-1])
        if target is None or schema in seen:
            return False
        return _zero_bytes(target, named, seen | {schema})
    if isinstance(schema, dict):
        kind = schema.get("type")
        if kind == "record":
            named[schema["name"]] = schema
            return all(_zero_bytes(f["type"], named, seen) for f in schema["fields"])
        if kind == "fixed":
            return int(schema.get("size", 1)) == 0
        return isinstance(kind, str) and _zero_bytes(kind, named, seen)
    return False


def needs_conversion(schema, walk: _Walk | None = None, namespace=None) -> bool:
    """Whether fastavro's values need converter(): a union that becomes Spark's member struct
    (values must be told which branch they took), a decimal, or an enum (its traps)."""
    walk = walk or _Walk()
    if isinstance(schema, list):
        members = union_members(schema)
        return _member_struct(members) or any(needs_conversion(m, walk, namespace)
                                              for m in members)
    if isinstance(schema, str) or not isinstance(schema, dict):
        return False
    kind = schema.get("type")
    if kind == "enum" or (schema.get("logicalType") == "decimal"
                          and kind in ("bytes", "fixed")):
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
    Spark's form: member structs for unions, exact Decimals, trap symbols refused."""
    return _converter(_parsed(schema), None, _Walk(), {})


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
        done[full] = _enum_check if kind == "enum" else _identity
        if kind != "record":
            return done[full]
        namespace = full.rsplit(".", 1)[0] if "." in full else None
        fields = [(f["name"], _converter(f["type"], namespace, walk, done))
                  for f in schema["fields"]]
        done[full] = convert = _record(fields)
        return convert
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


def _enum_check(v):
    if v is not None and v.startswith(TRAP_SYMBOL):
        raise MalformedValueError("an enum symbol index out of range")
    return v


def _decimal(precision: int, scale: int) -> Convert:
    limit = 10 ** precision

    def convert(v):
        if v is None:
            return None
        unscaled = int.from_bytes(v, "big", signed=True)
        if not -limit < unscaled < limit:
            raise MalformedValueError(f"the decimal {unscaled}e-{scale} has more than "
                                      f"{precision} digits (decimal({precision}, {scale}))")
        return Decimal(unscaled).scaleb(-scale, _EXACT)
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
        short = None if name is None else name.rsplit(".", 1)[-1]
        if short is not None and short.startswith(WRAPPED):     # int/long, float/double
            i = [k for k, _ in branches].index(short.split("_")[3])
            v = v["v"]
        else:
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
        if name in keys:                            # a full name: exact
            return keys.index(name)
        short = [i for i, k in enumerate(keys) if k.rsplit(".", 1)[-1] == name]
        if len(short) == 1:
            return short[0]
    kinds = _PYTHON_KINDS.get(type(value), ())
    for i, key in enumerate(keys):
        if key in kinds:
            return i
    if isinstance(value, str):          # a string with a logical type (uuid)
        return keys.index("string") if "string" in keys else 0
    raise MalformedValueError(f"a union value of Python type {type(value).__name__} matches "
                              f"none of the branches {keys}")
