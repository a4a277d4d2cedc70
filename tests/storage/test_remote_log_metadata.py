"""`__remote_log_metadata` decoded and replayed as Kafka's RemoteLogMetadataCache replays it: a
real Kafka 4.4 broker's metadata against the remote tier it wrote, then generated histories
(written by tests/storage/remote_metadata_log.py's encoder, from the message definitions) for
what a single broker does not do: retried and overlapping copies, diverged leaders, illegal
events, damage.

Fixture: tests/fixtures/tiered/kafka-4.4-local-tiered-storage (README.md there says how a real
broker wrote it).
"""

from __future__ import annotations

import base64
import logging
import shutil
from pathlib import Path

import pytest
from kafka.record.default_records import DefaultRecordBatchBuilder
from kafka.record.memory_records import MemoryRecords
from kafka.record.util import calc_crc32c

from segmentlog_source.errors import CorruptDataError
from segmentlog_source.format.remote_log_metadata import (
    RemoteLogSegmentMetadata, RemoteLogSegmentMetadataUpdate, decode_value)
from segmentlog_source.storage.tiered.remote_log_metadata import (RemoteLogMetadata,
                                                                  partition_metadata_partition)
from tests.storage.remote_metadata_log import TID, finished, part_delete, seg, sid, upd

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "tiered" / \
    "kafka-4.4-local-tiered-storage"
TIERED = "tsSK2aTxTfa6yXd8ttuyQg"          # topic `tiered`, one partition
TIERED3 = "jOla18wpR42kB_gyo0lvUw"         # topic `tiered3`, three partitions, deleted
BROKER_LINEAGE = [(0, 200), (2, 561)]      # tiered-0's leader-epoch-checkpoint at the end
METADATA_PARTITIONS = 5                    # rlmm.config.remote.log.metadata.topic.num.partitions


def fixture(*parts: str) -> Path:
    path = FIXTURE.joinpath(*parts)
    if not path.exists():
        raise RuntimeError(f"fixture missing: {path}")
    return path


def batches(log: Path):
    """kafka-python's view of a .log: [(base offset, last offset, [(offset, value)])]."""
    records = MemoryRecords(log.read_bytes())
    out = []
    while (batch := records.next_batch()) is not None:
        recs = [(r.offset, r.value) for r in batch]
        out.append((batch.base_offset, batch.base_offset + batch.last_offset_delta, recs))
    return out


def metadata_records(partition: int):
    return [r for _, _, recs in batches(fixture("broker-data", f"__remote_log_metadata-"
                                                f"{partition}", "00000000000000000000.log"))
            for r in recs]


def remote_files(tree: str, topic: str, topic_id: str, partition: int) -> dict[str, Path]:
    """segment id -> its .log in a LocalTieredStorage tree."""
    directory = fixture(tree, "kafka-tiered-storage", f"{topic}-{partition}-{topic_id}")
    return {p.stem.split("-", 1)[1]: p for p in directory.glob("*.log")}


def reencode(v) -> bytes:
    """A decoded value written again by the tests' encoder."""
    common = dict(topic=v.topic, topic_id=v.topic_id, partition=v.partition,
                  custom=v.custom_metadata, broker=v.broker_id, event_ts=v.event_timestamp,
                  segment_id=v.segment_id)
    if isinstance(v, RemoteLogSegmentMetadataUpdate):
        return upd(0, v.state, **common)
    return seg(0, v.start_offset, v.end_offset, v.segment_leader_epochs, state=v.state,
               size=v.segment_size, txn_empty=v.txn_index_empty, max_ts=v.max_timestamp,
               **common)


# -- metadata partitions written as a broker writes them: one record a batch -------------------
def batch(offset: int, values, *, pid: int = 1000, transactional: bool = False,
          control: bool = False) -> bytes:
    builder = DefaultRecordBatchBuilder(magic=2, compression_type=0,
                                        is_transactional=transactional, producer_id=pid,
                                        producer_epoch=0, base_sequence=offset,
                                        batch_size=1 << 20)
    for i, (key, value) in enumerate(values):
        builder.append(i, timestamp=1000 + offset + i, key=key, value=value, headers=[])
    data = bytearray(builder.build())
    data[0:8] = offset.to_bytes(8, "big")
    if control:
        data[22] |= 0x20                       # attributes bit 5, then the CRC again
        data[17:21] = calc_crc32c(bytes(data[21:])).to_bytes(4, "big")
    return bytes(data)


def write_partition(root: Path, values: list[bytes], partition: int = 0) -> Path:
    directory = root / f"__remote_log_metadata-{partition}"
    directory.mkdir(parents=True)
    log = directory / "00000000000000000000.log"
    log.write_bytes(b"".join(batch(i, [(None, v)]) for i, v in enumerate(values)))
    return log


def replay(tmp_path: Path, values: list[bytes], **kw) -> RemoteLogMetadata:
    write_partition(tmp_path, values)
    return RemoteLogMetadata.load([str(tmp_path)], **kw)


def ranges(live) -> list[tuple[int, int, str]]:
    return [(s.first_offset, s.last_offset, s.segment_id) for s in live]


# -- the real broker's metadata ----------------------------------------------------------------
def test_every_record_decodes_and_is_what_kafka_wrote():
    kinds = {}
    for n in range(METADATA_PARTITIONS):
        for offset, value in metadata_records(n):
            v = decode_value(value)
            kinds[type(v).__name__] = kinds.get(type(v).__name__, 0) + 1
            assert value[:3] in (b"\x01\x00\x00", b"\x01\x01\x00")
            assert reencode(v) == value, (n, offset)      # every byte accounted for
    # 13 copies (7 of tiered-0, 2 per tiered3 partition); each finished; 2 + 6 deleted
    assert kinds == {"RemoteLogSegmentMetadata": 13, "RemoteLogSegmentMetadataUpdate": 29}


def test_segment_records_describe_the_remote_files():
    files = remote_files("remote-before-retention", "tiered", TIERED, 0)
    files.update(remote_files("remote-before-topic-delete", "tiered", TIERED, 0))
    for p in range(3):
        files.update(remote_files("remote-before-topic-delete", "tiered3", TIERED3, p))
    described = 0
    for n in range(METADATA_PARTITIONS):
        for _, value in metadata_records(n):
            v = decode_value(value)
            if isinstance(v, RemoteLogSegmentMetadata) and v.segment_id in files:
                log = files[v.segment_id]
                assert v.segment_size == log.stat().st_size
                assert int(log.name[:20]) == v.start_offset
                # TxnIndexEmpty is written only when true: false for the one with a .txnindex
                assert v.txn_index_empty != log.with_suffix(".txnindex").exists()
                described += 1
    assert described == 10


def test_each_partition_is_in_the_metadata_partition_kafka_computes():
    metadata = RemoteLogMetadata.load([str(fixture("broker-data"))])
    assert sorted(metadata.replayed) == list(range(METADATA_PARTITIONS))
    homes = {}
    for topic, topic_id, count in (("tiered", TIERED, 1), ("tiered3", TIERED3, 3)):
        assert metadata.topic_ids(topic) == [topic_id]
        for p in range(count):
            homes[(topic, p)] = metadata.metadata_partition_of(topic_id, p)
            assert homes[(topic, p)] == partition_metadata_partition(topic_id, p,
                                                                     METADATA_PARTITIONS)
    assert homes == {("tiered", 0): 2, ("tiered3", 0): 2, ("tiered3", 1): 0, ("tiered3", 2): 4}
    assert metadata.problems == []


def test_before_the_retention_deletes_the_live_segments_are_the_remote_files():
    deletes = [o for o, v in metadata_records(2)
               if isinstance(d := decode_value(v), RemoteLogSegmentMetadataUpdate)
               and d.topic == "tiered" and d.state == 2]
    metadata = RemoteLogMetadata.load([str(fixture("broker-data"))],
                                      end_offsets={2: deletes[0]})
    files = remote_files("remote-before-retention", "tiered", TIERED, 0)
    live = metadata.live_segments(TIERED, 0)
    assert {s.segment_id for s in live} == set(files) and len(files) == 7
    for s in live:
        found = batches(files[s.segment_id])
        assert (s.start_offset, s.end_offset) == (found[0][0], found[-1][1])
        assert (s.first_offset, s.last_offset) == (s.start_offset, s.end_offset)
    assert live.lineage == ((0, 0), (2, 561)) and live.gaps == () and live.shadowed == ()
    assert metadata.log_start_offset(TIERED, 0) == 0


def test_after_the_full_replay():
    metadata = RemoteLogMetadata.load([str(fixture("broker-data"))])
    states = {s.start_offset: s.state_name for s in metadata.segments(TIERED, 0)}
    assert states == {0: "DELETE_SEGMENT_FINISHED", 100: "DELETE_SEGMENT_FINISHED",
                      200: "COPY_SEGMENT_FINISHED", 300: "COPY_SEGMENT_FINISHED",
                      601: "COPY_SEGMENT_FINISHED", 701: "COPY_SEGMENT_FINISHED",
                      801: "COPY_SEGMENT_FINISHED"}
    files = remote_files("remote-before-topic-delete", "tiered", TIERED, 0)
    derived = metadata.live_segments(TIERED, 0)
    # the lineage the segments give is the broker's own checkpoint
    assert derived.lineage == tuple(BROKER_LINEAGE)
    checked = metadata.live_segments(TIERED, 0, leader_epochs=BROKER_LINEAGE,
                                     log_end_offset=861)
    for live in (derived, checked):
        assert [s.segment_id for s in live] == [files[k].stem.split("-", 1)[1]
                                                for k in sorted(files, key=lambda k: files[k])]
        assert [(s.first_offset, s.last_offset) for s in live] == [
            (200, 299), (300, 600), (601, 700), (701, 800), (801, 860)]
    assert metadata.log_start_offset(TIERED, 0) == 200
    assert metadata.log_start_offset(TIERED, 0, BROKER_LINEAGE) == 200
    # a segment must end below the log end offset
    short = metadata.live_segments(TIERED, 0, leader_epochs=BROKER_LINEAGE, log_end_offset=860)
    assert [s.first_offset for s in short] == [200, 300, 601, 701]
    assert "log end offset 860" in short.outside_lineage[0].reason
    for p in range(3):
        assert {s.state_name for s in metadata.segments(TIERED3, p)} == \
            {"DELETE_SEGMENT_FINISHED"}
        assert len(metadata.segments(TIERED3, p)) == 2
        assert len(metadata.live_segments(TIERED3, p)) == 0
        assert metadata.log_start_offset(TIERED3, p) is None
        assert metadata.partition_deleted(TIERED3, p) is None   # 4.4 writes no such record


# -- generated histories ---------------------------------------------------------------------
def test_a_retried_copy_replaces_the_first(tmp_path):
    metadata = replay(tmp_path, finished(1, 0, 99, [(0, 0)]) + finished(2, 0, 99, [(0, 0)])
                      + finished(3, 100, 199, [(0, 100)]))
    live = metadata.live_segments(TID, 0)
    assert ranges(live) == [(0, 99, sid(2)), (100, 199, sid(3))]
    assert [(s.segment_id, s.first_offset, s.last_offset) for s in live.shadowed] == \
        [(sid(1), 0, 99)]
    assert "replaced it in the leader-epoch cache" in live.shadowed[0].reason
    assert sid(2) in str(live.shadowed[0])
    # the replaced copy stays listed (for retention to delete), not read: with the retry
    # deleted, the epoch lists it alone
    metadata = replay(tmp_path / "deleted", finished(1, 0, 99, [(0, 0)])
                      + finished(2, 0, 99, [(0, 0)]) + [upd(2, 2), upd(2, 3)])
    assert metadata.log_start_offset(TID, 0) == 0
    live = metadata.live_segments(TID, 0)
    assert ranges(live) == [] and [s.segment_id for s in live.shadowed] == [sid(1)]


def test_overlapping_copies_in_one_epoch(tmp_path):
    # a copy that starts earlier and reaches further replaces; one that starts later does not
    metadata = replay(tmp_path, finished(1, 10, 90, [(0, 10)]) + finished(2, 5, 100, [(0, 5)])
                      + finished(3, 50, 150, [(0, 50)]))
    live = metadata.live_segments(TID, 0)
    assert ranges(live) == [(5, 49, sid(2)), (50, 150, sid(3))]
    assert [(s.segment_id, s.first_offset, s.last_offset) for s in live.shadowed] == \
        [(sid(2), 50, 100), (sid(1), 10, 90)]
    assert "floor lookup" in live.shadowed[0].reason
    # the same with the broker's lineage given
    given = metadata.live_segments(TID, 0, leader_epochs=[(0, 0)], log_end_offset=151)
    assert ranges(given) == ranges(live)
    assert metadata.log_start_offset(TID, 0) == 5


def test_a_new_leaders_copy_that_starts_earlier_and_reaches_further(tmp_path):
    # epoch 0's leader copied 10..90; the epoch 1 leader, whose log has epoch 1 from 50,
    # copied 5..100: the old copy's offsets 50..90 are another leader's
    metadata = replay(tmp_path, finished(1, 10, 90, [(0, 10)])
                      + finished(2, 5, 100, [(0, 5), (1, 50)]))
    live = metadata.live_segments(TID, 0)
    assert live.lineage == ((0, 5), (1, 50))
    assert ranges(live) == [(5, 100, sid(2))]
    assert [s.segment_id for s in live.outside_lineage] == [sid(1)]
    assert "past epoch 0's last offset 49" in live.outside_lineage[0].reason


def test_a_diverged_copy_is_outside_the_lineage(tmp_path):
    # epoch 1's leader copied 100..199 and lost leadership; the epoch 2 leader's log has no
    # epoch 1 (it truncated to 100) and copied its own 100..249
    history = (finished(1, 0, 99, [(0, 0)]) + finished(2, 100, 199, [(1, 100)])
               + finished(3, 100, 249, [(2, 100)]))
    metadata = replay(tmp_path, history)
    lineage = [(0, 0), (1, 100), (2, 100)]     # epoch 1 holds nothing: filtered away
    for live in (metadata.live_segments(TID, 0),
                 metadata.live_segments(TID, 0, leader_epochs=lineage, log_end_offset=250)):
        assert live.lineage == ((0, 0), (2, 100))
        assert ranges(live) == [(0, 99, sid(1)), (100, 249, sid(3))]
        assert [s.segment_id for s in live.outside_lineage] == [sid(2)]
        assert "epoch 1 is not in the lineage" in live.outside_lineage[0].reason


def test_a_deposed_leaders_copy_that_reaches_further_is_not_the_lineage(tmp_path):
    # epoch 1's leader copied 100..299, past what the epoch 2 leader (from 150) copied so far:
    # the newest epoch, not the highest end offset, gives the lineage
    history = (finished(1, 0, 99, [(0, 0)]) + finished(2, 100, 299, [(1, 100)])
               + finished(3, 150, 199, [(2, 150)]))
    live = replay(tmp_path, history).live_segments(TID, 0)
    assert live.lineage == ((0, 0), (1, 100), (2, 150))
    # Kafka's check refuses the whole diverged copy (it ends past epoch 1's end): 100..149 are
    # in no live segment, and said so
    assert ranges(live) == [(0, 99, sid(1)), (150, 199, sid(3))]
    assert live.gaps == ((100, 149),)
    assert "past epoch 1's last offset 149" in live.outside_lineage[0].reason


def test_unfinished_copies_and_deletes(tmp_path):
    history = (finished(1, 0, 99, [(0, 0)]) + [seg(2, 100, 199, [(0, 100)])]
               + finished(3, 200, 299, [(0, 200)]) + [upd(1, 2)])
    metadata = replay(tmp_path, history)
    assert [s.state_name for s in metadata.segments(TID, 0)] == [
        "DELETE_SEGMENT_STARTED", "COPY_SEGMENT_STARTED", "COPY_SEGMENT_FINISHED"]
    live = metadata.live_segments(TID, 0)
    assert ranges(live) == [(200, 299, sid(3))] and live.gaps == ()
    # Kafka's findLogStartOffset lists copies still starting and deletes not finished
    assert metadata.log_start_offset(TID, 0) == 0
    metadata = replay(tmp_path / "more", history + [upd(1, 3)] + [upd(2, 2), upd(2, 3)])
    assert metadata.log_start_offset(TID, 0) == 200
    metadata = replay(tmp_path / "gap", finished(1, 0, 99, [(0, 0)])
                      + [seg(2, 100, 199, [(0, 100)])] + finished(3, 200, 299, [(0, 200)]))
    assert metadata.live_segments(TID, 0).gaps == ((100, 199),)


def test_illegal_events_are_dropped_and_named(tmp_path, caplog):
    history = (finished(1, 0, 99, [(0, 0)])
               + [upd(1, 0),                             # COPY_SEGMENT_STARTED by an update
                  seg(1, 0, 99, [(0, 0)]),               # finished -> started again
                  upd(1, 1),                             # finished again: allowed, no problem
                  seg(2, 100, 199, [(0, 100)]),
                  upd(2, 3),                             # started -> delete finished
                  seg(3, 200, 299, [(0, 200)], state=1),  # a segment born finished
                  upd(9, 1),                             # an unknown segment
                  upd(1, 2), upd(1, 1),                  # deleting -> finished
                  upd(1, 3), upd(1, 3)])                 # deleted: forgotten
    with caplog.at_level(logging.WARNING, logger="segmentlog"):
        metadata = replay(tmp_path, history)
    problems = metadata.problems
    assert [(p.offset, p.segment_id) for p in problems] == [
        (2, sid(1)), (3, sid(1)), (6, sid(2)), (7, sid(3)), (8, sid(9)), (10, sid(1)),
        (12, sid(1))]
    assert "COPY_SEGMENT_FINISHED cannot become COPY_SEGMENT_STARTED" in problems[0].reason
    assert f"segment {sid(2)} (100..199)" in problems[2].reason
    assert "COPY_SEGMENT_STARTED cannot become DELETE_SEGMENT_FINISHED" in problems[2].reason
    assert "which is unknown" in problems[4].reason
    assert "which is deleted (0..99)" in problems[6].reason
    assert all(str(p) in caplog.text for p in problems)
    assert [(s.segment_id, s.state_name) for s in metadata.segments(TID, 0)] == [
        (sid(1), "DELETE_SEGMENT_FINISHED"), (sid(2), "COPY_SEGMENT_STARTED")]


def test_partition_delete_states(tmp_path):
    history = (finished(1, 0, 99, [(0, 0)]) + [part_delete(1), part_delete(0)]
               + [part_delete(2), part_delete(1), part_delete(1)])
    metadata = replay(tmp_path, history)
    assert [p.offset for p in metadata.problems] == [2, 4]
    assert metadata.partition_deleted(TID, 0).state_name == "DELETE_PARTITION_STARTED"
    assert len(metadata.live_segments(TID, 0)) == 1
    metadata = replay(tmp_path / "done", history + [part_delete(2)] + finished(2, 100, 199,
                                                                               [(0, 100)]))
    assert metadata.partition_deleted(TID, 0).state_name == "DELETE_PARTITION_FINISHED"
    assert len(metadata.live_segments(TID, 0)) == 0      # Kafka drops the partition's cache
    assert "after its remote partition was deleted" in metadata.problems[-1].reason


def test_topic_ids_newest_last_and_the_metadata_partition(tmp_path):
    old, new = sid(40), sid(41)
    write_partition(tmp_path, [seg(1, 0, 9, [(0, 0)], topic_id=new, event_ts=9000),
                               seg(2, 0, 9, [(0, 0)], topic_id=old, event_ts=5000)], 3)
    metadata = RemoteLogMetadata.load([str(tmp_path / "__remote_log_metadata-3")])
    assert metadata.topic_ids("t") == [old, new]
    assert metadata.metadata_partition_of(new, 0) == 3
    # the partitioner's answers spread over the partitions, and stay below n
    ids = [base64.urlsafe_b64encode(bytes((i * 37 + k * 11) % 256 for k in range(16)))
           .rstrip(b"=").decode() for i in range(20)]
    seen = {partition_metadata_partition(i, p, 50) for i in ids for p in range(5)}
    assert len(seen) > 25 and max(seen) < 50


def test_control_batches_and_aborted_records_are_skipped(tmp_path):
    directory = tmp_path / "__remote_log_metadata-0"
    directory.mkdir()
    abort_marker = (b"\x00\x00\x00\x00", b"\x00\x00\x00\x00\x00\x00")
    (directory / "00000000000000000000.log").write_bytes(
        batch(0, [(None, seg(1, 0, 99, [(0, 0)]))], pid=7, transactional=True)
        + batch(1, [abort_marker], pid=7, transactional=True, control=True)
        + b"".join(batch(2 + i, [(None, v)]) for i, v in enumerate(finished(2, 0, 99,
                                                                              [(0, 0)]))))
    metadata = RemoteLogMetadata.load([str(directory)])
    assert [s.segment_id for s in metadata.segments(TID, 0)] == [sid(2)]
    assert metadata.problems == [] and metadata.replayed == {0: 4}


def _damaged():
    good = seg(1, 0, 99, [(0, 0)])
    yield "cut", good[:40], "bytes at byte"
    yield "cut in a varint", b"\x01\x00\x00\x81", "cut off by the end"
    yield "frame 0", b"\x00" + good[1:], "frame version 0"
    yield "frame 2", b"\x02" + good[1:], "unknown frame version 2"
    yield "apiKey 7", b"\x01\x07" + good[2:], "unknown apiKey 7"
    yield "version 1", b"\x01\x00\x01" + good[3:], "unknown version 1"
    yield "trailing", good + b"\x00", "bytes follow the message"
    yield "state 9", seg(1, 0, 99, [(0, 0)], state=9), "remoteLogSegmentState 9"
    yield "no epochs", seg(1, 0, 99, []), "segmentLeaderEpochs is empty"
    yield "end before start", seg(1, 99, 0, [(0, 99)]), "endOffset 0 is below startOffset 99"
    yield "negative start", seg(1, -1, 0, [(0, 0)]), "startOffset -1 is negative"
    yield "null value", None, "without a value"


@pytest.mark.parametrize("name,value,says", list(_damaged()), ids=[d[0] for d in _damaged()])
def test_a_damaged_value_names_the_file_and_offset(tmp_path, name, value, says):
    values = finished(2, 0, 99, [(0, 0)]) + [value]
    log = write_partition(tmp_path, values)
    position = len(b"".join(batch(i, [(None, v)]) for i, v in enumerate(values[:2])))
    with pytest.raises(CorruptDataError) as caught:
        RemoteLogMetadata.load([str(tmp_path)])
    err = caught.value
    assert err.path == str(log) and err.position == position
    assert "__remote_log_metadata-0 record at offset 2" in str(err) and says in str(err)


def test_a_flipped_byte_in_the_real_metadata_fails_its_crc(tmp_path):
    source = fixture("broker-data", "__remote_log_metadata-2")
    shutil.copytree(source, tmp_path / source.name)
    log = tmp_path / source.name / "00000000000000000000.log"
    data = bytearray(log.read_bytes())
    data[600] ^= 1                  # inside offset 3's value (its batch starts at byte 488)
    log.write_bytes(bytes(data))
    with pytest.raises(CorruptDataError) as caught:
        RemoteLogMetadata.load([str(tmp_path)])
    assert caught.value.path == str(log) and caught.value.position == 488
    assert "CRC mismatch" in str(caught.value)
