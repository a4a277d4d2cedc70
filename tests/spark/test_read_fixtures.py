"""Every fixture log, read through Spark, equals what Kafka's reader (or kafka-python) decoded."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest
from chispa import assert_df_equality
from pyspark.sql import functions as F

from tests.conftest import read_segmentlog, shared_fixture
from tests.fixture_inspect import Digest, expected_counts, expected_records

REAL = shared_fixture("kafka-real")
CLIENTS = shared_fixture("kafka-clients")
# __cluster_metadata-0 holds KRaft snapshots (.checkpoint), not segments: not topic data.
REAL_PARTITIONS = sorted(p for p in REAL.glob("*/*") if (p / "inspect.txt").exists()
                         and not p.name.startswith("__cluster_metadata"))
CLIENT_CASES = sorted(p for p in CLIENTS.iterdir() if (p / "inspect.txt").exists())

pytestmark = pytest.mark.spark


def _digest(blob) -> tuple[str | None, int]:
    if blob is None:
        return None, -1
    if isinstance(blob, Digest):
        return blob.sha256, blob.length
    return hashlib.sha256(blob).hexdigest(), len(blob)


def expected_df(spark, topic: str, partition: int, case_dir: Path):
    rows = []
    for r in expected_records(case_dir):
        if r.is_control:
            continue
        key_sha, key_len = _digest(r.key)
        value_sha, value_len = _digest(r.value)
        rows.append((topic, partition, r.offset, r.timestamp * 1000, r.timestamp_type,
                     key_sha, key_len, value_sha, value_len,
                     # no headers: NULL, as Spark's Kafka source gives it
                     [h for h, _ in r.headers] or None))
    schema = ("topic string, partition int, offset long, ts long, timestampType int, "
              "key_sha string, key_len int, value_sha string, value_len int, "
              "header_keys array<string>")
    return spark.createDataFrame(rows, schema)


def comparable(df):
    """Hash keys and values in Spark, so long values compare with inspect.txt's digests."""
    return df.select(
        "topic", "partition", "offset",
        (F.unix_micros("timestamp")).alias("ts"), "timestampType",
        F.sha2("key", 256).alias("key_sha"),
        F.coalesce(F.length("key"), F.lit(-1)).alias("key_len"),
        F.sha2("value", 256).alias("value_sha"),
        F.coalesce(F.length("value"), F.lit(-1)).alias("value_len"),
        F.transform("headers", lambda h: h["key"]).alias("header_keys"))


def read(spark, path, **options):
    return read_segmentlog(spark, path, includeHeaders="true", **options)


@pytest.mark.parametrize("partition_dir", REAL_PARTITIONS,
                         ids=lambda p: f"{p.parent.name}/{p.name}")
def test_real_broker_partition(spark, partition_dir):
    topic, _, partition = partition_dir.name.rpartition("-")
    df = comparable(read(spark, partition_dir))
    expected = expected_df(spark, topic, int(partition), partition_dir)
    assert_df_equality(df, expected, ignore_nullable=True, ignore_row_order=False)


@pytest.mark.parametrize("case", CLIENT_CASES, ids=lambda p: p.name)
def test_kafka_clients_case(spark, case, tmp_path):
    # The case directories are not named <topic>-<partition>: link the segment in place.
    partition_dir = tmp_path / f"{case.name}-0"
    partition_dir.mkdir()
    for log in case.glob("*.log"):
        os.symlink(log, partition_dir / log.name)
    df = comparable(read(spark, partition_dir))
    expected = expected_df(spark, case.name, 0, case)
    assert_df_equality(df, expected, ignore_nullable=True)


def test_whole_data_directory_reads_every_partition(spark):
    data_dir = REAL / "agelenler-broker-2"
    df = read(spark, data_dir)
    counts = {(r.topic, r.partition): r["count"] for r in df.groupBy("topic", "partition").count()
              .collect()}
    assert counts == expected_counts(data_dir)


def test_kraft_metadata_directory_is_read_only_decoded(spark):
    """Its values may hold secrets, which only valueFormat=kafka-internal redacts."""
    with pytest.raises(Exception, match="is KRaft's metadata log, read only with "
                                        "valueFormat=kafka-internal"):
        read(spark, REAL / "gozieokafor-data-store" / "__cluster_metadata-0").count()


def test_read_committed_on_the_transactions_case(spark, tmp_path):
    """The case's header: "read_committed sees 3-7, 11-13, 15-23": A's 0-2 and 8-9 and B's
    24-25 were aborted. Offset 19 inside "15-23" is A's COMMIT marker, a control record, which
    a consumer never returns (the header's range is loose there)."""
    case = CLIENTS / "v2-transactions"
    partition_dir = tmp_path / "txn-0"
    partition_dir.mkdir()
    for log in case.glob("*.log"):
        os.symlink(log, partition_dir / log.name)
    committed = read(spark, partition_dir, isolationLevel="read_committed")
    expected = [*range(3, 8), *range(11, 14), *range(15, 19), *range(20, 24)]
    assert [r.offset for r in committed.orderBy("offset").collect()] == expected
    uncommitted = read(spark, partition_dir)
    assert [r.offset for r in uncommitted.orderBy("offset").collect()] == \
        [o for o in range(27) if o not in (10, 14, 19, 26)]
