"""The Avro decoder without Spark: reading a writer schema alone and adding the reader's
defaults gives what fastavro's resolution gives, and a body that reads on into its neighbour
in the batch's buffer is still named for what it is."""

from __future__ import annotations

import copy
import json

import pyarrow as pa

from segmentlog_source.values.avro_values import defaults_only
from segmentlog_source.values.column_decoders import ConfluentColumn
from tests.values import avro_cases as case
from tests.values.logs import framed


def column(writers: dict) -> ConfluentColumn:
    texts = {i: json.dumps(s) for i, s in writers.items()}
    return ConfluentColumn("AVRO", case.V2_ID, texts[case.V2_ID], texts,
                           {i: "AVRO" for i in texts})


def test_the_defaults_shortcut_equals_resolution():
    payloads = pa.array([framed(case.V1_ID, case.V1, case.datum(i, 1)) for i in range(30)]
                        + [None, framed(case.V2_ID, case.V2, case.datum(3, 2))], pa.binary())
    fast = column({case.V1_ID: case.V1, case.V2_ID: case.V2})
    decoded, _ = fast.decode(payloads)
    assert fast.avro.defaults == {case.V1_ID: {"added": "fresh", "cnt": None}}
    slow = column({case.V1_ID: case.V1, case.V2_ID: case.V2})
    slow.avro.writer(case.V1_ID)
    slow.avro.defaults.clear()                 # fastavro's resolution for every row
    resolved, _ = slow.decode(payloads)
    assert decoded.errors == resolved.errors == [None] * 32
    assert decoded.array.equals(resolved.array)


def test_what_needs_resolution_gets_it():
    assert defaults_only(case.V1, case.V2) == {"added": "fresh", "cnt": None}
    changed = copy.deepcopy(case.V2)
    changed["fields"][1]["type"] = "long"                     # int -> long: a promotion
    renamed = copy.deepcopy(case.V2)
    renamed["fields"][-1]["aliases"] = ["old"]
    logical = copy.deepcopy(case.V1)
    logical["fields"].append({"name": "when", "type": {
        "type": "long", "logicalType": "timestamp-millis"}, "default": 0})
    no_default = copy.deepcopy(case.V1)
    no_default["fields"].append({"name": "must", "type": "int"})
    other_name = dict(copy.deepcopy(case.V2), name="Different")
    for reader in (changed, renamed, logical, no_default, other_name):
        assert defaults_only(case.V1, reader) is None


def test_short_bodies_in_a_shared_buffer_keep_their_reasons():
    good = framed(case.V1_ID, case.V1, case.datum(5, 1))
    cut = [good[:n] for n in range(5, len(good))]
    # each cut body is followed by a whole one: reading on would find bytes to decode
    payloads = pa.array([x for c in cut for x in (c, good)], pa.binary())
    decoded, ids = column({case.V1_ID: case.V1, case.V2_ID: case.V2}).decode(payloads)
    reasons = decoded.errors[0::2]
    assert all(r is not None and (r.startswith("truncated") or "not a value" in r)
               for r in reasons), reasons
    assert decoded.errors[1::2] == [None] * len(cut)
    assert decoded.array.null_count == len(cut)


def plain(schema):
    from segmentlog_source.values.column_decoders import AvroColumn
    return AvroColumn(json.dumps(schema))


def avro_bytes(schema, datum) -> bytes:
    import io

    import fastavro
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, fastavro.parse_schema(schema), datum)
    return buf.getvalue()


def decode(schema, bodies):
    decoded, _ = plain(schema).decode(pa.array(bodies, pa.binary()))
    return decoded.array.to_pylist(), decoded.errors


def test_decimals_are_exact_to_38_digits():
    from decimal import Decimal
    schema = {"type": "record", "name": "D", "fields": [
        {"name": "m", "type": {"type": "bytes", "logicalType": "decimal", "precision": 38,
                               "scale": 18}},
        {"name": "w", "type": {"type": "fixed", "name": "F16", "size": 16,
                               "logicalType": "decimal", "precision": 38, "scale": 0}}]}
    raw = {"type": "record", "name": "D", "fields": [
        {"name": "m", "type": "bytes"}, {"name": "w", "type": {
            "type": "fixed", "name": "F16", "size": 16}}]}
    m = 12345678901234567890123456789012345678
    body = avro_bytes(raw, {"m": m.to_bytes(16, "big", signed=True),
                            "w": (10**38 - 1).to_bytes(16, "big", signed=True)})
    values, errors = decode(schema, [body])
    assert errors == [None]
    assert values[0] == {"m": Decimal("12345678901234567890.123456789012345678"),
                         "w": Decimal(10**38 - 1)}


def test_negative_union_and_enum_indexes_are_malformed():
    schema = {"type": "record", "name": "N", "fields": [
        {"name": "u", "type": ["null", "string"]},
        {"name": "e", "type": {"type": "enum", "name": "E", "symbols": ["A", "B", "C"]}}]}
    good = avro_bytes(schema, {"u": "hi", "e": "B"})
    bodies = [good, b"\x01\x04hi\x02", b"\x02\x04hi\x01", b"\x02\x04hi\x7f",
              b"\x02\x04hi\x06", b"\x0f\x04hi\x02"]
    values, errors = decode(schema, bodies)
    assert values[0] == {"u": "hi", "e": "B"} and errors[0] is None
    assert values[1:] == [None] * 5
    assert all(e is not None and "index out of range" in e for e in errors[1:]), errors


def test_union_members_are_the_branch_written():
    schema = {"type": "record", "name": "U", "namespace": "n", "fields": [
        {"name": "il", "type": ["int", "long", "string"]}]}
    # branch 1 (zigzag 2), a long: fastavro's writer would pick the int branch for 5
    bodies = [b"\x02" + avro_bytes("long", v) for v in (5, 2**40)]
    values, errors = decode(schema, bodies)
    assert errors == [None, None]
    assert values[0]["il"] == {"member0": None, "member1": 5, "member2": None}
    assert values[1]["il"]["member1"] == 2**40


def test_same_named_records_in_a_union_keep_their_namespace():
    schema = {"type": "record", "name": "U", "fields": [{"name": "xx", "type": [
        {"type": "record", "name": "X", "namespace": "a", "fields": [
            {"name": "p", "type": ["null", "string"]}]},
        {"type": "record", "name": "X", "namespace": "b", "fields": [
            {"name": "q", "type": "string"}]}]}]}
    body = b"\x02" + avro_bytes({"type": "string"}, "hi")   # branch 1, b.X {q: "hi"}
    values, errors = decode(schema, [body])
    assert errors == [None]
    assert values[0]["xx"] == {"member0": None, "member1": {"q": "hi"}}


def test_doubles_keep_their_precision_in_member_unions():
    schema = {"type": "record", "name": "U", "fields": [
        {"name": "fd", "type": ["float", "double", "string"]}]}
    body = b"\x02" + avro_bytes("double", 0.1)
    values, errors = decode(schema, [body])
    assert errors == [None] and values[0]["fd"]["member1"] == 0.1


def test_the_shortcut_is_not_taken_when_named_types_differ():
    inner = {"type": "record", "name": "Inner", "fields": [{"name": "v", "type": "int"}]}
    inner2 = {"type": "record", "name": "Inner", "fields": [
        {"name": "v", "type": "int"}, {"name": "w", "type": "int", "default": 7}]}
    writer = {"type": "record", "name": "R", "fields": [
        {"name": "d", "type": inner}, {"name": "a", "type": "Inner"}]}
    reader = {"type": "record", "name": "R", "fields": [
        {"name": "x", "type": ["null", inner2], "default": None}, {"name": "a", "type": "Inner"}]}
    assert defaults_only(writer, reader) is None
    enum_w = {"type": "record", "name": "R", "fields": [
        {"name": "e", "type": {"type": "enum", "name": "E", "symbols": ["A", "B", "C"]}}]}
    enum_r = {"type": "record", "name": "R", "fields": [
        {"name": "e", "type": {"type": "enum", "name": "E", "symbols": ["A", "B"],
                               "default": "A"}}]}
    assert defaults_only(enum_w, enum_r) is None


def test_plain_avro_bytes_keep_their_length_prefix_out():
    values, errors = decode("bytes", [b"\nhello"])
    assert (values, errors) == ([b"hello"], [None])


def test_arrays_of_zero_byte_items_are_refused():
    import pytest

    from segmentlog_source.values.avro_types import AvroSchemaError
    with pytest.raises(AvroSchemaError, match="items take no bytes"):
        plain({"type": "array", "items": "null"})
    with pytest.raises(AvroSchemaError, match="items take no bytes"):
        plain({"type": "array", "items": {"type": "record", "name": "E", "fields": []}})


def test_a_batch_decodes_in_pieces_as_it_does_whole():
    from segmentlog_source.values import record_decoding
    from segmentlog_source.values.record_decoding import RecordDecoding

    values = [framed(case.V1_ID, case.V1, case.datum(i % 20, 1)) for i in range(3000)]
    batch = pa.RecordBatch.from_arrays(
        [pa.array([None] * 3000, pa.binary()), pa.array(values, pa.binary()),
         pa.array(range(3000), pa.int64())], names=["key", "value", "offset"])
    decoding = RecordDecoding("PERMISSIVE", {"value": column({case.V1_ID: case.V1,
                                                              case.V2_ID: case.V2})})
    assert len(record_decoding._pieces(batch)) == 1
    whole, _ = decoding.apply(batch, "t", 0)
    saved = record_decoding.PIECE_BYTES
    record_decoding.PIECE_BYTES = 10_000
    try:
        assert len(record_decoding._pieces(batch)) > 20
        pieces, _ = decoding.apply(batch, "t", 0)
    finally:
        record_decoding.PIECE_BYTES = saved
    assert pieces.equals(whole)
    assert whole.column("value_error").null_count == 3000
