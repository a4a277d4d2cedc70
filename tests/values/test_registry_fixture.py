"""The Avro values of a real cluster's topics (agelenler-food-ordering: cp-kafka 7.0.1,
KafkaAvroSerializer) decoded offline with the schemas of its own `_schemas-0`, against Spark's
own `from_avro` (spark-avro from Maven Central) given each payload without its 5-byte header and
its writer schema, record by record.

The writer schemas are read here with kafka-python from the `_schemas` segments, independently
of segmentlog's registry replay.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from kafka.record import MemoryRecords
from pyspark.sql import functions as F

from tests.conftest import SPARK_AVRO_MISSING, shared_fixture

pytestmark = pytest.mark.spark

BROKER_1 = "agelenler-food-ordering"
BROKER_2 = "agelenler-broker-2"


def writer_schemas(schemas_dir: Path) -> dict[int, str]:
    """schema id -> schema text, from the `_schemas` records, read with kafka-python."""
    out = {}
    for log in sorted(schemas_dir.glob("*.log")):
        records = MemoryRecords(log.read_bytes())
        while (batch := records.next_batch()) is not None:
            for record in batch:
                if record.value is None:
                    continue
                key = json.loads(record.key)
                if key["keytype"] == "SCHEMA":
                    value = json.loads(record.value)
                    out[value["id"]] = value["schema"]
    return out


def from_avro_rows(spark, df, schemas: dict[int, str]) -> dict[tuple[int, int], dict]:
    """(partition, offset) -> Spark's from_avro of the payload with its writer schema."""
    from pyspark.sql.avro.functions import from_avro

    if SPARK_AVRO_MISSING:
        pytest.fail("Spark's Avro functions (spark-avro) are not on the classpath: "
                    + SPARK_AVRO_MISSING[0])
    out = {}
    with_id = df.withColumn("schema_id", F.conv(F.hex(F.substring("value", 2, 4)), 16, 10)
                            .cast("int"))
    for schema_id in [r[0] for r in with_id.select("schema_id").distinct().collect()]:
        decoded = (with_id.where(F.col("schema_id") == schema_id)
                   .select("partition", "offset",
                           from_avro(F.expr("substring(value, 6)"), schemas[schema_id])
                           .alias("v")))
        for row in decoded.collect():
            out[(row.partition, row.offset)] = row.v.asDict(recursive=True)
    return out


@pytest.mark.parametrize("data_dir,topic", [
    (BROKER_1, "payment-request"), (BROKER_1, "restaurant-approval-response"),
    (BROKER_2, "payment-response"), (BROKER_2, "restaurant-approval-request")])
def test_real_avro_values_equal_spark_from_avro(spark, data_dir, topic):
    root = shared_fixture("kafka-real", data_dir)
    registry = shared_fixture("kafka-real", BROKER_1, "_schemas-0")
    options = {"subscribe": topic, "valueFormat": "confluent-avro"}
    if data_dir == BROKER_2:     # broker 2's copy of the log has no _schemas partition
        options["schemaRegistry"] = str(registry)
    df = spark.read.format("segmentlog").options(**options).load(str(root))
    rows = df.select("partition", "offset", "value", "value_decoded", "value_error").collect()
    expected_count = sum(1 for p in root.glob(f"{topic}-*") for line in
                         (p / "inspect.txt").read_text().splitlines()
                         if line.startswith("record\t"))
    assert len(rows) == expected_count > 0
    assert [r.value_error for r in rows] == [None] * len(rows)
    spark_rows = from_avro_rows(spark, df.select("partition", "offset", "value"),
                                writer_schemas(registry))
    ours = {(r.partition, r.offset): r.value_decoded.asDict(recursive=True) for r in rows}
    assert ours == spark_rows
    # the types are Spark's too (segmentlog declares every field nullable)
    decoded_type = df.schema["value_decoded"].dataType
    assert decoded_type.simpleString() == _spark_type_string(spark, df, writer_schemas(
        registry))


def _spark_type_string(spark, df, schemas) -> str:
    from pyspark.sql.avro.functions import from_avro

    first = df.select(F.conv(F.hex(F.substring("value", 2, 4)), 16, 10).cast("int")).first()[0]
    return df.select(from_avro(F.expr("substring(value, 6)"), schemas[first]).alias("v")) \
        .schema["v"].dataType.simpleString()
