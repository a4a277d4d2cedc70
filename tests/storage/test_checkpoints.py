"""Checkpoint text files and partition.metadata (spec §1.3)."""

from __future__ import annotations

import uuid

import pytest

from segmentlog_source.errors import BadOptionError, CorruptDataError
from segmentlog_source.storage.log.checkpoints import (EpochEntry, LeaderEpochCache,
                                                       read_leader_epoch_checkpoint,
                                                       read_offset_checkpoint,
                                                       read_partition_metadata, topic_id_string,
                                                       write_leader_epoch_checkpoint,
                                                       write_offset_checkpoint,
                                                       write_partition_metadata)
from tests.conftest import shared_fixture


def test_offset_checkpoint_round_trip(tmp_path):
    path = str(tmp_path / "recovery-point-offset-checkpoint")
    offsets = {("orders-eu", 3): 1042, ("a.b-c", 0): 0}
    write_offset_checkpoint(path, offsets)
    assert (tmp_path / "recovery-point-offset-checkpoint").read_text() == \
        "0\n2\na.b-c 0 0\norders-eu 3 1042\n"
    assert read_offset_checkpoint(path) == offsets


@pytest.mark.parametrize("text,expected", [
    ("", {}), ("0\n", {}), ("0\n0\n", {}), ("0\n1\nt 1  7\n", {("t", 1): 7})])
def test_empty_and_short_checkpoints(tmp_path, text, expected):
    path = tmp_path / "cp"
    path.write_text(text)
    assert read_offset_checkpoint(str(path)) == expected


@pytest.mark.parametrize("text,message", [
    ("1\n0\n", "unsupported checkpoint version"),
    ("0\n2\nt 0 5\n", "expected 2 entries"),
    ("0\n1\nt 0\n", "malformed entry"),
    ("0\nx\n", "not an integer"),
    ("0\n1\nt 0 99999999999999999999999\n", "malformed entry"),   # Long.parseLong refuses it
    ("0\n1\nt 2147483648 5\n", "malformed entry")])
def test_bad_checkpoints(tmp_path, text, message):
    path = tmp_path / "cp"
    path.write_text(text)
    with pytest.raises(CorruptDataError, match=message) as err:
        read_offset_checkpoint(str(path))
    assert err.value.path == str(path)


def test_missing_checkpoint_is_empty(tmp_path):
    assert read_offset_checkpoint(str(tmp_path / "nope")) == {}
    assert read_leader_epoch_checkpoint(str(tmp_path / "nope")) == []


def test_real_checkpoints_parse():
    for path in shared_fixture("kafka-real").glob("*/*-checkpoint"):
        read_offset_checkpoint(str(path))
    for path in shared_fixture("kafka-real").glob("*/*/leader-epoch-checkpoint"):
        entries = read_leader_epoch_checkpoint(str(path))
        assert [e.epoch for e in entries] == sorted(e.epoch for e in entries)


def test_leader_epoch_checkpoint_matches_the_spec_example(tmp_path):
    path = str(tmp_path / "leader-epoch-checkpoint")
    write_leader_epoch_checkpoint(path, [EpochEntry(0, 0), EpochEntry(3, 1042)])
    assert (tmp_path / "leader-epoch-checkpoint").read_bytes() == b"0\n2\n0 0\n3 1042\n"
    cache = LeaderEpochCache(path)
    assert cache.latest_epoch == 3
    assert not cache.assign(3, 2000) and not cache.assign(2, 2000) and not cache.assign(-1, 5)
    assert cache.assign(5, 2000)
    assert cache.truncate_from_end(2000)
    assert cache.entries == [EpochEntry(0, 0), EpochEntry(3, 1042)]


def test_partition_metadata_is_exact(tmp_path):
    path = str(tmp_path / "partition.metadata")
    raw = uuid.UUID("445de703-18c1-466a-89df-285bd0304177")
    write_partition_metadata(path, raw)
    assert (tmp_path / "partition.metadata").read_bytes() == \
        b"version: 0\ntopic_id: RF3nAxjBRmqJ3yhb0DBBdw"
    assert read_partition_metadata(path) == "RF3nAxjBRmqJ3yhb0DBBdw"
    assert topic_id_string(raw.bytes) == topic_id_string("RF3nAxjBRmqJ3yhb0DBBdw")


def test_real_partition_metadata_round_trips(tmp_path):
    for path in shared_fixture("kafka-real").glob("*/*/partition.metadata"):
        topic_id = read_partition_metadata(str(path))
        out = tmp_path / "pm"
        write_partition_metadata(str(out), topic_id)
        assert out.read_bytes() == path.read_bytes()


def test_bad_topic_ids(tmp_path):
    with pytest.raises(BadOptionError, match="reserved"):
        topic_id_string(bytes(16))
    with pytest.raises(BadOptionError, match="22"):
        topic_id_string("short")
    path = tmp_path / "partition.metadata"
    path.write_bytes(b"version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAA")
    with pytest.raises(CorruptDataError, match="reserved"):
        read_partition_metadata(str(path))
    path.write_bytes(b"version: 1\ntopic_id: RF3nAxjBRmqJ3yhb0DBBdw")
    with pytest.raises(CorruptDataError, match="version"):
        read_partition_metadata(str(path))
