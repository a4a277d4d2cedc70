"""A remote tier (Kafka's LocalTieredStorage layout) and its `__remote_log_metadata` as an
attacker leaves them: lost, retried, overlapping, unfinished, deleted, diverged and damaged
copies, a re-created topic, tiers that overlap (issue #23, point 4). Every read is what a user
runs, planned and scanned in-process as Spark's driver and tasks would: load(<tier>) with
option remoteLogMetadata, load(<tier>) alone (the listing), load(<data dir>) with option
remoteTier. Each case must give the original partition's rows, each offset once, or an error
naming the file or segment; with failOnDataLoss=false the rest and a logged note. Never rows
that are silently wrong or missing.

Partitions are generated (segments of 300 offsets, 50 records a batch), their closed segments
copied to a tier by tests/storage/tiered_layouts.py, the metadata written by
tests/storage/remote_metadata_log.py from what the copies' files hold.
"""

from __future__ import annotations

import logging
import shutil
import struct
from pathlib import Path

import pyarrow as pa
import pytest

from segmentlog_source.errors import CorruptDataError, DataLossError, LogNotFoundError
from segmentlog_source.spark.source import SegmentLogReader
from tests.storage.remote_metadata_log import (COPY_SEGMENT_FINISHED, COPY_SEGMENT_STARTED,
                                               DELETE_SEGMENT_FINISHED, DELETE_SEGMENT_STARTED,
                                               copy_events, log_batches, upd, write_metadata)
from tests.storage.tier_cases import (FILESET, RECORDS, SEGMENT_300, SEGMENT_350, SEGMENT_750,
                                      Copy, Tier, broker, events, generate_partition, plain,
                                      starts_inside)
from tests.storage.tiered_layouts import topic_id_of

ERRORS = (CorruptDataError, DataLossError, LogNotFoundError)


@pytest.fixture(scope="module")
def logs(tmp_path_factory) -> Path:
    """The partitions the cases copy from (never changed: each case copies what it damages).
    a: the partition. b350, b750: the same records in longer segments (another leader's
    segmentation). other: other records at a's offsets, another topic id. lineage, deposed: one
    history up to offset 600, then each its own records (a leader and a deposed one)."""
    root = tmp_path_factory.mktemp("tiered-damage")
    generate_partition(root / "a", 5, SEGMENT_300)
    generate_partition(root / "b350", 5, SEGMENT_350)
    generate_partition(root / "b750", 5, SEGMENT_750)
    generate_partition(root / "other", 11, SEGMENT_300)
    for name, seed, more in (("lineage", 6, RECORDS - 600), ("deposed", 7, RECORDS - 300)):
        generate_partition(root / name, 5, SEGMENT_300, records=600)
        generate_partition(root / name, seed, SEGMENT_300, records=more)
    return root


_expected: dict[str, list[dict]] = {}


def _original(logs: Path, name: str, first: int = 0, last: int = 1 << 62) -> list[dict]:
    """The rows of a generated partition (read whole from its own directory) in [first, last]."""
    if name not in _expected:
        _expected[name] = _rows(logs / name)
    return [r for r in _expected[name] if first <= r["offset"] <= last]


def _rows(path, **options) -> list[dict]:
    """A read as Spark runs it: the reader plans (logging its notes), each partition is scanned."""
    reader = SegmentLogReader({"path": str(path), **options})
    rows = [row for partition in reader.partitions() for batch in reader.read(partition)
            for row in pa.Table.from_batches([batch]).to_pylist()]
    return sorted(rows, key=lambda r: (r["topic"], r["partition"], r["offset"]))


def _offsets(rows: list[dict]) -> list[int]:
    return [r["offset"] for r in rows]


def _warnings(caplog) -> str:
    return "\n".join(r.getMessage() for r in caplog.records
                     if r.name == "segmentlog" and r.levelno >= logging.WARNING)


def read(mode: str, tier: Tier, data: Path, **options) -> list[dict]:
    if mode == "alone":
        return _rows(tier.root, remoteLogMetadata=str(data), **options)
    if mode == "listing":
        return _rows(tier.root, **options)
    return _rows(data, remoteTier=str(tier.root), **options)


def read_fails(mode: str, tier: Tier, data: Path, *needles: str, kinds=ERRORS,
               **options) -> Exception:
    with pytest.raises(kinds) as caught:
        read(mode, tier, data, **options)
    for needle in needles:
        assert needle in str(caught.value), (needle, str(caught.value))
    return caught.value


def _end(mode: str, remote_end: int) -> int:
    return RECORDS - 1 if mode == "both" else remote_end


# -- 1. a finished copy the store lacks --------------------------------------------------------
@pytest.mark.parametrize("mode", ["alone", "both"])
@pytest.mark.parametrize("removed", ["log", "fileset"])
def test_a_finished_copy_the_store_lacks(logs, tmp_path, caplog, mode, removed):
    tier, data = plain(logs, tmp_path)
    lost = tier.copies[1]                                      # offsets 300..599
    for suffix in (".log",) if removed == "log" else FILESET:
        lost.file(suffix).unlink()
    read_fails(mode, tier, data, lost.segment_id, "300..599", kinds=DataLossError)
    with caplog.at_level(logging.WARNING, logger="segmentlog"):
        rows = read(mode, tier, data, failOnDataLoss="false")
    assert _offsets(rows) == [o for o in range(_end(mode, 1199)) if not 300 <= o <= 599] + \
        ([1249] if mode == "both" else [1199])
    assert rows == [r for r in _original(logs, "a", 0, _end(mode, 1199))
                    if not 300 <= r["offset"] <= 599]
    assert lost.segment_id in _warnings(caplog)


# -- 2. overlapping finished copies -------------------------------------------------------------
def _retry(logs, tmp_path, metadata=True):
    tier, data = plain(logs, tmp_path, metadata=False)
    retry = tier.duplicate(tier.copies[1])
    if metadata:
        write_metadata(data, events(tier, tier.copies[:2]) + events(tier, [retry], event_ts=3000)
                       + events(tier, tier.copies[2:], event_ts=4000))
    return tier, data, 1199


def _new_leader(logs, tmp_path, metadata=True):
    """The epoch 0 leader copied a's segment 0..299; the epoch 1 leader (from 300), whose
    segments are 350 offsets long, copied 0..349 (which replaces it), 350..699, 700..1049."""
    epochs = ((0, 0), (1, 300))
    tier = Tier(tmp_path / "tier", topic_id_of(logs / "a" / "t-0"))
    old = tier.add(logs / "a" / "t-0", seed=1, segments=1)
    new = tier.add(logs / "b350" / "t-0", seed=2, epochs=epochs)
    data = broker(logs / "b350" / "t-0", tmp_path / "data", keep_from=700, epochs=epochs)
    if metadata:
        write_metadata(data, events(tier, old) + events(tier, new, epochs=epochs, event_ts=5000))
    return tier, data, 1049


def _new_leader_from_before(logs, tmp_path, metadata=True):
    """The epoch 0 leader copied 0..299 and 300..599; the epoch 1 leader (from 600) copied
    0..749 in one segment: it starts before the second and replaces both."""
    epochs = ((0, 0), (1, 600))
    tier = Tier(tmp_path / "tier", topic_id_of(logs / "a" / "t-0"))
    old = tier.add(logs / "a" / "t-0", seed=1, segments=2)
    new = tier.add(logs / "b750" / "t-0", seed=2, epochs=epochs)
    data = broker(logs / "b750" / "t-0", tmp_path / "data", keep_from=750, epochs=epochs)
    if metadata:
        write_metadata(data, events(tier, old) + events(tier, new, epochs=epochs, event_ts=5000))
    return tier, data, 749


OVERLAPS = {"retry": _retry, "new-leader": _new_leader,
            "new-leader-from-before": _new_leader_from_before, "starts-inside": starts_inside}


@pytest.mark.parametrize("mode", ["alone", "both"])
@pytest.mark.parametrize("case", list(OVERLAPS))
def test_overlapping_copies_each_offset_once(logs, tmp_path, case, mode):
    tier, data, remote_end = OVERLAPS[case](logs, tmp_path)
    rows = read(mode, tier, data)
    assert _offsets(rows) == list(range(_end(mode, remote_end) + 1))
    assert rows == _original(logs, "a", 0, _end(mode, remote_end))


@pytest.mark.parametrize("mode", ["listing", "both"])
@pytest.mark.parametrize("case", list(OVERLAPS))
def test_overlapping_copies_without_metadata(logs, tmp_path, caplog, case, mode):
    """Without __remote_log_metadata the listing cannot tell which copy is live: each offset
    once, or an error naming a copy, and the warning that says so."""
    tier, data, remote_end = OVERLAPS[case](logs, tmp_path, metadata=False)
    with caplog.at_level(logging.WARNING, logger="segmentlog"):
        try:
            rows = read(mode, tier, data)
        except ERRORS as err:
            assert str(tier.root) in str(err), str(err)
            rows = None
    assert "no __remote_log_metadata given" in _warnings(caplog)
    if rows is not None:
        assert _offsets(rows) == list(range(_end(mode, remote_end) + 1))
        assert rows == _original(logs, "a", 0, _end(mode, remote_end))


# -- 3. unfinished, deleting and deleted copies --------------------------------------------------
@pytest.mark.parametrize("mode", ["alone", "both"])
def test_unfinished_and_deleted_copies_are_never_read(logs, tmp_path, mode):
    """Of a's segments 0..299 is being deleted, 300..599 and 600..899 finished; beside them,
    holding other records: a deleted copy of 300..599 whose files remain, a copy of 600..899
    and one of 900..1199 that never finished (their .log cut short, no indexes). Only the
    finished ones are read; the data directory's log starts at 300."""
    tier, data = plain(logs, tmp_path, metadata=False)
    (data / "log-start-offset-checkpoint").write_text("0\n1\nt 0 300\n")
    other = logs / "other" / "t-0"
    deleting, s1, s2, s3 = tier.copies
    for suffix in (".log", ".index", ".timeindex"):        # (if it is read, rows differ)
        shutil.copyfile(other / f"{0:020d}{suffix}", deleting.file(suffix))
    orphan = tier.duplicate(s1, other, seed=51)
    partial = [tier.duplicate(s2, other, seed=52), tier.duplicate(s3, other, seed=53)]
    for copy in partial:
        copy.file(".log").write_bytes(copy.file(".log").read_bytes()[:20_000])
        for suffix in FILESET[1:]:
            copy.file(suffix).unlink()
    for suffix in FILESET:                                 # (900..1199 stays local)
        s3.file(suffix).unlink()
    write_metadata(data, events(tier, [orphan], event_ts=1000, states=(
                       COPY_SEGMENT_STARTED, COPY_SEGMENT_FINISHED, DELETE_SEGMENT_STARTED,
                       DELETE_SEGMENT_FINISHED))
                   + events(tier, [deleting, s1, s2])
                   + [_started(c, tier) for c in partial]
                   + [upd(0, DELETE_SEGMENT_STARTED, topic_id=tier.topic_id,
                          segment_id=deleting.segment_id, event_ts=8000)])
    rows = read(mode, tier, data)
    assert rows == _original(logs, "a", 300, _end(mode, 899))


def _started(copy: Copy, tier: Tier) -> bytes:
    """The COPY_SEGMENT_STARTED record of a copy whose .log is cut short: the offsets the
    segment has (300 of them), not what the file holds."""
    return copy_events(copy.prefix, "t", tier.topic_id, 0, states=(COPY_SEGMENT_STARTED,),
                       end_offset=copy.base + 299, event_ts=7000)[0]


# -- 4. a copy off the lineage --------------------------------------------------------------------
@pytest.mark.parametrize("mode", ["alone", "both"])
def test_a_deposed_leaders_copies_are_not_read(logs, tmp_path, caplog, mode):
    """lineage and deposed share offsets 0..599 (epoch 0). The epoch 1 leader wrote its own
    600..1549 and copied 600..899, 900..1199, 1200..1499, then was deposed; the epoch 2 leader,
    whose log has no epoch 1 (leader-epoch-checkpoint: 0 from 0, 2 from 600), copied its own
    600..899 and 900..1199. Only the lineage's copies are read: its rows."""
    lineage, deposed = ((0, 0), (2, 600)), ((0, 0), (1, 600))
    tier = Tier(tmp_path / "tier", topic_id_of(logs / "lineage" / "t-0"))
    shared = tier.add(logs / "lineage" / "t-0", seed=1, segments=2, epochs=lineage)
    theirs = tier.add(logs / "deposed" / "t-0", seed=2, skip=2, epochs=deposed)
    ours = tier.add(logs / "lineage" / "t-0", seed=3, skip=2, epochs=lineage)
    data = broker(logs / "lineage" / "t-0", tmp_path / "data", keep_from=1200, epochs=lineage)
    write_metadata(data, events(tier, shared) + events(tier, theirs, epochs=deposed,
                                                       event_ts=3000)
                   + events(tier, ours, epochs=lineage, event_ts=5000))
    assert len(theirs) == 3 and len(ours) == 2
    with caplog.at_level(logging.WARNING, logger="segmentlog"):
        rows = read(mode, tier, data)
    assert rows == _original(logs, "lineage", 0, _end(mode, 1199))
    for copy in theirs:
        assert copy.segment_id in _warnings(caplog)


# -- 5. damaged copies ---------------------------------------------------------------------------
def _batch(copy: Copy, k: int):
    return log_batches(copy.file())[k]


@pytest.mark.parametrize("mode", ["alone", "both"])
def test_a_flipped_byte_in_a_remote_log(logs, tmp_path, caplog, mode):
    tier, data = plain(logs, tmp_path)
    copy = tier.copies[1]
    position, base, last, _ = _batch(copy, 2)                 # offsets 400..449
    damaged = bytearray(copy.file().read_bytes())
    damaged[position + 200] ^= 0x10
    copy.file().write_bytes(bytes(damaged))
    err = read_fails(mode, tier, data, "CRC", kinds=CorruptDataError)
    assert (err.path, err.position) == (str(copy.file()), position)
    with caplog.at_level(logging.WARNING, logger="segmentlog"):
        rows = read(mode, tier, data, failOnDataLoss="false")
    assert rows == [r for r in _original(logs, "a", 0, _end(mode, 1199))
                    if not base <= r["offset"] <= last]
    assert str(copy.file()) in _warnings(caplog)


@pytest.mark.parametrize("mode", ["alone", "both"])
def test_a_truncated_remote_log(logs, tmp_path, caplog, mode):
    tier, data = plain(logs, tmp_path)
    copy = tier.copies[1]
    position, base, _, _ = _batch(copy, 4)                    # cut inside 500..549
    copy.file().write_bytes(copy.file().read_bytes()[:position + 100])
    read_fails(mode, tier, data, str(copy.prefix))
    with caplog.at_level(logging.WARNING, logger="segmentlog"):
        rows = read(mode, tier, data, failOnDataLoss="false")
    assert rows == [r for r in _original(logs, "a", 0, _end(mode, 1199))
                    if not base <= r["offset"] <= 599]
    assert str(copy.prefix) in _warnings(caplog)


def _lie(copy: Copy, suffix: str, how: str) -> None:
    """Rewrite the second entry of a copy's .index (8 bytes: relative offset, position) or
    .timeindex (12: timestamp, relative offset)."""
    path = copy.file(suffix)
    data = bytearray(path.read_bytes())
    size = 8 if suffix == ".index" else 12
    entry = data[size:2 * size]
    if suffix == ".index":
        relative, position = struct.unpack(">ii", entry)
        entry = struct.pack(">ii", relative, copy.file().stat().st_size + 4096) \
            if how == "past-the-file" else struct.pack(">ii", relative + 30, position)
    else:
        timestamp, relative = struct.unpack(">qi", entry)
        entry = struct.pack(">qi", timestamp, relative + 120) if how == "wrong-offset" \
            else struct.pack(">qi", timestamp - 10_000_000, relative)
    data[size:2 * size] = entry
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("mode", ["alone", "both"])
@pytest.mark.parametrize("suffix,how", [(".index", "past-the-file"), (".index", "wrong-offset"),
                                        (".timeindex", "wrong-offset"),
                                        (".timeindex", "wrong-time")])
def test_remote_indexes_that_lie(logs, tmp_path, mode, suffix, how):
    """A read that starts inside the copy (by offset, or by time through the time index):
    the original rows, or an error naming the copy's file."""
    tier, data = plain(logs, tmp_path)
    copy = tier.copies[1]
    _lie(copy, suffix, how)
    if suffix == ".index":
        options = {"startingOffsets": '{"t": {"0": 475}}'}
    else:     # (record i's timestamp is the generator's start + i ms)
        options = {"startingTimestamp": str(1_700_000_000_000 + 475)}
    try:
        rows = read(mode, tier, data, **options)
    except ERRORS as err:
        assert str(copy.prefix) in str(err), str(err)
        return
    assert rows == _original(logs, "a", 475, _end(mode, 1199))


@pytest.mark.parametrize("mode", ["alone", "both"])
def test_a_remote_file_name_that_disagrees_with_its_batches(logs, tmp_path, mode):
    """00000000000000000300-<id>.log holding offsets from 0 (the metadata says 300..599)."""
    tier, data = plain(logs, tmp_path)
    copy = tier.copies[1]
    for suffix in (".log", ".index", ".timeindex"):
        shutil.copyfile(tier.copies[0].file(suffix), copy.file(suffix))
    err = read_fails(mode, tier, data)
    assert str(copy.prefix) in str(err) or copy.segment_id in str(err), str(err)
    try:
        rows = read(mode, tier, data, failOnDataLoss="false")
    except ERRORS as err:
        assert str(copy.prefix) in str(err) or copy.segment_id in str(err), str(err)
        return
    assert rows == [r for r in _original(logs, "a", 0, _end(mode, 1199))
                    if not 300 <= r["offset"] <= 599]


@pytest.mark.parametrize("mode", ["alone", "both"])
@pytest.mark.parametrize("which,end", [(1, 589), (1, 609), (3, 1209), (3, 1189)])
def test_a_metadata_end_offset_that_disagrees_with_the_copy(logs, tmp_path, mode, which, end):
    """The metadata says a copy ends elsewhere than its last batch: the original rows, each
    once, or an error naming the segment; never rows the metadata promises silently missing."""
    tier, data = plain(logs, tmp_path, metadata=False)
    copy = tier.copies[which]
    values = []
    for c in tier.copies:
        values += events(tier, [c], end_offset=end if c is copy else None)
    write_metadata(data, values)
    remote_end = 1199 if which != 3 else max(1199, end)
    try:
        rows = read(mode, tier, data)
    except ERRORS as err:
        assert copy.segment_id in str(err) or str(copy.prefix) in str(err) \
            or f"{end + 1}.." in str(err), str(err)
        return
    assert rows == _original(logs, "a", 0, _end(mode, remote_end))


@pytest.mark.parametrize("mode", ["alone", "both"])
def test_a_garbled_metadata_record(logs, tmp_path, mode):
    tier, data = plain(logs, tmp_path, metadata=False)
    values = events(tier, tier.copies)
    values[3] = values[3][:30]                # (an update record cut inside its segment id)
    log = write_metadata(data, values)
    err = read_fails(mode, tier, data, "__remote_log_metadata-0 record at offset 3",
                     kinds=CorruptDataError)
    assert err.path == str(log)
    if "failOnDataLoss=false" in str(err):      # what the error tells the user to do works
        rows = read(mode, tier, data, failOnDataLoss="false")
        assert rows == [r for r in _original(logs, "a") if r["offset"] in set(_offsets(rows))]


# -- 6. a re-created topic -------------------------------------------------------------------------
@pytest.mark.parametrize("mode", ["alone", "both", "listing"])
def test_a_recreated_topics_old_copies_are_left_aside(logs, tmp_path, caplog, mode):
    """The tier holds the copies of a deleted topic `t` (partition other's, its topic id)
    beside the current `t`'s (a's): only the current id's are read, the old id named in a
    warning; by the listing alone, which cannot tell, an error naming both."""
    tier, data = plain(logs, tmp_path, metadata=False)
    old_id = topic_id_of(logs / "other" / "t-0")
    old = tier.add(logs / "other" / "t-0", seed=7, topic_id=old_id)
    tier.copies = tier.copies[:4]
    write_metadata(data, events(tier, old, topic_id=old_id, event_ts=1000)
                   + events(tier, tier.copies, event_ts=9000))
    if mode == "listing":
        read_fails(mode, tier, data, old_id, tier.topic_id, kinds=LogNotFoundError)
        return
    with caplog.at_level(logging.WARNING, logger="segmentlog"):
        rows = read(mode, tier, data)
    assert rows == _original(logs, "a", 0, _end(mode, 1199))
    assert old_id in _warnings(caplog)


# -- 7. both tiers hold a segment ------------------------------------------------------------------
@pytest.mark.parametrize("metadata", [True, False])
def test_where_the_tiers_overlap_the_local_segment_is_read(logs, tmp_path, metadata):
    """Copies of 600..899 and 900..1199 are still local too; their remote .log files are
    damaged (a CRC error if read): each offset once, from the local segments."""
    tier, data = plain(logs, tmp_path, keep_from=600, metadata=metadata)
    for copy in tier.copies[2:]:
        damaged = bytearray(copy.file().read_bytes())
        damaged[500] ^= 1
        copy.file().write_bytes(bytes(damaged))
    rows = read("both", tier, data)
    assert _offsets(rows) == list(range(RECORDS))
    assert rows == _original(logs, "a")
