"""Where a writer may write, and how it counts a topic's partitions."""

from __future__ import annotations

import pytest

from segmentlog_source.errors import LogNotFoundError
from segmentlog_source.storage.log.data_dir import (check_writable, topic_id_of,
                                                    topic_partition_counts)
from segmentlog_source.storage.log.partition_log import PartitionLog
from tests.conftest import shared_fixture


def test_missing_empty_and_broker_data_directories_are_writable(tmp_path):
    check_writable(str(tmp_path / "new"))
    check_writable(str(tmp_path))
    check_writable(str(shared_fixture("kafka-real", "xpxwo100-bullshit")))
    (tmp_path / "_segmentlog").mkdir()
    (tmp_path / "t-0").mkdir()
    (tmp_path / "t-0.abc-delete").mkdir()
    (tmp_path / "meta.properties").write_text("")
    (tmp_path / "recovery-point-offset-checkpoint").write_text("")
    check_writable(str(tmp_path))
    # what a writer killed while replacing a checkpoint leaves (a streaming test's driver did)
    (tmp_path / "recovery-point-offset-checkpoint.tmp").write_text("")
    (tmp_path / "log-start-offset-checkpoint.tmp").write_text("")
    check_writable(str(tmp_path))


def test_anything_else_is_refused_before_writing(tmp_path):
    (tmp_path / "file").write_text("x")
    with pytest.raises(LogNotFoundError, match="is a file"):
        check_writable(str(tmp_path / "file"))
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / "notes.txt").write_text("x")
    (tmp_path / "home" / "photos").mkdir()
    with pytest.raises(LogNotFoundError, match="not a Kafka data directory: it holds notes.txt, "
                                               "photos"):
        check_writable(str(tmp_path / "home"))
    part = shared_fixture("kafka-real", "xpxwo100-bullshit", "foo-0")
    with pytest.raises(LogNotFoundError, match="is a partition directory"):
        check_writable(str(part))


def test_partition_counts_and_topic_ids(tmp_path):
    assert topic_partition_counts(str(tmp_path / "none")) == {}
    assert topic_partition_counts(str(tmp_path)) == {}
    for name, topic_id in (("a-0", "Pm8GyFsGSxOXgD9I0Z0iPQ"), ("a-3", None), ("b.x-1", None)):
        PartitionLog.open_for_append(str(tmp_path / name), topic_id=topic_id).close()
    # a broker's data directory may hold only some partitions: all must stay in range
    assert topic_partition_counts(str(tmp_path)) == {"a": 4, "b.x": 2}
    assert topic_id_of(str(tmp_path), "a") == "Pm8GyFsGSxOXgD9I0Z0iPQ"
    assert topic_id_of(str(tmp_path), "b.x") is None
