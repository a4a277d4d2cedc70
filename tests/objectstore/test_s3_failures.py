"""What goes wrong with object stores, and what the user is told: wrong URIs, missing buckets,
denied access, throttling and failing requests, objects replaced under a running query, and
writes, which object stores cannot take with segmentlog's guarantees."""

from __future__ import annotations

import pyarrow.fs as pafs
import pytest

from segmentlog_source.cli.generate import generate_log
from segmentlog_source.devtools.s3_server import SECRET_KEY
from segmentlog_source.errors import (BadOptionError, CorruptDataError, LogNotFoundError,
                                      ReadOnlyStoreError, StorageAccessError, StorageRequestError)
from segmentlog_source.plan.options import parse_read_options
from segmentlog_source.plan.predicates import fold
from segmentlog_source.plan.read_plan import plan_read
from segmentlog_source.spark.reader import GroupScan, ScanSettings
from tests.conftest import read_segmentlog

pytestmark = pytest.mark.spark

FAST_RETRIES = {"fs.retries": "2", "fs.retryBackoffMs": "1"}


@pytest.fixture(scope="module")
def log(s3, tmp_path_factory):
    path = tmp_path_factory.mktemp("s3-failures")
    generate_log(str(path), topics=["orders"], partitions=2, records=4000,
                 segment_bytes=64 * 1024, seed=11)
    s3.create_bucket("failures")
    uri = "s3://failures/log"
    s3.upload_tree(path, uri)
    return path, uri


@pytest.fixture(autouse=True)
def no_faults_left(s3):
    yield
    s3.clear_faults()


def scan_all(options: dict) -> int:
    opts = parse_read_options(options)
    plan = plan_read(opts)
    settings = ScanSettings(fold([]), False, True, True, False, True, opts.store)
    return sum(b.num_rows for g in plan.groups for b in GroupScan(g, settings))


def spark_error(df) -> str:
    with pytest.raises(Exception) as info:
        df.collect()
    return str(info.value)


def test_an_unknown_scheme_is_named(spark):
    message = spark_error(read_segmentlog(spark, "ftp://host/logs"))
    assert "unknown scheme 'ftp'" in message and "ftp://host/logs" in message
    with pytest.raises(BadOptionError, match="s3://, s3a://"):
        scan_all({"path": "ftp://host/logs"})


def test_a_missing_bucket_and_a_missing_prefix_are_named(spark, s3, log):
    message = spark_error(read_segmentlog(spark, "s3://no-such-bucket/logs", **s3.storage_options))
    assert "s3://no-such-bucket/logs" in message
    with pytest.raises(LogNotFoundError, match="s3://no-such-bucket/logs"):
        scan_all({"path": "s3://no-such-bucket/logs", **s3.storage_options})
    with pytest.raises(LogNotFoundError, match="s3://failures/nothing-here"):
        scan_all({"path": "s3://failures/nothing-here", **s3.storage_options})


def test_denied_access_fails_at_once_and_hides_the_secret(spark, s3, log):
    _, uri = log
    fault = s3.fail("*", r"^failures/log", 403, "AccessDenied")
    with pytest.raises(StorageAccessError, match="access denied to s3://failures/log") as info:
        scan_all({"path": uri, **s3.storage_options, **FAST_RETRIES})
    assert fault.hits == 1                      # never retried: it would not pass
    assert SECRET_KEY not in str(info.value)
    message = spark_error(read_segmentlog(spark, uri, **s3.storage_options))
    assert "access denied" in message and SECRET_KEY not in message


def test_throttled_requests_are_retried_with_backoff(spark, s3, log):
    path, uri = log
    expected = read_segmentlog(spark, path).count()
    fault = s3.fail("GET", r"\.log$", 503, "SlowDown", times=2)
    assert scan_all({"path": uri, **s3.storage_options, **FAST_RETRIES}) == expected
    assert fault.hits == 2
    fault = s3.fail("GET", r"\.log$", 503, "SlowDown", times=2)
    assert read_segmentlog(spark, uri, **s3.storage_options).count() == expected
    assert fault.hits == 2


def test_a_failing_request_names_the_object_and_byte_range(spark, s3, log):
    _, uri = log
    fault = s3.fail("GET", r"orders-1/\d+\.log$", 500, "InternalError")
    with pytest.raises(StorageRequestError) as info:
        scan_all({"path": uri, **s3.storage_options, **FAST_RETRIES})
    message = str(info.value)
    assert "s3://failures/log/orders-1/" in message and "bytes [" in message
    assert "after 3 attempts" in message and fault.hits >= 3
    assert SECRET_KEY not in message


def test_an_object_replaced_after_planning_is_detected(s3, log):
    path, uri = log
    opts = parse_read_options({"path": uri, **s3.storage_options})
    plan = plan_read(opts)
    task = plan.groups[0].tasks[0]
    key = task.path.split("://", 1)[1]
    store = s3.direct_filesystem()
    original = (path / task.path[len(uri) + 1:]).read_bytes()
    try:
        with store.open_output_stream(key) as out:     # the same object, rewritten shorter
            out.write(original[: len(original) // 2])
        settings = ScanSettings(fold([]), False, True, True, False, True, opts.store)
        with pytest.raises(CorruptDataError, match="changed since the read was planned"):
            for group in plan.groups:
                list(GroupScan(group, settings))
    finally:
        with store.open_output_stream(key) as out:
            out.write(original)


def listing(s3, bucket: str) -> list[str]:
    infos = s3.direct_filesystem().get_file_info(pafs.FileSelector(bucket, recursive=True))
    return sorted(i.path for i in infos)


def test_writes_to_an_object_store_are_refused_before_anything_is_written(spark, s3, log):
    _, uri = log
    before = listing(s3, "failures")
    df = spark.createDataFrame([("k", "v")], "key string, value string")
    with pytest.raises(Exception, match="cannot write to s3://failures/out") as info:
        (df.write.format("segmentlog").option("topic", "t").options(**s3.storage_options)
         .mode("append").save("s3://failures/out"))
    assert "copy the closed segments" in str(info.value)
    stream = spark.readStream.format("rate").option("rowsPerSecond", "5").load() \
        .selectExpr("cast(value as string) as value")
    with pytest.raises(Exception, match="cannot write to s3://failures/stream"):
        query = (stream.writeStream.format("segmentlog").option("topic", "t")
                 .options(**s3.storage_options)
                 .option("checkpointLocation", str(log[0].parent / "ckpt"))
                 .start("s3://failures/stream"))
        try:
            query.processAllAvailable()
        finally:
            query.stop()
    assert listing(s3, "failures") == before
    with pytest.raises(ReadOnlyStoreError):
        from segmentlog_source.storage.io.filesystem import filesystem_for
        filesystem_for("s3://failures/out")[0].makedirs("s3://failures/out")


def test_a_misspelt_store_option_is_refused_without_its_value(s3, log):
    _, uri = log
    with pytest.raises(BadOptionError, match="fs.s3.secret") as info:
        scan_all({"path": uri, "fs.s3.secret": "hunter2"})
    assert "hunter2" not in str(info.value)
    with pytest.raises(BadOptionError, match="fs.s3.secret.key"):
        scan_all({"path": uri, "fs.s3.access.key": "only-half"})
