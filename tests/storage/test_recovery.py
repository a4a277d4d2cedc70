"""Opening for writing after a crash behaves like the broker's LogLoader (spec §9)."""

from __future__ import annotations

import shutil
import struct

import pytest

from segmentlog_source.storage.log.log_config import LogConfig
from segmentlog_source.storage.log.partition_log import PartitionLog
from segmentlog_source.storage.log.segment_indexer import rebuild_index_bytes
from segmentlog_source.storage.txn.producer_state_manager import snapshot_offsets
from tests.storage.helpers import copy_partition, make_batch, real_id, real_partition_dirs
from tests.storage.test_partition_log import assert_indexes_are_rebuilt_ones, files

CONFIG = LogConfig(segment_bytes=6000, index_interval_bytes=700)


def write_log(path, batches=60, close=True, config=CONFIG):
    """A log of `batches` 3-record batches; with close=False the writer 'crashes' (its lock is
    released as the kernel would, nothing else happens)."""
    log = PartitionLog.open_for_append(str(path), config=config)
    for i in range(batches):
        log.append(make_batch([10 * i + 2, 10 * i, 10 * i + 1], value_size=80))
    if close:
        log.close()
    else:
        log._lock.release()
    return 3 * batches


def batch_starts(path):
    log = PartitionLog.open(str(path))
    return [(s.base_offset, h.position, h.crc) for s, h, _ in log.iter_entries(verify_crc=True)]


def test_crashed_writer_without_damage_is_recovered_without_loss(tmp_path):
    path = tmp_path / "t-0"
    leo = write_log(path, close=False)
    before = batch_starts(path)
    log = PartitionLog.open_for_append(str(path), config=CONFIG)
    assert log.log_end_offset == leo and log.recovery_report.truncated == []
    assert log.recovery_report.recovered_segments == [log.segments[-1].base_offset]
    log.close()
    assert batch_starts(path) == before
    assert_indexes_are_rebuilt_ones(path, 700)
    assert snapshot_offsets(str(path))[-1] == leo


def test_torn_tail_is_truncated_at_the_first_invalid_byte(tmp_path):
    path = tmp_path / "t-0"
    leo = write_log(path, close=False)
    last = sorted(path.glob("*.log"))[-1]
    size = last.stat().st_size
    with open(last, "ab") as f:
        f.write(make_batch([1, 2], base_offset=leo)[:50])
    log = PartitionLog.open_for_append(str(path), config=CONFIG)
    assert log.recovery_report.truncated == [(str(last), size, 50)]
    assert last.stat().st_size == size and log.log_end_offset == leo
    assert log.append(make_batch([7])) == (leo, leo)
    log.close()
    # appends after a reopen count index bytes afresh, as a restarted broker does
    assert_indexes_are_rebuilt_ones(path, 700, restarts=[leo])


def test_zero_filled_tail_is_truncated(tmp_path):
    path = tmp_path / "t-0"
    leo = write_log(path, close=False)
    last = sorted(path.glob("*.log"))[-1]
    size = last.stat().st_size
    with open(last, "ab") as f:
        f.write(bytes(4096))  # what a preallocated segment holds past its data
    with PartitionLog.open_for_append(str(path), config=CONFIG) as log:
        assert log.log_end_offset == leo
    assert last.stat().st_size == size


def test_bad_crc_truncates_and_deletes_later_segments(tmp_path):
    path = tmp_path / "t-0"
    write_log(path, close=False)
    logs = sorted(path.glob("*.log"))
    assert len(logs) >= 4
    victim = logs[-3]
    base = int(victim.name[:20])
    for snap in path.glob("*.snapshot"):  # the writer died before its later snapshots
        if int(snap.name[:20]) > base:
            snap.unlink()
    data = bytearray(victim.read_bytes())
    second = struct.unpack_from(">i", data, 8)[0] + 12
    data[second + 70] ^= 0xFF
    victim.write_bytes(bytes(data))
    log = PartitionLog.open_for_append(str(path), config=CONFIG)
    report = log.recovery_report
    assert report.truncated == [(str(victim), second, len(data) - second)]
    assert report.deleted_segments == [int(p.name[:20]) for p in logs[-2:]]
    assert [s.base_offset for s in log.segments][-1] == base
    assert log.log_end_offset == base + 3
    assert not logs[-1].exists() and victim.stat().st_size == second
    log.close()
    assert snapshot_offsets(str(path))[-1] == base + 3
    assert_indexes_are_rebuilt_ones(path, 700)


@pytest.mark.parametrize("damage", ["missing", "past_end", "unsorted", "preallocated", "partial"])
def test_damaged_indexes_are_rebuilt(tmp_path, damage):
    path = tmp_path / "t-0"
    write_log(path, batches=72)
    before = files(path)
    logs = sorted(path.glob("*.log"))
    index = logs[0].with_suffix(".index") if damage == "missing" else logs[-1].with_suffix(".index")
    good = index.read_bytes()
    assert len(good) >= 16
    if damage == "missing":
        index.unlink()
    elif damage == "past_end":
        index.write_bytes(good[:-4] + struct.pack(">i", 10**7))
    elif damage == "unsorted":
        index.write_bytes(good[8:16] + good[:8] + good[16:])
    elif damage == "preallocated":
        index.write_bytes(good + bytes(10 * 1024 * 1024 - len(good)))
    else:
        index.write_bytes(good + b"\1\2\3")
    log = PartitionLog.open_for_append(str(path), config=CONFIG)
    assert log.recovery_report.truncated == []
    log.close()
    after = files(path)
    assert after[index.name] == good
    assert {k: v for k, v in after.items() if not k.endswith(".snapshot")} == \
        {k: v for k, v in before.items() if not k.endswith(".snapshot")}


def test_invalid_offset_empties_the_segment_like_the_broker(tmp_path):
    path = tmp_path / "t-0"
    write_log(path, batches=3, close=False, config=LogConfig(index_interval_bytes=0))
    log_file = sorted(path.glob("*.log"))[-1]
    with open(log_file, "ab") as f:  # offsets going backwards: an index append must fail
        f.write(make_batch([99], base_offset=1))
    for snap in path.glob("*.snapshot"):
        snap.unlink()
    log = PartitionLog.open_for_append(str(path), config=LogConfig(index_interval_bytes=0))
    assert log.log_end_offset == 0 and log_file.stat().st_size == 0
    log.close()


def test_interrupted_swap_and_marker_files(tmp_path):
    """Cleaner output 0-19 as .swap replacing segments 0 and 10; litter from earlier work."""
    path = tmp_path / "t-0"
    path.mkdir()
    first = make_batch([1] * 10, base_offset=0)
    second = make_batch([2] * 10, base_offset=10)
    third = make_batch([3] * 5, base_offset=20)
    (path / f"{0:020d}.log").write_bytes(first)
    (path / f"{10:020d}.log").write_bytes(second)
    (path / f"{10:020d}.index").write_bytes(b"")
    (path / f"{20:020d}.log").write_bytes(third)
    compacted = make_batch([2] * 3, base_offset=0)[:0] + make_batch([1, 2], base_offset=0)
    compacted = bytearray(compacted)
    compacted[23:27] = struct.pack(">i", 19)  # lastOffsetDelta 19: offsets 0..19, 2 kept records
    from crc32c import crc32c
    compacted[17:21] = struct.pack(">I", crc32c(bytes(compacted[21:])))
    (path / f"{0:020d}.log.swap").write_bytes(bytes(compacted))
    (path / f"{0:020d}.index.swap").write_bytes(b"")
    (path / f"{5:020d}.log.deleted").write_bytes(b"old")
    (path / f"{30:020d}.log.cleaned").write_bytes(b"partial")
    (path / f"{40:020d}.log.swap").write_bytes(b"interrupted split")
    (path / f"{77:020d}.timeindex").write_bytes(b"")   # an orphan
    (path / "leader-epoch-checkpoint.tmp").write_bytes(b"0\n")
    reader = PartitionLog.open(str(path))
    assert [s.base_offset for s in reader.segments] == [0, 20]
    assert reader.log_end_offset == 25 and reader.segments[0].log_path.endswith(".log.swap")
    with PartitionLog.open_for_append(str(path)) as log:
        assert [s.base_offset for s in log.segments] == [0, 20]
        assert log.log_end_offset == 25
        assert sorted(log.recovery_report.removed_files) == sorted([
            f"{0:020d}.log", f"{10:020d}.log", f"{10:020d}.index", f"{5:020d}.log.deleted",
            f"{30:020d}.log.cleaned", f"{40:020d}.log.swap", f"{77:020d}.timeindex",
            "leader-epoch-checkpoint.tmp"])
    names = sorted(p.name for p in path.iterdir())
    assert f"{0:020d}.log" in names and not [n for n in names if n.endswith((".swap", ".tmp"))]
    assert (path / f"{0:020d}.log").read_bytes() == bytes(compacted)


@pytest.mark.parametrize("src", [p for p in real_partition_dirs()
                                 if not p.name.startswith("__cluster_metadata")], ids=real_id)
def test_real_partitions_open_for_append(tmp_path, src):
    path = copy_partition(src, tmp_path)
    before = batch_starts(path)
    reader = PartitionLog.open(str(path))
    leo, start = reader.log_end_offset, reader.log_start_offset
    clean_before = {n: d for n, d in files(path).items() if n.endswith((".index", ".timeindex"))}
    with PartitionLog.open_for_append(str(path)) as log:
        assert (log.log_end_offset, log.log_start_offset) == (leo, start)
        report = log.recovery_report
    assert report.truncated == [] and report.deleted_segments == []
    assert batch_starts(path) == before
    for log_file in sorted(path.glob("*.log")):  # recovered indexes are the §4.5 ones
        name = log_file.name[:20]
        if f"{name}.index" in clean_before:
            assert (path / f"{name}.index").read_bytes() == clean_before[f"{name}.index"]
        else:
            index, time_index = rebuild_index_bytes(log_file.read_bytes(), int(name))
            assert (path / f"{name}.index").read_bytes() == index
            assert (path / f"{name}.timeindex").read_bytes() == time_index
    assert snapshot_offsets(str(path))[-1] == leo
    shutil.rmtree(path)
