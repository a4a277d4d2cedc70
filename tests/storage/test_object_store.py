"""The object-store file system's own rules: URIs to pyarrow paths, configuration, secrets."""

from __future__ import annotations

import pickle

import pytest

from segmentlog_source.errors import BadOptionError, ReadOnlyStoreError
from segmentlog_source.plan.store_options import parse_store_options
from segmentlog_source.storage.io.filesystem import filesystem_for
from segmentlog_source.storage.io.local import LOCAL
from segmentlog_source.storage.io.object_store import object_store_for
from segmentlog_source.storage.io.store_config import native_path


@pytest.mark.parametrize("uri,native", [
    ("s3://bucket/logs/orders-0", "bucket/logs/orders-0"),
    ("s3a://bucket/logs/", "bucket/logs"),
    ("gs://bucket", "bucket"),
    ("abfs://container@account.dfs.core.windows.net/kafka/logs", "container/kafka/logs"),
    ("hdfs://namenode:8020/kafka/logs", "/kafka/logs"),
])
def test_uris_become_the_paths_pyarrow_expects(uri, native):
    assert native_path(uri) == native


def test_local_paths_stay_local():
    assert filesystem_for("/data/logs") == (LOCAL, "/data/logs")
    assert filesystem_for("file:///data/logs") == (LOCAL, "/data/logs")


def test_store_options_hide_their_secrets_and_travel_pickled():
    config = parse_store_options({"fs.s3.endpoint": "http://127.0.0.1:9", "FS.S3.Access.Key": "AK",
                                  "fs.s3.secret.key": "very-secret", "fs.retries": "2",
                                  "startingOffsets": "earliest"})
    assert config.get("s3.access.key") == "AK" and config.retries == 2
    assert "very-secret" not in repr(config) and "AK" not in repr(config)
    assert "http://127.0.0.1:9" in repr(config)
    fs = object_store_for("s3://bucket/x", config)
    assert "very-secret" not in repr(fs)
    assert pickle.loads(pickle.dumps(config)) == config
    assert object_store_for("s3://other/y", config) is fs     # one client per configuration


def test_bad_store_options_name_the_option():
    with pytest.raises(BadOptionError, match="fs.retries"):
        parse_store_options({"fs.retries": "-1"})
    with pytest.raises(BadOptionError, match="fs.s3.anonymous"):
        object_store_for("s3://b/x", parse_store_options({"fs.s3.anonymous": "maybe"}))
    with pytest.raises(BadOptionError, match="no bucket"):
        object_store_for("s3:///x")
    with pytest.raises(BadOptionError, match="unknown scheme 'ftp'"):
        filesystem_for("ftp://host/x")


def test_every_write_is_refused_on_an_object_store():
    fs, path = filesystem_for("s3://bucket/out")
    for write in (fs.makedirs, fs.open_append, fs.remove, fs.lock):
        with pytest.raises(ReadOnlyStoreError, match="cannot write to s3://bucket/out"):
            write(path)
