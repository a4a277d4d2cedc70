"""df.write.format("segmentlog"): what Spark writes reads back exactly (through segmentlog, kafka-
python and Kafka's own Java reader), passes verify, and bad input fails before any write."""

from __future__ import annotations

import subprocess
import time
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path

import pytest

from segmentlog_source.format.partitioner import partition_for_key
from tests.conftest import shared_dir
from tests.storage.written_logs import assert_valid_log, kafka_python_rows, partition_dirs

pytestmark = pytest.mark.spark

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]
SCHEMA = ("key binary, value binary, headers array<struct<key:string,value:binary>>, "
          "partition int, timestamp timestamp")
BASE_MS = 1_700_000_000_000


def input_rows(n: int) -> list[tuple]:
    rows = []
    for i in range(n):
        key = None if i % 5 == 0 else f"key-{i % 17}".encode()
        value = None if i % 7 == 3 else (f"value-{i}-".encode() * (1 + i % 9))
        headers = [("h", f"{i}".encode()), ("nil", None)] if i % 4 == 1 else []
        partition = 2 if i % 11 == 0 else None
        ts = None if i % 13 == 0 else datetime.fromtimestamp((BASE_MS + i) / 1000, timezone.utc)
        rows.append((key, value, headers, partition, ts))
    return rows


def expected_partition(row, count: int) -> int | None:
    key, _, _, partition, _ = row
    if partition is not None:
        return partition
    return None if key is None else partition_for_key(key, count)


def test_round_trip_every_codec_through_three_readers_and_verify(spark, tmp_path):
    rows = input_rows(400)
    df = spark.createDataFrame(rows, SCHEMA).repartition(2)
    out = tmp_path / "data"
    before = int(time.time() * 1000)
    for codec in CODECS:
        (df.write.format("segmentlog").mode("append").option("topic", f"rt_{codec}")
         .option("compression", codec).option("numPartitions", "3").option("batch.size", "3000")
         .save(str(out)))
    after = int(time.time() * 1000)
    assert sorted(p.name for p in out.iterdir()) == [".lock", "recovery-point-offset-checkpoint"] \
        + sorted(f"rt_{c}-{p}" for c in CODECS for p in range(3))

    def comparable(key, value, headers, ts_ms):
        ts = ts_ms if ts_ms < before else None  # null timestamps became the write time
        return key, value, tuple(headers), ts

    expected = Counter(comparable(k, v, [(a, b) for a, b in h],
                                  BASE_MS + i if t is not None else before)
                       for i, (k, v, h, _, t) in enumerate(rows))
    read = (spark.read.format("segmentlog").option("includeHeaders", "true").load(str(out))
            .collect())
    for codec in CODECS:
        mine = [r for r in read if r.topic == f"rt_{codec}"]
        # a row written with [] (or null) headers reads back NULL, as Spark's Kafka source
        assert all(r.headers is None or r.headers for r in mine)
        got = Counter(comparable(r.key, r.value, [(h.key, h.value) for h in r.headers or []],
                                 int(r.timestamp.replace(tzinfo=timezone.utc).timestamp() * 1000))
                      for r in mine)
        assert got == expected, codec
        assert all(r.timestampType == 0 for r in mine)
        by_partition = {}
        for r in mine:
            by_partition.setdefault(r.partition, []).append(r.offset)
        assert all(sorted(o) == list(range(len(o))) for o in by_partition.values())
        # keyed and explicit rows went where Kafka's default partitioner puts them
        placed = {r.value: r.partition for r in mine if r.value is not None}  # values unique
        for row in rows:
            want = expected_partition(row, 3)
            if want is not None and row[1] is not None:
                assert placed[row[1]] == want
    for part in partition_dirs(out):  # kafka-python, the independent decoder, agrees
        for offset, ts, ts_type, key, value, headers in kafka_python_rows(part):
            assert ts_type == 0 and (ts >= before or BASE_MS <= ts < BASE_MS + 400)
            assert ts < after or ts < BASE_MS + 400
    assert sum(len(kafka_python_rows(p)) for p in partition_dirs(out)) == 400 * len(CODECS)
    # Kafka's own Java reader (kafka-clients FileRecords, ensureValid on every batch and record)
    logs = sorted(str(p) for p in out.glob("*/*.log"))
    verified = subprocess.run([str(shared_dir() / "tools" / "kafka-verify" / "verify-log"), *logs],
                              capture_output=True, text=True, timeout=600)
    assert verified.returncode == 0, verified.stderr
    assert len(verified.stdout.splitlines()) == 400 * len(CODECS)
    assert_valid_log(out)  # one commit per topic: indexes equal a rebuild from the .log


def test_log_append_time_topic_column_and_existing_topics(spark, tmp_path):
    out = str(tmp_path / "data")
    first = spark.createDataFrame([(f"{t}", f"{i}", t) for i in range(30) for t in ("a", "b")],
                                  "key string, value string, topic string")
    first.write.format("segmentlog").mode("append").option("numPartitions", "4").save(out)
    # a second write keeps both topics' partition counts (numPartitions applies to new topics)
    started = int(time.time() * 1000)
    (first.withColumn("topic", first.topic).write.format("segmentlog").mode("append")
     .option("timestampType", "LogAppendTime").save(out))
    read = spark.read.format("segmentlog").load(out).collect()
    assert Counter(r.topic for r in read) == {"a": 60, "b": 60}
    assert {r.partition for r in read if r.topic == "a"} == {partition_for_key(b"a", 4)}
    appended = [r for r in read if r.offset >= 30]
    assert {r.timestampType for r in appended} == {1}
    assert len({r.timestamp for r in appended if r.topic == "a"}) == 1
    assert min(r.timestamp.replace(tzinfo=timezone.utc).timestamp() for r in appended) * 1000 \
        >= started - 1
    with pytest.raises(Exception, match="numPartitions.*exists with 4 partitions"):
        (first.write.format("segmentlog").mode("append").option("topic", "a")
         .option("numPartitions", "2").save(out))
    assert_valid_log(Path(out), {f"{t}-{p}": [30] for t in "ab" for p in range(4)})


def test_bad_input_fails_before_anything_is_written(spark, tmp_path):
    out = tmp_path / "data"
    ok = spark.createDataFrame([("k", "v")], "key string, value string")

    def save(df, path=out, mode="append", **options):
        writer = df.write.format("segmentlog").mode(mode)
        for name, value in {"topic": "t", **options}.items():
            writer = writer.option(name, value)
        writer.save(str(path))

    cases = [
        (lambda: save(spark.createDataFrame([("k",)], "key string")), "no value column"),
        (lambda: save(spark.createDataFrame([(1,)], "value int")),
         "value column must be string or binary"),
        (lambda: save(spark.createDataFrame([("v", 1)], "value string, partition bigint")),
         "partition column must be int"),
        (lambda: save(ok, compression="brotli"), "compression='brotli'"),
        (lambda: save(ok, mode="overwrite"), "append-only"),
        (lambda: save(spark.createDataFrame([("v", 5)], "value string, partition int"),
                      numPartitions="2"), r"topic t has 2 partitions \(0..1\)"),
    ]
    for action, message in cases:
        with pytest.raises(Exception, match=message):
            action()
        assert not out.exists() or sorted(p.name for p in out.iterdir()) == [], message
    (tmp_path / "file").write_text("x")
    with pytest.raises(Exception, match="is a file"):
        save(ok, path=tmp_path / "file")
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / "notes.txt").write_text("x")
    with pytest.raises(Exception, match="not a Kafka data directory"):
        save(ok, path=tmp_path / "home")
    assert sorted(p.name for p in (tmp_path / "home").iterdir()) == ["notes.txt"]
