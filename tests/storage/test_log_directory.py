"""Discovering partition directories (spec §1.1)."""

from __future__ import annotations

import pytest

from segmentlog_source.errors import BadOptionError, LogNotFoundError
from segmentlog_source.storage.log.log_directory import find_partitions, parse_partition_dir_name
from tests.conftest import shared_fixture


@pytest.mark.parametrize("name,expected", [
    ("orders-3", ("orders", 3)),
    ("my-topic.v2-12", ("my-topic.v2", 12)),
    ("__consumer_offsets-49", ("__consumer_offsets", 49)),
    ("orders-3.6a3c0d0b9a4e4c8e8c1e0d3f2b1a0c9d-delete", None),
    ("orders-3.6a3c0d0b9a4e4c8e8c1e0d3f2b1a0c9d-future", None),
    ("orders-3.6a3c0d0b9a4e4c8e8c1e0d3f2b1a0c9d-stray", None),
    ("orders", None), ("orders-", None), ("-3", None), ("orders-x", None), ("orders-٣", None),
])
def test_parse_names(name, expected):
    assert parse_partition_dir_name(name) == expected


def make_partition(path, segments=True):
    path.mkdir(parents=True)
    if segments:
        (path / "00000000000000000000.log").write_bytes(b"")
    return path


def test_data_dir_partition_dir_and_skips(tmp_path):
    data = tmp_path / "kafka-logs-1"
    make_partition(data / "orders-0")
    make_partition(data / "orders-1")
    make_partition(data / "a-b.c-10")
    make_partition(data / "orders-2.0123456789abcdef0123456789abcdef-delete")
    make_partition(data / "orders-3.0123456789abcdef0123456789abcdef-future")
    make_partition(data / "__cluster_metadata-0")
    make_partition(data / "remote-log-index-cache")
    make_partition(data / "lost+found", segments=False)
    make_partition(data / "empty-9", segments=False)
    (data / "meta.properties").write_text("version=1\n")
    found = find_partitions(str(data))
    assert [(p.topic, p.partition) for p in found] == [("a-b.c", 10), ("orders", 0), ("orders", 1)]
    single = find_partitions(str(data / "orders-1"))
    assert [(p.path, p.topic, p.partition) for p in single] == \
        [(str(data / "orders-1"), "orders", 1)]
    other = make_partition(tmp_path / "second" / "orders-7")
    both = find_partitions([str(data), str(other.parent), str(data / "orders-0")])
    assert [(p.topic, p.partition) for p in both] == [("a-b.c", 10), ("orders", 0), ("orders", 1),
                                                      ("orders", 7)]


def test_errors(tmp_path):
    with pytest.raises(LogNotFoundError, match="no such file"):
        find_partitions(str(tmp_path / "nope"))
    (tmp_path / "file").write_text("x")
    with pytest.raises(LogNotFoundError, match="not a directory"):
        find_partitions(str(tmp_path / "file"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(LogNotFoundError, match="no Kafka partition directories"):
        find_partitions(str(tmp_path / "empty"))
    make_partition(tmp_path / "b1" / "t-0")
    make_partition(tmp_path / "b2" / "t-0")
    with pytest.raises(BadOptionError, match="t-0 is in both"):
        find_partitions([str(tmp_path / "b1"), str(tmp_path / "b2")])


def test_real_kraft_data_dir():
    found = find_partitions(str(shared_fixture("kafka-real", "gozieokafor-data-store")))
    assert [(p.topic, p.partition) for p in found] == \
        [("__consumer_offsets", 42), ("input-topic", 0)]
