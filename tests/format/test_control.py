"""format/control.py against the markers kafka-clients wrote and Kafka's parsing rules."""

from __future__ import annotations

import pytest

from segmentlog_source.errors import BadOptionError, CorruptDataError
from segmentlog_source.format import control
from segmentlog_source.format.control import (ABORT, COMMIT, CONTROL_TYPE_IDS, KRAFT_VOTERS,
                                              LEADER_CHANGE, UNKNOWN, ControlRecord,
                                              end_txn_marker, parse_control_key,
                                              parse_control_record, parse_end_txn_marker)
from tests.conftest import shared_fixture
from tests.fixture_inspect import parse_inspect


def test_fixture_markers():
    inspect = shared_fixture("kafka-clients", "v2-transactions", "inspect.txt")
    batches = parse_inspect(inspect).batches
    markers = [b for b in batches if b.is_control]
    assert len(markers) == 4
    for batch in markers:
        (record,), (want,) = batch.records, batch.controls
        parsed = parse_control_record(record.key, record.value)
        assert (parsed.type_name, parsed.coordinator_epoch) == (want.type, want.coordinator_epoch)
        assert parsed.version == 0 and parsed.is_transaction_marker
        # And building the marker gives back Kafka's exact key and value bytes.
        assert end_txn_marker(CONTROL_TYPE_IDS[want.type], want.coordinator_epoch) == \
            (record.key, record.value)


def test_spec_worked_example_commit_marker():
    key, value = end_txn_marker(COMMIT, 5)
    assert (key.hex(), value.hex()) == ("00000001", "000000000005")
    assert parse_control_record(key, value) == ControlRecord(COMMIT, 0, 5)


def test_type_names_are_kafkas():
    names = ["ABORT", "COMMIT", "LEADER_CHANGE", "SNAPSHOT_HEADER", "SNAPSHOT_FOOTER",
             "KRAFT_VERSION", "KRAFT_VOTERS"]
    for type_id, name in enumerate(names):
        assert control.CONTROL_TYPE_NAMES[type_id] == name == ControlRecord(type_id, 0).type_name
        assert getattr(control, name) == type_id
    assert KRAFT_VOTERS == 6


def test_kraft_and_unknown_types_have_no_epoch():
    assert parse_control_record(b"\x00\x00\x00\x02", b"anything") == ControlRecord(LEADER_CHANGE, 0)
    record = parse_control_record(b"\x00\x00\x00\x63", None)
    assert record == ControlRecord(UNKNOWN, 0) and record.type_name == "UNKNOWN"
    assert parse_control_key(b"\x00\x00\xff\xff") == (0, UNKNOWN)
    assert not record.is_transaction_marker


def test_versions():
    # A higher version is read as version 0 (longer keys/values are allowed); negative is corrupt.
    assert parse_control_key(b"\x00\x01\x00\x00extra") == (1, ABORT)
    assert parse_end_txn_marker(b"\x00\x01\x00\x00\x00\x07more") == (1, 7)
    with pytest.raises(CorruptDataError, match="invalid control record key version -1"):
        parse_control_key(b"\xff\xff\x00\x00")
    with pytest.raises(CorruptDataError, match="invalid end transaction marker version -2"):
        parse_control_record(b"\x00\x00\x00\x01", b"\xff\xfe\x00\x00\x00\x07")


def test_short_or_null_key_and_value():
    for key in (None, b"", b"\x00\x00\x00"):
        with pytest.raises(CorruptDataError, match="control record key must have at least 4"):
            parse_control_key(key)
    for value in (None, b"\x00\x00\x00\x00\x00"):
        with pytest.raises(CorruptDataError, match="marker value must have at least 6"):
            parse_control_record(b"\x00\x00\x00\x00", value)


def test_negative_coordinator_epoch_round_trips():
    assert parse_control_record(*end_txn_marker(ABORT, -1)) == ControlRecord(ABORT, 0, -1)


def test_end_txn_marker_refuses_other_types_and_big_epochs():
    with pytest.raises(BadOptionError):
        end_txn_marker(LEADER_CHANGE, 1)
    with pytest.raises(BadOptionError):
        end_txn_marker(COMMIT, 2**31)
