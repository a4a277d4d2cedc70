"""A generated topic of Schema Registry Avro values covering every Avro type and logical type,
two value schema versions (the second adds fields with defaults), a key schema, a soft-deleted
third version, and malformed payloads of every kind."""

from __future__ import annotations

import copy
from decimal import Decimal

from tests.values.logs import framed, noop, schema_record, write_partition, write_registry

TOPIC = "everything"
INNER = {"type": "record", "name": "Inner", "fields": [
    {"name": "x", "type": "int"}, {"name": "y", "type": ["null", "string"]}]}
V1 = {"type": "record", "name": "Everything", "namespace": "test.values", "fields": [
    {"name": "b", "type": "boolean"},
    {"name": "i", "type": "int"},
    {"name": "l", "type": "long"},
    {"name": "f", "type": "float"},
    {"name": "d", "type": "double"},
    {"name": "s", "type": "string"},
    {"name": "by", "type": "bytes"},
    {"name": "e", "type": {"type": "enum", "name": "Color", "symbols": ["RED", "GREEN"]}},
    {"name": "fx", "type": {"type": "fixed", "name": "Four", "size": 4}},
    {"name": "arr", "type": {"type": "array", "items": "int"}},
    {"name": "m", "type": {"type": "map", "values": "long"}},
    {"name": "rec", "type": INNER},
    {"name": "opt", "type": ["null", "string"]},
    {"name": "u", "type": ["int", "string", "Inner"]},
    {"name": "il", "type": ["int", "long"]},
    {"name": "fd", "type": ["float", "double"]},
    {"name": "its", "type": ["int", {"type": "long", "logicalType": "timestamp-millis"}]},
    {"name": "uts", "type": ["null", "int", {"type": "long", "logicalType": "timestamp-millis"},
                             "string"]},
    {"name": "dt", "type": {"type": "int", "logicalType": "date"}},
    {"name": "tsm", "type": {"type": "long", "logicalType": "timestamp-millis"}},
    {"name": "tsu", "type": {"type": "long", "logicalType": "timestamp-micros"}},
    {"name": "ltsm", "type": {"type": "long", "logicalType": "local-timestamp-millis"}},
    {"name": "ltsu", "type": {"type": "long", "logicalType": "local-timestamp-micros"}},
    {"name": "dec", "type": {"type": "bytes", "logicalType": "decimal", "precision": 9,
                             "scale": 3}},
    {"name": "decf", "type": {"type": "fixed", "name": "Dec8", "size": 8,
                              "logicalType": "decimal", "precision": 12, "scale": 2}},
    {"name": "uid", "type": {"type": "string", "logicalType": "uuid"}},
    {"name": "tm", "type": {"type": "int", "logicalType": "time-millis"}},
    {"name": "tu", "type": {"type": "long", "logicalType": "time-micros"}},
    {"name": "items", "type": {"type": "array", "items": {
        "type": "record", "name": "Item", "fields": [
            {"name": "name", "type": "string"}, {"name": "tags", "type": {
                "type": "map", "values": {"type": "array", "items": "string"}}}]}}},
]}
V2 = copy.deepcopy(V1)
V2["fields"] += [{"name": "added", "type": "string", "default": "fresh"},
                 {"name": "cnt", "type": ["null", "long"], "default": None}]
# V1 with its bytes decimal as plain bytes: to write an unscaled value past the precision
V1_RAW_DECIMAL = copy.deepcopy(V1)
V1_RAW_DECIMAL["fields"] = [f if f["name"] != "dec" else {"name": "dec", "type": "bytes"}
                            for f in V1_RAW_DECIMAL["fields"]]
V3_DELETED = copy.deepcopy(V2)
V3_DELETED["fields"].append({"name": "gone", "type": "int", "default": 0})
KEY = {"type": "record", "name": "Key", "fields": [{"name": "id", "type": "long"}]}
V1_ID, V2_ID, KEY_ID, V3_ID, UNKNOWN_ID = 1, 2, 3, 4, 99
GOOD_PER_VERSION = 12


def datum(i: int, version: int) -> dict:
    union = [i * 7 - 30, f"s{i}", {"x": i, "y": None if i % 2 else "why"}][i % 3]
    out = {
        "b": i % 2 == 0, "i": -(2**31) if i == 0 else i * 1000 - 5, "l": 2**62 + i,
        "f": i / 4, "d": -i / 3, "s": f"ünï-{i}" * (i % 3), "by": bytes(range(i % 7)),
        "e": ["RED", "GREEN"][i % 2], "fx": bytes([i, 1, 2, 3]), "arr": list(range(i % 4)),
        "m": {f"k{j}": j * i for j in range(i % 3)}, "rec": {"x": i, "y": str(i) * 2},
        "opt": None if i % 3 == 0 else f"o{i}", "u": union, "il": i * 2**33,
        "fd": i + 0.5, "its": 2**40 + i,
        "uts": [None, i, 10**12 + i, f"s{i}"][i % 4],
        "dt": -400 + i * 1000, "tsm": -86_400_000 + i * 10**11,
        "tsu": 1_600_000_000_000_000 + i, "ltsm": 1_000_000 * i, "ltsu": 123 + i,
        "dec": Decimal(f"{i * 1111}.{i:03d}"), "decf": Decimal(f"-{i}.{i % 100:02d}"),
        "uid": f"00000000-0000-4000-8000-{i:012d}",
        "tm": i * 3_600_000 + 1, "tu": 86_399_999_999 - i,
        "items": [{"name": f"n{j}", "tags": {"t": ["a", "b"][:j]}} for j in range(i % 3)],
    }
    if version == 2:
        out.update(added=f"added-{i}", cnt=None if i % 2 else i)
    return out


def write_case(data_dir) -> dict:
    """The topic and its `_schemas`; returns {offset: what the row is}."""
    registry = [
        noop(),
        schema_record(f"{TOPIC}-value", 1, V1_ID, V1),
        schema_record(f"{TOPIC}-value", 2, V2_ID, V2),
        schema_record(f"{TOPIC}-key", 1, KEY_ID, KEY),
        schema_record(f"{TOPIC}-value", 3, V3_ID, V3_DELETED),
        schema_record(f"{TOPIC}-value", 3, V3_ID, V3_DELETED, deleted=True),   # soft delete
        noop(),
    ]
    write_registry(data_dir, registry)
    records, kinds = [], {}
    for i in range(GOOD_PER_VERSION * 2):
        version = 1 if i < GOOD_PER_VERSION else 2
        schema, schema_id = (V1, V1_ID) if version == 1 else (V2, V2_ID)
        kinds[len(records)] = ("good", version, i)
        records.append((framed(KEY_ID, KEY, {"id": i}), framed(schema_id, schema,
                                                              datum(i, version))))
    good = framed(V1_ID, V1, datum(3, 1))
    too_precise = dict(datum(4, 1), dec=(10**9).to_bytes(5, "big", signed=True))
    malformed = {
        "unknown schema id 99": framed(UNKNOWN_ID, V1, datum(1, 1)),
        "bad magic byte 0x07": b"\x07" + good[1:],
        "schema-GUID framing": b"\x01" + bytes(16) + good[5:],
        "has more than 9 digits": framed(V1_ID, V1_RAW_DECIMAL, too_precise),
        "shorter than the 5-byte": b"\x00\x00\x00",
        "truncated": good[:len(good) // 2],
        "bytes left after the record": framed(V1_ID, KEY, {"id": 7}) + b"\x00" * 200,
    }
    for reason, payload in malformed.items():
        kinds[len(records)] = ("malformed", reason, None)
        records.append((framed(KEY_ID, KEY, {"id": -1}), payload))
    kinds[len(records)] = ("tombstone", None, None)
    records.append((framed(KEY_ID, KEY, {"id": -2}), None))
    write_partition(data_dir, TOPIC, records, per_batch=7)
    return kinds
