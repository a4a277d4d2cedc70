"""Errors a person can read: the first line of segmentlog's message (after Spark's
PYTHON_DATA_SOURCE_ERROR prefix and the Python traceback) says what is wrong, where (the file
and byte, or the option) and what to do, in under 200 characters. The bad-option cases are in
test_option_cases.py; here the bad files, a user-supplied schema and the save modes."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from segmentlog_source.cli.generate import generate_log
from segmentlog_source.spark.schema import spark_ddl
from tests.conftest import read_segmentlog as read
from tests.spark.option_cases import FIRST_LINE_LIMIT, segmentlog_message

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def small_log(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("error-lines") / "logs"
    generate_log(str(path), topics=["orders"], partitions=1, records=300, value_size=50,
                 records_per_batch=10, segment_bytes=4096, seed=3)
    return path


def _first_line(action) -> str:
    with pytest.raises(Exception) as err:
        action()
    first = segmentlog_message(err.value)
    assert len(first) < FIRST_LINE_LIMIT, first
    return first


def _damaged(small_log: Path, tmp_path: Path, how: str) -> Path:
    copy = tmp_path / "copy"
    shutil.copytree(small_log, copy)
    segment = sorted((copy / "orders-0").glob("*.log"))[1]   # closed, mid-partition
    data = bytearray(segment.read_bytes())
    if how == "flip":
        data[61 + 5] ^= 0x5A          # a record byte of the first batch: its CRC fails
    else:
        data = data[:-7]              # a batch cut short before the next segment starts
    segment.write_bytes(bytes(data))
    return segment


def test_missing_path_names_it_and_says_what_to_check(spark, tmp_path):
    missing = tmp_path / "no-such-dir"
    first = _first_line(lambda: read(spark, missing).count())
    assert str(missing) in first and "check the path" in first


def test_directory_without_partitions_says_what_to_give(spark, tmp_path):
    (tmp_path / "notes").mkdir()
    first = _first_line(lambda: read(spark, tmp_path).count())
    assert str(tmp_path) in first and "log.dirs" in first


@pytest.mark.parametrize("how, what", [("flip", "CRC"), ("cut", "")])
def test_damaged_segment_names_file_byte_and_the_option_that_helps(spark, small_log, tmp_path,
                                                                  how, what):
    segment = _damaged(small_log, tmp_path, how)
    first = _first_line(lambda: read(spark, tmp_path / "copy").count())
    # the file by its partition directory and name (a long path would push the rest off the
    # line); the whole path follows on the next line
    assert first.startswith(f"orders-0/{segment.name} at byte "), first
    assert what in first and "failOnDataLoss=false" in first
    # and the option does what the line says: the rest of the partition is read
    assert 0 < read(spark, tmp_path / "copy", failOnDataLoss="false").count() < 300


def test_a_user_schema_is_refused_as_sparks_kafka_source_refuses_it(spark, small_log):
    # KafkaSourceProvider.scala:74: "Kafka source has a fixed schema and cannot be set with a
    # custom one". PySpark 4.3 runs no code of a Python source at load() when a schema is given
    # (so load() succeeds), and the first action fails.
    df = spark.read.format("segmentlog").schema("value string, offset int").load(str(small_log))
    first = _first_line(df.collect)
    assert first.startswith("option schema=") and "has a fixed schema" in first
    assert ".schema(" in first


def test_the_sources_own_schema_may_be_given(spark, small_log):
    # A batch read of Spark's Kafka source accepts a schema equal to its own
    # (DataSource.scala:377-384: only a mismatch fails, USER_SPECIFIED_AND_ACTUAL_SCHEMA_MISMATCH)
    given = spark.read.format("segmentlog").schema(spark_ddl()).load(str(small_log))
    assert given.count() == read(spark, small_log).count() == 300
    headers = (spark.read.format("segmentlog").schema(spark_ddl(include_headers=True))
               .option("includeHeaders", "true").load(str(small_log)))
    assert "headers" in headers.columns and headers.count() == 300


def _save(spark, path: Path, mode: str | None):
    writer = spark.createDataFrame([("k", "v")], "key string, value string").write
    writer = writer.format("segmentlog").option("topic", "t")
    if mode is not None:
        writer = writer.mode(mode)
    writer.save(str(path))


@pytest.mark.parametrize("mode", [None, "errorifexists", "ignore"])
def test_pyspark_refuses_the_default_save_mode_before_the_sink_sees_it(spark, tmp_path, mode):
    # Spark's Kafka sink takes ErrorIfExists, the default (KafkaSourceProvider.scala:176-185);
    # PySpark 4.3 refuses it (and Ignore) for every Python data source with its own error, so
    # a segmentlog write always needs .mode("append"): the README's write example says so.
    with pytest.raises(Exception, match="UNSUPPORTED_DATA_SOURCE_SAVE_MODE") as err:
        _save(spark, tmp_path / "out", mode)
    assert "segmentlog" in str(err.value) and not (tmp_path / "out").exists()
    _save(spark, tmp_path / "out", "append")
    assert read(spark, tmp_path / "out").count() == 1


def test_overwrite_says_to_append(spark, tmp_path):
    # Spark's Kafka sink: "Save mode Overwrite not allowed for Kafka" (:176-183)
    first = _first_line(lambda: _save(spark, tmp_path / "out", "overwrite"))
    assert first.startswith("option mode='overwrite': not allowed") and '.mode("append")' in first
    assert not (tmp_path / "out").exists()


# -- the first line a person sees (issue #35) --------------------------------------------------

PLANNING_PREFIX = ("[PYTHON_DATA_SOURCE_ERROR] Failed to generate Python data source read "
                   "partitions: ")


def test_a_planning_error_says_what_is_wrong_on_its_first_line(spark, small_log):
    """Spark's prefix, then segmentlog's message: not 'Traceback (most recent call last):' with
    the message after the frames (PySpark's worker sends a segmentlog error without its
    traceback: spark/error_lines.py)."""
    with pytest.raises(Exception) as err:
        read(spark, small_log, startingOffsets='{"orders":{"0":1000}}').count()
    first = str(err.value).splitlines()[0]
    assert first.startswith(PLANNING_PREFIX + "segmentlog_source.errors.DataLossError: "
                            "startingOffsets: offset 1000 of orders-0 is outside the log"), first
    assert "Traceback" not in str(err.value)


def test_a_bad_option_at_load_says_what_is_wrong_on_its_first_line(spark, small_log):
    with pytest.raises(Exception) as err:
        read(spark, small_log, startingTimestamp="2018-08-15T03:00:00").count()
    first = str(err.value).splitlines()[0]
    assert first.startswith("[PYTHON_DATA_SOURCE_ERROR] Failed to create Python data source "
                            "instance: segmentlog_source.errors.BadOptionError: option "
                            "startingTimestamp='2018-08-15T03:00:00': an ISO-8601 time needs a "
                            "zone"), first


def test_a_damaged_file_met_by_a_task_names_it_first(spark, small_log, tmp_path):
    segment = _damaged(small_log, tmp_path, "flip")
    with pytest.raises(Exception) as err:
        read(spark, tmp_path / "copy").count()
    text = str(err.value)
    own = [line for line in text.splitlines() if "segmentlog_source.errors." in line]
    assert own and own[0].split("segmentlog_source.errors.CorruptDataError: ")[1].startswith(
        f"orders-0/{segment.name} at byte "), text[:2000]
    assert "Traceback (most recent call last)" not in text.split("segmentlog_source.errors.")[0]
