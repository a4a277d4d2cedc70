"""keyFormat/valueFormat string, json (a DDL schema, or inferred) and plain avro (schema JSON or
an .avsc file), and the options' errors."""

from __future__ import annotations

import datetime as dt
import io
import json
from decimal import Decimal

import fastavro
import pytest
from pyspark.errors import PySparkException

from segmentlog_source.values.ddl import DDLError, parse_schema
from tests.values.logs import write_partition

pytestmark = pytest.mark.spark

JSON_VALUES = [
    b'{"id": 1, "name": "a", "at": "2024-03-01T10:00:00Z", "tags": ["x"], "price": "1.25"}',
    b'{"id": 2, "name": null, "at": "2024-03-01T11:30:00+01:00", "tags": [], "price": 3}',
    b'{"id": "three"}',                       # does not fit the type
    b"not json",
    None,
]


@pytest.fixture(scope="module")
def logs(tmp_path_factory):
    root = tmp_path_factory.mktemp("formats")
    write_partition(root, "j", [(f"k{i}".encode() if i != 3 else b"\xff\xfe", v)
                                for i, v in enumerate(JSON_VALUES)])
    return root


def load(spark, root, **options):
    return spark.read.format("segmentlog").options(**options).load(str(root))


def test_json_with_a_ddl_schema_and_string_keys(spark, logs):
    df = load(spark, logs, subscribe="j", keyFormat="string", valueFormat="json",
              valueSchema="id BIGINT, name STRING, at TIMESTAMP, tags ARRAY<STRING>, "
                          "price DECIMAL(6,2)")
    assert df.columns[-4:] == ["key_decoded", "value_decoded", "key_error", "value_error"]
    rows = df.orderBy("offset").collect()
    assert [r.key_decoded for r in rows] == ["k0", "k1", "k2", None, "k4"]
    assert "not UTF-8" in rows[3].key_error
    first, second = rows[0].value_decoded, rows[1].value_decoded
    assert (first.id, first.name, first.tags, first.price) == (1, "a", ["x"], Decimal("1.25"))
    assert first.at == dt.datetime(2024, 3, 1, 10, 0)    # the session time zone is UTC
    assert second.at == dt.datetime(2024, 3, 1, 10, 30) and second.name is None
    assert rows[2].value_decoded is None and "expected integer" in rows[2].value_error
    assert rows[3].value_decoded is None and "not JSON" in rows[3].value_error
    assert rows[4].value_decoded is None and rows[4].value_error is None


def test_json_inferred_from_a_sample(spark, logs):
    df = load(spark, logs, subscribe="j", valueFormat="json", mode="DROPMALFORMED")
    assert df.schema["value_decoded"].dataType.simpleString() == \
        "struct<at:string,id:string,name:string,price:string,tags:array<string>>"
    assert df.count() == 4      # "not json" dropped; id 1, 2 and "three" merge to string


def test_plain_avro_from_an_avsc_file(spark, tmp_path):
    schema = {"type": "record", "name": "P", "fields": [
        {"name": "n", "type": "long"},
        {"name": "when", "type": {"type": "long", "logicalType": "timestamp-millis"}}]}
    parsed = fastavro.parse_schema(schema)

    def avro(datum):
        buf = io.BytesIO()
        fastavro.schemaless_writer(buf, parsed, datum)
        return buf.getvalue()
    write_partition(tmp_path, "p", [(None, avro({"n": i, "when": 1000 * i})) for i in range(3)])
    (tmp_path / "p.avsc").write_text(json.dumps(schema))
    rows = load(spark, tmp_path / "p-0", valueFormat="avro",
                valueSchema=str(tmp_path / "p.avsc")).orderBy("offset").collect()
    assert [(r.value_decoded.n, r.value_decoded.when) for r in rows] == [
        (i, dt.datetime(1970, 1, 1, 0, 0, i)) for i in range(3)]
    inline = load(spark, tmp_path / "p-0", valueFormat="avro", valueSchema=json.dumps(schema))
    assert inline.count() == 3


@pytest.mark.parametrize("options,message", [
    ({"valueFormat": "xml"}, "option valueFormat='xml': expected one of binary, string"),
    ({"valueFormat": "avro"}, "needs the Avro schema in option valueSchema"),
    ({"valueFormat": "avro", "valueSchema": "/no/such.avsc"}, "neither Avro schema JSON"),
    ({"valueFormat": "json", "valueSchema": "a INT,, b"}, "option valueSchema"),
    ({"keySchema": "a INT"}, "given with keyFormat=binary"),
    ({"valueFormat": "kafka-internal", "keyFormat": "string"}, "decodes the keys too"),
    ({"valueFormat": "string", "includePayload": "false"}, "option includePayload"),
    ({"valueFormat": "string", "mode": "lenient"}, "option mode='lenient'"),
])
def test_bad_decoding_options_name_the_option(spark, logs, options, message):
    with pytest.raises(PySparkException) as failure:
        load(spark, logs, subscribe="j", **options).schema
    assert message in str(failure.value)


def test_ddl_parser():
    parsed = parse_schema("a INT, `b c` map<string, array<struct<x: bigint, y double>>>, "
                          "d DECIMAL(12, 4) NOT NULL, e timestamp_ntz, f varchar(10)")
    assert parsed.simpleString() == ("struct<a:int,b c:map<string,array<struct<x:bigint,"
                                     "y:double>>>,d:decimal(12,4),e:timestamp_ntz,f:string>")
    assert parsed["d"].nullable is False
    assert parse_schema(parsed.json()) == parsed
    for bad in ("a INT,, b", "a unknown", "a array<int", "a int)", "a INT b INT", "",
                "d DECIMAL(40, 2)"):
        with pytest.raises(DDLError):
            parse_schema(bad)


def test_a_stream_decodes_too(spark, logs, tmp_path):
    stream = (spark.readStream.format("segmentlog").option("subscribe", "j")
              .option("startingOffsets", "earliest").option("valueFormat", "json")
              .option("valueSchema", "id BIGINT").option("mode", "DROPMALFORMED")
              .load(str(logs)))
    query = (stream.select("offset", "value_decoded.id").writeStream.format("memory")
             .queryName("decoded_stream").option("checkpointLocation", str(tmp_path / "cp"))
             .trigger(availableNow=True).start())
    query.awaitTermination(120)
    rows = spark.sql("select * from decoded_stream order by offset").collect()
    assert [(r.offset, r.id) for r in rows] == [(0, 1), (1, 2), (4, None)]
