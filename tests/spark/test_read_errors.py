"""Bad input gets a clear error naming the option or the file and byte position; with
failOnDataLoss=false the readable records come back and the gap is logged."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from segmentlog_source.cli.generate import generate_log
from tests.conftest import read_segmentlog as read

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def small_log(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("errors") / "logs"
    generate_log(str(path), topics=["orders"], partitions=2, records=400, value_size=50,
                 records_per_batch=10, segment_bytes=4096, seed=7)
    return path



def test_missing_path(spark, tmp_path):
    with pytest.raises(Exception, match="does-not-exist"):
        read(spark, tmp_path / "does-not-exist").count()


def test_empty_directory_and_directory_without_logs(spark, tmp_path):
    with pytest.raises(Exception, match="no Kafka partition"):
        read(spark, tmp_path).count()
    (tmp_path / "notes").mkdir()
    (tmp_path / "readme.txt").write_text("hello")
    with pytest.raises(Exception, match="no Kafka partition"):
        read(spark, tmp_path).count()


def test_a_start_only_a_stream_takes_fails_a_batch_query_at_its_first_action(spark, small_log):
    """startingOffsets=latest is a stream's default and a batch read's error (Spark's Kafka
    source refuses it at load()). load() cannot tell a batch read from a stream in PySpark
    4.3 (schema() gets the options only), so the batch query fails at its first action."""
    df = read(spark, small_log, startingOffsets="latest")
    with pytest.raises(Exception, match="startingOffsets='latest': latest is not allowed"):
        df.count()


@pytest.mark.parametrize("name,value", [
    ("endingOffsets", '{"orders": {"0": "x"}}'),
    ("isolationLevel", "snapshot"),
    ("minPartitions", "-3"),
])
def test_bad_option_fails_at_load_naming_it(spark, small_log, name, value):
    with pytest.raises(Exception, match=name):
        read(spark, small_log, **{name: value})


def test_unknown_topic_and_partition(spark, small_log):
    with pytest.raises(Exception, match="unknown topic"):
        read(spark, small_log, subscribe="payments").count()
    with pytest.raises(Exception, match="orders-9"):
        read(spark, small_log, assign='{"orders": [9]}').count()


def test_offsets_outside_the_log(spark, small_log):
    with pytest.raises(Exception, match="outside the log"):
        read(spark, small_log, startingOffsets='{"orders": {"0": 100000}}').count()
    clamped = read(spark, small_log, startingOffsets='{"orders": {"0": 100000}}',
                   failOnDataLoss="false")
    assert clamped.where("partition = 0").count() == 0
    assert clamped.where("partition = 1").count() == read(spark, small_log).where(
        "partition = 1").count()


def _corrupt_copy(src: Path, dst: Path, how: str) -> tuple[Path, int]:
    shutil.copytree(src, dst)
    segments = sorted((dst / "orders-0").glob("*.log"))
    target = segments[1]          # a closed segment in the middle of the partition
    data = bytearray(target.read_bytes())
    where = 0
    if how == "flip":
        where = 61 + 5            # a byte inside the first batch's records
        data[where] ^= 0x5A
        where = 0                 # the error names the batch's position
    elif how == "truncate":
        where = len(data) - 7
        data = data[:where]
    target.write_bytes(bytes(data))
    return target, where


def test_corrupt_batch_names_file_and_position(spark, small_log, tmp_path):
    target, where = _corrupt_copy(small_log, tmp_path / "copy", "flip")
    with pytest.raises(Exception) as err:
        read(spark, tmp_path / "copy").count()
    assert target.name in str(err.value) and f"byte {where}" in str(err.value)


def test_corrupt_batch_with_fail_on_data_loss_false(spark, small_log, tmp_path):
    target, _ = _corrupt_copy(small_log, tmp_path / "copy", "flip")
    full = read(spark, small_log)
    df = read(spark, tmp_path / "copy", failOnDataLoss="false")
    got = {r.offset for r in df.where("partition = 0").collect()}
    expected = {r.offset for r in full.where("partition = 0").collect()}
    base = int(target.name.split(".")[0])
    # everything outside the damaged segment is there; nothing invented
    assert got < expected
    assert {o for o in expected if o < base} <= got
    assert df.where("partition = 1").count() == full.where("partition = 1").count()


def test_truncated_segment(spark, small_log, tmp_path):
    target, where = _corrupt_copy(small_log, tmp_path / "copy", "truncate")
    with pytest.raises(Exception) as err:
        read(spark, tmp_path / "copy").count()
    assert target.name in str(err.value)
