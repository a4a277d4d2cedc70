"""Schema Registry Avro values of a generated log (tests/values/avro_cases.py) read back decoded:
every Avro type against Spark's own from_avro, schema evolution to the newest version, keys,
and malformed payloads under PERMISSIVE, FAILFAST and DROPMALFORMED."""

from __future__ import annotations

import json

import pytest
from pyspark.errors import PySparkException
from pyspark.sql import functions as F
from pyspark.sql.avro.functions import from_avro

from tests.conftest import SPARK_AVRO_MISSING
from tests.values import avro_cases as case
from tests.values.logs import framed, schema_record, write_partition, write_registry

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    data_dir = tmp_path_factory.mktemp("values")
    return data_dir, case.write_case(data_dir)


def read(spark, data_dir, **options):
    options.setdefault("subscribe", case.TOPIC)
    return spark.read.format("segmentlog").options(valueFormat="confluent-avro",
                                                   **options).load(str(data_dir))


def spark_from_avro(spark, df, schema) -> dict[int, dict]:
    if SPARK_AVRO_MISSING:
        pytest.fail("spark-avro is not on the classpath: " + SPARK_AVRO_MISSING[0])
    out = df.select("offset", from_avro(F.expr("substring(value, 6)"), json.dumps(schema))
                    .alias("v"))
    return {r.offset: r.v.asDict(recursive=True) for r in out.collect()}


def test_every_avro_type_decodes_as_spark_from_avro_does(spark, generated):
    data_dir, kinds = generated
    df = read(spark, data_dir, readerSchemaId="1")
    v1 = [o for o, k in kinds.items() if k[0] == "good" and k[1] == 1]
    ours = {r.offset: r.value_decoded.asDict(recursive=True)
            for r in df.where(F.col("offset").isin(v1)).collect()}
    expected = spark_from_avro(spark, df.where(F.col("offset").isin(v1)), case.V1)
    assert len(ours) == case.GOOD_PER_VERSION
    assert ours == expected
    theirs_type = df.select(from_avro(F.expr("substring(value, 6)"), json.dumps(case.V1))
                            .alias("v")).schema["v"].dataType
    assert df.schema["value_decoded"].dataType.simpleString() == theirs_type.simpleString()


def test_older_versions_resolve_to_the_newest_and_keys_decode(spark, generated):
    data_dir, kinds = generated
    df = read(spark, data_dir, keyFormat="confluent-avro")
    fields = df.schema["value_decoded"].dataType.names
    assert fields[-2:] == ["added", "cnt"] and "gone" not in fields   # v3 is soft-deleted
    rows = {r.offset: r for r in df.collect()}
    v2_rows = [o for o, k in kinds.items() if k[0] == "good" and k[1] == 2]
    expected_v2 = spark_from_avro(spark, df.where(F.col("offset").isin(v2_rows)), case.V2)
    for offset, kind in kinds.items():
        row = rows[offset]
        if kind[0] != "good":
            continue
        assert row.key_decoded.id == kind[2] and row.key_error is None
        value = row.value_decoded.asDict(recursive=True)
        if kind[1] == 2:
            assert value == expected_v2[offset]
        else:    # defaults fill the fields v1 lacks
            assert (value["added"], value["cnt"]) == ("fresh", None)
            assert value["i"] == case.datum(kind[2], 1)["i"]


def test_malformed_values_under_each_mode(spark, generated):
    data_dir, kinds = generated
    malformed = {o: k[1] for o, k in kinds.items() if k[0] == "malformed"}
    tombstone = next(o for o, k in kinds.items() if k[0] == "tombstone")

    rows = {r.offset: r for r in read(spark, data_dir).collect()}          # PERMISSIVE
    assert len(rows) == len(kinds)
    for offset, reason in malformed.items():
        assert rows[offset].value_decoded is None
        assert reason in rows[offset].value_error, (offset, rows[offset].value_error)
    assert rows[tombstone].value_decoded is None and rows[tombstone].value_error is None
    assert sum(r.value_error is None for r in rows.values()) == len(kinds) - len(malformed)

    dropped = read(spark, data_dir, mode="DROPMALFORMED")
    assert "value_error" not in dropped.columns
    assert sorted(r.offset for r in dropped.collect()) == sorted(
        o for o in kinds if o not in malformed)

    first = min(malformed)
    with pytest.raises(PySparkException) as failure:
        read(spark, data_dir, mode="failfast").collect()
    message = str(failure.value)
    assert f"topic {case.TOPIC} partition 0 offset {first}, schema id {case.UNKNOWN_ID}" \
        in message and "unknown schema id 99" in message


def test_a_subject_whose_versions_do_not_resolve_names_the_schema_ids(spark, tmp_path):
    old = {"type": "record", "name": "R", "fields": [{"name": "a", "type": "int"}]}
    new = {"type": "record", "name": "R", "fields": [{"name": "a", "type": "string"},
                                                     {"name": "b", "type": "int"}]}
    write_registry(tmp_path, [schema_record("t-value", 1, 7, old),
                              schema_record("t-value", 2, 8, new)])
    write_partition(tmp_path, "t", [(None, framed(7, old, {"a": 1}))])
    with pytest.raises(PySparkException) as failure:
        read(spark, tmp_path, subscribe="t").schema
    message = str(failure.value)
    assert "subject t-value version 1" in message and "schema id 7" in message
    assert "reader schema id 8" in message and "readerSchemaId" in message
    rows = read(spark, tmp_path, subscribe="t", readerSchemaId="7").collect()
    assert [r.value_decoded.a for r in rows] == [1]


def test_topics_with_different_schemas_need_one_reader(spark, tmp_path):
    a = {"type": "record", "name": "A", "fields": [{"name": "a", "type": "int"}]}
    b = {"type": "record", "name": "B", "fields": [{"name": "b", "type": "string"}]}
    write_registry(tmp_path, [schema_record("ta-value", 1, 1, a),
                              schema_record("tb-value", 1, 2, b)])
    write_partition(tmp_path, "ta", [(None, framed(1, a, {"a": 5}))])
    write_partition(tmp_path, "tb", [(None, framed(2, b, {"b": "x"}))])
    with pytest.raises(PySparkException) as failure:
        spark.read.format("segmentlog").option("valueFormat", "confluent-avro") \
            .load(str(tmp_path)).schema
    message = str(failure.value)
    assert "ta-value (newest schema id 1), tb-value (newest schema id 2)" in message
    assert "subscribe" in message and "readerSchemaId" in message
    rows = {r.topic: r for r in spark.read.format("segmentlog").options(
        valueFormat="confluent-avro", readerSchemaId="1").load(str(tmp_path)).collect()}
    assert rows["ta"].value_decoded.a == 5 and rows["ta"].value_error is None
    assert rows["tb"].value_decoded is None
    assert "schema id 2 cannot be resolved to reader schema id 1" in rows["tb"].value_error
    assert rows["_schemas"].value_error.startswith("bad magic byte 0x7b")


def test_json_schema_subjects_decode_as_json_and_protobuf_is_refused(spark, tmp_path):
    json_schema = {"type": "object", "properties": {
        "n": {"type": "integer"}, "tags": {"type": "array", "items": {"type": "string"}},
        "inner": {"type": "object", "properties": {"ok": {"type": "boolean"}}}}}
    write_registry(tmp_path, [
        schema_record("js-value", 1, 1, json.dumps(json_schema), schema_type="JSON"),
        schema_record("pb-value", 1, 2, 'syntax = "proto3"; message M { int64 n = 1; }',
                      schema_type="PROTOBUF")])

    def framed_json(schema_id, obj):
        return b"\x00" + schema_id.to_bytes(4, "big") + json.dumps(obj).encode()
    write_partition(tmp_path, "js", [
        (None, framed_json(1, {"n": 5, "tags": ["a"], "inner": {"ok": True}})),
        (None, framed_json(1, {"n": "five"})),
        (None, framed_json(2, {"n": 1}))])
    write_partition(tmp_path, "pb", [(None, b"\x00\x00\x00\x00\x02\x00\x08\x01")])
    df = read(spark, tmp_path, subscribe="js")
    assert df.schema["value_decoded"].dataType.simpleString() == \
        "struct<n:bigint,tags:array<string>,inner:struct<ok:boolean>>"
    rows = df.orderBy("offset").collect()
    assert rows[0].value_decoded.asDict(recursive=True) == {
        "n": 5, "tags": ["a"], "inner": {"ok": True}}
    assert "expected integer" in rows[1].value_error
    assert "schema id 2 is a PROTOBUF schema, the reader schema JSON" in rows[2].value_error
    with pytest.raises(PySparkException, match="is a Protobuf schema"):
        read(spark, tmp_path, subscribe="pb").schema
