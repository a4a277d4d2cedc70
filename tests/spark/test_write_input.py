"""The writer's input schema rules and row routing, and a task's staging, without a session."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from pyspark.sql.types import (ArrayType, BinaryType, IntegerType, LongType, StringType,
                               StructField, StructType, TimestampType)

from segmentlog_source.errors import BadOptionError
from segmentlog_source.format.partitioner import partition_for_key
from segmentlog_source.plan.write_options import parse_write_options
from segmentlog_source.spark.write_input import InputLayout, Router, input_layout
from segmentlog_source.spark.writer import TaskStager, WritePlan
from tests.storage.written_logs import decoded_rows

HEADERS = ArrayType(StructType([StructField("key", StringType()),
                                StructField("value", BinaryType())]))


def schema(**columns) -> StructType:
    return StructType([StructField(name, t) for name, t in columns.items()])


def test_the_kafka_sink_schema_is_accepted_and_extra_columns_ignored():
    layout = input_layout(schema(Key=StringType(), value=BinaryType(), headers=HEADERS,
                                 topic=StringType(), partition=IntegerType(),
                                 timestamp=TimestampType(), offset=LongType()), None)
    assert layout == InputLayout("value", "Key", "headers", "topic", "partition", "timestamp")
    assert input_layout(schema(value=StringType()), "t") == InputLayout("value")


@pytest.mark.parametrize("columns, name, message", [
    ({"key": StringType()}, "value", "no value column"),
    ({"value": IntegerType()}, "value", "the value column must be string or binary"),
    ({"value": StringType(), "key": LongType()}, "key", "must be string or binary"),
    ({"value": StringType(), "partition": LongType()}, "partition", "must be int"),
    ({"value": StringType(), "timestamp": LongType()}, "timestamp", "must be timestamp"),
    ({"value": StringType(), "headers": ArrayType(StringType())}, "headers",
     "array<struct<key:string,value:binary>>"),
    ({"value": StringType(), "topic": BinaryType()}, "topic", "must be string"),
])
def test_a_bad_column_is_named_with_its_type(columns, name, message):
    with pytest.raises(BadOptionError, match=message) as err:
        input_layout(schema(**columns), "t")
    assert err.value.name == name


def test_a_topic_is_required():
    with pytest.raises(BadOptionError, match="set the topic option"):
        input_layout(schema(value=StringType()), None)


def routed(router, batch):
    return [(target, rows.column("value").to_pylist()) for target, rows in router.route(batch)]


@pytest.mark.parametrize("count", [5, 40])   # a pass per partition; a sort (> 8 partitions)
def test_keyed_rows_follow_murmur2_and_keep_their_order(count):
    keys = [f"key-{i % 97}".encode() for i in range(400)]
    batch = pa.RecordBatch.from_pydict({"key": pa.array(keys), "value": pa.array(range(400))})
    router = Router(InputLayout("value", key="key"), "t", {"t": count}, 1)
    out = routed(router, batch)
    assert len(out) > (8 if count > 8 else 1)
    assert [p for (_, p), _ in out] == sorted(p for (_, p), _ in out)
    for (topic, p), values in out:
        assert all(partition_for_key(keys[v], count) == p for v in values)
        assert values == sorted(values)
    assert sorted(v for _, vs in out for v in vs) == list(range(400))
    assert router.routed == {"t": count}


def test_explicit_partitions_win_and_keyless_rows_go_round_robin_per_task():
    batch = pa.RecordBatch.from_pydict({
        "key": pa.array([None, b"k", None, None, None, b"k"]),
        "partition": pa.array([2, None, None, None, None, 0], pa.int32()),
        "value": pa.array(range(6))})
    router = Router(InputLayout("value", key="key", partition="partition"), "t", {}, 3,
                    first_keyless=1)
    out = dict(routed(router, batch))
    # keyless rows 2, 3, 4 are dealt from the task's partition id (1): 1, 2, 0
    expected = {("t", 0): [4, 5], ("t", 1): [2], ("t", 2): [0, 3]}
    expected[("t", partition_for_key(b"k", 3))].append(1)
    assert out == {k: sorted(v) for k, v in expected.items()}


def test_a_partition_out_of_range_or_a_null_topic_is_an_error():
    router = Router(InputLayout("value", partition="partition"), "t", {"t": 2}, 1)
    bad = pa.RecordBatch.from_pydict({"partition": pa.array([0, 2], pa.int32()),
                                      "value": pa.array([1, 2])})
    with pytest.raises(BadOptionError, match=r"topic t has 2 partitions \(0..1\)"):
        list(router.route(bad))
    router = Router(InputLayout("value", topic="topic"), None, {}, 1)
    with pytest.raises(BadOptionError, match="null topic"):
        list(router.route(pa.RecordBatch.from_pydict({"topic": ["a", None], "value": [1, 2]})))
    with pytest.raises(BadOptionError, match="not a legal Kafka topic"):
        list(router.route(pa.RecordBatch.from_pydict({"topic": ["a b"], "value": [1]})))


def test_a_topic_column_routes_each_topic_with_its_own_count():
    batch = pa.RecordBatch.from_pydict({"topic": ["a", "b", "a", "b", "c"],
                                        "value": pa.array(range(5))})
    router = Router(InputLayout("value", topic="topic"), None, {"b": 4}, 2)
    out = routed(router, batch)
    assert sorted(v for _, vs in out for v in vs) == list(range(5))
    assert router.routed == {"a": 2, "b": 4, "c": 2}
    assert {t for (t, _), _ in out} == {"a", "b", "c"}


def test_a_task_stages_kafka_batches_that_kafka_python_reads(tmp_path):
    opts = parse_write_options({"path": str(tmp_path), "topic": "t", "batch.size": "300",
                                "compression": "gzip", "numPartitions": "2"})
    layout = InputLayout("value", key="key", headers="headers", partition="partition",
                         timestamp="timestamp")
    stager = TaskStager(WritePlan(opts, str(tmp_path), layout, {}), "job-x", None)
    n = 50
    batch = pa.RecordBatch.from_pydict({
        "key": pa.array([None if i % 3 == 0 else f"k{i}" for i in range(n)]),
        "value": pa.array([None if i == 7 else f"v{i}".encode() * 5 for i in range(n)]),
        "headers": pa.array([[{"key": "h", "value": b"x"}] if i % 2 else [] for i in range(n)],
                            pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))),
        "partition": pa.array([1] * 10 + [None] * (n - 10), pa.int32()),
        "timestamp": pa.array([None if i == 3 else i * 1000 for i in range(n)],
                              pa.timestamp("us", tz="UTC"))})
    stager.add(batch)
    files, counts = stager.finish()
    assert counts == (("t", 2),)
    rows = {}
    for f in files:
        assert f.batches > 1 and f.records == len(kafka_python_rows_of(f))
        rows.update({r[4]: r for r in kafka_python_rows_of(f)})
    assert sum(f.records for f in files) == n
    assert rows[b"v10" * 5][1:4] == (10, 0, b"k10")  # 10_000 us: 10 ms, CreateTime
    assert rows[b"v1" * 5][5] == (("h", b"x"),) and rows[b"v0" * 5][3] is None
    assert None in rows and rows[b"v3" * 5][1] == stager.write_time_ms  # a null timestamp
    explicit = {r[4] for r in kafka_python_rows_of(next(f for f in files if f.partition == 1))}
    assert {f"v{i}".encode() * 5 for i in range(10) if i != 7} <= explicit



def kafka_python_rows_of(staged):
    return decoded_rows(Path(staged.path).read_bytes(), staged.path)
