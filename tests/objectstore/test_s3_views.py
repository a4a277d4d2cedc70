"""The metadata views from a real S3-compatible server (moto on loopback): the rows of the local
read, ranges and all, through ranged reads."""

from __future__ import annotations

from chispa import assert_df_equality
import pytest

from segmentlog_source.cli.generate import generate_log
from tests.conftest import read_segmentlog

pytestmark = pytest.mark.spark

START = 1_700_000_000_000


@pytest.fixture(scope="module")
def log_in_s3(s3, tmp_path_factory):
    s3.create_bucket("views")
    path = tmp_path_factory.mktemp("s3-views")
    generate_log(str(path), topics=["orders", "clicks"], partitions=2, records=3000,
                 codec="gzip", segment_bytes=48 * 1024, transactions=True,
                 timestamp_jitter_ms=50, seed=5, start_timestamp=START)
    uri = "s3://views/log"
    s3.upload_tree(path, uri)
    return path, uri


@pytest.mark.parametrize("view,options", [
    ("batches", {}),
    ("batches", {"verifyChecksums": "false"}),
    ("batches", {"startingOffsets": '{"orders": {"0": 100}}', "endingTimestamp": str(START + 900),
                 "subscribe": "orders"}),
    ("segments", {}),
])
def test_views_read_the_same_from_s3(spark, s3, log_in_s3, view, options):
    path, uri = log_in_s3
    local = read_segmentlog(spark, path, view=view, **options)
    remote = read_segmentlog(spark, uri, view=view, **options, **s3.storage_options)
    if view == "segments":      # where the file is differs, nothing else
        local, remote = local.drop("path"), remote.drop("path")
    assert_df_equality(remote, local, ignore_row_order=True)
    assert remote.count() > (5 if view == "batches" else 3)
