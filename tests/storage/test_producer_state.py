"""Producer snapshots (§6), the transaction index (§5) and read_committed's aborted ranges."""

from __future__ import annotations

import pytest

from segmentlog_source.errors import CorruptDataError
from segmentlog_source.storage.log.log_segment import LogSegment
from segmentlog_source.storage.log.partition_log import PartitionLog
from segmentlog_source.storage.txn.producer_state_manager import (ProducerStateEntry,
                                                                  ProducerStateManager,
                                                                  java_hash_map_order,
                                                                  parse_snapshot, read_snapshot,
                                                                  snapshot_bytes, snapshot_offsets)
from segmentlog_source.storage.txn.transaction_index import (AbortedTxn, TransactionIndex,
                                                             parse_txn_index)
from tests.conftest import shared_fixture


def test_empty_snapshot_bytes_match_the_spec():
    assert snapshot_bytes([]) == bytes.fromhex("000148674bc700000000")
    assert ProducerStateManager().to_snapshot() == bytes.fromhex("000148674bc700000000")


def test_real_snapshots_round_trip():
    paths = sorted(shared_fixture("kafka-real").glob("*/*/*.snapshot"))
    assert len(paths) >= 30
    for path in paths:
        entries = read_snapshot(str(path))
        assert snapshot_bytes(entries) == path.read_bytes()
        # the broker's HashMap order is what our writer reproduces
        assert ProducerStateManager(entries).to_snapshot() == path.read_bytes()


def test_state_rebuilt_from_batches_equals_the_brokers_snapshot():
    """input-topic-0's snapshot at offset 9 (5 idempotent producers), rebuilt from its log."""
    directory = shared_fixture("kafka-real", "gozieokafor-data-store", "input-topic-0")
    state = ProducerStateManager()
    for header, _ in LogSegment(str(directory), 0).iter_entries():
        if header.base_offset >= 9:
            break
        state.update(header)
    assert state.map_end_offset == 9
    assert state.to_snapshot() == (directory / "00000000000000000009.snapshot").read_bytes()


def test_corrupt_snapshots_are_refused(tmp_path):
    good = snapshot_bytes([ProducerStateEntry(7, 1, 4, 100, 2, 1700000000000, -1, -1)])
    assert parse_snapshot(good)[0].last_offset == 100
    flipped = bytearray(good)
    flipped[20] ^= 1
    with pytest.raises(CorruptDataError, match="CRC"):
        parse_snapshot(bytes(flipped), "x.snapshot")
    with pytest.raises(CorruptDataError, match="version"):
        parse_snapshot(b"\x00\x02" + good[2:])
    with pytest.raises(CorruptDataError, match="shorter"):
        parse_snapshot(b"\x00\x01")


def test_java_hash_map_order():
    assert java_hash_map_order([1000, 0, 2, 2000, 1]) == [0, 2000, 1, 2, 1000]
    many = list(range(100, 0, -1))  # 100 entries: a 256-bucket table, so in bucket order
    assert java_hash_map_order(many) == sorted(many)


def test_txn_index_file_format(tmp_path):
    path = tmp_path / "00000000000000000000.txnindex"
    index = TransactionIndex(str(path), 0)
    index.append(AbortedTxn(4000, 0, 10, 3))
    index.append(AbortedTxn(7000, 24, 26, 27))
    with pytest.raises(CorruptDataError, match="not above"):
        index.append(AbortedTxn(1, 1, 26, 27))
    index.close()
    data = path.read_bytes()
    assert len(data) == 68 and data[:2] == b"\0\0"
    assert parse_txn_index(data + b"\0" * 20) == [AbortedTxn(4000, 0, 10, 3),
                                                  AbortedTxn(7000, 24, 26, 27)]
    assert TransactionIndex(str(path), 30).entries[0].producer_id == 4000
    with pytest.raises(CorruptDataError, match="below the segment base"):
        TransactionIndex(str(path), 30).sanity_check()


def _transactions_log(tmp_path, **config):
    """The kafka-clients v2-transactions batches appended by our writer, as a leader would."""
    from segmentlog_source.storage.log.log_config import LogConfig

    data = shared_fixture("kafka-clients", "v2-transactions",
                          "00000000000000000000.log").read_bytes()
    log = PartitionLog.open_for_append(str(tmp_path / "txn-0"), config=LogConfig(**config))
    assert log.append_batches(data) == (0, 26)
    return log


def test_aborted_transactions_are_indexed(tmp_path):
    log = _transactions_log(tmp_path)
    # ABORT of A (offset 10): A's transaction began at 0; B's, open since 3, bounds the LSO.
    # ABORT of B (offset 26): B began again at 24; nothing else is open, so LSO = 27.
    expected = [AbortedTxn(4000, 0, 10, 3), AbortedTxn(7000, 24, 26, 27)]
    assert log.segments[0].txn_index.entries == expected
    assert log.aborted_transactions(0, 27) == expected
    assert log.aborted_transactions(11, 27) == [expected[1]]
    assert log.aborted_transactions(0, 10) == [expected[0]]  # LSO 3 < 10: keeps looking
    state = {e.producer_id: e for e in log._state.producers.values()}
    a, b, c, d = state[4000], state[7000], state[9100], state[12000]
    assert (a.producer_epoch, a.last_offset, a.last_sequence, a.offset_delta, a.coordinator_epoch,
            a.current_txn_first_offset, a.last_timestamp) == (2, 16, 6, 1, 12, -1, 1700000050019)
    assert (b.last_offset, b.coordinator_epoch, b.current_txn_first_offset) == (25, 13, -1)
    assert (c.last_offset, c.last_sequence, c.coordinator_epoch) == (18, 4, -1)
    assert (d.last_offset, d.last_sequence) == (23, 1)  # 2147483646 + 3 wraps to 1
    log.close()
    reopened = PartitionLog.open(str(tmp_path / "txn-0"))
    assert reopened.aborted_transactions(0, 27) == expected
    assert snapshot_offsets(str(tmp_path / "txn-0"))[-1] == 27


def test_txn_index_entries_follow_their_marker_across_segments(tmp_path):
    log = _transactions_log(tmp_path, segment_bytes=400)
    bases = [s.base_offset for s in log.segments]
    assert len(bases) > 2
    entries = [(s.base_offset, t) for s in log.segments for t in s.txn_index.entries]
    assert [t.last_offset for _, t in entries] == [10, 26]
    for base, txn in entries:  # each entry sits in the segment holding its ABORT marker
        assert log.segment_for(txn.last_offset).base_offset == base
    assert log.aborted_transactions(0, 27) == [t for _, t in entries]
    assert log.aborted_transactions(12, 20) == []
    log.close()
